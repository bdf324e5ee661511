// step.h: one optimizer step of `gpt2 train`, written out in order in step.cpp: the thread team, the
// step's micro-batches read (their scored targets counted as they are read), the loss shares, zero-grad,
// forward and backward (each layer's gradients sent to the other ranks as the backward goes), the sums, the
// norm, the schedule, then the update chosen once per run: AdamW, the LoRA adapter's, or AdamW inside the
// backward (--optimizer-in-backward). The core's train_step (core/trainer.h) is the same step for one
// process alone, and the two agree bit for bit where they meet (tests/cli_core.sh).
#pragma once
#include "train/run.h"

// Step `step` (from 0) of the run: fatal on a non-finite loss or norm or update; a data error saves the
// state before the step first (trainer_fail_on_data).
RunStepStats run_step(TrainRun* t, int step);
