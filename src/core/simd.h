// simd.h: the kernels' vectors in GCC/Clang vector extensions, and their few functions (exp, a row's max and sum of
// exponentials). Two widths: vn, one register of floats (kLanes: 16 with AVX-512, 8 with AVX2, 4 with SSE or NEON),
// for lane-by-lane code; and vf16, 16 floats in any build, for code whose shuffles or sums' order need 16 lanes.
// Without AVX-512, GCC keeps a vf16 in memory and turns its comparisons into scalar branches. exp: range reduction
// by ln 2, a degree-7 Taylor polynomial (Cody & Waite), within 2 ulp of libm's expf on [-87, 88].
#pragma once
#include <cstring>
#include <initializer_list>

#include "core/isa.h"

// GCC notes that 64-byte vectors passed by value change the ABI without AVX-512: all here is inline, no matter.
#pragma GCC diagnostic ignored "-Wpsabi"

KERNELS_BEGIN

typedef float vf16 __attribute__((vector_size(64)));
const int kVecLen = 16;
#if defined(__AVX512F__)
const int kLanes = 16;
#elif defined(__AVX__)
const int kLanes = 8;
#else
const int kLanes = 4;
#endif
typedef float vn __attribute__((vector_size(4 * kLanes)));
typedef int vni __attribute__((vector_size(4 * kLanes)));

// The first n floats of p (n no more than a V holds), zero beyond; and the store that writes back only those n.
template <typename V = vf16>
inline V vf_load_partial(const float* p, int n) {
    V v{};
    memcpy(&v, p, sizeof(float) * n);
    return v;
}
template <typename V>
inline void vf_store_partial(float* p, V v, int n) {
    memcpy(p, &v, sizeof(float) * n);
}
typedef float vf16u __attribute__((vector_size(64), aligned(4), may_alias));  // any float*, as memcpy reads it
inline vf16 vf_load(const float* p) { return *(const vf16u*)p; }
inline void vf_store(float* p, vf16 v) { *(vf16u*)p = v; }
inline vn vn_load(const float* p) { return vf_load_partial<vn>(p, kLanes); }
inline void vn_store(float* p, vn v) { memcpy(p, &v, sizeof v); }

// e^x lane by lane. Underflows to 0 below -87.3 (instead of denormals) and overflows to +inf above 88.7.
inline vn vn_exp(vn x) {
    const vn hi = vn{} + 88.7f, lo = vn{} - 87.3f;
    const vn xc = x > hi ? hi : x < lo ? lo : x;
    // n = round(x / ln2) with the 1.5 * 2^23 trick (exact for |n| < 2^22, no rounding-mode calls)
    const vn magic = vn{} + 12582912.0f;
    vn n = (xc * 1.44269504088896341f + magic) - magic;
    vn r = xc - n * 0.693359375f;  // ln 2 split in two so n * ln2_hi is exact
    r = r - n * -2.12194440e-4f;
    vn p = vn{} + 1.0f / 5040.0f;  // e^r's Taylor series to r^7, by Horner's rule
    for (float c : {1.0f / 720.0f, 1.0f / 120.0f, 1.0f / 24.0f, 1.0f / 6.0f, 0.5f, 1.0f, 1.0f}) p = p * r + c;
    vni ni = __builtin_convertvector(n, vni);
    // 2^n split in two factors so n = 128 (x near 88.7) does not overflow the exponent field
    vni n1 = ni >> 1, n2 = ni - n1;
    vn s1 = (vn)((n1 + 127) << 23), s2 = (vn)((n2 + 127) << 23);
    return x > hi ? vn{} + __builtin_inff() : x < lo ? vn{} : p * s1 * s2;
}

// The largest x[i] * scale of n floats.
inline float vf_max_of(const float* x, int n, float scale) {
    vn m = vn{} - __builtin_inff();
    int i = 0;
    for (; i + kLanes <= n; i += kLanes) {
        const vn v = vn_load(x + i) * scale;
        m = m > v ? m : v;
    }
    float mx = m[0];
    for (int l = 1; l < kLanes; l++) mx = m[l] > mx ? m[l] : mx;
    for (; i < n; i++) mx = x[i] * scale > mx ? x[i] * scale : mx;
    return mx;
}

// The sum of e^(x[i] * scale - shift) over n floats in a fixed order, the same with any register: x[i]'s term into
// double lane i % 16 (no fp32 drift over a long row), the lanes summed, then the tail's terms. kStore: the
// exponentials overwrite x.
template <bool kStore>
inline double vf_exp_sum(float* x, int n, float scale, float shift) {
    typedef float vhalf __attribute__((vector_size(2 * kLanes)));
    typedef double vd __attribute__((vector_size(4 * kLanes)));  // a vhalf's floats as doubles
    vd lanes[2 * kVecLen / kLanes] = {};                         // lanes[k][l]: double lane k * kLanes / 2 + l
    int i = 0;
    for (; i + kVecLen <= n; i += kVecLen)
        for (int k = 0; k < kVecLen / kLanes; k++) {
            const vn e = vn_exp(vn_load(x + i + k * kLanes) * scale - shift);
            if (kStore) vn_store(x + i + k * kLanes, e);
            vhalf h[2];
            memcpy(h, &e, sizeof e);
            lanes[2 * k] += __builtin_convertvector(h[0], vd);
            lanes[2 * k + 1] += __builtin_convertvector(h[1], vd);
        }
    double sum = 0;
    const int kHalf = kLanes / 2;
    for (int l = 0; l < 8; l++) sum += lanes[l / kHalf][l % kHalf] + lanes[(l + 8) / kHalf][(l + 8) % kHalf];
    for (; i < n; i += kLanes) {
        const int m = n - i < kLanes ? n - i : kLanes;
        const vn e = vn_exp(vf_load_partial<vn>(x + i, m) * scale - shift);
        if (kStore) vf_store_partial(x + i, e, m);
        for (int l = 0; l < m; l++) sum += e[l];
    }
    return sum;
}

KERNELS_END
