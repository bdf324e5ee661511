// optimizer.cpp: see optimizer.h.
#include "optimizer.h"

#include <cmath>

float optimizer_grad_norm(const GPT2& model) {
    double sum = 0;
    const float* g = model.grads.data();
    const long n = (long)model.grads.size();
#pragma omp parallel for reduction(+ : sum)
    for (long i = 0; i < n; i++) sum += (double)g[i] * g[i];
    return (float)std::sqrt(sum);
}

float optimizer_clip_grads(GPT2* model, float max_norm) {
    float norm = optimizer_grad_norm(*model);
    if (max_norm <= 0) return norm;
    float factor = max_norm / (norm + 1e-6f);
    if (factor >= 1.0f) return norm;
    float* g = model->grads.data();
    const long n = (long)model->grads.size();
#pragma omp parallel for
    for (long i = 0; i < n; i++) g[i] *= factor;
    return norm;
}

void adamw_update(AdamW* opt, GPT2* model, const AdamWConfig& cfg, float lr) {
    if (opt->m.size() != model->params.size()) {
        opt->m.assign(model->params.size(), 0.0f);
        opt->v.assign(model->params.size(), 0.0f);
        opt->step = 0;
    }
    opt->step++;
    const float b1 = cfg.beta1, b2 = cfg.beta2;
    const float step_size = lr / (1.0f - powf(b1, (float)opt->step));
    const float bc2_sqrt = sqrtf(1.0f - powf(b2, (float)opt->step));
    for (const TensorInfo& t : model->param_table) {
        float* w = model->params.data() + t.offset;
        const float* g = model->grads.data() + t.offset;
        float* m = opt->m.data() + t.offset;
        float* v = opt->v.data() + t.offset;
        const float decay = t.decay ? 1.0f - lr * cfg.weight_decay : 1.0f;
        const long n = (long)t.numel();
#pragma omp parallel for if (n > 65536)
        for (long i = 0; i < n; i++) {
            m[i] = b1 * m[i] + (1.0f - b1) * g[i];
            v[i] = b2 * v[i] + (1.0f - b2) * g[i] * g[i];
            float denom = sqrtf(v[i]) / bc2_sqrt + cfg.eps;
            w[i] = w[i] * decay - step_size * m[i] / denom;
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
