// gemm_q8.cpp: int8 inference's gemm (precision.h's q8_gemm_operands), prefill's and eval's x W^T as
// decoding's matvec_q8q8 computes one row: x's rows rounded to q8_0 blocks as they are packed
// (q8_round_input_block), W read from its q8_0 copy, each block's product summed in integers, times its two
// scales, into fp32 sums (q8_dot.h). The forward's product alone. With AVX512-VNNI the panels take another
// form (q8_dot.h's Q8_DOT_VNNI) for vpdpbusd; the numbers are the same, bit for bit.
#include <cassert>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "precision/half.h"
#include "precision/precision.h"
#include "precision/q8_dot.h"
#include "tuned/gemm_tile.h"

KERNELS_BEGIN

namespace {

using gemm_tile::NR;
const int MR = 4;  // rows of A's panels

#ifdef Q8_DOT_VNNI
// vpdpbusd multiplies unsigned bytes by signed ones, four pairs summed into each int32 lane. A's panels hold
// x + 128 (x ^ 0x80: 1..255), B's hold each block's bytes interleaved by 4 (step s: the NR columns' k = 4s ..
// 4s + 3, one zmm per 16 columns), and after their NR scales, NR words of -128 x the column's block sum, where
// each column's integer sum starts: sum (x + 128) w - 128 sum w = sum x w, exact as the AVX2 path's.
const int kBlockWords = kQ8Block / 4 + 2;  // one row's block in a panel: 32 bytes, its scale, (B) its correction
#else
const int kBlockWords = kQ8Block / 4 + 1;  // one row's block in a panel: 32 bytes, then (with the others') its scale
#endif

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

// Panels of n rows for rows [0, count) over kc: fill(i, kb, q, d) writes row i's block kb (its 32 values at q,
// its scale at *d); the rows past count, to a whole panel, get zeros.
template <typename Fill>
void pack_panels(uint32_t* words, int n, int count, int kc, Fill fill) {
    const int kw = q8_words(kc);
    for (int p = 0; p < count; p += n) {
        uint32_t* panel = words + (size_t)p * kw;
        for (int kb = 0; kb < kc / kQ8Block; kb++) {
            int8_t* q = panel_q(panel, n, kb);
            float* d = panel_d(panel, n, kb);
            for (int r = 0; r < n; r++) {
                if (p + r < count) {
                    fill(p + r, kb, q + r * kQ8Block, &d[r]);
                    continue;
                }
                memset(q + r * kQ8Block, 0, kQ8Block);
                d[r] = 0;
            }
        }
    }
}

// x's rows [i0, i0 + mc) over [k0, k0 + kc) rounded to q8_0 blocks into panels of MR rows. A block q8_0 cannot
// hold (a non-finite value, or past its range) gets a NaN scale: its row's outputs are NaN, as decoding's are
// (llama.cpp's fp16 scale overflows there too).
void pack_a_q8(uint32_t* words, const float* A, int lda, bool trans, int i0, int mc, int k0, int kc) {
    assert(!trans && k0 % kQ8Block == 0 && kc % kQ8Block == 0 && "int8 inference's gemm is the forward's, x W^T");
    (void)trans;
    pack_panels(words, MR, mc, kc, [&](int i, int kb, int8_t* q, float* d) {
        if (!q8_round_input_block(A + (size_t)(i0 + i) * lda + k0 + kb * kQ8Block, q, d)) {
            memset(q, 0, kQ8Block);
            *d = NAN;
        }
#ifdef Q8_DOT_VNNI
        for (int j = 0; j < kQ8Block; j++) q[j] = (int8_t)(q[j] ^ 0x80);  // read as unsigned: x + 128
#endif
    });
}

// B's panels, packed as A's (each column's 32 bytes), rewritten in place for vpdpbusd: the bytes interleaved
// by 4 and, after the scales, each column's -128 x its block sum. Without VNNI, nothing.
void interleave_b(uint32_t* words, int nc, int kc) {
#ifdef Q8_DOT_VNNI
    const int kw = q8_words(kc);
    for (int p = 0; p < nc; p += NR)
        for (int kb = 0; kb < kc / kQ8Block; kb++) {
            uint32_t* q = reinterpret_cast<uint32_t*>(panel_q(words + (size_t)p * kw, NR, kb));
            int32_t* correction = reinterpret_cast<int32_t*>(panel_d(words + (size_t)p * kw, NR, kb) + NR);
            uint32_t by_column[NR * kQ8Block / 4];
            memcpy(by_column, q, sizeof by_column);
            for (int c = 0; c < NR; c++) {
                const int8_t* column = reinterpret_cast<const int8_t*>(by_column + c * kQ8Block / 4);
                int sum = 0;
                for (int k = 0; k < kQ8Block; k++) sum += column[k];
                correction[c] = -128 * sum;
                for (int s = 0; s < kQ8Block / 4; s++) q[s * NR + c] = by_column[c * kQ8Block / 4 + s];
            }
        }
#else
    (void)words, (void)nc, (void)kc;
#endif
}

// Panels of NaN scales for nc columns: what a product these operands cannot run gives (asserted first).
void pack_b_nan(uint32_t* words, int kc, int nc) {
    pack_panels(words, NR, nc, kc, [](int, int, int8_t* q, float* d) {
        memset(q, 0, kQ8Block);
        *d = NAN;
    });
    interleave_b(words, nc, kc);  // (with VNNI: the corrections, zero, are written too)
}

// W's rows [j0, j0 + nc) over [k0, k0 + kc), from its q8_0 copy, into panels of NR, zero past nc.
void pack_b_q8(uint32_t* words, const void* copy, int ldb, bool trans, int k0, int kc, int j0, int nc) {
    const WeightCopy& w = *static_cast<const WeightCopy*>(copy);
    const bool forward = trans && w.q8 && k0 % kQ8Block == 0 && kc % kQ8Block == 0;
    assert(forward && "int8 inference's gemm is the forward's, x W^T, from a q8_0 copy");
    if (!forward) return pack_b_nan(words, kc - kc % kQ8Block, nc);
    pack_panels(words, NR, nc, kc, [&](int c, int kb, int8_t* q, float* d) {
        const size_t at = (size_t)(j0 + c) * ldb + k0 + kb * kQ8Block;
        memcpy(q, w.q8 + at, kQ8Block);
        *d = fp16_to_float(w.q8_d[at / kQ8Block]);
    });
    interleave_b(words, nc, kc);
}

void pack_b_fp32(uint32_t* words, const float*, int, bool, int, int kc, int, int nc) {
    assert(false && "int8 inference's gemm reads the weight's q8_0 copy (gemm's B_copy)");
    pack_b_nan(words, kc - kc % kQ8Block, nc);
}

#if defined(Q8_DOT_AVX2) && !defined(Q8_DOT_VNNI)
// Rows r and r + 1's q8_dot4 halves added: the 8 exact block products (r: c0 .. c3, r + 1: c0 .. c3) in floats.
inline __m256 q8_two_rows(__m256i r0, __m256i r1) {
    const __m256i lo = _mm256_permute2x128_si256(r0, r1, 0x20), hi = _mm256_permute2x128_si256(r0, r1, 0x31);
    return _mm256_cvtepi32_ps(_mm256_add_epi32(lo, hi));
}
#endif

// C[0:rows, 0:cols] = (or +=) the MR x NR tile of an A panel and a B panel over kw words of blocks, one
// definition per instruction set.
#if defined(Q8_DOT_VNNI)
void micro_kernel_q8(int kw, const uint32_t* a, const uint32_t* b, float* C, int ldc, int rows, int cols, bool add) {
    const int nb = kw / kBlockWords;
    // The whole MR x NR tile in registers: per block, MR x NV integer sums from B's corrections (eight
    // vpdpbusd steps of 4 bytes each), then times the two scales into MR x NV fp32 sums.
    constexpr int NV = NR / 16;
    static_assert(NR % 16 == 0 && MR * NV * 2 <= 28, "the tile's integer and fp32 sums in zmm registers");
    __m512 acc[MR][NV];
    for (int r = 0; r < MR; r++)
        for (int v = 0; v < NV; v++) acc[r][v] = _mm512_setzero_ps();
    for (int kb = 0; kb < nb; kb++) {
        const int32_t* aq = reinterpret_cast<const int32_t*>(panel_q(a, MR, kb));
        const float* ad = panel_d(a, MR, kb);
        const int32_t* bq = reinterpret_cast<const int32_t*>(panel_q(b, NR, kb));
        const float* bd = panel_d(b, NR, kb);
        __m512i dot[MR][NV];
        for (int v = 0; v < NV; v++) {
            const __m512i correction = _mm512_loadu_si512(bd + NR + 16 * v);
            for (int r = 0; r < MR; r++) dot[r][v] = correction;
        }
        for (int s = 0; s < kQ8Block / 4; s++)
            for (int v = 0; v < NV; v++) {
                const __m512i w = _mm512_loadu_si512(bq + s * NR + 16 * v);
                for (int r = 0; r < MR; r++)
                    dot[r][v] = _mm512_dpbusd_epi32(dot[r][v], _mm512_set1_epi32(aq[r * kQ8Block / 4 + s]), w);
            }
        for (int v = 0; v < NV; v++) {
            const __m512 scale = _mm512_loadu_ps(bd + 16 * v);
            for (int r = 0; r < MR; r++) {  // (_mm512_cvtepi32_ps: GCC 12 warns of its undefined source, bug 105593)
                const __m512 sum = __builtin_convertvector((vi16)dot[r][v], __m512);
                acc[r][v] = _mm512_fmadd_ps(sum, _mm512_mul_ps(scale, _mm512_set1_ps(ad[r])), acc[r][v]);
            }
        }
    }
    for (int r = 0; r < rows; r++)
        for (int v = 0; v < NV && 16 * v < cols; v++) {
            const __mmask16 m = cols - 16 * v >= 16 ? 0xFFFF : (__mmask16)((1u << (cols - 16 * v)) - 1);
            float* c = C + (size_t)r * ldc + 16 * v;
            const __m512 sum = add ? _mm512_add_ps(_mm512_maskz_loadu_ps(m, c), acc[r][v]) : acc[r][v];
            _mm512_mask_storeu_ps(c, m, sum);
        }
}
#elif defined(Q8_DOT_AVX2)
// Four of B's columns at a time: each block's 16 products summed exactly in integers (q8_dot4), then times
// their scales into two vectors of fp32 sums (rows 0-1 and 2-3).
void micro_kernel_q8(int kw, const uint32_t* a, const uint32_t* b, float* C, int ldc, int rows, int cols, bool add) {
    const int nb = kw / kBlockWords;
    static_assert(MR == 4 && NR % 4 == 0, "four rows of A, B's columns four at a time");
    const auto load = [](const int8_t* q) { return _mm256_loadu_si256((const __m256i*)q); };
    for (int j = 0; j < cols; j += 4) {  // NR is a multiple of 4: columns past cols are zero in the panel
        __m256 acc01 = _mm256_setzero_ps(), acc23 = _mm256_setzero_ps();
        for (int kb = 0; kb < nb; kb++) {
            const int8_t* aq = panel_q(a, MR, kb);
            const float* ad = panel_d(a, MR, kb);
            const int8_t* bq = panel_q(b, NR, kb) + j * kQ8Block;
            const __m256i w0 = load(bq), w1 = load(bq + kQ8Block), w2 = load(bq + 2 * kQ8Block),
                          w3 = load(bq + 3 * kQ8Block);
            const __m256 bd = _mm256_broadcast_ps((const __m128*)(panel_d(b, NR, kb) + j));  // (c0 .. c3) twice
            const __m256 d01 = _mm256_mul_ps(bd, _mm256_set_m128(_mm_set1_ps(ad[1]), _mm_set1_ps(ad[0])));
            const __m256 d23 = _mm256_mul_ps(bd, _mm256_set_m128(_mm_set1_ps(ad[3]), _mm_set1_ps(ad[2])));
            acc01 = _mm256_fmadd_ps(q8_two_rows(q8_dot4(load(aq), w0, w1, w2, w3),
                                                q8_dot4(load(aq + kQ8Block), w0, w1, w2, w3)), d01, acc01);
            acc23 = _mm256_fmadd_ps(q8_two_rows(q8_dot4(load(aq + 2 * kQ8Block), w0, w1, w2, w3),
                                                q8_dot4(load(aq + 3 * kQ8Block), w0, w1, w2, w3)), d23, acc23);
        }
        float tile[MR * 4];  // row r's four columns at 4r
        _mm256_storeu_ps(tile, acc01);
        _mm256_storeu_ps(tile + 8, acc23);
        for (int r = 0; r < rows; r++)
            for (int t = 0; t < 4 && j + t < cols; t++) {
                float* c = C + (size_t)r * ldc + j + t;
                *c = add ? *c + tile[4 * r + t] : tile[4 * r + t];
            }
    }
}
#else
void micro_kernel_q8(int kw, const uint32_t* a, const uint32_t* b, float* C, int ldc, int rows, int cols, bool add) {
    const int nb = kw / kBlockWords;
    for (int r = 0; r < rows; r++)
        for (int j = 0; j < cols; j++) {
            float sum = 0;
            for (int kb = 0; kb < nb; kb++)
                sum += (float)q8_dot(panel_q(a, MR, kb) + r * kQ8Block, panel_q(b, NR, kb) + j * kQ8Block) *
                       (panel_d(a, MR, kb)[r] * panel_d(b, NR, kb)[j]);
            float* c = C + (size_t)r * ldc + j;
            *c = add ? *c + sum : sum;
        }
}
#endif

}  // namespace

const GemmOperands* q8_gemm_operands() {
    static const GemmOperands ops = {MR, 0, 1, q8_words, nullptr, pack_a_q8, pack_b_fp32, pack_b_q8, micro_kernel_q8};
    return &ops;
}

KERNELS_END
