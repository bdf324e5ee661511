// trainer.cpp: see trainer.h.
#include "core/trainer.h"

#include <chrono>
#include <cmath>

#include "core/error.h"

void train_check_finite(double loss, float norm, int step) {
    if (std::isfinite(loss) && std::isfinite(norm)) return;
    fatal("%s is %g at step %d: training diverged; the last checkpoint (if any) is kept",
          std::isfinite(loss) ? "gradient norm" : "loss", std::isfinite(loss) ? norm : loss, step + 1);
}

// Only a scaled gradient past |g| ~ 1.8e19 overflows v: only an unclipped step pays for adamw_nonfinite's pass.
void train_check_update(const AdamW& opt, const ParamSet& p, float norm, float grad_clip, int step) {
    if (norm * optimizer_clip_factor(norm, grad_clip) <= 1e18f) return;
    const std::string what = adamw_nonfinite(opt, p);
    if (!what.empty())
        fatal_hint("clip the gradients (--grad-clip 1, the default) or lower --lr",
                   "%s at step %d: training diverged; the last checkpoint (if any) is kept", what.c_str(), step + 1);
}

StepStats train_step(Trainer* t, int step) {
    const TrainOptions& o = t->opts;
    const auto t0 = std::chrono::steady_clock::now();
    GPT2& model = t->model;
    gpt2_zero_grad(&model);
    double loss = 0;
    const float share = 1.0f / (float)o.accum;  // of the step's loss, which sums every micro-batch's
    for (int micro = 0; micro < o.accum; micro++) {
        std::string err;
        if (!dataloader_try_next(&t->train_dl, &err)) fatal("%s", err.c_str());
        const DataLoader& dl = t->train_dl;
        loss += gpt2_forward(&model, dl.inputs.data(), dl.targets.data(), o.B, o.T, share) * (double)share;
        gpt2_backward(&model, nullptr);
    }
    const ParamSet params = gpt2_param_set(model);
    const float norm = optimizer_grad_norm(params);
    train_check_finite(loss, norm, step);
    const float lr = lr_schedule(step, o.steps, o.adamw.lr, o.warmup, o.min_lr_frac, o.cosine);
    adamw_update(&t->opt, params, o.adamw, lr, optimizer_clip_factor(norm, o.grad_clip));  // clipping folded in
    train_check_update(t->opt, params, norm, o.grad_clip, step);
    const float ms = std::chrono::duration<float, std::milli>(std::chrono::steady_clock::now() - t0).count();
    return {loss, norm, lr, ms};
}
