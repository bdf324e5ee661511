// optimizer.cpp: see optimizer.h.
#include "train/optimizer.h"

#include <algorithm>
#include <cmath>

#include "base/util.h"
#include "kernels/adamw.h"

float optimizer_grad_norm(const GPT2& model) {
    // Fixed chunks summed in double lanes, then the chunk sums in order: the result does not depend on
    // the thread count.
    const size_t n = model.grads.size(), chunk = 1 << 16;
    const long nchunks = (long)((n + chunk - 1) / chunk);
    std::vector<double> partial(nchunks);
    const float* g = model.grads.data();
#pragma omp parallel for schedule(static)
    for (long c = 0; c < nchunks; c++) partial[c] = sum_squares(g + c * chunk, std::min(chunk, n - c * chunk));
    double sum = 0;
    for (double s : partial) sum += s;
    return (float)std::sqrt(sum);
}

float optimizer_clip_factor(float norm, float max_norm) {
    if (max_norm <= 0) return 1.0f;
    float factor = max_norm / (norm + 1e-6f);
    return factor < 1.0f ? factor : 1.0f;
}

float optimizer_clip_grads(GPT2* model, float max_norm) {
    float norm = optimizer_grad_norm(*model);
    float factor = optimizer_clip_factor(norm, max_norm);
    if (factor == 1.0f) return norm;
    float* g = model->grads.data();
    const long n = (long)model->grads.size();
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; i++) g[i] *= factor;
    return norm;
}

void adamw_prepare(AdamW* opt, const GPT2& model) {
    if (opt->m.size() == model.params.size()) return;
    buffer_assign_zero(&opt->m, model.params.size());
    buffer_assign_zero(&opt->v, model.params.size());
    opt->step = 0;
}

void adamw_update(AdamW* opt, GPT2* model, const AdamWConfig& cfg, float lr, float grad_scale) {
    if (opt->m.size() != model->params.size()) adamw_prepare(opt, *model);
    opt->step++;
    AdamWStep k;
    k.beta1 = cfg.beta1, k.beta2 = cfg.beta2, k.eps = cfg.eps, k.grad_scale = grad_scale;
    k.step_size = lr / (1.0f - powf(cfg.beta1, (float)opt->step));
    k.bc2_sqrt = sqrtf(1.0f - powf(cfg.beta2, (float)opt->step));
    // One streaming pass (kernels/adamw.h): each element is read and written once, a chunk at a time;
    // after each chunk the model refreshes its copies of those weights (gpt2_params_updated: a bf16 copy
    // for --precision bf16) while they are still in cache. AdamW itself knows no precision.
    const size_t kChunk = 1024;  // 4 KiB of weights: the hook reads them back from L1
#pragma omp parallel
    for (const TensorInfo& t : model->param_table) {
        float* w = model->params.data() + t.offset;
        const float* g = model->grads.data() + t.offset;
        float* m = opt->m.data() + t.offset;
        float* v = opt->v.data() + t.offset;
        AdamWStep ks = k;
        ks.decay = t.decay ? 1.0f - lr * cfg.weight_decay : 1.0f;
        const size_t n = t.numel();
        const long chunks = (long)((n + kChunk - 1) / kChunk);
#pragma omp for schedule(static) nowait
        for (long c = 0; c < chunks; c++) {
            const size_t begin = (size_t)c * kChunk, end = std::min(n, begin + kChunk);
            adamw_chunk(w + begin, g + begin, m + begin, v + begin, end - begin, ks);
            gpt2_params_updated(model, t.offset + begin, end - begin);
        }
    }
}

float lr_schedule(int step, int total, float lr, int warmup, float min_lr_frac, bool cosine) {
    if (step < warmup) return lr * (float)(step + 1) / (float)warmup;
    if (!cosine || total <= warmup) return lr;
    float progress = (float)(step - warmup) / (float)(total - warmup);
    if (progress > 1.0f) progress = 1.0f;
    float min_lr = lr * min_lr_frac;
    return min_lr + 0.5f * (lr - min_lr) * (1.0f + cosf(3.14159265358979f * progress));
}
