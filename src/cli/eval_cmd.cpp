// eval_cmd.cpp: the `eval` command: the mean loss (and perplexity) of a checkpoint on token files, over the
// first n batches of consecutive windows or over every token (report/evaluate.h); with --hellaswag it hands
// over to hellaswag_cmd.cpp, whose flags are declared here, in eval's one table.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "report/progress.h"
#include "platform/signals.h"
#include "platform/util.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "formats/checkpoint.h"
#include "core/dataloader.h"
#include "formats/token_files.h"
#include "core/model.h"
#include "report/evaluate.h"
#include "lora/lora.h"
#include "memory/memory.h"

static const std::vector<CliFlag> kEvalFlags = {
    {"model", "", "", "checkpoint to evaluate"},
    {"data", "", "", "token file(s), llm.c format: a path, a quoted glob or a comma list (shards in turn)"},
    {"batch", "B", "4", "sequences per batch"},
    {"tokens", "T", "64", "tokens per sequence"},
    {"batches", "", "all", "batches of consecutive windows to average, or `all`: every token of the file"},
    kCliLossOnFlag,
    kCliHeadsFlag,
    {"lora-from", "", "", "apply this PEFT LoRA adapter directory to --model (not with --hellaswag)"},
    kCliForceBaseFlag,
    {"hellaswag", "", "", "HellaSwag JSONL (hellaswag_val.jsonl) to score instead of --data: prints acc, acc_norm"},
    {"hellaswag-batch", "", "4", "HellaSwag examples per forward pass (4 rows each)"},
    {"hellaswag-scores", "", "", "write each HellaSwag example's candidate losses and choices here (JSON lines)"},
    {"tokenizer", "", "", "tokenizer directory for --hellaswag (default: the model's own, else $GPT2_DATA_DIR/gpt2 or data/gpt2)"},
    kCliInferPrecisionFlag,
};

// Opens --data for batches of B windows of T; a file of fewer windows (a small fine-tune val file) is read in
// batches of as many as its smallest shard holds, with a note, rather than refused: the B that is used.
static int eval_open_data(DataLoader* dl, const CliArgs& args, int vocab_size, int B, int T) {
    dataloader_init(dl, args.str("data"), "--data", vocab_size, 1, T, false, 0);  // each shard: a window at least
    size_t fewest = SIZE_MAX, at = 0;
    for (size_t s = 0; s < dl->shards.size(); s++)
        if (dataloader_shard_windows(*dl, s) < fewest) fewest = dataloader_shard_windows(*dl, s), at = s;
    if (fewest < (size_t)B) {
        fprintf(stderr, "note: %s holds %zu window%s of T=%d: -B %zu (of -B %d) for its batches\n",
                dl->shards[at].path.c_str(), fewest, fewest == 1 ? "" : "s", T, fewest, B);
        B = (int)fewest;
    }
    dl->B = B;
    dl->inputs.assign((size_t)B * T, 0);
    dl->targets.assign((size_t)B * T, 0);
    return B;
}

// Refuses before any batch is scored: --batches beyond the data, and data whose loss masks score none of the
// targets to evaluate (batches 0: every token after each shard's first; else the first `batches` batches).
static void eval_check_data(DataLoader* dl, const std::string& data, int batches, int B, int T) {
    const size_t available = evaluate_num_batches(*dl);
    if ((size_t)batches > available)
        fatal("too few tokens in %s for --batches %d: it holds %zu batches of B=%d, T=%d", data.c_str(), batches,
              available, B, T);
    if (batches == 0) {
        size_t tokens = 0, scored = 0;
        for (const TokenShard& s : dl->shards) {
            tokens += s.num_tokens - 1;
            scored += token_files_scored_targets(s, s.num_tokens - 1);
        }
        if (scored == 0)
            fatal("no scored tokens (%s): expected some answers, got loss masks that score none of its %zu tokens; "
                  "--loss-on all scores them all", data.c_str(), tokens);
        return;
    }
    for (int i = 0; i < batches; i++) {
        evaluate_load_batch(dl, (size_t)i);
        if (token_files_scored(dl->targets) > 0) return;
    }
    fatal("no scored tokens in the first %d batches (%s): expected some answers, got loss masks that score none; "
          "--batches all or --loss-on all scores some", batches, data.c_str());
}

