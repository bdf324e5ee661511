// gemm_q8.cpp: int8 inference's gemm (precision.h's q8_gemm_operands), prefill's and eval's x W^T as
// decoding's matvec_q8q8 computes one row: x's rows rounded to q8_0 blocks as they are packed
// (q8_round_input_block), W read from its q8_0 copy, each block's product summed in integers, times its two
// scales, into fp32 sums. AVX2: vpmaddubsw on |w| and x with w's signs (no pair's sum saturates: 2 x 127 x
// 127 < 32767), vpmaddwd to 8 int32 lanes; elsewhere a plain integer loop. The forward's product alone.
#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "precision/half.h"
#include "precision/precision.h"
#include "tuned/gemm_tile.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

KERNELS_BEGIN

namespace {

using gemm_tile::NR;
const int MR = 4;                          // rows of A's panels
const int kBlockWords = kQ8Block / 4 + 1;  // one row's block in a panel: 32 bytes, then (with the others') its scale

int q8_words(int kc) { return kc / kQ8Block * kBlockWords; }

// A panel of n rows (A's MR, B's NR) holds, block after block, the n rows' 32 bytes and then their n scales.
template <typename Word>
auto panel_q(Word* panel, int n, int kb) {
    return reinterpret_cast<std::conditional_t<std::is_const_v<Word>, const int8_t*, int8_t*>>(
        panel + (size_t)kb * n * kBlockWords);
}
template <typename Word>
auto panel_d(Word* panel, int n, int kb) {
    return reinterpret_cast<std::conditional_t<std::is_const_v<Word>, const float*, float*>>(
        panel + (size_t)kb * n * kBlockWords + n * kQ8Block / 4);
}

// x's rows [i0, i0 + mc) over [k0, k0 + kc) rounded to q8_0 blocks into panels of MR rows, zero past mc. A
// block q8_0 cannot hold (a non-finite value, or past its range) gets a NaN scale: its row's outputs are NaN,
// as decoding's are (llama.cpp's fp16 scale overflows there too).
void pack_a_q8(uint32_t* words, const float* A, int lda, bool trans, int i0, int mc, int k0, int kc) {
    assert(!trans && k0 % kQ8Block == 0 && kc % kQ8Block == 0 && "int8 inference's gemm is the forward's, x W^T");
    (void)trans;
    const int nb = kc / kQ8Block, kw = q8_words(kc);
    for (int p = 0; p < mc; p += MR) {
        uint32_t* panel = words + (size_t)p * kw;
        for (int kb = 0; kb < nb; kb++) {
            int8_t* q = panel_q(panel, MR, kb);
            float* d = panel_d(panel, MR, kb);
            for (int r = 0; r < MR; r++) {
                const float* x = A + (size_t)(i0 + p + r) * lda + k0 + kb * kQ8Block;
                if (p + r < mc && q8_round_input_block(x, q + r * kQ8Block, &d[r])) continue;
                memset(q + r * kQ8Block, 0, kQ8Block);
                d[r] = p + r < mc ? NAN : 0.0f;
            }
        }
    }
}

// Panels of NaN scales for nc columns: what a product these operands cannot run gives (asserted first).
void pack_b_nan(uint32_t* words, int kc, int nc) {
    const int kw = q8_words(kc);
    for (int p = 0; p < nc; p += NR)
        for (int kb = 0; kb < kc / kQ8Block; kb++) {
            memset(panel_q(words + (size_t)p * kw, NR, kb), 0, (size_t)NR * kQ8Block);
            std::fill_n(panel_d(words + (size_t)p * kw, NR, kb), NR, NAN);
        }
}

// W's rows [j0, j0 + nc) over [k0, k0 + kc), from its q8_0 copy, into panels of NR, zero past nc.
void pack_b_q8(uint32_t* words, const void* copy, int ldb, bool trans, int k0, int kc, int j0, int nc) {
    const WeightCopy& w = *static_cast<const WeightCopy*>(copy);
    const bool forward = trans && w.q8 && k0 % kQ8Block == 0 && kc % kQ8Block == 0;
    assert(forward && "int8 inference's gemm is the forward's, x W^T, from a q8_0 copy");
    if (!forward) return pack_b_nan(words, kc - kc % kQ8Block, nc);
    const int nb = kc / kQ8Block, kw = q8_words(kc);
    for (int p = 0; p < nc; p += NR) {
        uint32_t* panel = words + (size_t)p * kw;
        for (int kb = 0; kb < nb; kb++) {
            int8_t* q = panel_q(panel, NR, kb);
            float* d = panel_d(panel, NR, kb);
            for (int c = 0; c < NR; c++) {
                if (p + c >= nc) {
                    memset(q + c * kQ8Block, 0, kQ8Block);
                    d[c] = 0;
                    continue;
                }
                const size_t at = (size_t)(j0 + p + c) * ldb + k0 + kb * kQ8Block;
                memcpy(q + c * kQ8Block, w.q8 + at, kQ8Block);
                d[c] = fp16_to_float(w.q8_d[at / kQ8Block]);
            }
        }
    }
}

void pack_b_fp32(uint32_t* words, const float*, int, bool, int, int kc, int, int nc) {
    assert(false && "int8 inference's gemm reads the weight's q8_0 copy (gemm's B_copy)");
    pack_b_nan(words, kc - kc % kQ8Block, nc);
}

#if defined(__AVX2__) && defined(__FMA__)
inline float hsum(__m256 v) {
    const __m128 h = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    const __m128 q = _mm_add_ps(h, _mm_movehl_ps(h, h));
    return _mm_cvtss_f32(_mm_add_ss(q, _mm_shuffle_ps(q, q, 1)));
}
#endif

// C[0:rows, 0:cols] = (or +=) the MR x NR tile of an A panel and a B panel over kw words of blocks: two of
// B's columns at a time, each of the MR x 2 sums in 8 fp32 lanes.
void micro_kernel_q8(int kw, const uint32_t* a, const uint32_t* b, float* C, int ldc, int rows, int cols, bool add) {
    const int nb = kw / kBlockWords;
#if defined(__AVX2__) && defined(__FMA__)
    const __m256i ones = _mm256_set1_epi16(1);
    for (int j = 0; j < cols; j += 2) {  // NR is even: column j + 1 is in the panel (zero past cols)
        __m256 acc[MR][2];
        for (int r = 0; r < MR; r++) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
        for (int kb = 0; kb < nb; kb++) {
            const int8_t* aq = panel_q(a, MR, kb);
            const float* ad = panel_d(a, MR, kb);
            const int8_t* bq = panel_q(b, NR, kb);
            const float* bd = panel_d(b, NR, kb);
            const __m256i w0 = _mm256_loadu_si256((const __m256i*)(bq + j * kQ8Block));
            const __m256i w1 = _mm256_loadu_si256((const __m256i*)(bq + (j + 1) * kQ8Block));
            const __m256i u0 = _mm256_sign_epi8(w0, w0), u1 = _mm256_sign_epi8(w1, w1);
            for (int r = 0; r < MR; r++) {
                const __m256i x = _mm256_loadu_si256((const __m256i*)(aq + r * kQ8Block));
                const __m256i p0 = _mm256_madd_epi16(_mm256_maddubs_epi16(u0, _mm256_sign_epi8(x, w0)), ones);
                const __m256i p1 = _mm256_madd_epi16(_mm256_maddubs_epi16(u1, _mm256_sign_epi8(x, w1)), ones);
                acc[r][0] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p0), _mm256_set1_ps(ad[r] * bd[j]), acc[r][0]);
                acc[r][1] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p1), _mm256_set1_ps(ad[r] * bd[j + 1]), acc[r][1]);
            }
        }
        for (int r = 0; r < rows; r++) {
            float* c = C + (size_t)r * ldc + j;
            for (int t = 0; t < 2 && j + t < cols; t++) c[t] = add ? c[t] + hsum(acc[r][t]) : hsum(acc[r][t]);
        }
    }
#else
    for (int r = 0; r < rows; r++)
        for (int j = 0; j < cols; j++) {
            float sum = 0;
            for (int kb = 0; kb < nb; kb++) {
                const int8_t* x = panel_q(a, MR, kb) + r * kQ8Block;
                const int8_t* w = panel_q(b, NR, kb) + j * kQ8Block;
                int dot = 0;
                for (int i = 0; i < kQ8Block; i++) dot += x[i] * w[i];
                sum += (float)dot * (panel_d(a, MR, kb)[r] * panel_d(b, NR, kb)[j]);
            }
            float* c = C + (size_t)r * ldc + j;
            *c = add ? *c + sum : sum;
        }
#endif
}

}  // namespace

const GemmOperands* q8_gemm_operands() {
    static const GemmOperands ops = {MR, 0, 1, q8_words, nullptr, pack_a_q8, pack_b_fp32, pack_b_q8, micro_kernel_q8};
    return &ops;
}

KERNELS_END
