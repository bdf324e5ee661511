// train.cpp: the `train` and `eval` commands: the training loop (data, AdamW, schedule, clipping,
// gradient accumulation, validation, logging) around the model of model.h.
#include <cmath>
#include <cstdio>
#include <string>

#include "checkpoint.h"
#include "cli.h"
#include "commands.h"
#include "dataloader.h"
#include "model.h"
#include "optimizer.h"
#include "util.h"

namespace {

const std::vector<CliFlag> kTrainFlags = {
    {"train", "", "data/tinyshakespeare/train.bin", "training token file (llm.c format)"},
    {"val", "", "data/tinyshakespeare/val.bin", "validation token file; \"\" to skip validation"},
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
    {"out", "", "", "save the final model here (HuggingFace layout)"},
};

int flag_int(const CliArgs& args, const char* name, long long lo, long long hi) {
    long long v = args.integer(name);
    if (v < lo || v > hi)
        fatal("bad value for --%s (%s): expected %lld..%lld, got %lld", name, args.command.c_str(), lo, hi, v);
    return (int)v;
}

float flag_float(const CliArgs& args, const char* name, double lo, double hi) {
    double v = args.number(name);
    if (v < lo || v > hi) fatal("bad value for --%s (%s): expected %g..%g, got %g", name, args.command.c_str(), lo, hi, v);
    return (float)v;
}

// Mean loss over the first `batches` consecutive batches of dl.
float evaluate(GPT2* model, DataLoader* dl, size_t batches) {
    double sum = 0;
    for (size_t i = 0; i < batches; i++) {
        dataloader_batch_at(dl, i);
        sum += gpt2_forward(model, dl->inputs.data(), dl->targets.data(), dl->B, dl->T);
    }
    return (float)(sum / batches);
}

}  // namespace

