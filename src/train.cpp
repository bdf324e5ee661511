// train.cpp: the `train` and `eval` commands: the training loop (data, AdamW, schedule, clipping,
// gradient accumulation, validation, logging) around the model of model.h.
#include <unistd.h>

#include <cmath>
#include <csignal>
#include <cstdio>
#include <string>

#include "checkpoint.h"
#include "cli.h"
#include "commands.h"
#include "dataloader.h"
#include "generate.h"
#include "model.h"
#include "optimizer.h"
#include "plot.h"
#include "tokenizer.h"
#include "train_state.h"
#include "util.h"

namespace {

const std::vector<CliFlag> kTrainFlags = {
    {"train", "", "data/tinyshakespeare/train.bin", "training token file (llm.c format)"},
    {"val", "", "data/tinyshakespeare/val.bin", "validation token file (default only with the default --train); \"\" skips"},
    {"model", "", "", "start from this checkpoint instead of a random init"},
    {"layers", "", "4", "layers of a from-scratch model"},
    {"heads", "", "4", "attention heads of a from-scratch model"},
    {"channels", "", "256", "channels (embedding size) of a from-scratch model"},
    {"seq-len", "", "256", "maximum context (positions) of a from-scratch model"},
    {"vocab", "", "50257", "vocabulary size of a from-scratch model"},
    {"batch", "B", "8", "sequences per micro-batch"},
    {"tokens", "T", "64", "tokens per sequence"},
    {"steps", "n", "200", "optimizer steps"},
    {"grad-accum", "", "1", "micro-batches per optimizer step"},
    {"lr", "", "1e-3", "peak learning rate"},
    {"warmup", "", "10", "linear warmup steps"},
    {"min-lr-frac", "", "0.1", "final learning rate as a fraction of --lr (cosine schedule)"},
    {"lr-schedule", "", "cosine", "cosine or constant"},
    {"beta1", "", "0.9", "AdamW beta1"},
    {"beta2", "", "0.95", "AdamW beta2"},
    {"eps", "", "1e-8", "AdamW epsilon"},
    {"weight-decay", "", "0.1", "AdamW decoupled weight decay (2-D weights only)"},
    {"grad-clip", "", "1.0", "clip the global gradient norm to this; 0 disables"},
    {"seed", "", "1337", "seed for init and data order"},
    {"val-every", "", "50", "validate every N steps (and after the last); 0 disables"},
    {"val-batches", "", "8", "validation batches"},
    {"log", "", "", "append one JSON line per step and per validation to this file"},
    {"out", "", "", "checkpoint directory: HuggingFace-layout model + train_state.safetensors"},
    {"save-every", "", "0", "save to --out every N steps (always after the last step); 0: only at the end"},
    {"stop-after", "", "0", "stop (and save) after N steps of this run, keeping the --steps schedule; 0: run to --steps"},
    {"resume", "", "", "continue exactly from a checkpoint directory written by --out"},
    {"plot", "", "", "loss plot PNG (800x500), refreshed at each validation (default: loss.png in --out)"},
    {"sample-every", "", "0", "print a generated sample every N steps; 0: only after the last step"},
    {"sample-tokens", "", "64", "tokens per sample; 0 disables samples (and the tokenizer)"},
    {"tokenizer", "", "", "tokenizer directory for samples (default: $GPT2_DATA_DIR/gpt2 or data/gpt2)"},
};

// Mean loss over the first `batches` consecutive batches of dl.
float evaluate(GPT2* model, DataLoader* dl, size_t batches) {
    double sum = 0;
    for (size_t i = 0; i < batches; i++) {
        dataloader_batch_at(dl, i);
        sum += gpt2_forward(model, dl->inputs.data(), dl->targets.data(), dl->B, dl->T);
    }
    return (float)(sum / batches);
}

// Prints a sample from <|endoftext|> with the generator's defaults (temperature 1, top-k 50). It runs for
// the full length, showing a further <|endoftext|> as a blank line, so a young model's early end of text
// does not cut the sample short.
void print_sample(const GPT2& model, const Tokenizer& tok, int tokens, uint64_t seed) {
    GenerateOptions opts;
    opts.max_tokens = tokens;
    opts.stop_at_eot = false;
    Rng rng(seed);
    TokenDecoder decoder(tok);
    printf("---- sample ----\n");
    generate(model, {kTokenizerEot}, opts, &rng,
             [&](int id) {
                 fputs(id == kTokenizerEot ? (decoder.flush() + "\n\n").c_str() : decoder.push(id).c_str(), stdout);
             },
             nullptr);
    printf("%s\n----------------\n", decoder.flush().c_str());
    fflush(stdout);
}

// Flags a resumed run must keep: they shape the model or the data order.
const char* const kFixedOnResume[] = {"train", "batch", "tokens", "grad-accum", "seed", "model",
                                      "layers", "heads", "channels", "seq-len", "vocab"};

volatile sig_atomic_t g_interrupted = 0;
void on_sigint(int) {
    g_interrupted = 1;
    signal(SIGINT, SIG_DFL);  // a second Ctrl-C ends the process at once
}

// The flags a checkpoint records: those given, plus the effective values of the ones a resumed run must
// keep, defaults included, so a resume can tell a change.
std::vector<std::pair<std::string, std::string>> run_flags(const CliArgs& args) {
    std::vector<std::pair<std::string, std::string>> flags;
    for (size_t i = 0; i < args.names.size(); i++)
        if (args.names[i] != "resume") flags.push_back({args.names[i], args.values[i]});
    for (const char* name : kFixedOnResume)
        if (!args.has(name) && std::string(name) != "model") flags.push_back({name, args.str(name)});
    return flags;
}

// Bytes of MemAvailable in /proc/meminfo, or 0 when unknown.
size_t available_memory() {
    FILE* f = fopen("/proc/meminfo", "r");
    if (!f) return 0;
    char line[256];
    size_t kb = 0;
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, "MemAvailable: %zu kB", &kb) == 1) break;
    fclose(f);
    return kb * 1024;
}

