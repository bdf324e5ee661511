// gemm.h: single-precision C (M, N) (+)= op(A) (M, K) * op(B) (K, N), row-major with leading dimensions.
// op(A)[i][k] = transA ? A[k*lda + i] : A[i*lda + k]; op(B)[k][j] = transB ? B[j*ldb + k] : B[k*ldb + j].
// gemm() packs panels and runs a register-blocked micro-kernel; threads split C into disjoint blocks and
// never split K, so every element is summed in the same order whatever the thread count.
// gemm_serial() is the same computation on the calling thread only, for callers that parallelise over
// many small products themselves (attention); for a given shape it sums in the same order as gemm().
// gemm_ref() is the plain triple loop the tests compare against.
// Precision::kBf16 rounds both operands to bf16 (bf16.h) as they are packed and multiplies them with
// AVX512_BF16's vdpbf16ps, accumulating in fp32; it needs bf16_supported() and precision/gemm_bf16.cpp
// linked in (its packing and kernels, through gemm_tile.h's GemmOperands). gemm_bf16_ref() is its scalar
// reference: the same rounding of the operands, the sum in double. B16, if given, is B's bf16 rounding
// (the same indexing; the model's bf16 weight copy): kBf16 reads it instead of rounding B, the same result
// from half the bytes.
#pragma once
#include "core/bf16.h"
#include "core/isa.h"

KERNELS_BEGIN

void gemm(int M, int N, int K, const float* A, int lda, bool transA, const float* B, int ldb, bool transB, float* C,
          int ldc, bool accumulate, Precision prec = Precision::kFp32, const uint16_t* B16 = nullptr);
void gemm_serial(int M, int N, int K, const float* A, int lda, bool transA, const float* B, int ldb, bool transB,
                 float* C, int ldc, bool accumulate, Precision prec = Precision::kFp32);
void gemm_ref(int M, int N, int K, const float* A, int lda, bool transA, const float* B, int ldb, bool transB, float* C,
              int ldc, bool accumulate);
void gemm_bf16_ref(int M, int N, int K, const float* A, int lda, bool transA, const float* B, int ldb, bool transB,
                   float* C, int ldc, bool accumulate);

KERNELS_END
