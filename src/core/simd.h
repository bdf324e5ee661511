// simd.h: a 16-float vector and the kernels' few vector functions (exp, sqrt, a row's max and sum of exponentials)
// in GCC/Clang vector extensions: one AVX-512 register with -march=native, two AVX2 or four SSE ones elsewhere. exp:
// range reduction by ln 2, a degree-7 Taylor polynomial (Cody & Waite), within 2 ulp of libm's expf on [-87, 88].
#pragma once
#include <cstring>

#include "core/isa.h"

#if defined(__AVX512F__) || defined(__AVX__)
#include <immintrin.h>
#endif

// GCC notes that 64-byte vectors passed by value change the ABI without AVX-512: all here is inline, no matter.
#pragma GCC diagnostic ignored "-Wpsabi"

KERNELS_BEGIN

typedef float vf16 __attribute__((vector_size(64)));
typedef int vi16 __attribute__((vector_size(64)));
typedef double vd8 __attribute__((vector_size(64)));

const int kVecLen = 16;

// The first n <= 16 floats of p, zero beyond; and the store that writes back only those n.
inline vf16 vf_load_partial(const float* p, int n) {
    vf16 v{};
    memcpy(&v, p, sizeof(float) * n);
    return v;
}
inline void vf_store_partial(float* p, vf16 v, int n) { memcpy(p, &v, sizeof(float) * n); }
typedef float vf16u __attribute__((vector_size(64), aligned(4), may_alias));  // any float*, as memcpy reads it
inline vf16 vf_load(const float* p) { return *(const vf16u*)p; }
inline void vf_store(float* p, vf16 v) { *(vf16u*)p = v; }
inline vf16 vf_set(float x) { return vf16{} + x; }

inline double vd_reduce_add(vd8 lo, vd8 hi) {
    double s = 0;
    for (int i = 0; i < 8; i++) s += lo[i] + hi[i];
    return s;
}

inline vf16 vf_sqrt(vf16 v) {
#if defined(__AVX512F__)
    __m512 r = _mm512_maskz_sqrt_ps(0xFFFF, (__m512)v);  // the unmasked form trips a GCC 12 warning
    return (vf16)r;
#else
    vf16 r;
    for (int i = 0; i < kVecLen; i++) r[i] = __builtin_sqrtf(v[i]);  // vector sqrt with -fno-math-errno
    return r;
#endif
}

// e^x, 16 lanes. Underflows to 0 below -87.3 (instead of denormals) and overflows to +inf above 88.7.
inline vf16 vf_exp(vf16 x) {
    const vf16 hi = vf_set(88.7f), lo = vf_set(-87.3f);
    vf16 xc = x > hi ? hi : x;
    xc = xc < lo ? lo : xc;
    // n = round(x / ln2) with the 1.5 * 2^23 trick (exact for |n| < 2^22, no rounding-mode calls)
    const vf16 magic = vf_set(12582912.0f);
    vf16 n = (xc * 1.44269504088896341f + magic) - magic;
    vf16 r = xc - n * 0.693359375f;  // ln 2 split in two so n * ln2_hi is exact
    r = r - n * -2.12194440e-4f;
    vf16 p = vf_set(1.0f / 5040.0f);
    p = p * r + 1.0f / 720.0f;
    p = p * r + 1.0f / 120.0f;
    p = p * r + 1.0f / 24.0f;
    p = p * r + 1.0f / 6.0f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    vi16 ni = __builtin_convertvector(n, vi16);
    // 2^n split in two factors so n = 128 (x near 88.7) does not overflow the exponent field
    vi16 n1 = ni >> 1, n2 = ni - n1;
    vf16 s1 = (vf16)((n1 + 127) << 23), s2 = (vf16)((n2 + 127) << 23);
    vf16 e = p * s1 * s2;
    e = x < lo ? vf16{} : e;
    e = x > hi ? vf_set(__builtin_inff()) : e;
    return e;
}

// The largest x[i] * scale of n floats.
inline float vf_max_of(const float* x, int n, float scale) {
    vf16 m = vf_set(-__builtin_inff());
    int i = 0;
    for (; i + kVecLen <= n; i += kVecLen) {
        const vf16 v = vf_load(x + i) * scale;
        m = m > v ? m : v;
    }
    float mx = m[0];
    for (int l = 1; l < kVecLen; l++) mx = m[l] > mx ? m[l] : mx;
    for (; i < n; i++) mx = x[i] * scale > mx ? x[i] * scale : mx;
    return mx;
}

// The sum of e^(x[i] * scale - shift) over n floats, in double lanes (no fp32 drift over a long row) in a
// fixed order. kStore: the exponentials overwrite x.
template <bool kStore>
inline double vf_exp_sum(float* x, int n, float scale, float shift) {
    const vf16 vs = vf_set(shift);
    vd8 lo{}, hi{};
    int i = 0;
    for (; i + kVecLen <= n; i += kVecLen) {
        const vf16 e = vf_exp(vf_load(x + i) * scale - vs);
        if (kStore) vf_store(x + i, e);
        lo += __builtin_convertvector(__builtin_shufflevector(e, e, 0, 1, 2, 3, 4, 5, 6, 7), vd8);
        hi += __builtin_convertvector(__builtin_shufflevector(e, e, 8, 9, 10, 11, 12, 13, 14, 15), vd8);
    }
    double sum = vd_reduce_add(lo, hi);
    if (i < n) {
        const vf16 e = vf_exp(vf_load_partial(x + i, n - i) * scale - vs);
        if (kStore) vf_store_partial(x + i, e, n - i);
        for (int l = 0; l < n - i; l++) sum += e[l];
    }
    return sum;
}

KERNELS_END
