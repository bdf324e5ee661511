// optimizer.cpp: see optimizer.h.
#include "core/optimizer.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <utility>

void optimizer_grad_sumsq(const ParamSet& p, size_t first, size_t last, double* sumsq, size_t lo, size_t hi) {
    const size_t chunk = 1 << 16;
    struct Chunk {
        size_t tensor, begin, end;  // values [begin, end) of the tensor
    };
    std::vector<Chunk> chunks;
    for (size_t i = first; i < last; i++) {
        const TensorInfo& t = (*p.table)[i];
        const size_t b = std::max(lo, t.offset) - t.offset, e = std::min(hi, t.offset + t.numel());
        for (size_t c = b; t.offset + c < e; c += chunk) chunks.push_back({i, c, std::min(c + chunk, e - t.offset)});
    }
    std::vector<double> partial(chunks.size());
#pragma omp parallel for schedule(static)
    for (long c = 0; c < (long)chunks.size(); c++)
        partial[c] = sum_squares(p.grad(chunks[c].tensor) + chunks[c].begin, chunks[c].end - chunks[c].begin);
    for (size_t i = first; i < last; i++) sumsq[i] = 0;
    for (size_t c = 0; c < chunks.size(); c++) sumsq[chunks[c].tensor] += partial[c];
}

float optimizer_norm_of(const std::vector<double>& sumsq) {
    return (float)std::sqrt(std::accumulate(sumsq.begin(), sumsq.end(), 0.0));
}

float optimizer_grad_norm(const ParamSet& p) {
    std::vector<double> sumsq(p.table->size());
    optimizer_grad_sumsq(p, 0, sumsq.size(), sumsq.data());
    return optimizer_norm_of(sumsq);
}

float optimizer_clip_factor(float norm, float max_norm) {
    return max_norm <= 0 ? 1.0f : std::min(1.0f, max_norm / (norm + 1e-6f));
}

void adamw_prepare(AdamW* opt, size_t n_params) {
    if (opt->end == 0) opt->begin = 0, opt->end = n_params;
    if (opt->prepared()) return;
    const size_t n = opt->end - opt->begin;
    if (opt->moments) opt->moments->allocate(n);
    else buffer_assign_zero(&opt->m, n), buffer_assign_zero(&opt->v, n);
}

AdamWStep adamw_begin(AdamW* opt, const AdamWConfig& cfg, float lr, float grad_scale) {
    opt->step++;
    const float step_size = lr / (1.0f - powf(cfg.beta1, (float)opt->step));
    const float bc2_sqrt = sqrtf(1.0f - powf(cfg.beta2, (float)opt->step));
    const float decay = 1.0f;  // each tensor's own in adamw_apply
    return {cfg.beta1, cfg.beta2, cfg.eps, step_size, bc2_sqrt, decay, grad_scale, opt->step};
}

void adamw_apply(AdamW* opt, const ParamSet& p, const AdamWStep& k, float lr, float weight_decay, size_t first,
                 size_t last) {
    if (!opt->prepared()) adamw_prepare(opt, p.size);
    // One streaming pass, a chunk at a time: the model refreshes its copies of a chunk while it is in cache.
    const size_t kChunk = 1024;  // 4 KiB of weights: the hook reads them back from L1
#pragma omp parallel
    for (size_t i = first; i < last; i++) {
        const TensorInfo& t = (*p.table)[i];
        const size_t lo = std::max(t.offset, opt->begin), hi = std::min(t.offset + t.numel(), opt->end);
        if (lo >= hi) continue;
        float* w = p.params;
        const float* g = p.grad(i) - t.offset;  // indexed by the parameter's offset, as w
        AdamWStep ks = k;
        ks.decay = t.decay ? 1.0f - lr * weight_decay : 1.0f;
        const long chunks = (long)((hi - lo + kChunk - 1) / kChunk);
#pragma omp for schedule(static) nowait
        for (long c = 0; c < chunks; c++) {
            const size_t at = lo + (size_t)c * kChunk, n = std::min(hi - at, kChunk), s = at - opt->begin;
            if (opt->moments) opt->moments->update(w + at, g + at, s, n, ks, at);
            else adamw_chunk(w + at, g + at, opt->m.data() + s, opt->v.data() + s, n, ks);
            if (p.model) gpt2_params_updated(p.model, at, n);
        }
    }
}

std::string adamw_nonfinite(const AdamW& opt, const ParamSet& p) {
    for (const TensorInfo& t : *p.table) {
        const size_t lo = std::max(t.offset, opt.begin), hi = std::min(t.offset + t.numel(), opt.end);
        for (size_t i = lo; i < hi; i++) {
            const size_t s = i - opt.begin;
            const float m = opt.moments ? opt.moments->value(0, s) : opt.m[s];
            const float v = opt.moments ? opt.moments->value(1, s) : opt.v[s];
            const std::pair<const char*, float> values[] = {{"AdamW v", v}, {"AdamW m", m}, {"weight", p.params[i]}};
            for (const auto& [what, x] : values)
                if (!std::isfinite(x)) {
                    char text[256];
                    snprintf(text, sizeof(text), "%s of %s[%zu] is %g", what, t.hf_name.c_str(), i - t.offset, x);
                    return text;
                }
        }
    }
    return "";
}

void adamw_update(AdamW* opt, const ParamSet& p, const AdamWConfig& cfg, float lr, float grad_scale) {
    const AdamWStep k = adamw_begin(opt, cfg, lr, grad_scale);
    adamw_apply(opt, p, k, lr, cfg.weight_decay, 0, p.table->size());
}

float lr_schedule(int step, int total, float lr, int warmup, float min_lr_frac, bool cosine) {
    if (step < warmup) return lr * (float)(step + 1) / (float)warmup;
    if (!cosine || total <= warmup) return lr;
    const float progress = std::min(1.0f, (float)(step - warmup) / (float)(total - warmup));
    const float min_lr = lr * min_lr_frac;
    return min_lr + 0.5f * (lr - min_lr) * (1.0f + cosf(3.14159265358979f * progress));
}
