// adamw.cpp: the AdamW update (a plain loop) and the sum of squares of a chunk (16-float vectors), optimizer.h.
#include "core/optimizer.h"
#include "core/simd.h"

KERNELS_BEGIN

// A plain loop, which the compiler vectorizes for the build's instruction set (the square root too: the build
// passes -fno-math-errno). The same expressions, in the same order, as the bf16 moments' update
// (precision/adamw_bf16_chunk.cpp).
void adamw_chunk(float* w, const float* g, float* m, float* v, size_t n, const AdamWStep& step) {
    const AdamWStep s = step;  // a local copy: no store below can alias it, so its constants stay in registers
    for (size_t i = 0; i < n; i++) {
        float gs = g[i] * s.grad_scale;
        float mi = s.beta1 * m[i] + (1.0f - s.beta1) * gs;
        float vi = s.beta2 * v[i] + (1.0f - s.beta2) * gs * gs;
        float denom = __builtin_sqrtf(vi) / s.bc2_sqrt + s.eps;
        w[i] = w[i] * s.decay - s.step_size * mi / denom;
        m[i] = mi, v[i] = vi;
    }
}

double sum_squares(const float* x, size_t n) {
    vd8 acc0{}, acc1{};
    size_t i = 0;
    for (; i + kVecLen <= n; i += kVecLen) {
        vf16 f = vf_load(x + i);
        vd8 lo = __builtin_convertvector(__builtin_shufflevector(f, f, 0, 1, 2, 3, 4, 5, 6, 7), vd8);
        vd8 hi = __builtin_convertvector(__builtin_shufflevector(f, f, 8, 9, 10, 11, 12, 13, 14, 15), vd8);
        acc0 += lo * lo;
        acc1 += hi * hi;
    }
    double s = vd_reduce_add(acc0, acc1);
    for (; i < n; i++) s += (double)x[i] * x[i];
    return s;
}

KERNELS_END
