// checkpoint_cmd.cpp: the `info` and `export` commands: describe a checkpoint, convert between
// HuggingFace's layout, llm.c's format and llama.cpp's GGUF. Format detection and conversion live in checkpoint.h/llmc.h.

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "platform/output_files.h"
#include "platform/signals.h"
#include "platform/util.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "formats/checkpoint.h"
#include "formats/gguf.h"
#include "formats/llmc.h"
#include "formats/train_state.h"
#include "lora/export.h"
#include "lora/lora.h"
#include "lora/peft.h"

namespace {

// The stored value of a run flag, or "" when the run did not record it.
std::string stored_flag(const TrainState& ts, const char* name) {
    std::string v;
    for (const auto& kv : ts.flags)
        if (kv.first == name) v = kv.second;
    return v;
}

// Where a training checkpoint's run stands: its step, tokens, last losses, precision, data and flags, and
// the command that continues it.
void print_run(const std::string& dir) {
    TrainState ts;
    train_state_read(&ts, dir);
    const auto num = [&](const char* name, long long fallback) {
        const std::string v = stored_flag(ts, name);
        return v.empty() ? fallback : atoll(v.c_str());
    };
    const long long steps = num("steps", 200), B = num("batch", 8), T = num("tokens", 64),
                    accum = num("grad-accum", 1), ranks = num("ranks", 1);
    // read, not trained on: a step whose batches scored no token (loss masks) read its tokens and was skipped
    const int skipped = ts.step - ts.adamw_step;
    printf("run: step %d of %lld (--steps), %lld tokens read (%lld per step)", ts.step, steps,
           ts.step * B * T * accum * ranks, B * T * accum * ranks);
    if (skipped > 0)
        printf(", %d step%s skipped (%s batches scored no token)", skipped, skipped == 1 ? "" : "s",
               skipped == 1 ? "its" : "their");
    printf("\n");
    if (!ts.history.train.empty())
        printf("last train loss: %.6f (step %d)\n", ts.history.train.back().second, ts.history.train.back().first);
    if (!ts.history.val.empty())
        printf("last val loss: %.6f (step %d)\n", ts.history.val.back().second, ts.history.val.back().first);
    const std::string precision = stored_flag(ts, "precision");
    printf("precision: %s\n", precision.empty() ? "fp32" : precision.c_str());
    const std::string train = stored_flag(ts, "train"), val = stored_flag(ts, "val");
    printf("data: --train %s, --val %s\n", train.empty() ? "data/tinyshakespeare/train.bin (the default)" : train.c_str(),
           val.empty() ? "none" : val.c_str());
    std::string flags;  // each once, with its last value (a resumed run records the flags it overrode too)
    for (size_t i = 0; i < ts.flags.size(); i++) {
        const std::string& name = ts.flags[i].first;
        bool first = name != "train" && name != "val" && name != "ranks";
        for (size_t j = 0; j < i && first; j++) first = ts.flags[j].first != name;
        if (first) flags += " --" + name + (stored_flag(ts, name.c_str()).empty() ? "" : " " + stored_flag(ts, name.c_str()));
    }
    printf("flags:%s\n", flags.c_str());
    const std::string resume = train_resume_command(dir, (int)ranks);
    if (ts.step < steps) printf("continue with: %s\n", resume.c_str());
    else printf("finished; train on with: %s --steps %lld\n", resume.c_str(), 2 * std::max(steps, 1LL));
}

// A LoRA run's directory (an adapter and its train state, no model): the adapter, its base, where the run stands.
void print_lora_run(const std::string& dir) {
    TrainState ts;
    train_state_read(&ts, dir);
    for (const char* name : {"adapter_config.json", "adapter_model.safetensors"}) {  // what a resume reads
        const std::string path = path_join(dir, name);
        if (!path_exists(path))
            fatal("missing %s: expected the LoRA run's adapter (PEFT's %s) beside its train state", path.c_str(), name);
        if (!file_exists(path))
            fatal("not a regular file (%s): expected the LoRA run's %s", path.c_str(), name);
    }
    printf("format: LoRA adapter (PEFT's adapter_config.json and adapter_model.safetensors) and its train state\n");
    LoraConfig c;
    if (lora_run_config(ts, &c)) {
        std::string targets;
        for (int k = 0; k < kLoraTargets; k++)
            if (c.target[k]) targets += (targets.empty() ? "" : ",") + std::string(kLoraModules[k]);
        char dropout[32] = "";  // as train prints it
        if (c.dropout > 0) snprintf(dropout, sizeof(dropout), ", dropout %g", c.dropout);
        printf("lora: rank %d, alpha %g (scale %g%s) on %s\n", c.rank, c.alpha, c.scale(), dropout, targets.c_str());
    }
    printf("base: %s (fingerprint %s)\n", ts.file.meta("lora.base.path").c_str(), ts.file.meta("lora.base.fnv1a").c_str());
    print_run(dir);
}

// --lora-from's adapter, checked against --model's geometry (headers only).
PeftConfig read_adapter(const CliArgs& args, LoraAdapter* a) {
    CheckpointInfo info;
    const GPT2Config base = checkpoint_inspect(path_strip_slashes(args.str("model")), cli_heads(args), &info);
    PeftConfig cfg;
    peft_read(a, &cfg, path_strip_slashes(args.str("lora-from")), base);
    return cfg;
}

// `export --lora-from DIR` without --merge-lora: the adapter alone, as llama.cpp's GGUF adapter or PEFT's files.
int export_adapter(const CliArgs& args) {
    const std::string format = args.str("format"), out = args.str("out");
    if (format != "gguf" && format != "peft")
        fatal_hint("add --merge-lora to export the base with the adapter merged in",
                   "bad value for --format (export): %s with --lora-from, expected gguf (llama.cpp's adapter) or peft",
                   format.c_str());
    if (args.str("dtype") != "f32")
        fatal("bad value for --dtype (export): expected f32 for an adapter, got %s", args.str("dtype").c_str());
    if (args.has("tokenizer"))
        fatal("conflicting flags (export): expected no --tokenizer with an adapter (it stores none), got --tokenizer %s",
              args.str("tokenizer").c_str());
    std::unique_ptr<PathLock> lock;
    if (format == "gguf") {
        input_note_path(args.str("model"));
        output_check(out, "--out (export)", kGgufAdapterKind);
        lock.reset(new PathLock(out, "--out (export)"));
    }
    LoraAdapter a;
    const PeftConfig cfg = read_adapter(args, &a);
    if (std::string path, hash; lora_run_base(args.str("lora-from"), &path, &hash)) {  // a run of ours: its base?
        GPT2 base;
        checkpoint_load(&base, args.str("model"), cli_heads(args));
        lora_check_base(args.str("lora-from"), base, args.str("model"), args.on("force-base"), stdout);
    }
    if (format == "gguf") lora_save_gguf(a, out, "--out (export)");
    else peft_export(a, cfg, out);
    printf("wrote %s (%s adapter, r %d, alpha %g%s, %zu matrices)\n", out.c_str(), format == "gguf" ? "GGUF" : "PEFT",
           a.cfg.rank, a.cfg.alpha, a.cfg.rslora && format == "gguf" ? " (rslora: written as alpha x sqrt(r))" : "",
           a.table.size());
    return 0;
}

// --merge-lora: the adapter merged into the model, whose weights must stay finite (checked before anything is
// written, naming --out).
void merge_adapter(const CliArgs& args, const LoraAdapter& adapter, const std::string& out, GPT2* model) {
    lora_check_base(args.str("lora-from"), *model, args.str("model"), args.on("force-base"), stdout);
    lora_merge(model, adapter);
    const std::string doing = "not writing it: --lora-from " + args.str("lora-from") + " merged into --model " +
                              args.str("model") + " overflows";
    checkpoint_check_finite(*model, "--out " + out, doing.c_str());
}

}  // namespace

