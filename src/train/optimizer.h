// optimizer.h: AdamW (decoupled weight decay, bias correction; Loshchilov & Hutter 2019, in the form
// torch.optim.AdamW computes it), global-norm gradient clipping and the learning-rate schedule. m and v
// use the parameter layout; weight decay applies to the tensors the layout marks `decay`.
#pragma once
#include <vector>

#include "model/model.h"

struct AdamWConfig {
    float lr = 3e-4f;
    float beta1 = 0.9f;
    float beta2 = 0.999f;
    float eps = 1e-8f;
    float weight_decay = 0.1f;
};

struct AdamW {
    std::vector<float> m, v;
    int step = 0;  // updates done
};

// Global L2 norm of all gradients, summed in double in an order independent of the thread count.
float optimizer_grad_norm(const GPT2& model);
// Scales gradients so the global norm is at most max_norm (torch's clip_grad_norm_: factor
// max_norm / (norm + 1e-6) when below 1). No-op when max_norm <= 0. Returns the norm before clipping.
float optimizer_clip_grads(GPT2* model, float max_norm);
// The factor optimizer_clip_grads scales by: min(1, max_norm / (norm + 1e-6)); 1 when max_norm <= 0.
float optimizer_clip_factor(float norm, float max_norm);
// Allocates the zeroed moments for `model` (adamw_update does it too when they are missing, inside the
// first step; a trainer calls this first so the first step is a steady one).
void adamw_prepare(AdamW* opt, const GPT2& model);
// One AdamW step at learning rate lr (the schedule's value for this step). Each gradient is multiplied
// by grad_scale as it is read, so clipping can be folded into the update: adamw_update(..., lr,
// optimizer_clip_factor(optimizer_grad_norm(model), max_norm)) equals optimizer_clip_grads then
// adamw_update bit for bit, without the extra pass over the gradients (which it leaves unscaled).
void adamw_update(AdamW* opt, GPT2* model, const AdamWConfig& cfg, float lr, float grad_scale = 1.0f);
// Linear warmup over `warmup` steps, then cosine decay from lr to lr * min_lr_frac at `total` steps
// (or constant when cosine is false). step counts from 0.
float lr_schedule(int step, int total, float lr, int warmup, float min_lr_frac, bool cosine);
