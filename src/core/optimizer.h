// optimizer.h: AdamW (decoupled weight decay, bias correction; Loshchilov & Hutter 2019, in the form
// torch.optim.AdamW computes it), global-norm gradient clipping and the learning-rate schedule. m and v
// use the parameter layout; weight decay applies to the tensors the layout marks `decay`.
#pragma once
#include <cstdint>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "core/adamw.h"
#include "core/model.h"

struct AdamWConfig {
    float lr = 3e-4f;
    float beta1 = 0.9f;
    float beta2 = 0.999f;
    float eps = 1e-8f;
    float weight_decay = 0.1f;
};

// AdamW's moments kept in another form than fp32, outside the core (precision/adamw_bf16.h: bf16, for
// train --optimizer-state bf16). adamw_prepare, adamw_apply and adamw_nonfinite call these instead of
// using AdamW's m and v.
struct AdamWMoments {
    virtual ~AdamWMoments() = default;
    virtual void allocate(size_t n) = 0;  // n zeroed values of m and of v
    virtual size_t size() const = 0;      // the values allocated
    // adamw_chunk's update of n weights w from their gradients g, with the moments from s; index is w's
    // parameter index.
    virtual void update(float* w, const float* g, size_t s, size_t n, const AdamWStep& k, size_t index) = 0;
    virtual float value(int k, size_t s) const = 0;  // m (k 0) or v (k 1) at s
};

// AdamW's state. The weights themselves stay fp32 (the master copy) whatever the moments' form.
struct AdamW {
    std::vector<float> m, v;                // fp32 moments, or empty
    std::unique_ptr<AdamWMoments> moments;  // or null: m and v above
    // The parameters [begin, end) this process updates: all of them (end 0 until adamw_prepare), or with
    // ZeRO-1 its slice; the moments hold that range, from begin.
    size_t begin = 0, end = 0;
    int step = 0;  // updates done
    bool prepared() const { return end > 0 && (moments ? moments->size() : m.size()) == end - begin; }
};

// The sum of squares of each gradient of param_table[first, last) into sumsq[first, last), in double and
// in fixed chunks: the same values whatever the thread count, whether taken all at once
// (optimizer_grad_norm) or a layer at a time as the backward makes them. Only the values at parameter
// offsets [lo, hi) count (a ZeRO-1 slice; the default: all).
void optimizer_grad_sumsq(const GPT2& model, size_t first, size_t last, double* sumsq, size_t lo = 0,
                          size_t hi = SIZE_MAX);
// The global L2 norm from every tensor's sumsq, summed in table order.
float optimizer_norm_of(const std::vector<double>& sumsq);
// Global L2 norm of all gradients (optimizer_norm_of of every tensor's optimizer_grad_sumsq).
float optimizer_grad_norm(const GPT2& model);
// The factor clipping scales the gradients by so that their global norm is at most max_norm, as torch's
// clip_grad_norm_: min(1, max_norm / (norm + 1e-6)); 1 when max_norm <= 0.
float optimizer_clip_factor(float norm, float max_norm);
// Allocates the zeroed moments for `model` (all its parameters unless opt's range is set; adamw_update
// does it too when they are missing, inside the first step; a trainer calls this first so the first step
// is a steady one).
void adamw_prepare(AdamW* opt, const GPT2& model);
// One AdamW step in two parts, so it can be applied a layer at a time: adamw_begin counts the step and
// returns its constants at learning rate lr (the schedule's value for this step) and weight decay;
// adamw_apply updates the parameters of param_table[first, last) within opt's range from their gradients
// (gpt2_grad). Each gradient is multiplied by grad_scale as it is read, so clipping is folded into the
// update: the result equals clipping the gradients, then the update, bit for bit, without the extra pass.
AdamWStep adamw_begin(AdamW* opt, const AdamWConfig& cfg, float lr, float grad_scale);
void adamw_apply(AdamW* opt, GPT2* model, const AdamWStep& k, float lr, float weight_decay, size_t first, size_t last);
// Whether an update of gradients whose global norm is `norm`, scaled by grad_scale, may have left a
// non-finite value in AdamW's state or the weights: only when a scaled gradient (at most norm * grad_scale)
// can square past float's range (from |g| ~ 1.8e19: v holds g^2, while m stays within the largest |g| and
// the step within a few lr).
// Every clipped step is far below, so a run looks (adamw_nonfinite) only then and a normal step costs nothing.
inline bool adamw_may_overflow(float norm, float grad_scale) { return norm * grad_scale > 1e18f; }
// The first non-finite value in opt's moments or the weights they update, in parameter order, e.g. "AdamW v
// of wte.weight[70] is inf", or "" when all are finite: a pass over them.
std::string adamw_nonfinite(const AdamW& opt, const GPT2& model);
// Both parts over every tensor.
void adamw_update(AdamW* opt, GPT2* model, const AdamWConfig& cfg, float lr, float grad_scale = 1.0f);
// Linear warmup over `warmup` steps, then cosine decay from lr to lr * min_lr_frac at `total` steps
// (or constant when cosine is false). step counts from 0.
float lr_schedule(int step, int total, float lr, int warmup, float min_lr_frac, bool cosine);
