// gemm.h: single-precision C (M, N) (+)= op(A) (M, K) * op(B) (K, N), row-major with leading dimensions,
// op(X) = X or its transpose (op_at). gemm() splits C among threads; gemm_serial() runs on the calling thread
// (for callers that split many small products themselves: attention); gemm_ref() is the plain triple loop in
// double the tests compare against. ops, if given, are other operands than fp32's (an extension's packing
// and micro-kernel, tuned/; the core's gemm has fp32's only), which read B_copy, a copy of B, if given.
#pragma once
#include <cstddef>

#include "core/isa.h"

struct GemmOperands;

// The faster gemm an extension plugs in (tuned/: packed panels, register tiles), or null: the core's plain
// loops. It must sum every element of C as gemm_kc() below says, so that either gives the same numbers.
using GemmFunction = void(int M, int N, int K, const float* A, int lda, bool transA, const float* B, int ldb,
                          bool transB, float* C, int ldc, bool accumulate, const GemmOperands* ops, const void* B_copy,
                          bool serial);
inline GemmFunction* gemm_tuned = nullptr;

KERNELS_BEGIN

// The summation order every gemm keeps, whatever its threads (they split C, never K): K in blocks of
// gemm_kc(M, N, K) values of k; per block each element of C sums acc += a * b from zero in k order (one FMA
// where the target has it), then C = C + acc (C = acc for the first block, unless accumulating). Blocks are
// 256 deep, but a C far larger than L2 (the lm_head's logits) takes a K up to 768 in one: one pass over C.
const int GEMM_KC = 256, GEMM_KC_DEEP = 768;
const size_t GEMM_DEEP_MIN_C = (size_t)4 << 20;  // floats of C (16 MB)
inline int gemm_kc(int M, int N, int K) {
    return (size_t)M * N >= GEMM_DEEP_MIN_C && K > GEMM_KC && K <= GEMM_KC_DEEP ? K : GEMM_KC;
}

// op(X)[r][c] for X with leading dimension ld.
inline float op_at(const float* X, int ld, bool trans, int r, int c) {
    return trans ? X[(size_t)c * ld + r] : X[(size_t)r * ld + c];
}

void gemm(int M, int N, int K, const float* A, int lda, bool transA, const float* B, int ldb, bool transB, float* C,
          int ldc, bool accumulate, const GemmOperands* ops = nullptr, const void* B_copy = nullptr);
void gemm_serial(int M, int N, int K, const float* A, int lda, bool transA, const float* B, int ldb, bool transB,
                 float* C, int ldc, bool accumulate, const GemmOperands* ops = nullptr);
void gemm_ref(int M, int N, int K, const float* A, int lda, bool transA, const float* B, int ldb, bool transB, float* C,
              int ldc, bool accumulate);

KERNELS_END