int cmd_info(int argc, char** argv) {
    static const std::vector<CliFlag> flags = {{"model", "", "", "checkpoint to describe"}, kCliHeadsFlag};
    CliArgs args = cli_parse(argc, argv, "info", "gpt2 info --model PATH",
                             "Prints a checkpoint's format, geometry, parameter count and dtype, and for a directory "
                             "train --out wrote, where its run stands and how to continue it.",
                             flags, false);
    CheckpointInfo info;
    const std::string path = path_strip_slashes(args.str("model"));
    // a LoRA run: a train state of one (a damaged one is named), with or without its adapter's files
    const bool model_files =
        file_exists(path_join(path, "config.json")) || path_exists(path_join(path, "model.safetensors"));
    std::string base, hash;
    const bool lora_run = !model_files && dir_exists(path) && lora_run_base(path, &base, &hash);
    if (lora_run || (path_exists(path_join(path, "adapter_config.json")) && !model_files)) {
        if (!lora_run)
            fatal_hint("apply it to its base with eval or generate --model BASE --lora-from " + path,
                       "not a model (%s): a PEFT adapter directory (adapter_config.json); info describes models and "
                       "the adapters train --lora saves",
                       path.c_str());
        print_lora_run(path);
        return 0;
    }
    const GPT2Config c = checkpoint_inspect(path, cli_heads(args), &info);
    printf("format: %s\n", info.format.c_str());
    printf("layers %d, heads %d, channels %d, context %d, vocab %d (padded %d)\n", c.num_layers, c.num_heads,
           c.channels, c.max_seq_len, c.vocab_size, c.padded_vocab_size);
    printf("parameters: %zu (%.2fM)\n", gpt2_num_real_params(c), gpt2_num_real_params(c) / 1e6);
    printf("dtype: %s (fp32 in memory)\n", info.dtype.c_str());
    // a train state that is there but unreadable is named by train_state_read, not passed over as no run
    if (train_dir_is_checkpoint(path) || path_exists(path_join(path, "train_state.safetensors"))) print_run(path);
    return 0;
}

