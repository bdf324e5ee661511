// cli.cpp: see cli.h.
#include "cli/cli.h"

#include <algorithm>
#include <cassert>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "platform/util.h"
#include "formats/checkpoint.h"
#include "core/model.h"
#include "inference/speculative.h"
#include "lora/lora.h"
#include "precision/precision.h"
#include "text/tokenizer.h"

int cli_heads(const CliArgs& args) { return (int)args.integer_in("heads", 0, 65536); }

bool cli_loss_on(const CliArgs& args) {
    const std::string v = args.str("loss-on");
    if (v != "answer" && v != "all")
        fatal("bad value for --loss-on (%s): expected answer or all, got '%s'", args.command.c_str(), v.c_str());
    return v == "answer";
}

void cli_check_tokens(const CliArgs& args, int T, int context, const char* bound_flag) {
    if (T > context)
        fatal("bad value for -T (%s): expected <= %s%d (the model's context), got %d%s", args.command.c_str(),
              bound_flag, context, T, args.has("tokens") ? "" : " (the default)");
}

Precision cli_precision(const CliArgs& args, bool inference) {
    const std::string v = args.str("precision");
    if (v == "int8" && inference) return Precision::kInt8;
    if (v != "fp32" && v != "bf16")
        fatal("bad value for --precision (%s): expected fp32%s, got '%s'", args.command.c_str(),
              inference ? ", bf16 or int8" : " or bf16", v.c_str());
    if (v == "fp32") return Precision::kFp32;
    if (bf16_supported()) return Precision::kBf16;
    fprintf(stderr, "note: --precision bf16: this CPU has no AVX512_BF16 (vdpbf16ps); running fp32\n");
    return Precision::kFp32;
}

void cli_set_precision(GPT2* model, const CliArgs& args, bool inference, bool frozen_base) {
    // a frozen base in bf16 is held as bf16 with fp32 products on any CPU (precision.h)
    const Precision prec = frozen_base && args.str("precision") == "bf16" ? Precision::kBf16
                                                                           : cli_precision(args, inference);
    const bool drop = prec == Precision::kInt8 || frozen_base;  // the matmuls read the copies alone
    // a base held so as it loaded (train's) has its copies already
    const PrecisionCopies* made = gpt2_precision_copies(*model);
    const bool at_load = made && made->precision == prec;
    // beside the fp32 weights, the block matrix being copied until its fp32 values go, and int8's scale per 32
    // and copy of wte and wpe
    if (drop && prec != Precision::kFp32 && !at_load) {
        double kept = 0, largest = 0;
        for (const TensorInfo& t : model->param_table) {
            if (t.layer < 0) kept += (double)t.numel();
            else largest = std::max(largest, (double)t.numel());
        }
        const bool int8 = prec == Precision::kInt8;
        memory_check(int8 ? model->num_params * 2.0 / kQ8Block + kept + largest : 2.0 * largest,
                     std::string("the ") + (int8 ? "int8" : "bf16") + " copy of the weights",
                     "use --precision fp32" + std::string(int8 ? " or bf16" : ""));
    }
    const int kept = at_load ? made->kept : gpt2_set_precision(model, prec, drop);
    if (prec == Precision::kInt8 && !frozen_base) gpt2_round_inputs_q8(model);  // as llama.cpp runs q8_0
    if (!drop || prec == Precision::kFp32) return;
    int matrices = 0;
    for (const TensorInfo& t : model->param_table) matrices += t.cols != 0;
    const double dropped = gpt2_precision_copies(*model)->fp32_given_back / 1048576.0;
    if (prec == Precision::kBf16)
        fprintf(stderr, "precision: bf16 base, every weight rounded to bf16 and %d of %d matrices held as bf16 alone "
                "(fp32 products on their values); %.1f MiB of their fp32 values given back\n", kept, matrices, dropped);
    else
        fprintf(stderr, "precision: int8, %d of %d weight matrices in q8_0 blocks (8 bits, one fp16 scale per 32)%s; "
                "%.1f MiB of their fp32 values given back; %s\n", kept, matrices,
                kept < matrices ? "; the rest fp32 (rows not a multiple of 32, or values past q8_0)" : "", dropped,
                frozen_base ? "their inputs fp32" : "their inputs rounded to q8_0 blocks too");
}

std::string cli_tokenizer(const CliArgs& args, const std::string& model, bool required, Tokenizer* tok) {
    if (args.has("tokenizer") && !args.str("tokenizer").empty()) {
        tokenizer_load(tok, args.str("tokenizer"));
        return tok->dir + " (--tokenizer)";
    }
    if (!model.empty() && checkpoint_tokenizer(model, tok)) return tok->dir + " (the model's own)";
    const std::string dir = tokenizer_default_dir();
    if (!required && !tokenizer_files_present(dir)) return "";
    // A model directory with half a tokenizer (vocab.json without merges.txt, say) and no default one to fall
    // back on: name what the model lacks rather than the default directory it never meant.
    if (!tokenizer_files_present(dir) && !model.empty() && dir_exists(model) &&
        (file_exists(path_join(model, "vocab.json")) || file_exists(path_join(model, "encoder.json"))))
        tokenizer_load(tok, model);
    tokenizer_load(tok, dir);
    return dir;
}

void cli_load_for_inference(const CliArgs& args, GPT2* model, LoraModel* lora) {
    const std::string command = args.command;
    checkpoint_load(model, args.str("model"), cli_heads(args));
    if (args.on("force-base") && !args.has("lora-from"))
        fatal("flag --force-base (%s) needs --lora-from: it applies an adapter to another base", command.c_str());
    if (args.has("lora-from"))  // the fp32 weights the run fingerprinted
        lora_check_base(args.str("lora-from"), *model, args.str("model"), args.on("force-base"), stderr);
    cli_set_precision(model, args, true, args.has("lora-from"));  // an adapter's base: frozen, as it trained
    if (args.has("lora-from")) lora_apply(model, lora, args.str("lora-from"), model->cfg.max_seq_len);
}