int cmd_train(int argc, char** argv) {
    CliArgs args = cli_parse(argc, argv, "train", "gpt2 train [flags]",
                             "Trains GPT-2 on a token file with AdamW, from scratch or from --model.", kTrainFlags,
                             false);
    const int B = flag_int(args, "batch", 1, 1 << 16), T = flag_int(args, "tokens", 1, 1 << 20);
    const int steps = flag_int(args, "steps", 0, 1 << 30), accum = flag_int(args, "grad-accum", 1, 1 << 16);
    const uint64_t seed = (uint64_t)args.integer("seed");
    AdamWConfig opt_cfg;
    opt_cfg.lr = flag_float(args, "lr", 0, 10);
    opt_cfg.beta1 = flag_float(args, "beta1", 0, 0.999999);
    opt_cfg.beta2 = flag_float(args, "beta2", 0, 0.999999);
    opt_cfg.eps = flag_float(args, "eps", 0, 1);
    opt_cfg.weight_decay = flag_float(args, "weight-decay", 0, 10);
    const float grad_clip = flag_float(args, "grad-clip", 0, 1e9), min_lr_frac = flag_float(args, "min-lr-frac", 0, 1);
    const int warmup = flag_int(args, "warmup", 0, 1 << 30);
    const std::string schedule = args.str("lr-schedule");
    if (schedule != "cosine" && schedule != "constant")
        fatal("bad value for --lr-schedule (train): expected cosine or constant, got '%s'", schedule.c_str());
    const int val_every = flag_int(args, "val-every", 0, 1 << 30), val_batches = flag_int(args, "val-batches", 1, 1 << 20);

    GPT2 model;
    if (args.has("model")) {
        checkpoint_load(&model, args.str("model"));
    } else {
        GPT2Config cfg = config_make(flag_int(args, "seq-len", 1, 1 << 20), flag_int(args, "vocab", 1, 65536),
                                     flag_int(args, "layers", 1, 1000), flag_int(args, "heads", 1, 65536),
                                     flag_int(args, "channels", 1, 65536));
        gpt2_build(&model, cfg, "train flags");
        gpt2_init_random(&model, seed);
    }
    const GPT2Config& cfg = model.cfg;
    if (T > cfg.max_seq_len)
        fatal("bad value for -T (train): expected <= %d (the model's context), got %d", cfg.max_seq_len, T);
    printf("model: %d layers, %d heads, %d channels, context %d, vocab %d: %.2fM parameters\n", cfg.num_layers,
           cfg.num_heads, cfg.channels, cfg.max_seq_len, cfg.vocab_size, gpt2_num_real_params(cfg) / 1e6);

    DataLoader train_dl, val_dl;
    dataloader_init(&train_dl, args.str("train"), cfg.vocab_size, B, T, true, seed);
    const std::string val_path = args.has("val") ? args.str("val") : (file_exists(args.str("val")) ? args.str("val") : "");
    const bool do_val = val_every > 0 && !val_path.empty();
    size_t val_n = 0;
    if (do_val) {
        dataloader_init(&val_dl, val_path, cfg.vocab_size, B, T, false, seed);
        val_n = std::min((size_t)val_batches, dataloader_num_batches(val_dl));
    }
    printf("data: %zu train tokens, %zu val tokens; %d steps of %d x %d x %d tokens\n", train_dl.tokens.size(),
           do_val ? val_dl.tokens.size() : (size_t)0, steps, accum, B, T);

    FILE* log = nullptr;
    if (args.has("log")) {
        log = fopen(args.str("log").c_str(), "a");
        if (!log) fatal("cannot open log file (--log %s)", args.str("log").c_str());
    }
    AdamW opt;
    for (int step = 0; step < steps; step++) {
        double t0 = time_now_s();
        gpt2_zero_grad(&model);
        double loss = 0;
        for (int micro = 0; micro < accum; micro++) {
            dataloader_next(&train_dl);
            loss += gpt2_forward(&model, train_dl.inputs.data(), train_dl.targets.data(), B, T) / accum;
            gpt2_backward(&model, 1.0f / accum);
        }
        if (!std::isfinite(loss)) fatal("loss is %f at step %d: training diverged", loss, step + 1);
        float norm = optimizer_clip_grads(&model, grad_clip);
        float lr = lr_schedule(step, steps, opt_cfg.lr, warmup, min_lr_frac, schedule == "cosine");
        adamw_update(&opt, &model, opt_cfg, lr);
        double ms = (time_now_s() - t0) * 1e3;
        printf("step %5d/%d | loss %.6f | lr %.3e | norm %.4f | %.1f ms\n", step + 1, steps, loss, lr, norm, ms);
        fflush(stdout);
        if (log) fprintf(log, "{\"step\":%d,\"loss\":%.6f,\"lr\":%.6e,\"norm\":%.6f,\"ms\":%.3f}\n", step + 1, loss, lr, norm, ms);
        if (do_val && ((step + 1) % val_every == 0 || step + 1 == steps)) {
            float val_loss = evaluate(&model, &val_dl, val_n);
            printf("step %5d/%d | val loss %.6f\n", step + 1, steps, val_loss);
            if (log) fprintf(log, "{\"step\":%d,\"val_loss\":%.6f}\n", step + 1, val_loss);
        }
        if (log) fflush(log);
    }
    if (log) fclose(log);
    if (args.has("out")) {
        checkpoint_save_hf(model, args.str("out"));
        printf("saved %s\n", args.str("out").c_str());
    }
    return 0;
}

static const std::vector<CliFlag> kEvalFlags = {
    {"model", "", "", "checkpoint to evaluate"},
    {"data", "", "", "token file (llm.c format)"},
    {"batch", "B", "4", "sequences per batch"},
    {"tokens", "T", "64", "tokens per sequence"},
    {"batches", "n", "0", "batches to average; 0 means every whole batch in the file"},
};

int cmd_eval(int argc, char** argv) {
    CliArgs args = cli_parse(argc, argv, "eval", "gpt2 eval --model PATH --data FILE [-B b] [-T t] [--batches n]",
                             "Prints the mean loss over the first n consecutive (B, T+1) windows from token 0.",
                             kEvalFlags, false);
    const int B = flag_int(args, "batch", 1, 1 << 16), T = flag_int(args, "tokens", 1, 1 << 20);
    const int batches = flag_int(args, "batches", 0, 1 << 30);
    GPT2 model;
    checkpoint_load(&model, args.str("model"));
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
