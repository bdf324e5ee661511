// gemm.cpp: the plain gemm, in gemm_kc's order (gemm.h). Per block of C (64 x 64 at most), K a block at a time:
// that block of op(B) copied row by row into a buffer, so the innermost loop, over j, reads consecutive floats.
#include "core/gemm.h"

#include <algorithm>
#include <cassert>
#include <vector>

KERNELS_BEGIN

namespace {

const int BLOCK = 64;  // rows and columns of C per block

// C[i0:i1, j0:j0+nb] (nb <= BLOCK), all of K, with b a thread's buffer for kc x nb floats of op(B).
void gemm_block(int i0, int i1, int j0, int nb, int K, int kc, const float* A, int lda, bool transA, const float* B,
                int ldb, bool transB, float* C, int ldc, bool accumulate, float* b) {
    for (int k0 = 0; k0 == 0 || k0 < K; k0 += kc) {  // once with K = 0: C = 0 (not accumulating)
        const int kn = std::min(kc, K - k0);
        for (int k = 0; k < kn; k++)
            for (int j = 0; j < nb; j++) b[k * nb + j] = op_at(B, ldb, transB, k0 + k, j0 + j);
        for (int i = i0; i < i1; i++) {
            float acc[BLOCK] = {};
            for (int k = 0; k < kn; k++) {
                const float a = op_at(A, lda, transA, i, k0 + k);
                for (int j = 0; j < nb; j++) acc[j] = madd(acc[j], a, b[k * nb + j]);
            }
            float* c = C + (size_t)i * ldc + j0;
            for (int j = 0; j < nb; j++) c[j] = accumulate || k0 > 0 ? c[j] + acc[j] : acc[j];
        }
    }
}

void gemm_plain(int M, int N, int K, const float* A, int lda, bool transA, const float* B, int ldb, bool transB,
                float* C, int ldc, bool accumulate, const GemmOperands* ops, bool serial) {
    assert(!ops && "other operands than fp32's need the tuned gemm (tuned/)");
    if (M <= 0 || N <= 0 || (K <= 0 && accumulate)) return;
    const int kc = gemm_kc(M, N, K), row_blocks = (M + BLOCK - 1) / BLOCK;
    const int blocks = row_blocks * ((N + BLOCK - 1) / BLOCK);
#pragma omp parallel for schedule(static) if (!serial)
    for (int blk = 0; blk < blocks; blk++) {
        static thread_local std::vector<float> b;
        b.resize((size_t)std::min(kc, K) * BLOCK);
        const int i0 = blk % row_blocks * BLOCK, j0 = blk / row_blocks * BLOCK;
        gemm_block(i0, std::min(M, i0 + BLOCK), j0, std::min(BLOCK, N - j0), K, kc, A, lda, transA, B, ldb, transB, C,
                   ldc, accumulate, b.data());
    }
}

}  // namespace

void gemm(int M, int N, int K, const float* A, int lda, bool transA, const float* B, int ldb, bool transB, float* C,
          int ldc, bool accumulate, const GemmOperands* ops, const void* B_copy) {
    if (gemm_tuned) return gemm_tuned(M, N, K, A, lda, transA, B, ldb, transB, C, ldc, accumulate, ops, B_copy, false);
    gemm_plain(M, N, K, A, lda, transA, B, ldb, transB, C, ldc, accumulate, ops, false);
}

void gemm_serial(int M, int N, int K, const float* A, int lda, bool transA, const float* B, int ldb, bool transB,
                 float* C, int ldc, bool accumulate, const GemmOperands* ops) {
    if (gemm_tuned) return gemm_tuned(M, N, K, A, lda, transA, B, ldb, transB, C, ldc, accumulate, ops, nullptr, true);
    gemm_plain(M, N, K, A, lda, transA, B, ldb, transB, C, ldc, accumulate, ops, true);
}

void gemm_ref(int M, int N, int K, const float* A, int lda, bool transA, const float* B, int ldb, bool transB, float* C,
              int ldc, bool accumulate) {
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double sum = 0;
            for (int k = 0; k < K; k++) sum += (double)op_at(A, lda, transA, i, k) * op_at(B, ldb, transB, k, j);
            float* c = C + (size_t)i * ldc + j;
            *c = accumulate ? *c + (float)sum : (float)sum;
        }
}

KERNELS_END