// Prints what training will allocate and stops before allocating if the machine does not have it.
void check_memory(const GPT2Config& cfg, int B, int T) {
    const double mib = 1024.0 * 1024.0;
    size_t params = layout_params_size(layout_params(cfg)) * sizeof(float);
    size_t acts = layout_params_size(layout_acts(cfg, B, T)) * sizeof(float);
    size_t total = 4 * params + 2 * acts;  // params, grads, AdamW m and v; activations and their gradients
    printf("memory: %.0f MiB (parameters, gradients and AdamW state %.0f MiB, activations %.0f MiB)\n", total / mib,
           4 * params / mib, 2 * acts / mib);
    size_t avail = available_memory();
    if (avail > 0 && total > avail)
        fatal_hint("lower -B or -T, or train a smaller model",
                   "not enough memory (train): expected %.0f MiB, the machine has %.0f MiB available", total / mib,
                   avail / mib);
}

std::string format_duration(double s) {
    char buf[32];
    int t = (int)(s + 0.5);
    if (t >= 3600) snprintf(buf, sizeof(buf), "%dh%02dm", t / 3600, t / 60 % 60);
    else snprintf(buf, sizeof(buf), "%dm%02ds", t / 60, t % 60);
    return buf;
}

}  // namespace

int cmd_train(int argc, char** argv) {
    CliArgs args = cli_parse(argc, argv, "train", "gpt2 train [flags]",
                             "Trains GPT-2 on a token file with AdamW, from scratch, from --model, or continuing "
                             "exactly from --resume. Ctrl-C finishes the step, saves to --out and exits 130.",
                             kTrainFlags, false);
    TrainState resume;
    const bool resuming = args.has("resume");
    if (resuming) {
        const std::string dir = args.str("resume");
        if (args.has("model")) fatal("conflicting flags (train): --resume continues its own model; drop --model");
        train_state_read(&resume, dir);
        for (const char* name : kFixedOnResume)
            for (const auto& kv : resume.flags)
                if (kv.first == name && args.has(name) && args.str(name) != kv.second)
                    fatal("bad value for --%s (train): a resumed run keeps %s, got %s", name, kv.second.c_str(),
                          args.str(name).c_str());
        // stored flags first, the new command line after them: later values win
        CliArgs merged = args;
        merged.names.clear();
        merged.values.clear();
        for (const auto& kv : resume.flags)
            if (kv.first != "model") merged.names.push_back(kv.first), merged.values.push_back(kv.second);
        merged.names.insert(merged.names.end(), args.names.begin(), args.names.end());
        merged.values.insert(merged.values.end(), args.values.begin(), args.values.end());
        args = merged;
    }
    const int B = args.integer_in("batch", 1, 1 << 16), T = args.integer_in("tokens", 1, 1 << 20);
    const int steps = args.integer_in("steps", 0, 1 << 30), accum = args.integer_in("grad-accum", 1, 1 << 16);
    const uint64_t seed = (uint64_t)args.integer("seed");
    AdamWConfig opt_cfg;
    opt_cfg.lr = (float)args.number_in("lr", 0, 10);
    opt_cfg.beta1 = (float)args.number_in("beta1", 0, 0.999999);
    opt_cfg.beta2 = (float)args.number_in("beta2", 0, 0.999999);
    opt_cfg.eps = (float)args.number_in("eps", 0, 1);
    opt_cfg.weight_decay = (float)args.number_in("weight-decay", 0, 10);
    const float grad_clip = (float)args.number_in("grad-clip", 0, 1e9), min_lr_frac = (float)args.number_in("min-lr-frac", 0, 1);
    const int warmup = args.integer_in("warmup", 0, 1 << 30);
    const std::string schedule = args.str("lr-schedule");
    if (schedule != "cosine" && schedule != "constant")
        fatal("bad value for --lr-schedule (train): expected cosine or constant, got '%s'", schedule.c_str());
    const int val_every = args.integer_in("val-every", 0, 1 << 30), val_batches = args.integer_in("val-batches", 1, 1 << 20);
    const int save_every = args.integer_in("save-every", 0, 1 << 30), stop_after = args.integer_in("stop-after", 0, 1 << 30);
    const std::string out = args.has("out") ? args.str("out") : "";
    // the plot lives in the checkpoint directory unless --plot puts it elsewhere
    const bool plot_in_out = !args.has("plot") && !out.empty();
    const std::string plot_path = args.has("plot") ? args.str("plot") : plot_in_out ? path_join(out, "loss.png") : "";
    if (save_every > 0 && out.empty()) fatal("missing flag --out (train): --save-every needs a directory to save to");

    GPT2 model;
    if (resuming) {
        checkpoint_load(&model, args.str("resume"));
    } else if (args.has("model")) {
        checkpoint_load(&model, args.str("model"), args.has("heads") ? args.integer_in("heads", 1, 65536) : 0);
    } else {
        GPT2Config cfg = config_make(args.integer_in("seq-len", 1, 1 << 20), args.integer_in("vocab", 1, 65536),
                                     args.integer_in("layers", 1, 1000), args.integer_in("heads", 1, 65536),
                                     args.integer_in("channels", 1, 65536));
        config_validate(cfg, "train flags");
        if (T <= cfg.max_seq_len) check_memory(cfg, B, T);
        gpt2_build(&model, cfg, "train flags");
        gpt2_init_random(&model, seed);
    }
    const GPT2Config& cfg = model.cfg;
    if (T > cfg.max_seq_len)
        fatal("bad value for -T (train): expected <= %d (the model's context), got %d", cfg.max_seq_len, T);
    printf("model: %d layers, %d heads, %d channels, context %d, vocab %d: %.2fM parameters\n", cfg.num_layers,
           cfg.num_heads, cfg.channels, cfg.max_seq_len, cfg.vocab_size, gpt2_num_real_params(cfg) / 1e6);
    if (args.has("model") || resuming) check_memory(cfg, B, T);  // loaded models are sized by their file

    DataLoader train_dl, val_dl;
    dataloader_init(&train_dl, args.str("train"), cfg.vocab_size, B, T, true, seed);
    // The default val file belongs to the default train file; custom training data validates only on --val.
    const std::string val_path = args.has("val") ? args.str("val") : args.has("train") ? "" : args.str("val");
    const bool do_val = val_every > 0 && !val_path.empty();
    size_t val_n = 0;
    if (do_val) {
        dataloader_init(&val_dl, val_path, cfg.vocab_size, B, T, false, seed);
        val_n = std::min((size_t)val_batches, dataloader_num_batches(val_dl));
    }
    AdamW opt;
    LossHistory history;
    int first_step = 0;
    if (resuming) {
        train_state_restore(resume, model, &opt, &train_dl, &history);
        first_step = resume.step;
        printf("resumed %s at step %d\n", args.str("resume").c_str(), first_step);
    }
    printf("data: %zu train tokens; %s; %d steps of %d x %d x %d tokens\n", train_dl.tokens.size(),
           do_val ? (std::to_string(val_dl.tokens.size()) + " val tokens").c_str() : "no validation", steps, accum, B, T);

    const int sample_every = args.integer_in("sample-every", 0, 1 << 30);
    const int sample_tokens = args.integer_in("sample-tokens", 0, 1 << 20);
    Tokenizer tok;
    if (sample_tokens > 0)  // load before training so a missing tokenizer fails fast
        tokenizer_load_for_model(&tok, args.has("tokenizer") ? args.str("tokenizer") : "", cfg.vocab_size,
                                 "--sample-tokens 0 trains without samples");

    FILE* log = nullptr;
    if (args.has("log")) {
        log = fopen(args.str("log").c_str(), "a");
        if (!log) fatal("cannot open log file (--log %s)", args.str("log").c_str());
    }
    g_interrupted = 0;
    signal(SIGINT, on_sigint);
    const bool tty = isatty(STDOUT_FILENO);
    double ms_sum = 0;
    int ms_count = 0;
    bool progress_open = false;  // the terminal's updating line needs a newline before any other line
    auto close_progress = [&] {
        if (progress_open) printf("\n");
        progress_open = false;
    };
    int step = first_step;
    while (step < steps) {
        double t0 = time_now_s();
        gpt2_zero_grad(&model);
        double loss = 0;
        for (int micro = 0; micro < accum; micro++) {
            dataloader_next(&train_dl);
            loss += gpt2_forward(&model, train_dl.inputs.data(), train_dl.targets.data(), B, T) / accum;
            gpt2_backward(&model, 1.0f / accum);
        }
        if (!std::isfinite(loss))
            fatal("loss is %f at step %d: training diverged; the last checkpoint (if any) is kept", loss, step + 1);
        float norm = optimizer_grad_norm(model);
        float lr = lr_schedule(step, steps, opt_cfg.lr, warmup, min_lr_frac, schedule == "cosine");
        adamw_update(&opt, &model, opt_cfg, lr, optimizer_clip_factor(norm, grad_clip));  // clipping folded in
        step++;
        double ms = (time_now_s() - t0) * 1e3;
        ms_sum += ms, ms_count++;
        history.train.push_back({step, (float)loss});
        if (tty) {  // one updating line: step/total, loss, tokens/s, ETA
            double avg = ms_sum / ms_count;
            printf("\rstep %d/%d | loss %.4f | %.0f tok/s | ETA %s\033[K", step, steps, loss,
                   (double)B * T * accum / (ms / 1e3), format_duration(avg * (steps - step) / 1e3).c_str());
            progress_open = true;
        } else {
            printf("step %5d/%d | loss %.6f | lr %.3e | norm %.4f | %.1f ms\n", step, steps, loss, lr, norm, ms);
        }
        fflush(stdout);
        if (log) fprintf(log, "{\"step\":%d,\"loss\":%.6f,\"lr\":%.6e,\"norm\":%.6f,\"ms\":%.3f}\n", step, loss, lr, norm, ms);
        const bool last = step == steps || (stop_after > 0 && step - first_step == stop_after) || g_interrupted;
        if (do_val && (step % val_every == 0 || last)) {
            float val_loss = evaluate(&model, &val_dl, val_n);
            close_progress();
            printf("step %5d/%d | val loss %.6f\n", step, steps, val_loss);
            history.val.push_back({step, val_loss});
            if (!plot_path.empty() && (!plot_in_out || dir_exists(out))) plot_losses(plot_path, history.train, history.val);
            if (log) fprintf(log, "{\"step\":%d,\"val_loss\":%.6f}\n", step, val_loss);
        }
        if (log) fflush(log);
        if (sample_tokens > 0 && ((sample_every > 0 && step % sample_every == 0) || last)) {
            close_progress();
            print_sample(model, tok, sample_tokens, seed + step);
        }
        if (!out.empty() && ((save_every > 0 && step % save_every == 0) || last)) {
            train_state_save(out, model, opt, train_dl, step, run_flags(args), history, plot_in_out ? "loss.png" : "");
            close_progress();
            printf("saved %s at step %d\n", out.c_str(), step);
        }
        if (last) break;
    }
    if (log) fclose(log);
    close_progress();
    signal(SIGINT, SIG_DFL);
    if (g_interrupted) {
        fprintf(stderr, "interrupted at step %d%s\n", step, out.empty() ? "" : (", saved " + out).c_str());
        return 130;
    }
    return 0;
}