int cmd_export(int argc, char** argv) {
    static const std::vector<CliFlag> flags = {
        {"model", "", "", "checkpoint to convert (any format `info` reads); with --lora-from, the base the adapter fits"},
        {"out", "", "", "output: a directory for hf and peft, a file for llmc and gguf"},
        {"format", "", "hf", "hf (config.json + model.safetensors), llmc (llm.c .bin) or gguf (llama.cpp); peft for an adapter"},
        {"lora-from", "", "", "a PEFT adapter directory: written as a GGUF adapter (--format gguf) or again as PEFT's "
         "files (--format peft), or merged into --model (--merge-lora)"},
        {"merge-lora", "", "", "with --lora-from: export --model with the adapter merged in (W += scale B A)", true},
        kCliForceBaseFlag,
        {"dtype", "", "f32", "f32, f16 (hf, gguf), bf16, or q8_0 (gguf); narrowing rounds to nearest even"},
        {"tokenizer", "", "", "gguf, hf: tokenizer directory to store (default: the model's own, else $GPT2_DATA_DIR/gpt2 or data/gpt2)"},
        kCliHeadsFlag,
    };
    CliArgs args = cli_parse(argc, argv, "export",
                             "gpt2 export --model PATH --out PATH [--format hf|llmc|gguf] [--dtype f32]\n"
                             "       gpt2 export --model BASE --lora-from DIR --out PATH [--format gguf|peft]\n"
                             "       gpt2 export --model BASE --lora-from DIR --merge-lora --out PATH [--format hf|llmc|gguf]",
                             "Converts a checkpoint to HuggingFace's layout, llm.c's format or llama.cpp's GGUF, and a "
                             "LoRA adapter to llama.cpp's GGUF adapter or into its base's weights.",
                             flags, false);
    const std::string format = args.str("format"), dtype = args.str("dtype"), out = args.str("out");
    stop_catch_abort("export stopped; " + out + " is as it was");  // at its next write (signals.h)
    if (args.on("force-base") && !args.has("lora-from"))
        fatal("flag --force-base (export) needs --lora-from: it applies an adapter to another base");
    if (args.has("lora-from") && !args.on("merge-lora")) return export_adapter(args);
    if (format != "hf" && format != "llmc" && format != "gguf")
        fatal("bad value for --format (export): expected hf, llmc or gguf (peft: with --lora-from), got '%s'",
              format.c_str());
    if (dtype != "f32" && dtype != "f16" && dtype != "bf16" && dtype != "q8_0")
        fatal("bad value for --dtype (export): expected f32, f16, bf16 or q8_0, got '%s'", dtype.c_str());
    if (format == "llmc" && (dtype == "f16" || dtype == "q8_0"))
        fatal("bad value for --dtype (export): llm.c files are f32 (v3) or bf16 (v5)");
    if (format == "hf" && dtype == "q8_0") fatal("bad value for --dtype (export): q8_0 is for --format gguf");
    if (args.has("tokenizer") && format == "llmc")
        fatal("conflicting flags (export): --tokenizer is for --format gguf or hf, which store the tokenizer");
    std::unique_ptr<PathLock> lock;
    if (format != "hf") {  // checked before the model is read: a file is replaced only by its own kind
        input_note_path(args.str("model"));
        output_check(out, "--out (export)", format == "llmc" ? kLlmcKind : kGgufKind);
        lock.reset(new PathLock(out, "--out (export)"));
    }
    LoraAdapter adapter;  // read before the model, which it must fit (its header only)
    if (args.on("merge-lora")) read_adapter(args, &adapter);
    GPT2 model;
    checkpoint_load(&model, args.str("model"), cli_heads(args));
    if (args.on("merge-lora")) merge_adapter(args, adapter, out, &model);
    Tokenizer tok;  // stored with the model: GGUF needs one, an HF export has one when there is one
    std::string which;
    if (format != "llmc") which = cli_tokenizer(args, args.str("model"), format == "gguf", &tok);
    if (format == "hf") {
        if (which.empty()) {
            printf("note: no tokenizer files in %s (encoder.json + vocab.bpe), the model carries none: exporting "
                   "without tokenizer files; set --tokenizer or GPT2_DATA_DIR to include them\n",
                   tokenizer_default_dir().c_str());
        } else if (tok.vocab_size < model.cfg.vocab_size && !args.has("tokenizer")) {  // one given must fit
            printf("note: the tokenizer in %s has %d tokens, the model %d: exporting without tokenizer files\n",
                   tok.dir.c_str(), tok.vocab_size, model.cfg.vocab_size);
            which.clear();
        }
        checkpoint_export_hf(model, out, dtype == "f32" ? "F32" : dtype == "f16" ? "F16" : "BF16",
                             which.empty() ? nullptr : &tok);
    } else if (format == "llmc") {
        llmc_save(model, out, dtype == "f32" ? 3 : 5, "--out (export)");
    } else {
        const GgufType type = dtype == "f32"    ? GgufType::kF32
                              : dtype == "f16"  ? GgufType::kF16
                              : dtype == "bf16" ? GgufType::kBF16
                                                : GgufType::kQ8_0;
        gguf_save(model, tok, out, type, "--out (export)");
    }
    const std::string merged = args.on("merge-lora") ? ", " + args.str("lora-from") + " merged in" : "";
    printf("wrote %s (%s, %s%s%s)\n", out.c_str(), format.c_str(), dtype.c_str(), merged.c_str(),
           which.empty() ? "" : (", tokenizer " + which).c_str());
    return 0;
}
