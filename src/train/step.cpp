// step.cpp: see step.h.
#include "train/step.h"

#include <cmath>
#include <string>
#include <vector>

#include "dist/dist.h"
#include "formats/token_files.h"
#include "platform/util.h"

namespace {

// The step's micro-batches, read in turn; scored: each one's scored targets (all of them without masks).
struct StepBatches {
    std::vector<std::vector<int>> inputs, targets;
    std::vector<double> scored;
};

// Reads the step's accum micro-batches. A read that fails puts the data back where the step found it, saves
// that state when there is an --out, and stops the run (trainer_fail_on_data).
StepBatches read_batches(TrainRun* t, int step) {
    const DataLoaderState before = dataloader_state(t->train_dl);
    StepBatches b;
    for (int micro = 0; micro < t->opts.accum; micro++) {
        std::string err;
        if (!dataloader_try_next(&t->train_dl, &err)) {
            dataloader_restore(&t->train_dl, before);
            trainer_fail_on_data(t, step, err);
        }
        b.inputs.push_back(t->train_dl.inputs);
        b.targets.push_back(t->train_dl.targets);
        b.scored.push_back(t->run.masked ? (double)token_files_scored(t->train_dl.targets) : 0.0);
    }
    return b;
}

// Each micro-batch's share of the step's loss, which sums them all: with loss masks its part of the scored
// targets of every rank (so the step's loss is the mean over them, however they fall into micro-batches and
// ranks), else its equal part. Empty when the step scores no target on any rank.
std::vector<float> loss_shares(TrainRun* t, const StepBatches& b) {
    const int accum = t->opts.accum;
    if (!t->run.masked) return std::vector<float>(accum, grad_sync_loss_scale(t->sync, accum));
    double all = 0;
    for (double n : b.scored) all += n;
    if (t->sync.ranks > 1) dist_sum(&all, 1);
    if (all == 0) return {};
    std::vector<float> shares;
    for (double n : b.scored) shares.push_back((float)(n / all));
    return shares;
}

// The gradient norm: the model's (every rank's, or a ZeRO-1 rank's slice summed), or the LoRA adapter's.
float step_norm(TrainRun* t) {
    if (!t->lora) return grad_sync_norm(t->sync, t->model, t->opt);
    if (t->sync.ranks > 1) dist_sum_wait();  // the adapter's gradients, summed over the ranks
    return optimizer_grad_norm(lora_param_set(t->lora.get()));
}

// Forward and backward over the micro-batches, each scaled by its share; the last one's backward sends each
// layer's gradients to the other ranks as it goes. Returns this rank's part of the step's loss.
double forward_backward(TrainRun* t, const StepBatches& b, const std::vector<float>& shares) {
    const TrainOptions& o = t->opts;
    double loss = 0;
    for (int micro = 0; micro < o.accum; micro++) {
        const float share = shares[micro];
        loss += gpt2_forward(&t->model, b.inputs[micro].data(), b.targets[micro].data(), o.B, o.T, share) *
                (double)share;
        gpt2_backward(&t->model, micro == o.accum - 1 ? grad_sync_layer_hook(&t->sync) : nullptr);
    }
    grad_sync_backward_done(&t->sync);
    return loss;
}

}  // namespace

RunStepStats run_step(TrainRun* t, int step) {
    const TrainOptions& o = t->opts;
    const double t0 = time_now_s();
    LoraModel* lora = t->lora.get();
    t->tuner.begin();  // all CPUs, or one when another process holds a CPU (platform/threads.h)
    if (lora) lora_zero_grad(lora), lora_dropout_step(lora, lora->opt.step);
    const StepBatches batches = read_batches(t, step);
    const std::vector<float> shares = loss_shares(t, batches);
    const float lr = lr_schedule(step, o.steps, o.adamw.lr, o.warmup, o.min_lr_frac, o.cosine);
    RunStepStats s;
    s.lr = lr;
    if (shares.empty()) {  // no target scored on any rank: a mean over none is NaN, so no forward, no update
        s.loss = NAN, s.norm = 0, s.ms = 0, s.skipped = true;
        s.stop = grad_sync_stop(t->sync);
    } else if (t->run.mem.layer_grads) {  // one process, one micro-batch: AdamW a layer at a time in the backward
        gpt2_zero_grad(&t->model);
        s.loss = gpt2_forward(&t->model, batches.inputs[0].data(), batches.targets[0].data(), o.B, o.T, 1);
        train_check_finite(s.loss, 0, step);  // before any update: found by the forward
        s.norm = adamw_step_in_backward(&t->opt, &t->model, o.adamw, lr, o.grad_clip);
        train_check_finite(s.loss, s.norm, step);
        train_check_update(t->opt, gpt2_param_set(t->model), s.norm, o.grad_clip, step);
        s.stop = grad_sync_stop(t->sync);
    } else {
        gpt2_zero_grad(&t->model);
        s.loss = grad_sync_loss(t->sync, forward_backward(t, batches, shares));
        s.stop = grad_sync_stop(t->sync);
        s.norm = step_norm(t);
        train_check_finite(s.loss, s.norm, step);
        AdamW& opt = lora ? lora->opt : t->opt;  // the adapter's, or the model's
        const ParamSet params = lora ? lora_param_set(lora) : gpt2_param_set(t->model);
        adamw_update(&opt, params, o.adamw, lr, optimizer_clip_factor(s.norm, o.grad_clip));  // clipping folded in
        train_check_update(opt, params, s.norm, o.grad_clip, step);
        grad_sync_weights(t->sync, &t->model);
    }
    if (lora) lora_dropout_step(lora, -1);  // validation and samples see no dropout
    t->tuner.end();
    if (!s.skipped) s.ms = (float)((time_now_s() - t0) * 1e3);
    return s;
}
