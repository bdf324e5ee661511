// bf16.h: bf16 for the kernels: its one rounding (round to nearest, ties to even, NaN kept a quiet NaN, as
// PyTorch's .bfloat16() does), for one value and for 16 lanes (the tests check both give the same bits), and
// the CPU check for vdpbf16ps. bf16 is fp32's sign, 8-bit exponent and top 7 mantissa bits. Products of two bf16 values are exact in fp32, so a
// bf16 matmul differs from fp32 only by this rounding of its operands (and its fp32 summation order).
// Also the gemm's bf16 operands (gemm_bf16.cpp) and their scalar reference.
#pragma once
#include <cstdint>
#include <cstring>

#include "core/isa.h"
#include "core/simd.h"

struct GemmOperands;

inline float bf16_to_float(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float x;
    memcpy(&x, &u, sizeof(x));
    return x;
}

inline uint16_t bf16_round(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof(u));
    if ((u & 0x7FFFFFFFu) > 0x7F800000u) return (uint16_t)((u >> 16) | 0x40);  // NaN: keep it quiet
    return (uint16_t)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}
// x rounded to the nearest bf16, as a float.
inline float bf16_rounded(float x) { return bf16_to_float(bf16_round(x)); }

KERNELS_BEGIN

typedef unsigned int vu16 __attribute__((vector_size(64)));

// bf16_round of 16 lanes, in the low 16 bits of each 32-bit lane.
inline vu16 vbf16_round(vf16 x) {
    vu16 u = (vu16)x;
    vu16 r = (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
    vu16 nan = (u >> 16) | 0x40u;
    return (u & 0x7FFFFFFFu) > 0x7F800000u ? nan : r;
}
// dst[0..n) = bf16_round of the first n (<= 16) lanes of x.
inline void vbf16_store(uint16_t* dst, vf16 x, int n) {
    vu16 r = vbf16_round(x);
    for (int l = 0; l < n; l++) dst[l] = (uint16_t)r[l];
}
// Pairs for the bf16 dot-product layout: lane j = bf16(lo[j]) | bf16(hi[j]) << 16.
inline vu16 vbf16_pairs(vf16 lo, vf16 hi) { return vbf16_round(lo) | (vbf16_round(hi) << 16); }

// True when this CPU runs the AVX512_BF16 dot product (vdpbf16ps) that the bf16 kernels use.
bool bf16_supported();
// True when bf16's gemm runs on AMX tiles (TDPBF16PS, Intel Sapphire Rapids and later) instead
// of vdpbf16ps: bf16_supported(), the CPU has AMX-BF16 and AMX-TILE, the system granted the tile state, and
// bf16_amx_use(false) has not turned it off. The same operands and exact products; only the order of the
// fp32 sums differs (each element's order is still fixed, whatever the thread count). AMX runs the training
// and prompt products; decoding one token stays on vdpbf16ps. Linux grants the tile state from 5.16 on
// (platform.h); `gpt2 --version` says which path runs.
bool bf16_amx();
// Turns the AMX path off or (where it exists) back on, for the whole process; for tests and benchmarks.
void bf16_amx_use(bool on);
// dst[i] = bf16_round(src[i]), n elements, in parallel.
void bf16_round_array(uint16_t* dst, const float* src, size_t n);
// The same on the calling thread only (inside a parallel loop).
inline void bf16_round_serial(uint16_t* dst, const float* src, size_t n) {
    size_t i = 0;
    for (; i + kVecLen <= n; i += kVecLen) vbf16_store(dst + i, vf_load(src + i), kVecLen);
    if (i < n) vbf16_store(dst + i, vf_load_partial(src + i, (int)(n - i)), (int)(n - i));
}

// The operands of a bf16 gemm on this CPU (core/gemm.h's ops): both operands rounded to bf16 as they are
// packed and multiplied with AVX512_BF16's vdpbf16ps, or on AMX tiles where bf16_amx(), accumulating in
// fp32. Needs bf16_supported(). A weight's copy given to such a gemm (its B_copy) is precision.h's
// WeightCopy, whose bf16 rounding of B is read instead of rounding B: the same result from half the bytes.
// Asked per product, so that bf16_amx_use takes effect at once.
const GemmOperands* bf16_gemm_operands();
// The bf16 gemm's scalar reference: the same rounding of the operands, the sum in double.
void gemm_bf16_ref(int M, int N, int K, const float* A, int lda, bool transA, const float* B, int ldb, bool transB,
                   float* C, int ldc, bool accumulate);

KERNELS_END
