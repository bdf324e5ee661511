// trainer.h: one optimizer step (micro-batches, the gradient norm, clipping, AdamW): gpt2-core's and `gpt2 train`'s.
#pragma once
#include <cstdint>
#include <functional>
#include <string>

#include "core/dataloader.h"
#include "core/model.h"
#include "core/optimizer.h"

// What a step needs to know, read from the flags once.
struct TrainOptions {
    int B = 8, T = 64, steps = 200, accum = 1;
    uint64_t seed = 1337;
    AdamWConfig adamw;
    float grad_clip = 1.0f, min_lr_frac = 0.1f;
    int warmup = 10;
    bool cosine = true, shuffle = true;  // shuffle: the training data's shard and window order (else sequential)
};

// The step's seams, in call order; the defaults are one process alone (cli/train_run.h: ranks, threads, signals).
struct StepHooks {
    virtual ~StepHooks() = default;
    virtual void begin() {}
    // No target scored in the step (loss masks, every rank's): a mean over none is NaN, so no forward, no update.
    virtual bool scores_nothing() { return false; }
    virtual float loss_scale(int accum) { return 1.0f / (float)accum; }  // per micro-batch: its share of the step
    virtual std::function<void(int layer)> layer_done() { return nullptr; }  // gpt2_backward's, last micro-batch
    virtual void backward_done() {}
    virtual double loss(double mine) { return mine; }  // the step's loss: every process's shares summed
    virtual int stop() { return 0; }                   // a stop signal every process agreed on, or 0
    virtual float norm(const GPT2& model, const AdamW& opt) { return optimizer_grad_norm(model); }
    virtual void update(GPT2* model, AdamW* opt, const AdamWConfig& cfg, float lr, float grad_scale) {
        adamw_update(opt, model, cfg, lr, grad_scale);  // lora/'s run updates its adapter instead
    }
    virtual void updated(GPT2* model) {}
    virtual void end() {}
    [[noreturn]] virtual void data_failed(int step, const std::string& err);  // reports the data's failure
};

struct StepStats {
    double loss;
    float norm, lr, ms;
    int stop;  // the stop signal every process agreed on during the step (StepHooks::stop)
    bool skipped = false;  // StepHooks::scores_nothing: no loss (NaN), no update
};

// The model, its optimizer and its data: what the steps advance.
struct Trainer {
    TrainOptions opts;
    GPT2 model;
    AdamW opt;
    DataLoader train_dl;
    StepHooks* hooks = nullptr;  // nullptr: StepHooks' defaults
};

// One optimizer step (from 0): fatal on a non-finite loss or norm, or on a non-finite value the update left.
StepStats train_step(Trainer* t, int step);
void train_check_finite(double loss, float norm, int step);
void train_check_update(const Trainer& t, float norm, int step);
