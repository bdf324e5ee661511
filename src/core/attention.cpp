// attention.cpp: causal self-attention (layers.h) in blocks of kQBlock queries of one (batch, head), split by OpenMP:
// S = q k^T and O = P V on the block's thread (gemm_serial) in (kQBlock, T) scratch; the backward recomputes S and P
// block by block from lse (as FlashAttention does).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <vector>

#include "core/gemm.h"
#include "core/layers.h"
#include "core/simd.h"

KERNELS_BEGIN

namespace {

// A thread's scratch of at least n floats: a block's (kQBlock, T) scores or probabilities (0), their gradients (1).
float* scratch(int which, size_t n) {
    static thread_local std::vector<float> buf[2];
    if (buf[which].size() < n) buf[which].resize(n);
    return buf[which].data();
}

// S becomes P = exp(S * scale - lse) on and below the diagonal, 0 above it.
void block_probs(float* S, const float* lse, int t0, int rows, int tn, float scale) {
    for (int r = 0; r < rows; r++) {
        float* p = S + (size_t)r * tn;
        const int n = t0 + r + 1;
        int j = 0;
        for (; j + kLanes <= n; j += kLanes) vn_store(p + j, vn_exp(vn_load(p + j) * scale - lse[r]));
        if (j < n) vf_store_partial(p + j, vn_exp(vf_load_partial<vn>(p + j, n - j) * scale - lse[r]), n - j);
        for (j = n; j < tn; j++) p[j] = 0.0f;
    }
}

}  // namespace

void block_softmax(float* S, float* lse, int t0, int rows, int tn, float scale) {
    for (int r = 0; r < rows; r++) {  // lse[r] = log of the sum of exp(S[r][j] * scale) over keys j <= t0 + r
        float* s = S + (size_t)r * tn;
        const float mx = vf_max_of(s, t0 + r + 1, scale);
        lse[r] = mx + (float)std::log(vf_exp_sum<false>(s, t0 + r + 1, scale, mx));
    }
    block_probs(S, lse, t0, rows, tn, scale);
}

void attend_block(float* out, size_t out_row, float* lse, const float* q, size_t q_row, const float* k, size_t k_row,
                  bool keys_by_channel, const float* v, size_t v_row, int t0, int rows, int HS, float scale,
                  const GemmOperands* ops) {
    const int tn = t0 + rows;
    float* P = scratch(0, (size_t)kQBlock * tn);
    gemm_serial(rows, tn, HS, q, (int)q_row, false, k, (int)k_row, !keys_by_channel, P, tn, false, ops);  // q k^T
    block_softmax(P, lse, t0, rows, tn, scale);
    gemm_serial(rows, HS, tn, P, tn, false, v, (int)v_row, false, out, (int)out_row, false, ops);  // out = P V
}

void attention_forward(float* out, float* lse, const float* qkv, int B, int T, int C, int NH, const GemmOperands* ops) {
    const int HS = C / NH, nblocks = (T + kQBlock - 1) / kQBlock;
    const float scale = 1.0f / sqrtf((float)HS);
    const size_t row = 3 * (size_t)C;
#pragma omp parallel for collapse(3) schedule(static)
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++)
            for (int blk = 0; blk < nblocks; blk++) {
                const int t0 = blk * kQBlock, rows = std::min(kQBlock, T - t0);
                const float* q = qkv + (size_t)b * T * row + h * HS;  // position 0 of this sequence and head
                attend_block(out + ((size_t)b * T + t0) * C + h * HS, C, lse + ((size_t)b * NH + h) * T + t0,
                             q + (size_t)t0 * row, row, q + C, row, false, q + 2 * C, row, t0, rows, HS, scale, ops);
            }
}

void attention_backward(float* dqkv, const float* dout, const float* qkv, const float* lse, int B, int T, int C, int NH,
                        const GemmOperands* ops) {
    const int HS = C / NH, nblocks = (T + kQBlock - 1) / kQBlock;
    const float scale = 1.0f / sqrtf((float)HS);
    const int row = 3 * C;
    // dk and dv of a position gather from every later query block, so a (batch, head) is one thread's, blocks in
    // order: no element of dqkv has two writers, and the order of its sums does not depend on the thread count.
#pragma omp parallel for collapse(2) schedule(static)
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++) {
            const float* q = qkv + (size_t)b * T * row + h * HS;
            float* dq = dqkv + (size_t)b * T * row + h * HS;
            const float* d = dout + (size_t)b * T * C + h * HS;
            for (int t = 0; t < T; t++) {  // dk and dv accumulate over query blocks; dq is overwritten
                memset(dq + (size_t)t * row + C, 0, sizeof(float) * HS);
                memset(dq + (size_t)t * row + 2 * C, 0, sizeof(float) * HS);
            }
            float *P = scratch(0, (size_t)kQBlock * T), *dP = scratch(1, (size_t)kQBlock * T);
            for (int blk = 0; blk < nblocks; blk++) {
                const int t0 = blk * kQBlock, rows = std::min(kQBlock, T - t0), tn = t0 + rows;
                gemm_serial(rows, tn, HS, q + (size_t)t0 * row, row, false, q + C, row, true, P, tn, false, ops);
                block_probs(P, lse + ((size_t)b * NH + h) * T + t0, t0, rows, tn, scale);
                // through out = P V: dP = dout V^T, dV += P^T dout
                gemm_serial(rows, tn, HS, d + (size_t)t0 * C, C, false, q + 2 * C, row, true, dP, tn, false, ops);
                gemm_serial(tn, HS, rows, P, tn, true, d + (size_t)t0 * C, C, false, dq + 2 * C, row, true, ops);
                // through the softmax: dS = P (dP - sum_j P dP) * scale (zero above the diagonal, as P)
                for (int r = 0; r < rows; r++) {
                    const float* p = P + (size_t)r * tn;
                    float* ds = dP + (size_t)r * tn;
                    const int n = t0 + r + 1;
                    float acc[kVecLen] = {};  // term j into lane j % 16: the same sums with any register
                    int j = 0;
                    for (; j + kVecLen <= n; j += kVecLen)
                        for (int l = 0; l < kVecLen; l++) acc[l] += p[j + l] * ds[j + l];
                    float dot = 0;
                    for (int l = 0; l < kVecLen; l++) dot += acc[l];
                    for (; j < n; j++) dot += p[j] * ds[j];
                    for (j = 0; j < n; j++) ds[j] = p[j] * (ds[j] - dot) * scale;
                    for (j = n; j < tn; j++) ds[j] = 0.0f;
                }
                // through S = q k^T: dq = dS k (overwrites), dk += dS^T q
                gemm_serial(rows, HS, tn, dP, tn, false, q + C, row, false, dq + (size_t)t0 * row, row, false, ops);
                gemm_serial(tn, HS, rows, dP, tn, true, q + (size_t)t0 * row, row, false, dq + C, row, true, ops);
            }
        }
}

KERNELS_END
