// gemm.h: single-precision C (M, N) (+)= op(A) (M, K) * op(B) (K, N), row-major with leading dimensions.
// op(A)[i][k] = transA ? A[k*lda + i] : A[i*lda + k]; op(B)[k][j] = transB ? B[j*ldb + k] : B[k*ldb + j].
// gemm() packs panels and runs a register-blocked micro-kernel; threads split C into disjoint blocks and
// never split K, so every element is summed in the same order whatever the thread count.
// gemm_serial() is the same computation on the calling thread only, for callers that parallelise over
// many small products themselves (attention); for a given shape it sums in the same order as gemm().
// gemm_ref() is the plain triple loop the tests compare against.
// ops, if given, are other operands than fp32's (gemm_tile.h's GemmOperands: an extension's packing and
// micro-kernel, which gemm blocks and threads as fp32's); B_copy, if given, is a copy of B (a Weight's,
// layers.h) that ops read instead of B.
#pragma once
#include "core/isa.h"

struct GemmOperands;

KERNELS_BEGIN

void gemm(int M, int N, int K, const float* A, int lda, bool transA, const float* B, int ldb, bool transB, float* C,
          int ldc, bool accumulate, const GemmOperands* ops = nullptr, const void* B_copy = nullptr);
void gemm_serial(int M, int N, int K, const float* A, int lda, bool transA, const float* B, int ldb, bool transB,
                 float* C, int ldc, bool accumulate, const GemmOperands* ops = nullptr);
void gemm_ref(int M, int N, int K, const float* A, int lda, bool transA, const float* B, int ldb, bool transB, float* C,
              int ldc, bool accumulate);

KERNELS_END
