// trainer.h: one optimizer step: grad-accum micro-batches (batch, forward, backward), the global gradient
// norm, clipping and AdamW. gpt2-core (core/main.cpp) and `gpt2 train` run this same step; what `gpt2 train`
// adds comes in through StepHooks, and the run around the steps is cli/train_run.h's.
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

// The step's seams, called in this order. The defaults are one process alone: nothing shared, nothing
// waited for. `gpt2 train` overrides them (dist/grad_sync.h under mpirun, the thread team, signals).
struct StepHooks {
    virtual ~StepHooks() = default;
    virtual void begin() {}
    virtual float loss_scale(int accum) { return 1.0f / (float)accum; }  // 1 / micro-batches of all processes
    // gpt2_backward's layer_done for the last micro-batch, or empty.
    virtual std::function<void(int layer)> layer_done() { return nullptr; }
    virtual void backward_done() {}
    virtual double loss(double mine) { return mine; }  // the step's mean loss over every process
    virtual int stop() { return 0; }                   // a stop signal every process agreed on, or 0
    virtual float norm(const GPT2& model, const AdamW& opt) { return optimizer_grad_norm(model); }
    virtual void updated(GPT2* model) {}
    virtual void end() {}
    // The training data failed (dataloader_try_next's message) at `step`: reports it and does not return.
    [[noreturn]] virtual void data_failed(int step, const std::string& err);
};

struct StepStats {
    double loss;
    float norm, lr, ms;
    int stop;  // the stop signal every process agreed on during the step (StepHooks::stop)
};

// The model, its optimizer and its data: what the steps advance.
struct Trainer {
    TrainOptions opts;
    GPT2 model;
    AdamW opt;
    DataLoader train_dl;
    StepHooks* hooks = nullptr;  // nullptr: StepHooks' defaults
};

// One optimizer step (step counts from 0). A non-finite loss or norm is fatal before the update
// (train_check_finite); an update that left a non-finite value in AdamW's state or the weights (only an
// unclipped step can) is fatal after it (train_check_update).
StepStats train_step(Trainer* t, int step);
void train_check_finite(double loss, float norm, int step);
void train_check_update(const Trainer& t, float norm, int step);
