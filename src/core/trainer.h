// trainer.h: a training run in progress: the model, AdamW, data, loss history and outputs, and the loop
// that advances it one optimizer step at a time (batch, forward, backward, norm, clip, update, log, then
// validate / save / sample when due). Building the options from flags and resuming a checkpoint's flags
// belong to the command (cli/train_cmd.cpp); this knows no flags.
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "report/progress.h"
#include "platform/output_files.h"
#include "platform/threads.h"
#include "core/dataloader.h"
#include "core/model.h"
#include "text/tokenizer.h"
#include "dist/grad_sync.h"
#include "core/optimizer.h"
#include "report/run_log.h"
#include "formats/train_state.h"

// Everything a run is given, read from the (merged) flags once.
struct TrainOptions {
    int B, T, steps, accum;
    uint64_t seed;
    AdamWConfig adamw;
    float grad_clip, min_lr_frac;
    int warmup;
    bool cosine, shuffle;  // shuffle: the training data's shard and window order (else sequential)
    int val_every, val_batches, save_every, stop_after, sample_every, sample_tokens;
    std::string train_path, resume_dir, out, plot_path, val_path;  // out: "" for none; val_path: "" for none
    bool plot_in_out;                                              // loss.png saved into --out with each checkpoint
    // Memory: --recompute, --optimizer-in-backward (gpt2_enable_training's TrainingMemory) and
    // --optimizer-state bf16 (AdamW::bf16).
    TrainingMemory mem;
    bool bf16_moments = false;
    // --zero 1 under mpirun: each rank keeps its slice of AdamW's state (dist_slices), the gradients are
    // reduce-scattered and the updated weights all-gathered. saving: rank 0 saves (--out), known on every
    // rank, since a ZeRO-1 save gathers the moments from all of them.
    bool zero = false, saving = false;
    bool out_is_resume = false;  // --out is the --resume directory (known on every rank too)
};


// The step lines (report/progress.h): one line rewritten in place on a terminal, one line per step
// otherwise, with the same fields: step, loss, lr, norm, ms, tok/s and the ETA.
struct Progress {
    ProgressLine line{stdout, false, false};  // set up by trainer_run
    double ms_sum = 0;                        // of the steps after this run's first (which warms up)
    int count = 0;
    void step(int step, int steps, double loss, float lr, float norm, double ms, double tokens);
    void close() { line.close(); }  // before any other line
};

// A run in progress: the model, its optimizer, data, history and outputs.
struct Trainer {
    TrainOptions opts;
    std::vector<std::pair<std::string, std::string>> run_flags;  // what the checkpoint records
    GPT2 model;
    AdamW opt;
    DataLoader train_dl, val_dl;
    size_t val_n = 0;
    LossHistory history;
    AppendFile log;  // --log; every write checked: a log that cannot be written stops the run
    Tokenizer tok;
    Progress progress;
    bool saved = false;
    ThreadTuner tuner;  // the team size of each step
    GradSync sync;      // what each step shares with the other ranks (none without mpirun): grad_sync_init
};

// Opens the training data (seeded order) and the validation data (in order) of t->opts.
void trainer_load_data(Trainer* t);
// Saves t->opts.out after `step` steps (with the loss plot when t->opts.plot_in_out) and says so. With ZeRO-1
// every rank calls it (it gathers the moments into rank 0, which saves).
void trainer_save(Trainer* t, int step);
// Runs steps first_step+1.. until --steps, --stop-after or a stop signal; returns the last step done.
int trainer_run(Trainer* t, int first_step);
