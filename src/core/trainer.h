// trainer.h: one optimizer step (micro-batches, the gradient norm, clipping, AdamW): gpt2-core's.
#pragma once
#include <cstdint>
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

struct StepStats {
    double loss;
    float norm, lr, ms;
};

// The model, its optimizer and its data: what the steps advance.
struct Trainer {
    TrainOptions opts;
    GPT2 model;
    AdamW opt;
    DataLoader train_dl;
};

// One optimizer step (from 0), one process alone: fatal on a data error, a non-finite loss or norm, or a
// non-finite value the update left. `gpt2 train` runs its own (train/step.h), which adds ranks, loss masks,
// LoRA and the update inside the backward, and agrees with this one bit for bit where they meet.
StepStats train_step(Trainer* t, int step);
void train_check_finite(double loss, float norm, int step);
// A non-finite value the update of p left (a run diverged) is fatal.
void train_check_update(const AdamW& opt, const ParamSet& p, float norm, float grad_clip, int step);