void cli_load_tokenizer(const CliArgs& args, const GPT2& model, Tokenizer* tok) {
    const std::string which = cli_tokenizer(args, args.str("model"), true, tok);
    tokenizer_check_vocab(*tok, model.cfg.vocab_size, "");
    fprintf(stderr, "tokenizer: %s\n", which.c_str());
}

size_t cli_text_max_bytes(const Tokenizer& tok, int tokens) {
    size_t longest = 1;
    for (const std::string& t : tok.token_bytes) longest = std::max(longest, t.size());
    return std::min((size_t)64 << 20, longest * (size_t)tokens);
}

bool cli_read_line(FILE* in, size_t max_bytes, std::string* line, bool* too_long) {
    line->clear();
    *too_long = false;
    bool any = false;
    int c;
    while ((c = getc(in)) != EOF) {  // byte by byte: a NUL is text too, not an end of line
        any = true;
        if (c == '\n') return true;
        if (*too_long) continue;
        if (line->size() == max_bytes) *too_long = true, line->clear();
        else line->push_back((char)c);
    }
    return any;
}

namespace {

// The model's own int8 copy (--draft int8), quantized a tensor at a time from its fp32 values (each tensor's given
// back once quantized), its products' inputs rounded as --precision int8's.
void make_int8_draft(const GPT2& model, GPT2* draft) {
    double largest = 0;
    for (const TensorInfo& t : model.param_table) largest = std::max(largest, 4.0 * (double)t.numel());
    memory_check(gpt2_base_bytes(model.cfg, Precision::kInt8) + largest, "the int8 draft (--draft int8)",
                 "leave out --draft");
    gpt2_build(draft, model.cfg, false);
    for (const TensorInfo& t : model.param_table) {
        std::copy(model.params.begin() + t.offset, model.params.begin() + t.offset + t.numel(),
                  draft->params.begin() + t.offset);
        gpt2_set_precision_tensor(draft, t, Precision::kInt8, true);
    }
    gpt2_round_inputs_q8(draft);
}

}  // namespace

bool cli_draft_options(const CliArgs& args, GenerateOptions* opts) {
    const char* command = args.command.c_str();
    opts->draft_min = (int)args.integer_in("draft-min", 0, kDraftMax);
    opts->draft_max = (int)args.integer_in("draft-max", 1, kDraftMax);
    if (args.has("draft") && args.has("draft-model"))
        fatal("conflicting flags (%s): give one of --draft int8 (the model's own copy) and --draft-model", command);
    if (args.has("draft-model") && args.str("draft-model").empty())
        fatal("bad value for --draft-model (%s): expected a checkpoint, got ''", command);
    if (args.has("draft-model")) {  // its headers, before the model is read: a broken draft is said at once
        const std::string path = args.str("draft-model");
        CheckpointInfo info;  // (a file's head count, 1 here, is read from it but a bare .safetensors')
        const GPT2Config cfg = checkpoint_inspect(path, dir_exists(path) ? 0 : 1, &info);
        if (info.format == "safetensors" && cfg.channels % 64 != 0)
            fatal_hint("give the draft as a directory with its config.json (gpt2 export --format hf)",
                       "bad value for --draft-model (%s): cannot infer the head count of %s: channels %d is not a "
                       "multiple of 64 (--heads is the model's)", command, path.c_str(), cfg.channels);
    }
    const bool any = args.has("draft") || args.has("draft-model");
    for (const char* flag : {"draft-max", "draft-min"})
        if (args.has(flag) && !any) fatal("flag --%s (%s) needs --draft int8 or --draft-model", flag, command);
    if (opts->draft_min > opts->draft_max)
        fatal("conflicting flags (%s): --draft-min %d is more than --draft-max %d", command, opts->draft_min,
              opts->draft_max);
    if (!args.has("draft")) return any;
    if (args.str("draft") != "int8")
        fatal("bad value for --draft (%s): expected int8 (the model's own q8_0 copy drafts), got '%s'; a separate "
              "draft model is --draft-model DIR", command, args.str("draft").c_str());
    if (args.str("precision") == "int8")
        fatal("conflicting flags (%s): --draft int8 drafts for an fp32 or bf16 model, and --precision int8 runs "
              "the int8 copy itself", command);
    if (args.has("lora-from"))
        fatal_hint("merge the adapter first (gpt2 export --lora-from DIR --merge-lora) or give --draft-model",
                   "conflicting flags (%s): --draft int8 copies the model's fp32 weights, and a --lora-from base "
                   "is held without them", command);
    return true;
}

void cli_load_draft(const CliArgs& args, const GPT2& model, int most, GPT2* draft) {
    if (args.has("draft")) {
        make_int8_draft(model, draft);
        fprintf(stderr, "draft: the model's own int8 copy (q8_0), up to %d tokens a check\n", most);
    } else {
        const std::string path = args.str("draft-model");
        checkpoint_load(draft, path);
        if (draft->cfg.vocab_size != model.cfg.vocab_size)
            fatal("bad value for --draft-model (%s): %s has a vocabulary of %d tokens, expected the model's %d (the "
                  "same tokenizer)", args.command.c_str(), path.c_str(), draft->cfg.vocab_size, model.cfg.vocab_size);
        fprintf(stderr, "draft: %s (%d layer%s, %d channels), up to %d tokens a check\n", path.c_str(),
                draft->cfg.num_layers, draft->cfg.num_layers == 1 ? "" : "s", draft->cfg.channels, most);
    }
}

