// simd.h: a 16-float vector type and the few vector functions the elementwise kernels need (exp,
// sigmoid, sqrt, sums), written with GCC/Clang vector extensions so one source becomes one AVX-512
// register with -march=native, two AVX2 or four SSE registers elsewhere. Not a general SIMD library.
// exp is range reduction by ln 2 plus a degree-7 Taylor polynomial (Cody & Waite style); its error is
// within 2 ulp of expf on [-87, 88], which the tests check against the scalar libm.
#pragma once
#include <cstring>

#include "core/isa.h"

#if defined(__AVX512F__) || defined(__AVX__)
#include <immintrin.h>
#endif

// Without AVX-512, GCC notes that passing 64-byte vectors by value changes the ABI: every function here is
// inline and nothing crosses a library boundary, so the note does not apply.
#pragma GCC diagnostic ignored "-Wpsabi"

KERNELS_BEGIN

typedef float vf16 __attribute__((vector_size(64)));
typedef int vi16 __attribute__((vector_size(64)));
typedef double vd8 __attribute__((vector_size(64)));

const int kVecLen = 16;

inline vf16 vf_load(const float* p) {
    vf16 v;
    memcpy(&v, p, sizeof(v));
    return v;
}
inline void vf_store(float* p, vf16 v) { memcpy(p, &v, sizeof(v)); }
inline vf16 vf_set(float x) { return vf16{} + x; }
// The first n < 16 floats of p, zero beyond; and the store that writes back only those n.
inline vf16 vf_load_partial(const float* p, int n) {
    vf16 v{};
    memcpy(&v, p, sizeof(float) * n);
    return v;
}
inline void vf_store_partial(float* p, vf16 v, int n) { memcpy(p, &v, sizeof(float) * n); }

inline vf16 vf_max(vf16 a, vf16 b) { return a > b ? a : b; }

inline float vf_reduce_max(vf16 v) {
    float m = v[0];
    for (int i = 1; i < kVecLen; i++) m = v[i] > m ? v[i] : m;
    return m;
}

// lo, hi += the 16 lanes of x widened to double (sums of many floats without fp32 rounding drift).
inline void vf_accumulate_double(vd8* lo, vd8* hi, vf16 x) {
    *lo += __builtin_convertvector(__builtin_shufflevector(x, x, 0, 1, 2, 3, 4, 5, 6, 7), vd8);
    *hi += __builtin_convertvector(__builtin_shufflevector(x, x, 8, 9, 10, 11, 12, 13, 14, 15), vd8);
}
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
    for (int i = 0; i < kVecLen; i++) r[i] = __builtin_sqrtf(v[i]);
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

KERNELS_END
