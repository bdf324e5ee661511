// q8_dot.h: the product of two q8_0 blocks' values (half.h; each in -127..127) in integers, exact, for int8
// inference's two kernels: decoding's mat-vec (inference/matvec.cpp's matvec_q8q8) and the gemm of prefill
// and eval (gemm_q8.cpp). AVX2: vpmaddubsw on |w| and x with w's signs (no pair's sum saturates: 2 x 127 x 127
// < 32767), then vpmaddwd into 8 int32 lanes; elsewhere a plain integer loop.
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
// The block product w . x as 8 lane sums, converted to floats (exactly: each is under 2^24); w_abs is
// _mm256_sign_epi8(w, w), which a caller multiplying w by several x computes once.
inline __m256 q8_dot_lanes(__m256i w_abs, __m256i w, __m256i x) {
    const __m256i pairs = _mm256_maddubs_epi16(w_abs, _mm256_sign_epi8(x, w));
    return _mm256_cvtepi32_ps(_mm256_madd_epi16(pairs, _mm256_set1_epi16(1)));
}

// The sum of 8 lanes, by halving.
inline float q8_sum_lanes(__m256 v) {
    const __m128 h = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    const __m128 q = _mm_add_ps(h, _mm_movehl_ps(h, h));
    return _mm_cvtss_f32(_mm_add_ss(q, _mm_shuffle_ps(q, q, 1)));
}
#endif

// The block product w . x (kQ8Block values each), in a plain loop.
inline int q8_dot(const int8_t* w, const int8_t* x) {
    int dot = 0;
    for (int i = 0; i < kQ8Block; i++) dot += w[i] * x[i];
    return dot;
}

KERNELS_END
