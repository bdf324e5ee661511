// cli.h: flag parsing shared by every subcommand.
// Each command declares its flags once (name, optional short name, default, one line of help); the same
// table drives parsing, `--help` and the "did you mean" hint. Accepts `--name value`, `--name=value`
// and `-x value`. Does not know any command's meaning.
#pragma once
#include <string>
#include <vector>

#include "precision/precision.h"

struct CliFlag {
    const char* name;           // long name without dashes, e.g. "seq-len"
    const char* short_name;     // one letter without dash, or "" for none
    const char* default_value;  // used when not given; nullptr or "": none, and str() of it is "missing flag"
    const char* help;
    bool is_switch = false;  // takes no value
};

struct CliArgs {
    std::string command;
    std::vector<CliFlag> flags;
    std::vector<std::string> names;   // flags given on the command line, by long name
    std::vector<std::string> values;  // their values, parallel to names
    std::vector<std::string> positional;

    bool has(const char* name) const;  // given on the command line
    // Value given, else the default; fatal if neither (names the flag).
    std::string str(const char* name) const;
    // The value as an integer (or number) within [lo, hi], the one path every numeric flag takes; fatal on a
    // malformed value ("malformed value for --name (command)") or one out of range ("bad value for --name
    // (command): expected lo..hi").
    long long integer_in(const char* name, long long lo, long long hi) const;
    double number_in(const char* name, double lo, double hi) const;
    bool on(const char* name) const;  // switch given
};

// `--heads N` for commands that load a model: only a bare .safetensors without config.json needs it.
const CliFlag kCliHeadsFlag = {"heads", "", "0", "heads of a bare .safetensors without config.json (0: channels/64)"};
// The value of kCliHeadsFlag, range-checked.
int cli_heads(const CliArgs& args);
// `--loss-on answer|all` for train and eval: answer scores only what each shard's loss mask (formats/loss_mask.h)
// marks, when it has one; all ignores the masks. cli_loss_on: true for answer (fatal on another value).
const CliFlag kCliLossOnFlag = {
    "loss-on", "", "answer",
    "answer: score only the tokens each token file's loss mask (X.mask beside X.bin, from tokenize "
    "--instructions) marks, where there is one; all: every token, masks ignored"};
bool cli_loss_on(const CliArgs& args);
// `--force-base` for the commands that apply --lora-from to --model (lora_check_base).
const CliFlag kCliForceBaseFlag = {
    "force-base", "", "",
    "with --lora-from: apply an adapter trained on another base than --model (its run's fingerprint of its base "
    "differs) anyway, with a note instead of the error",
    true};
// -T (the flag "tokens") against the model's context, before anything is sized by it: fatal naming the
// command, the bound (`bound_flag` before the number: "--seq-len " for a from-scratch model) and, when -T
// was not given, that T is its default.
void cli_check_tokens(const CliArgs& args, int T, int context, const char* bound_flag = "");
const CliFlag kCliPrecisionFlag = {
    "precision", "", "fp32",
    "fp32 (exact), or bf16: matmuls on bf16 operands with fp32 accumulation (needs AVX512_BF16; else fp32); "
    "with --lora, int8 or bf16: the frozen base held so, on any CPU"};
// The same for the commands that only run the model (generate, eval), which also take int8.
const CliFlag kCliInferPrecisionFlag = {
    "precision", "", "fp32",
    "fp32 (exact); bf16: matmuls on bf16 operands with fp32 accumulation (needs AVX512_BF16; else fp32; with "
    "--lora-from, the base held as bf16 on any CPU); or int8: weights in q8_0 blocks (8 bits, one fp16 scale "
    "per 32) and matmul inputs rounded to q8_0 blocks too, as llama.cpp (with --lora-from: inputs fp32)"};
// The value of --precision: fp32 or bf16, and int8 when `inference` (the command declares
// kCliInferPrecisionFlag). bf16 on a CPU without AVX512_BF16 prints a one-line note on stderr and returns fp32.
Precision cli_precision(const CliArgs& args, bool inference = false);
struct GPT2;
// Sets the model's precision to cli_precision(args, inference) (inference: int8 too, which a LoRA run's frozen
// base takes); for int8 the fp32 values of the blocks' matrices are given back (drop_fp32), and stderr
// says how many matrices were quantized and how much memory that freed. A frozen_base (a LoRA adapter's, in
// train --lora, eval and generate --lora-from) in bf16 is held as bf16 on any CPU, its fp32 values given back
// the same way (precision.h).
void cli_set_precision(GPT2* model, const CliArgs& args, bool inference, bool frozen_base = false);

// The tokenizer for a command on the checkpoint `model` ("" for none): --tokenizer when given, else the one
// the model carries (checkpoint_tokenizer: a GGUF's own, an HF directory's vocab.json + merges.txt), else
// tokenizer_default_dir(). Returns which it loaded, for the command's one line: "DIR (--tokenizer)",
// "PATH (the model's own)" or "DIR"; "" (nothing loaded) when !required and the default directory has no
// tokenizer files. The caller checks the vocabulary against the model's.
struct Tokenizer;
std::string cli_tokenizer(const CliArgs& args, const std::string& model, bool required, Tokenizer* tok);

// Flags a resumed run takes from its checkpoint: `stored` first, then the ones given now (later values
// win). A stored name the command does not declare is fatal naming `where` (the train state file).
CliArgs cli_merge_stored(const CliArgs& given, const std::vector<std::pair<std::string, std::string>>& stored,
                         const std::string& where);

// Parses argv[0..argc) (argv[0] is the first argument after the command name). Prints usage and exits 0
// on --help/-h; exits 1 with a one-line error on unknown flags or missing values. `usage` is the
// synopsis line, `about` one sentence.
CliArgs cli_parse(int argc, char** argv, const char* command, const char* usage, const char* about,
                  const std::vector<CliFlag>& flags, bool allow_positional);
void cli_print_help(const char* command, const char* usage, const char* about, const std::vector<CliFlag>& flags);
// Levenshtein distance, for suggestions.
int cli_edit_distance(const std::string& a, const std::string& b);
