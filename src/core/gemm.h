// gemm.h: C (M, N) (+)= op(A) (M, K) * op(B) (K, N) in fp32, row-major with leading dimensions, op(X) = X or X^T
// (op_at). gemm() splits C among threads; gemm_serial() runs on the calling thread (attention splits its many small
// products itself); gemm_ref() is the tests' plain triple loop in double. ops: other operands than fp32's (an
// extension's packing and micro-kernel, tuned/; the core has none), which read B_copy, a copy of B, if given.
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

// The order every gemm sums in, whatever its threads (they split C, never K): per block of gemm_kc(M, N, K) k's,
// each element of C sums acc += a * b from zero in k order (one FMA where the target has it), then C = C + acc (C =
// acc for the first block, unless accumulating). 256 deep; a C far past L2 (logits) takes K <= 768 in one pass.
const int GEMM_KC = 256, GEMM_KC_DEEP = 768;
const size_t GEMM_DEEP_MIN_C = (size_t)4 << 20;  // floats of C (16 MB)
inline int gemm_kc(int M, int N, int K) {
    return (size_t)M * N >= GEMM_DEEP_MIN_C && K > GEMM_KC && K <= GEMM_KC_DEEP ? K : GEMM_KC;
}

// acc + a * b rounded once where the target has FMA, as the tuned kernels' FMA instructions round it, and
// twice where it has none. Written out: a build without -O2 (SAN, DEBUG) does not contract it by itself.
#if defined(__FMA__) || defined(__aarch64__)
inline float madd(float acc, float a, float b) { return __builtin_fmaf(a, b, acc); }
#else
inline float madd(float acc, float a, float b) { return acc + a * b; }
#endif

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
