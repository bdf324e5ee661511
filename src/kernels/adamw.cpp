// adamw.cpp: see adamw.h.
#include "kernels/adamw.h"

#include "kernels/simd.h"

KERNELS_BEGIN

namespace {

// One vector of the update: n == kVecLen in the main loop (constant-folded there: plain vector loads),
// fewer for a chunk's tail.
inline void adamw_vec(float* w, const float* g, float* m, float* v, int n, const AdamWStep& s) {
    const bool full = n == kVecLen;
    vf16 gs = (full ? vf_load(g) : vf_load_partial(g, n)) * s.grad_scale;
    vf16 mv = s.beta1 * (full ? vf_load(m) : vf_load_partial(m, n)) + (1.0f - s.beta1) * gs;
    vf16 vv = s.beta2 * (full ? vf_load(v) : vf_load_partial(v, n)) + (1.0f - s.beta2) * gs * gs;
    vf16 denom = vf_sqrt(vv) / s.bc2_sqrt + s.eps;
    vf16 wv = (full ? vf_load(w) : vf_load_partial(w, n)) * s.decay - s.step_size * mv / denom;
    if (full) {
        vf_store(m, mv), vf_store(v, vv), vf_store(w, wv);
    } else {
        vf_store_partial(m, mv, n), vf_store_partial(v, vv, n), vf_store_partial(w, wv, n);
    }
}

}  // namespace

void adamw_chunk(float* w, const float* g, float* m, float* v, size_t n, const AdamWStep& s) {
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
    double s = 0;
    for (int k = 0; k < 8; k++) s += acc0[k] + acc1[k];
    for (; i < n; i++) s += (double)x[i] * x[i];
    return s;
}

double fma_peak_loop(long iters, float* sink) {
    // Vectors of one register's width: GCC keeps an array of wider vectors in memory.
#if defined(__AVX512F__)
    typedef float reg __attribute__((vector_size(64)));
    const int kAcc = 12;  // of 32 zmm registers
#elif defined(__AVX__)
    typedef float reg __attribute__((vector_size(32)));
    const int kAcc = 12;  // of 16 ymm registers
#else
    typedef float reg __attribute__((vector_size(16)));
    const int kAcc = 12;  // of 16 xmm registers (or 32 of 16 bytes elsewhere)
#endif
    reg acc[kAcc];
    const reg a = reg{} + 1.0000001f, b = reg{} + 0.9999999f;
    for (int i = 0; i < kAcc; i++) acc[i] = reg{} + (float)i;
    for (long it = 0; it < iters; it++)
        for (int i = 0; i < kAcc; i++) acc[i] = acc[i] * a + b;
    *sink = 0;
    for (int i = 0; i < kAcc; i++) *sink += acc[i][0];
    return 2.0 * (sizeof(reg) / sizeof(float)) * kAcc * (double)iters;
}

KERNELS_END