int cmd_eval(int argc, char** argv) {
    CliArgs args = cli_parse(
        argc, argv, "eval", "gpt2 eval --model PATH (--data FILE [-B b] [-T t] [--batches n|all] | --hellaswag FILE)",
        "Prints the mean loss (and its perplexity) over the first n batches of consecutive (T+1)-token windows from "
        "token 0 or over every token of the file, or HellaSwag's acc and acc_norm (llm.c's completion-style "
        "scoring).",
        kEvalFlags, false);
    // Nothing to save on the way out: a stop signal ends the scoring with one line (signals.h).
    stop_catch_abort(args.has("hellaswag") ? "HellaSwag stopped before its end" : "eval stopped before its end; no loss");
    if (args.has("hellaswag") && args.has("lora-from"))
        fatal("conflicting flags (eval): --lora-from applies to --data; --hellaswag scores the base alone for now");
    if (args.has("hellaswag")) return cmd_eval_hellaswag(args);
    eval_check_hellaswag_flags(args);
    if (!args.has("data")) fatal("missing flag --data or --hellaswag (eval): expected token files or a HellaSwag file");
    const int B_asked = args.integer_in("batch", 1, 1 << 16), T = args.integer_in("tokens", 1, 1 << 20);
    const std::string batches_arg = args.str("batches");
    const bool all = batches_arg == "all";
    if (!all && batches_arg.find_first_not_of("0123456789") != std::string::npos)
        fatal("malformed value for --batches (eval): expected a count of batches or `all`, got '%s'",
              batches_arg.c_str());
    const int batches = all ? 0 : args.integer_in("batches", 1, 1 << 30);
    GPT2 model;
    checkpoint_load(&model, args.str("model"), cli_heads(args));
    if (args.on("force-base") && !args.has("lora-from"))
        fatal("flag --force-base (eval) needs --lora-from: it applies an adapter to another base");
    if (args.has("lora-from"))  // the fp32 weights the run fingerprinted
        lora_check_base(args.str("lora-from"), model, args.str("model"), args.on("force-base"), stderr);
    cli_set_precision(&model, args, true, args.has("lora-from"));  // an adapter's base: frozen, as it trained
    cli_check_tokens(args, T, model.cfg.max_seq_len);
    LoraModel lora;
    if (args.has("lora-from")) lora_apply(&model, &lora, args.str("lora-from"), B_asked * T);
    memory_check(gpt2_acts_bytes(model.cfg, B_asked, T, false), "activations for -B " + std::to_string(B_asked) +
                 " -T " + std::to_string(T), "lower -B or -T");
    DataLoader dl;
    token_files_masks = cli_loss_on(args);
    const int B = eval_open_data(&dl, args, model.cfg.vocab_size, B_asked, T);
    eval_check_data(&dl, args.str("data"), batches, B, T);
    // Progress on stderr: rewritten in place on a terminal, else a line at each tenth.
    ProgressLine line(stderr, progress_in_place(stderr, false), true);
    const double t0 = time_now_s(), total = all ? (double)(token_files_num_tokens(dl) - dl.shards.size()) : (double)batches * B * T;
    const auto progress = [&](double done) {
        if (stop_requested()) {  // stop_catch_abort's: the line ends before the interrupted one
            line.close();
            stop_point();
        }
        const double s = time_now_s() - t0;
        char text[160];
        snprintf(text, sizeof(text), "eval: %3.0f%% of %.0f tokens | %.0f tok/s | %s", 100 * done, total,
                 done * total / std::max(s, 1e-9), progress_eta(1 - done, s / std::max(done, 1e-9)).c_str());
        line.update(text, done);
    };
    double loss;
    if (all) {
        size_t tokens = 0, scored = 0;
        loss = evaluate_every_token(&model, &dl, &tokens, &scored, progress);
        if (scored == 0)
            fatal("no scored tokens (%s): expected some answers, got loss masks that score none of its %zu tokens; "
                  "--loss-on all scores them all", args.str("data").c_str(), tokens);
        printf("tokens %zu (all of %s after the first, each predicted once)\n", tokens, args.str("data").c_str());
        if (scored < tokens) printf("scored %zu of them (the answers, as the loss masks say)\n", scored);
    } else {
        size_t scored = 0;
        loss = evaluate_batches(&model, &dl, (size_t)batches, progress, &scored);
        if (scored == 0)
            fatal("no scored tokens in the first %d batches (%s): expected some answers, got loss masks that score "
                  "none; --batches all or --loss-on all scores some", batches, args.str("data").c_str());
        printf("batches %d of %d x %d tokens\n", batches, B, T);
        if (scored < (size_t)batches * B * T) printf("scored %zu of them (the answers, as the loss masks say)\n", scored);
    }
    line.close();
    if (!std::isfinite(loss))
        fatal("loss is %g on %s: the model's weights or activations overflow; expected a finite loss", loss,
              args.str("data").c_str());
    printf("perplexity %.4f\n", std::exp(loss));
    printf("loss %.6f\n", loss);
    return 0;
}
