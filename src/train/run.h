// run.h: a `gpt2 train` run: its steps (step.h) and what goes on around them: validation, saves, samples,
// the progress line, the log and the plot. Building the options from flags and resuming a checkpoint's
// flags belong to the command (cli/train_cmd.cpp); this knows no flags.
#pragma once
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "core/trainer.h"
#include "dist/grad_sync.h"
#include "formats/train_state.h"
#include "lora/lora.h"
#include "memory/memory.h"
#include "platform/output_files.h"
#include "platform/threads.h"
#include "report/progress.h"
#include "report/run_log.h"
#include "text/tokenizer.h"

// What the run does around its steps, read from the (merged) flags once.
struct RunOptions {
    int val_every = 0, val_batches = 0, save_every = 0, stop_after = 0, sample_every = 0, sample_tokens = 0;
    std::string train_path, resume_dir, out, plot_path, val_path;  // out: "" for none; val_path: "" for none
    bool plot_in_out = false;                                      // loss.png saved into --out with each checkpoint
    // Memory: --recompute(-blocks), --optimizer-in-backward (memory/'s TrainingMemory) and
    // --optimizer-state: fp32, bf16 (precision/adamw_bf16.h) or 8bit (precision/adamw_8bit.h).
    TrainingMemory mem;
    std::string moments = "fp32";
    // --zero 1 under mpirun: each rank keeps its slice of AdamW's state (dist_slices), the gradients are
    // reduce-scattered and the updated weights all-gathered. saving: rank 0 saves (--out), known on every
    // rank, since a ZeRO-1 save gathers the moments from all of them.
    bool zero = false, saving = false;
    bool out_is_resume = false;  // --out is the --resume directory (known on every rank too)
    bool lora = false;           // --lora: an adapter on the frozen --model
    bool masked = false;         // a train shard has a loss mask that --loss-on answer applies
};

// A step of `gpt2 train` (step.h's run_step): the core's figures, the stop signal every rank agreed on, and
// whether it was skipped (its batches score no target, on any rank: no loss (NaN), no update).
struct RunStepStats : StepStats {
    int stop = 0;
    bool skipped = false;
};

// The step lines (report/progress.h): one line rewritten in place on a terminal, one line per step
// otherwise, with the same fields: step, loss, lr, norm, ms, tok/s and the ETA.
struct Progress {
    ProgressLine line{stdout, false, false};  // set up by trainer_run
    double ms_sum = 0;                        // of the steps after this run's first (which warms up)
    double first_ms = 0;                      // the first's, the ETA's until there is another
    int count = 0;                            // steps timed: skipped ones are not
    // A skipped step (RunStepStats::skipped) shows "loss -- (no scored token in this batch)" and no speed.
    void step(int step, int steps, const RunStepStats& s, double tokens);
    void close() { line.close(); }  // before any other line
};

// A run in progress: the core's trainer, and its validation, history and outputs.
struct TrainRun : Trainer {
    RunOptions run;
    std::vector<std::pair<std::string, std::string>> run_flags;  // what the checkpoint records
    DataLoader val_dl;
    size_t val_n = 0;
    LossHistory history;
    AppendFile log;  // --log; every write checked: a log that cannot be written stops the run
    Tokenizer tok;
    Progress progress;
    bool saved = false;
    ThreadTuner tuner;  // the team size of each step
    GradSync sync;      // what each step shares with the other ranks (none without mpirun): grad_sync_init
    std::unique_ptr<LoraModel> lora;  // --lora: the adapter trained on the frozen model (its base)
    TrainRun() = default;
    TrainRun(const TrainRun&) = delete;
    TrainRun& operator=(const TrainRun&) = delete;
};

// Opens the training data (seeded order) and the validation data (in order) of t->run.
void trainer_load_data(TrainRun* t);
// Saves t->run.out after `step` steps (with the loss plot when t->run.plot_in_out) and says so. With ZeRO-1
// every rank calls it (it gathers the moments into rank 0, which saves).
void trainer_save(TrainRun* t, int step);
// Runs steps first_step+1.. until --steps, --stop-after or a stop signal; returns the last step done.
int trainer_run(TrainRun* t, int first_step);
// The training data changed under the run (dataloader_try_next's message `err`): saves the state before
// `step` when there is somewhere to (one process: with several, the other ranks wait in a sum and fatal
// aborts them all), then fatal.
[[noreturn]] void trainer_fail_on_data(TrainRun* t, int step, const std::string& err);
