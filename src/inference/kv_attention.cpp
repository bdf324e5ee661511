// kv_attention.cpp: see kv_attention.h. New rows go through attend_block (core/attention.cpp), a block of them
// per head; one new row, decoding's, through attend_one below.
#include "inference/kv_attention.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <vector>

#include "core/gemm.h"
#include "core/layers.h"

KERNELS_BEGIN

namespace {

// A new key into the cache: its channels are k_row floats apart, each on a line of its own, whose fetches are all
// started before the first store waits on one.
void cache_key(float* k, size_t k_row, const float* key, int HS) {
    for (int c = 0; c < HS; c++) __builtin_prefetch(k + (size_t)c * k_row, 1);
    for (int c = 0; c < HS; c++) k[(size_t)c * k_row] = key[c];
}

// out[0..W) = the sum over keys j < tn of p[j] v[j][0..W), v's rows v_row apart, in gemm_kc's order: jc keys
// at a time, each block's sum in W registers.
template <int W>
void weigh_values(float* out, const float* p, const float* v, size_t v_row, int tn, int jc) {
    for (int j0 = 0; j0 < tn; j0 += jc) {
        float a[W] = {};
        for (int j = j0; j < std::min(tn, j0 + jc); j++) {
            const float* vj = v + (size_t)j * v_row;
            if (j + 16 < tn)  // rows v_row floats apart: the hardware does not fetch them ahead
                for (int l = 0; l < W; l += 16) __builtin_prefetch(vj + 16 * v_row + l);
            for (int l = 0; l < W; l++) a[l] = madd(a[l], p[j], vj[l]);
        }
        for (int l = 0; l < W; l++) out[l] = j0 == 0 ? a[l] : out[l] + a[l];
    }
}

// attend_block for one query at position tn - 1, in fp32 (ops unused), without packing operands for gemm: its
// numbers bit for bit (where gemm_kc keeps its 256-deep blocks: HS <= 256, GPT-2's 64, or under 65,536 keys),
// every sum in gemm_kc's order with gemm's madd (core/gemm.h): the scores over the channels, the cache's channel
// rows read one after the other (one stream through memory, each key's sum in order), and the output over the keys.
void attend_one(float* out, float* lse, const float* q, const float* k, size_t k_row, const float* v, size_t v_row,
                int tn, int HS, float scale) {
    static_assert(kKeysAtOnce % 16 == 0, "the scores' whole vectors stay within the cache's rows");
    static thread_local std::vector<float> scores, part;
    const int kc = gemm_kc(1, tn, HS), keys = (tn + 15) / 16 * 16;  // attend_block's kc for one row; keys <= k_row
    scores.resize(k_row);
    if (HS > kc) part.resize(k_row);
    for (int c0 = 0; c0 < HS; c0 += kc) {
        float* a = c0 == 0 ? scores.data() : part.data();
        std::fill(a, a + keys, 0.0f);
        for (int c = c0; c < std::min(HS, c0 + kc); c++) {
            const float* kr = k + (size_t)c * k_row;
            const float qc = q[c];
            for (int j = 0; j < keys; j++) a[j] = madd(a[j], qc, kr[j]);
        }
        if (c0 > 0)
            for (int j = 0; j < keys; j++) scores[j] += a[j];
    }
    block_softmax(scores.data(), lse, tn - 1, 1, tn, scale);
    const int jc = gemm_kc(1, HS, tn);
    int c = 0;
    for (; c + 64 <= HS; c += 64) weigh_values<64>(out + c, scores.data(), v + c, v_row, tn, jc);
    for (; c + 16 <= HS; c += 16) weigh_values<16>(out + c, scores.data(), v + c, v_row, tn, jc);
    for (; c < HS; c++) weigh_values<1>(out + c, scores.data(), v + c, v_row, tn, jc);
}

}  // namespace

void attention_forward_cached(float* out, float* lse, const float* qkv, float* kcache, size_t k_row, float* vcache,
                              int n, int p0, int C, int NH, const GemmOperands* ops) {
    const int HS = C / NH, nblocks = (n + kQBlock - 1) / kQBlock;
    const float scale = 1.0f / sqrtf((float)HS);
    const size_t row = 3 * (size_t)C;
    assert(k_row % kKeysAtOnce == 0 && k_row >= (size_t)(p0 + n) && "the key cache's rows are kv_key_row's");
    parallel_if((size_t)n * (p0 + n) * C >= kThreadsFrom, [&] {
        // The new keys and values join the cache first, the heads split over the threads (decoding's thread then
        // attends with the heads it wrote): a key's C channels are C cache lines apart, and one thread for all of
        // them waited on each line (tests/bench_results.md).
#pragma omp for schedule(static)
        for (int h = 0; h < NH; h++)
            for (int i = 0; i < n; i++) {
                const float* key = qkv + (size_t)i * row + C + h * HS;
                float* k = kcache + (size_t)h * HS * k_row + p0 + i;
                cache_key(k, k_row, key, HS);
                std::copy(key + C, key + C + HS, vcache + (size_t)(p0 + i) * C + h * HS);
            }
#pragma omp for collapse(2) schedule(static)
        for (int h = 0; h < NH; h++)
            for (int blk = 0; blk < nblocks; blk++) {
                const int i0 = blk * kQBlock, rows = std::min(kQBlock, n - i0);
                const float *q = qkv + (size_t)i0 * row + h * HS, *k = kcache + (size_t)h * HS * k_row;
                float *o = out + (size_t)i0 * C + h * HS, *l = lse + (size_t)h * n + i0;
                if (n == 1) attend_one(o, l, q, k, k_row, vcache + h * HS, C, p0 + 1, HS, scale);
                else attend_block(o, C, l, q, row, k, k_row, true, vcache + h * HS, C, p0 + i0, rows, HS, scale, ops);
            }
    });
}

void attention_forward_cached_rows(float* out, float* lse, const float* qkv, float* const* kcache,
                                   const size_t* k_row, float* const* vcache, const int* p0, int n, int C, int NH) {
    const int HS = C / NH;
    const float scale = 1.0f / sqrtf((float)HS);
    size_t keys = 0;
    for (int i = 0; i < n; i++) {
        assert(k_row[i] % kKeysAtOnce == 0 && k_row[i] >= (size_t)(p0[i] + 1) && "the key rows are kv_key_row's");
        keys += p0[i] + 1;
    }
    parallel_if(keys * C >= kThreadsFrom, [&] {
        // one parallel region for all the rows (as attention_forward_cached's, each thread then attends with the
        // rows and heads it wrote)
#pragma omp for collapse(2) schedule(static)
        for (int i = 0; i < n; i++)
            for (int h = 0; h < NH; h++) {
                const float* key = qkv + (size_t)i * 3 * C + C + h * HS;
                float* k = kcache[i] + (size_t)h * HS * k_row[i] + p0[i];
                cache_key(k, k_row[i], key, HS);
                std::copy(key + C, key + C + HS, vcache[i] + (size_t)p0[i] * C + h * HS);
            }
#pragma omp for collapse(2) schedule(static)
        for (int i = 0; i < n; i++)
            for (int h = 0; h < NH; h++)
                attend_one(out + (size_t)i * C + h * HS, lse + (size_t)i * NH + h, qkv + (size_t)i * 3 * C + h * HS,
                           kcache[i] + (size_t)h * HS * k_row[i], k_row[i], vcache[i] + h * HS, C, p0[i] + 1, HS,
                           scale);
    });
}

KERNELS_END
