// adamw.cpp: the AdamW update and the sum of squares of a chunk (optimizer.h), in 16-float vectors.
#include "core/optimizer.h"
#include "core/simd.h"

KERNELS_BEGIN

// One vector of the update: n == kVecLen in the main loop (constant-folded there: plain vector loads), fewer
// for a chunk's tail. Inlining is forced: left to itself GCC makes it a call per vector (its tail path makes
// it large), each with a vzeroupper and the constants broadcast anew: the update ran at half the stream's rate.
static inline __attribute__((always_inline)) void adamw_vec(float* w, const float* g, float* m, float* v, int n,
                                                            const AdamWStep& s) {
    const bool full = n == kVecLen;
    vf16 gs = (full ? vf_load(g) : vf_load_partial(g, n)) * s.grad_scale;
    vf16 mv = s.beta1 * (full ? vf_load(m) : vf_load_partial(m, n)) + (1.0f - s.beta1) * gs;
    vf16 vv = s.beta2 * (full ? vf_load(v) : vf_load_partial(v, n)) + (1.0f - s.beta2) * gs * gs;
    vf16 denom = vf_sqrt(vv) / s.bc2_sqrt + s.eps;
    vf16 wv = (full ? vf_load(w) : vf_load_partial(w, n)) * s.decay - s.step_size * mv / denom;
    if (full) vf_store(m, mv), vf_store(v, vv), vf_store(w, wv);
    else vf_store_partial(m, mv, n), vf_store_partial(v, vv, n), vf_store_partial(w, wv, n);
}

void adamw_chunk(float* w, const float* g, float* m, float* v, size_t n, const AdamWStep& step) {
    const AdamWStep s = step;  // a local copy: no store below can alias it, so its constants stay in registers
    size_t o = 0;
    for (; o + kVecLen <= n; o += kVecLen) adamw_vec(w + o, g + o, m + o, v + o, kVecLen, s);
    if (o < n) adamw_vec(w + o, g + o, m + o, v + o, (int)(n - o), s);
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
