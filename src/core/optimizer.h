// optimizer.h: AdamW (decoupled weight decay, bias correction; Loshchilov & Hutter 2019, in the form
// torch.optim.AdamW computes it), global-norm gradient clipping and the learning-rate schedule.
#pragma once
#include <cstdint>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "core/isa.h"
#include "core/model.h"

// One AdamW step's constants: step_size = lr / (1 - beta1^t), bc2_sqrt = sqrt(1 - beta2^t), decay =
// 1 - lr * weight_decay (or 1); t is the step, counted from 1.
struct AdamWStep {
    float beta1, beta2, eps, step_size, bc2_sqrt, decay, grad_scale;
    int t;
};

KERNELS_BEGIN

// The elementwise passes over one chunk on the calling thread, compiled per instruction set (core/isa.h).
// adamw_chunk, for i < n: m = b1 m + (1 - b1) g', v = b2 v + (1 - b2) g'^2, w = w decay - step_size m / (sqrt(v) /
// bc2_sqrt + eps), with g' = g grad_scale; a loop the compiler vectorizes.
void adamw_chunk(float* w, const float* g, float* m, float* v, size_t n, const AdamWStep& s);
// The sum of x[i]^2 for i < n, each square and the sum in double, in 16 double lanes then in order: the
// same result for the same chunk whatever the thread.
double sum_squares(const float* x, size_t n);

KERNELS_END

struct AdamWConfig {
    float lr = 3e-4f, beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f, weight_decay = 0.1f;
};

// Seam: AdamW's moments in another form than fp32 m and v (precision/: --optimizer-state bf16 and 8bit).
struct AdamWMoments {
    virtual ~AdamWMoments() = default;
    virtual void allocate(size_t n) = 0;  // n zeroed values of m and of v
    virtual size_t size() const = 0;
    // adamw_chunk's update of n weights w (parameter index `index`), with the moments from s.
    virtual void update(float* w, const float* g, size_t s, size_t n, const AdamWStep& k, size_t index) = 0;
    virtual float value(int k, size_t s) const = 0;  // m (k 0) or v (k 1) at s
};

// AdamW's state. The weights stay fp32 (the master copy) whatever the moments' form.
struct AdamW {
    std::vector<float> m, v;                // fp32 moments, or empty
    std::unique_ptr<AdamWMoments> moments;  // or null: m and v above
    // Seam: the parameters [begin, end) this process updates and the moments hold: all (end 0 until
    // adamw_prepare), or a ZeRO-1 rank's slice.
    size_t begin = 0, end = 0;
    int step = 0;  // updates done
    bool prepared() const { return end > 0 && (moments ? moments->size() : m.size()) == end - begin; }
};

// Seam: the tensors an optimizer step walks, laid out by a table in `size` floats: a model's parameters (updated
// in place through gpt2_param_set's) or a LoRA adapter's (lora/).
struct ParamSet {
    const std::vector<TensorInfo>* table;
    float *params, *grads;
    size_t size;
    const size_t* grad_at;  // where each tensor's gradient starts in grads, or null: at its offset, as in params
    GPT2* model;            // whose copies each updated chunk refreshes (gpt2_params_updated), or null
    float* grad(size_t i) const { return grads + (grad_at ? grad_at[i] : (*table)[i].offset); }
};
inline ParamSet gpt2_param_set(const GPT2& model) {
    GPT2* m = const_cast<GPT2*>(&model);
    return {&m->param_table, m->params.data(), m->grads.data(), m->params.size(), m->grad_offsets.data(), m};
}

// The sum of squares of each gradient of tensors [first, last) into sumsq[first, last), in double and in fixed
// chunks: the same values whatever the thread count, all at once or a layer at a time. Only parameter offsets
// [lo, hi) count (a ZeRO-1 slice; the default: all).
void optimizer_grad_sumsq(const ParamSet& p, size_t first, size_t last, double* sumsq, size_t lo = 0,
                          size_t hi = SIZE_MAX);
// The global L2 norm from every tensor's sumsq, summed in table order.
float optimizer_norm_of(const std::vector<double>& sumsq);
float optimizer_grad_norm(const ParamSet& p);
// Clipping's factor, as torch's clip_grad_norm_: min(1, max_norm / (norm + 1e-6)); 1 when max_norm <= 0.
float optimizer_clip_factor(float norm, float max_norm);
// Allocates opt's zeroed moments for n parameters (adamw_apply would, in the first step; a trainer does it
// first: a steady step).
void adamw_prepare(AdamW* opt, size_t n);
// One AdamW step in two parts, so it can be applied a layer at a time: adamw_begin counts the step and
// returns its constants; adamw_apply updates tensors [first, last) within opt's range, decaying those whose
// table says so. Each gradient is multiplied by grad_scale as it is read: clipping folded into the update,
// bit for bit, without its own pass.
AdamWStep adamw_begin(AdamW* opt, const AdamWConfig& cfg, float lr, float grad_scale);
void adamw_apply(AdamW* opt, const ParamSet& p, const AdamWStep& k, float lr, float weight_decay, size_t first,
                 size_t last);
// The first non-finite value in opt's moments or their weights, e.g. "AdamW v of wte.weight[70] is inf"; "" if none.
std::string adamw_nonfinite(const AdamW& opt, const ParamSet& p);
// Both parts over every tensor.
void adamw_update(AdamW* opt, const ParamSet& p, const AdamWConfig& cfg, float lr, float grad_scale = 1.0f);
// Linear warmup over `warmup` steps, then cosine decay from lr to lr * min_lr_frac at `total` steps
// (or constant when cosine is false). step counts from 0.
float lr_schedule(int step, int total, float lr, int warmup, float min_lr_frac, bool cosine);