static const std::vector<CliFlag> kEvalFlags = {
    {"model", "", "", "checkpoint to evaluate"},
    {"data", "", "", "token file (llm.c format)"},
    {"batch", "B", "4", "sequences per batch"},
    {"tokens", "T", "64", "tokens per sequence"},
    {"batches", "n", "0", "batches to average; 0 means every whole batch in the file"},
    kCliHeadsFlag,
};

int cmd_eval(int argc, char** argv) {
    CliArgs args = cli_parse(argc, argv, "eval", "gpt2 eval --model PATH --data FILE [-B b] [-T t] [--batches n]",
                             "Prints the mean loss over the first n consecutive (B, T+1) windows from token 0.",
                             kEvalFlags, false);
    const int B = args.integer_in("batch", 1, 1 << 16), T = args.integer_in("tokens", 1, 1 << 20);
    const int batches = args.integer_in("batches", 0, 1 << 30);
    GPT2 model;
    checkpoint_load(&model, args.str("model"), (int)args.integer("heads"));
    if (T > model.cfg.max_seq_len)
        fatal("bad value for -T (eval): expected <= %d (the model's context), got %d", model.cfg.max_seq_len, T);
    DataLoader dl;
    dataloader_init(&dl, args.str("data"), model.cfg.vocab_size, B, T, false, 0);
    size_t available = dataloader_num_batches(dl);
    if ((size_t)batches > available)
        fatal("too few tokens in %s for --batches %d: it holds %zu batches of B=%d, T=%d", args.str("data").c_str(),
              batches, available, B, T);
    size_t n = batches ? (size_t)batches : available;
    float loss = evaluate(&model, &dl, n);
    printf("batches %zu of %d x %d tokens\n", n, B, T);
    printf("loss %.6f\n", loss);
    return 0;
}
