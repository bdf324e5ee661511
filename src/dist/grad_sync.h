// grad_sync.h: what a training step shares with the other processes training beside it (data parallel
// under mpirun, dist/dist.h): the gradients, summed a layer at a time while the backward goes on, the loss
// and the stop decision; with ZeRO-1 also the optimizer's state, split into one slice per rank, and the
// weights each rank updates. The trainer calls it at the step's seams; with one process every call is a
// no-op (or the plain computation) and the step is the single-process one.
//
// A step takes ranks x --grad-accum x B windows from one shard (core/dataloader.h), so N ranks x B give one process x
// N*B's losses (tests/mpi.sh), and -B stays one rank's batch. Rank 0 alone prints, logs, plots, samples and saves; a
// rank that fails aborts all (dist.h), and the last checkpoint stays as it was. Before the first step the ranks
// compare digests of the flags that shape the run, of the model (geometry and weights) and of the data; ranks started
// differently stop with `error: ranks disagree on ...` on every rank, never a hang. The gradient buckets are summed
// one at a time (dist.h: OpenMPI holds a temporary the size of each while it is in flight, so all in flight would be
// a second gradient), wte in pieces of a layer's size; OpenMPI progresses them only inside MPI calls, so a bucket's
// sum mostly runs at the next layer boundary, not beside the compute.
//
// ZeRO-1 (--zero 1): each rank keeps the moments of its contiguous slice (3 ranks split unevenly), so per-rank
// optimizer memory falls as 1/N (8 bytes a parameter become 8/N; 4/N with bf16 moments, 2.125/N with 8bit). The
// buckets are reduce-scattered instead of summed whole, each rank updates its slice, and the weights are
// all-gathered. A save gathers the moments into rank 0 for the one checkpoint (rank 0 holds all of them while it
// saves); a resume slices them again for as many ranks as it runs on.
#pragma once
#include <cstddef>
#include <functional>
#include <utility>
#include <vector>

#include "core/model.h"
#include "core/optimizer.h"

struct GradSync {
    int rank = 0, ranks = 1;  // this process, and the processes sharing each step's batch
    bool sharded = false;     // ZeRO-1 under several ranks: each keeps only its slice of AdamW's state
    std::vector<size_t> slices;                        // with sharded: rank r owns [slices[r], slices[r + 1])
    std::vector<std::pair<size_t, size_t>> buckets;    // spans of the gradient buffer, summed one at a time:
    size_t layers = 0;                                 // one per layer first, then wte, wpe and ln_f in pieces
    float* grads = nullptr;
};

// Sets s up for model (after gpt2_enable_training). With zero and several ranks it also sets opt's range to
// this rank's slice of the parameters (before the moments are allocated or restored) and says how they split.
void grad_sync_init(GradSync* s, GPT2* model, bool zero, AdamW* opt);
// The same for a run that trains only a small flat buffer beside a frozen model (lora/'s adapter): its n
// gradients are summed in one piece once the backward is done, no layer hook.
void grad_sync_init_flat(GradSync* s, float* grads, size_t n);
// The scale of one micro-batch's gradients: 1 / (the step's micro-batches, on every rank).
float grad_sync_loss_scale(const GradSync& s, int accum);
// The per-layer hook, for gpt2_backward's layer_done: layer l's gradients are final, so they start on their
// way to the other ranks while the backward goes on. Empty with one process (nothing to do). It is the
// seam an optimizer applied per layer (adamw_step_in_backward) takes too: a hook may call this one first.
std::function<void(int layer)> grad_sync_layer_hook(GradSync* s);
// After the backward that took the hook: the gradients outside the layers (wte, wpe, ln_f) start too.
void grad_sync_backward_done(GradSync* s);
// The step's loss: every rank's shares of it summed (each passes its own), so every rank takes the same decision.
double grad_sync_loss(const GradSync& s, double loss);
// The stop signal every rank acts on: with several ranks the stop flags are summed, so a signal that reached
// one rank stops all of them after the same step. Every rank calls this at the same places, and decisions
// use its result, never stop_requested() read later. One process: stop_requested().
int grad_sync_stop(const GradSync& s);
// Waits for every gradient sum, then returns the global gradient norm: with ZeRO-1 each rank's sums of
// squares over the slice it owns, summed across ranks.
float grad_sync_norm(const GradSync& s, const GPT2& model, const AdamW& opt);
// After the update, with ZeRO-1: every rank's updated slice of the weights to every other rank, and the
// model's reduced-precision copies of what the others updated refreshed.
void grad_sync_weights(const GradSync& s, GPT2* model);
// The moments a save writes: opt itself, or with ZeRO-1 every rank's slice gathered into *whole on rank 0
// (the other ranks send theirs; every rank must call this).
const AdamW& grad_sync_whole_moments(const GradSync& s, const AdamW& opt, const GPT2& model, AdamW* whole);
// With several ranks, after `steps` steps: says how long a step waited for the sums (rank 0 prints).
void grad_sync_report(const GradSync& s, int steps);
