// adamw.cpp: the AdamW update and the sum of squares of a chunk (optimizer.h), as loops the compiler vectorizes.
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
    double acc0[8] = {}, acc1[8] = {};  // lanes 0-7 and 8-15 of each 16 (arrays: registers even with AVX2)
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
        for (int l = 0; l < 8; l++) {
            const double lo = x[i + l], hi = x[i + 8 + l];
            acc0[l] += lo * lo, acc1[l] += hi * hi;  // exact products: with or without FMA, the same sums
        }
    double s = 0;
    for (int l = 0; l < 8; l++) s += acc0[l] + acc1[l];
    for (; i < n; i++) s += (double)x[i] * x[i];
    return s;
}

KERNELS_END
