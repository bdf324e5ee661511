// evaluate.h: the mean loss of a model over token files, for train's validation and the `eval` command: the
// first n batches of consecutive windows, or every token once. It does not train.
//
// train's val loss covers --val-batches batches from the start of --val; `gpt2 eval --model DIR --data FILE -B 4 -T
// 256 --batches 8` scores those same windows and prints the same number, and eval's default --batches all scores
// every token of the file (more tokens, so a somewhat different number); with several shards, each shard's
// consecutive windows in turn, every token of each after its first.
#pragma once
#include <cstddef>
#include <functional>

#include "core/dataloader.h"
#include "core/model.h"

// Number of whole batches of consecutive windows, summed over dl's shards.
size_t evaluate_num_batches(const DataLoader& dl);
// Loads batch `index` of consecutive windows into dl's inputs and targets, counting each shard's whole
// batches in turn (for one file: windows index*B .. index*B + B - 1). A shard that changed under the run is
// fatal, as for training (dataloader_read).
void evaluate_load_batch(DataLoader* dl, size_t index);
// Mean loss over the first `batches` consecutive batches of dl: over their scored targets (a loss mask's
// answers; without masks, every target: the mean of the batch means); NaN when none scores any. With several
// ranks (dist/dist.h) a batch is world * B windows, this rank evaluating its B of each; every rank gets the
// shared mean. `progress`, when set, is called after each batch with the fraction done; *scored, when given,
// gets the targets scored (on all ranks).
float evaluate_batches(GPT2* model, DataLoader* dl, size_t batches,
                       const std::function<void(double)>& progress = nullptr, size_t* scored = nullptr);
// Mean loss over every token of each of dl's shards after its first, each predicted once: per shard, the
// whole batches, then the windows left over as one smaller batch, then the last partial window. *tokens
// gets the count, *scored those of them scored (all, unless a shard's loss mask leaves some out: the mean is
// over these; 0 gives NaN).
double evaluate_every_token(GPT2* model, DataLoader* dl, size_t* tokens, size_t* scored,
                            const std::function<void(double)>& progress = nullptr);
