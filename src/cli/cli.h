// cli.h: the flags several subcommands share, and what they read from them (the parser: platform/args.h).
#pragma once
#include <string>
#include <vector>

#include "inference/generate.h"
#include "platform/args.h"
#include "precision/precision.h"

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
// the same way (precision.h). A model already held so as it loaded (train --lora's base) keeps its copies: stderr
// still says so.
void cli_set_precision(GPT2* model, const CliArgs& args, bool inference, bool frozen_base = false);

// The tokenizer for a command on the checkpoint `model` ("" for none): --tokenizer when given, else the one
// the model carries (checkpoint_tokenizer: a GGUF's own, an HF directory's vocab.json + merges.txt), else
// tokenizer_default_dir(). Returns which it loaded, for the command's one line: "DIR (--tokenizer)",
// "PATH (the model's own)" or "DIR"; "" (nothing loaded) when !required and the default directory has no
// tokenizer files. The caller checks the vocabulary against the model's.
struct Tokenizer;
std::string cli_tokenizer(const CliArgs& args, const std::string& model, bool required, Tokenizer* tok);

// The model a command that runs it loads (generate, chat, serve): --model (cli_heads), --lora-from applied
// (checked against the base unless --force-base: lora_check_base) and --precision (int8 and bf16 too).
struct LoraModel;
void cli_load_for_inference(const CliArgs& args, GPT2* model, LoraModel* lora);
// Its tokenizer (cli_tokenizer, required), its vocabulary checked against the model's, said on stderr.
void cli_load_tokenizer(const CliArgs& args, const GPT2& model, Tokenizer* tok);
// The longest text that can still fit `tokens` tokens: each token is at most the tokenizer's longest token in
// bytes, so a longer text has more (and 64 MiB at most, as --prompt-file). generate and chat refuse a longer prompt
// or message before it is tokenized.
size_t cli_text_max_bytes(const Tokenizer& tok, int tokens);
// Reads one line of `in` into *line, without its newline; false at the end of input. A line longer than
// max_bytes is read to its end and dropped (*too_long set, *line empty): memory stays bounded whatever the
// input holds.
bool cli_read_line(FILE* in, size_t max_bytes, std::string* line, bool* too_long);

// Speculative decoding (inference/speculative.h) for the commands that decode one sequence (generate, chat).
const CliFlag kCliDraftFlag = {"draft", "", "",
                               "int8: speculative decoding, the model's own int8 (q8_0) copy drafting tokens that the "
                               "model checks several at a time; greedy output stays token for token the model's own"};
const CliFlag kCliDraftModelFlag = {"draft-model", "", "",
                                    "speculative decoding with this smaller GPT-2 (the same tokenizer) drafting (a "
                                    "bare .safetensors: heads = channels / 64)"};
const CliFlag kCliDraftMaxFlag = {"draft-max", "", "8", "with a draft: tokens drafted a check at most (1..8)"};
const CliFlag kCliDraftMinFlag = {"draft-min", "", "0",
                                  "with a draft: tokens drafted a check at least, where the context leaves room "
                                  "(default: as many as pay, from the share kept; 0 lets it fall back to plain "
                                  "decoding)"};
// The draft flags: --draft-min and --draft-max read into opts, and all checked against each other and the other
// flags, before anything is loaded. True when a draft is asked for.
bool cli_draft_options(const CliArgs& args, GenerateOptions* opts);
// The draft they ask for into *draft, said on stderr: the model's own int8 copy (memory checked), or --draft-model's
// checkpoint, its vocabulary the model's.
void cli_load_draft(const CliArgs& args, const GPT2& model, int draft_max, GPT2* draft);
