// q8_dot.h: the product of two q8_0 blocks' values (half.h; each in -127..127) in integers, exact, for int8
// inference's two kernels: decoding's mat-vec (inference/matvec.cpp's matvec_q8q8) and the gemm of prefill
// and eval (gemm_q8.cpp). AVX2: one block of x against four blocks at once; elsewhere a plain integer loop;
// with AVX512-VNNI each kernel has its own vpdpbusd path. The same sums on each path, so the same numbers. The
// VNNI paths need a native build (make): ARCH=portable's AVX-512 set is x86-64-v4's, without VNNI, and runs AVX2's.
#pragma once
#include <cstdint>

#include "core/isa.h"
#include "precision/half.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

KERNELS_BEGIN

#if defined(__AVX2__) && defined(__FMA__)
#define Q8_DOT_AVX2 1
// The block products of x with four blocks w0..w3, exact, as int32 lanes: (w0 .. w3) . x summed over the
// block's low 16 bytes, then (w0 .. w3) . x over its high 16. vpmaddubsw on |x| and each w with x's signs (no
// pair's sum saturates: 2 x 127 x 127 < 32767; a w of -128 would wrap where x < 0, and q8_0's blocks never
// hold one), vpmaddwd into 8 lanes, then two rounds of pairing lanes (unpack and add), so that the caller
// converts and scales four products at once.
inline __m256i q8_dot4(__m256i x, __m256i w0, __m256i w1, __m256i w2, __m256i w3) {
    const __m256i ax = _mm256_sign_epi8(x, x), ones = _mm256_set1_epi16(1);
    const auto dot = [&](__m256i w) {
        return _mm256_madd_epi16(_mm256_maddubs_epi16(ax, _mm256_sign_epi8(w, x)), ones);
    };
    const auto pair32 = [](__m256i a, __m256i b) {
        return _mm256_add_epi32(_mm256_unpacklo_epi32(a, b), _mm256_unpackhi_epi32(a, b));
    };
    const __m256i p01 = pair32(dot(w0), dot(w1)), p23 = pair32(dot(w2), dot(w3));
    return _mm256_add_epi32(_mm256_unpacklo_epi64(p01, p23), _mm256_unpackhi_epi64(p01, p23));
}
#endif

#if defined(__AVX512VNNI__) && defined(__AVX512BW__)
// vpdpbusd: unsigned bytes times signed ones, four pairs summed into each int32 lane, in one instruction
// (gemm_q8.cpp and matvec.cpp's AVX512-VNNI paths; the same integer sums, so the same numbers).
#define Q8_DOT_VNNI 1
typedef int vi16 __attribute__((vector_size(64)));  // a zmm's 16 int32 lanes, for vector extensions
#endif

// The block product w . x (kQ8Block values each), in a plain loop.
inline int q8_dot(const int8_t* w, const int8_t* x) {
    int dot = 0;
    for (int i = 0; i < kQ8Block; i++) dot += w[i] * x[i];
    return dot;
}

KERNELS_END
