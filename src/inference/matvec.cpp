// matvec.cpp: the matrix-vector products of decoding from a weight's fp32 values, bf16 and q8_0 copies (see
// matvec.h), with the references the tests hold them against. N rows at once (sequences decoded together) run
// each group of output rows for every input row in turn: the group's weights are read from memory once and stay
// in cache for the other rows, and each row's numbers are those it has alone.
#include "inference/matvec.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

#include "core/simd.h"
#include "precision/half.h"
#include "precision/q8_dot.h"
#include "tuned/gemm_tile.h"

#if defined(__x86_64__)
#include <immintrin.h>
#elif defined(__aarch64__)
#include <arm_neon.h>
#endif

KERNELS_BEGIN

// Rows r0..r0+n-1 (n <= R) of x against W's row w: each row's products in 32 lanes (lane l: channels i + l), W's
// vector loaded once for the n rows; s[r][c] = lanes 0..15 + lanes 16..31, which the caller sums (n > 1: the next
// W row fetched meanwhile).
template <int R>
static void fp32_lane_sums(vf16 (*s)[16], int c, const float* x, const float* w, int IC, int r0, int n) {
    if constexpr (R > 1)
        if (n < R) return fp32_lane_sums<R - 1>(s, c, x, w, IC, r0, n);
    constexpr int kVecs = 32 / kLanes;
    vn acc[R][kVecs] = {};
    for (int i = 0; i + 32 <= IC; i += 32)
        for (int v = 0; v < kVecs; v++) {
            if (R > 1 && v * kLanes % 16 == 0) __builtin_prefetch(w + IC + i + v * kLanes);
            vn wv = vn_load(w + i + v * kLanes);
#if defined(__x86_64__)
            asm("" : "+x"(wv));  // held in a register for the R rows, not loaded again for each (GCC folds loads)
#endif
            for (int r = 0; r < R; r++) acc[r][v] += wv * vn_load(x + (size_t)(r0 + r) * IC + i + v * kLanes);
        }
    for (int r = 0; r < R; r++)
        for (int v = 0; v < kVecs / 2; v++) {  // lanes l and 16 + l, in vn's (not vf16's) registers
            const vn pair = acc[r][v] + acc[r][v + kVecs / 2];
            memcpy((float*)&s[r][c] + v * kLanes, &pair, sizeof pair);
        }
}

// out (N, OC) = x W^T + b in fp32, in the core's order (core/layers.cpp's matvec_fp32: the same numbers), 16
// outputs at a time, each W row taken by kBlock rows of x while it is in L1. With AVX-512 the outputs' sums of lane
// pairs are transposed, so that 16 vector adds sum them in l order where one output's 16 dependent adds took
// longer than its products (a vf16 lives in memory without AVX-512: there each output sums its own).
static void matvec_fp32(float* out, const float* x, const float* W, const float* b, int N, int IC, int OC) {
    constexpr int kRows = kLanes == 16 ? 9 : 3;  // 2 vectors a row (4 with AVX2, 8 with NEON); 9: a full check
    constexpr int kBlock = kLanes == 16 ? kRows : 4 * kRows;
    const int whole = IC / 32 * 32;
    parallel_if((size_t)N * IC * OC >= kThreadsFrom, [&] {
#pragma omp for schedule(static)
        for (int j0 = 0; j0 < OC; j0 += 16)
            for (int rb = 0; rb < N; rb += kBlock) {
                const int nj = std::min(16, OC - j0), nb = std::min(kBlock, N - rb);
                vf16 s[kBlock][16];
                for (int c = 0; c < nj; c++)
                    for (int r0 = 0; r0 < nb; r0 += kRows)
                        fp32_lane_sums<kRows>(s + r0, c, x, W + (size_t)(j0 + c) * IC, IC, rb + r0,
                                              std::min(kRows, nb - r0));
                for (int r = 0; r < nb; r++) {
                    float sums[16] = {};
                    if (kLanes == 16 && nj == 16) {
                        gemm_tile::transpose16(s[r]);
                        vf16 t = {};
                        for (int l = 0; l < 16; l++) t += s[r][l];
                        memcpy(sums, &t, sizeof sums);
                    } else {
                        for (int c = 0; c < nj; c++)
                            for (int l = 0; l < 16; l++) sums[c] += s[r][c][l];
                    }
                    const float* xr = x + (size_t)(rb + r) * IC;
                    for (int c = 0; c < nj; c++) {
                        const float* wc = W + (size_t)(j0 + c) * IC;
                        float sum = sums[c];
                        for (int i = whole; i < IC; i++) sum = madd(sum, wc[i], xr[i]);
                        out[(size_t)(rb + r) * OC + j0 + c] = b ? sum + b[j0 + c] : sum;
                    }
                }
            }
    });
}

// out (N, OC) = x W16^T + b with fp32 x and products: a frozen bf16 base's (precision.h), on any CPU.
static void matvec_bf16_fp32(float* out, const float* x, const uint16_t* W16, const float* b, int N, int IC, int OC) {
    parallel_if((size_t)N * IC * OC >= kThreadsFrom, [&] {
#pragma omp for schedule(static)
        for (int j = 0; j < OC; j++) {
            const uint16_t* w = W16 + (size_t)j * IC;
            for (int r = 0; r < N; r++) {
                const float* xr = x + (size_t)r * IC;
                float acc0[16] = {}, acc1[16] = {};  // not vf16: GCC keeps a 64-byte vector in memory without AVX-512
                int i = 0;
                for (; i + 32 <= IC; i += 32)
                    for (int l = 0; l < 16; l++)
                        acc0[l] += bf16_to_float(w[i + l]) * xr[i + l],
                            acc1[l] += bf16_to_float(w[i + 16 + l]) * xr[i + 16 + l];
                float sum = 0;
                for (int l = 0; l < 16; l++) sum += acc0[l] + acc1[l];
                for (; i < IC; i++) sum += bf16_to_float(w[i]) * xr[i];
                out[(size_t)r * OC + j] = b ? sum + b[j] : sum;
            }
        }
    });
}

// The rows' products of a weight: its fp32 values where it has no copy, else its q8 blocks, else its bf16 rounding
// (a frozen base's with fp32 products, as its gemm has them).
void matvec_rows(float* out, const float* x, const Weight& w, const float* b, int N, int IC, int OC) {
    if (!w.copy) return matvec_fp32(out, x, w.f32, b, N, IC, OC);
    const WeightCopy* c = static_cast<const WeightCopy*>(w.copy);
    if (c->q8 && c->q8_inputs) return matvec_q8q8(out, x, c->q8, c->q8_d, b, N, IC, OC, c->q8_tiles);
    if (c->q8) return matvec_q8(out, x, c->q8, c->q8_d, b, N, IC, OC);
    if (c->fp32_dropped) return matvec_bf16_fp32(out, x, c->bf16, b, N, IC, OC);
    matvec_bf16(out, x, c->bf16, b, N, IC, OC);
}

// For each group of four output rows j0.. (the last group: rows < 4), split by OpenMP: rows4(out + r * OC + j0,
// rows, j0, r, m) writes the group's outputs of input rows r .. r + m - 1, M of them at a time (the last N % M
// one at a time), then b is added.
template <int M, typename Rows4>
static void in_row_groups(float* out, const float* b, int N, int IC, int OC, Rows4 rows4) {
    parallel_if((size_t)N * IC * OC >= kThreadsFrom, [&] {
#pragma omp for schedule(static)
        for (int g = 0; g < (OC + 3) / 4; g++) {
            const int j0 = g * 4, rows = OC - j0 < 4 ? OC - j0 : 4;
            for (int r = 0; r < N; r++) {
                const int m = N - r >= M ? M : 1;
                float* o = out + (size_t)r * OC;
                rows4(o + j0, rows, j0, r, m);
                for (int i = 0; i < m; i++, o += OC)
                    for (int j = j0; b && j < j0 + rows; j++) o[j] += b[j];
                r += m - 1;
            }
        }
    });
}

#if defined(__x86_64__)
// Vector extensions for AVX-512 code alone (GCC 12 warns of the intrinsics' undefined sources, bug 105593; clang
// passes no 64-byte vector to code built without AVX-512). Two vectors of 16 lanes, ints or floats, paired:
// per 128 bits x0 + x2, y0 + y2, x1 + x3, y1 + y3.
template <typename V>
__attribute__((target("avx512f"), always_inline)) static inline V pair_lanes(V x, V y) {
    return __builtin_shufflevector(x, y, 0, 16, 1, 17, 4, 20, 5, 21, 8, 24, 9, 25, 12, 28, 13, 29) +
           __builtin_shufflevector(x, y, 2, 18, 3, 19, 6, 22, 7, 23, 10, 26, 11, 27, 14, 30, 15, 31);
}

// Four such vectors a, b, c, d paired down to one whose every 128 bits hold the sums of those 128 bits' four
// lanes in a, b, c and d, in that order.
template <typename V>
__attribute__((target("avx512f"), always_inline)) static inline V sum_lanes4(V a, V b, V c, V d) {
    const V ab = pair_lanes(a, b), cd = pair_lanes(c, d);
    return __builtin_shufflevector(ab, cd, 0, 1, 16, 17, 4, 5, 20, 21, 8, 9, 24, 25, 12, 13, 28, 29) +
           __builtin_shufflevector(ab, cd, 2, 3, 18, 19, 6, 7, 22, 23, 10, 11, 26, 27, 14, 15, 30, 31);
}

// The bf16 matrix-vector product: x is rounded to bf16 once; each group of four output rows streams its bf16
// weights (half fp32's bytes: decoding is bound by them) into vdpbf16ps, the four rows sharing x's loads and
// fetching the next four ahead, then the four 16-lane sums paired down together. M input rows (x16's rows, IC
// apart; out's, OC apart) at once share the weights' loads, and their 4 M independent sums keep vdpbf16ps busy
// where four chains leave it waiting; each sum's order is that of its row alone. A row's last partial vector is
// read through a mask. Rows past `rows` repeat the last (their sums unused).
// (A function of its own: clang does not carry a target attribute into an OpenMP region.)
template <int M>
__attribute__((target("avx512f,avx512bw,avx512bf16"))) static void rows4_bf16_avx512(float* out, int OC, int rows,
                                                                                   const uint16_t* w,
                                                                                   const uint16_t* x16, int IC) {
    const uint16_t* wr[4];
    for (int r = 0; r < 4; r++) wr[r] = w + (size_t)(r < rows ? r : rows - 1) * IC;
    __m512 acc[M][4];
    for (int m = 0; m < M; m++)
        for (int r = 0; r < 4; r++) acc[m][r] = _mm512_setzero_ps();
    for (int i = 0; i < IC; i += 32) {
        for (int l = 0; l < 4 * 64; l += 64) __builtin_prefetch((const char*)(w + (size_t)4 * IC + (size_t)4 * i) + l);
        const __mmask32 in = IC - i >= 32 ? ~(__mmask32)0 : (__mmask32)((1u << (IC - i)) - 1);
        __m512bh x[M];
        for (int m = 0; m < M; m++) x[m] = (__m512bh)_mm512_maskz_loadu_epi16(in, x16 + (size_t)m * IC + i);
        for (int r = 0; r < 4; r++) {
            const __m512bh wv = (__m512bh)_mm512_maskz_loadu_epi16(in, wr[r] + i);
            for (int m = 0; m < M; m++) acc[m][r] = _mm512_dpbf16_ps(acc[m][r], wv, x[m]);
        }
    }
    for (int m = 0; m < M; m++) {
        const vf16 q = sum_lanes4((vf16)acc[m][0], (vf16)acc[m][1], (vf16)acc[m][2], (vf16)acc[m][3]);
        float sums[16];
        memcpy(sums, &q, sizeof sums);
        for (int r = 0; r < rows; r++) out[(size_t)m * OC + r] = (sums[r] + sums[4 + r]) + (sums[8 + r] + sums[12 + r]);
    }
}

static void matvec_bf16_avx512(float* out, const uint16_t* x16, const uint16_t* W16, const float* b, int N, int IC,
                               int OC) {
    in_row_groups<4>(out, b, N, IC, OC, [&](float* o, int rows, int j0, int r, int m) {
        const uint16_t *w = W16 + (size_t)j0 * IC, *x = x16 + (size_t)r * IC;
        if (m == 4) rows4_bf16_avx512<4>(o, OC, rows, w, x, IC);
        else rows4_bf16_avx512<1>(o, OC, rows, w, x, IC);
    });
}
#endif

void matvec_bf16(float* out, const float* x, const uint16_t* W16, const float* b, int N, int IC, int OC) {
    assert(bf16_supported());
    static thread_local std::vector<uint16_t> x16;  // decoding calls this ~50 times a token: no allocation each
    x16.resize((size_t)N * IC);
    for (size_t i = 0; i < x16.size(); i++) x16[i] = bf16_round(x[i]);
#if defined(__x86_64__)
    matvec_bf16_avx512(out, x16.data(), W16, b, N, IC, OC);
#endif
}

void matvec_bf16_ref(float* out, const float* x, const uint16_t* W16, const float* b, int IC, int OC) {
    for (int j = 0; j < OC; j++) {
        double sum = 0;
        for (int i = 0; i < IC; i++) sum += (double)bf16_to_float(W16[(size_t)j * IC + i]) * bf16_rounded(x[i]);
        out[j] = b ? (float)sum + b[j] : (float)sum;
    }
}

// 16 fp16 values (n < 16: the first n, zero beyond) as floats, exactly for every finite half: its exponent
// and mantissa moved to fp32's place, times 2^112 to move fp16's exponent bias (15) to fp32's (127);
// subnormal halves become fp32 subnormals first, which the product makes normal again.
static inline vf16 vf_from_fp16(const uint16_t* h, int n) {
    typedef unsigned short vu16x16 __attribute__((vector_size(32)));
    vu16x16 v{};
    if (n == kVecLen) {
        memcpy(&v, h, sizeof(v));  // one load (a memcpy of variable size is a slow string move)
    } else {
        // Not a loop of n copies: GCC makes it a string move, and the load of v then waits for the move's
        // stores (a third of the time of a mat-vec 768 wide, whose 24 blocks end in a chunk of 8).
#if defined(__AVX512BW__) && defined(__AVX512VL__)
        v = (vu16x16)_mm256_maskz_loadu_epi16((__mmask16)((1u << n) - 1), h);
#elif defined(__AVX2__)
        // whole pairs in one masked load of 32-bit words, an odd last value then put in its lane
        const __m256i pairs = _mm256_maskload_epi32(
            (const int*)h, _mm256_cmpgt_epi32(_mm256_set1_epi32(n / 2), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)));
        const __m256i lanes = _mm256_setr_epi16(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
        const __m256i last = _mm256_cmpeq_epi16(_mm256_set1_epi16((short)(n - 1)), lanes);
        v = (vu16x16)(n % 2 ? _mm256_blendv_epi8(pairs, _mm256_set1_epi16((short)h[n - 1]), last) : pairs);
#else
        for (int l = 0; l < n; l++) v[l] = h[l];
#endif
    }
    const vu16 w = __builtin_convertvector(v, vu16);
    return (vf16)(((w & 0x7FFF) << 13) | ((w & 0x8000) << 16)) * 0x1p112f;
}

// kLanes int8 values widened to floats (a register's: core/simd.h's vn). GCC 12 turns a generic int8 -> float vector
// conversion into scalar code, so each instruction set gets its widening instructions; plain x86-64 (SSE2: no
// sign-extending move) and other targets convert in a scalar loop.
static inline vn vn_from_i8(const int8_t* p) {
#if defined(__AVX512F__)
    // (the masked forms: the unmasked ones trip GCC 12's false uninitialised warning)
    return (vn)_mm512_maskz_cvtepi32_ps(0xFFFF, _mm512_maskz_cvtepi8_epi32(0xFFFF, _mm_loadu_si128((const __m128i*)p)));
#elif defined(__AVX2__)
    return (vn)_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i*)p)));
#elif defined(__aarch64__)
    int8_t eight[8] = {};  // exactly the 4 bytes: a wider load would read past the matrix's last block
    memcpy(eight, p, 4);
    return (vn)vcvtq_f32_s32(vmovl_s16(vget_low_s16(vmovl_s8(vld1_s8(eight)))));
#else
    vn r;
    for (int l = 0; l < kLanes; l++) r[l] = (float)p[l];
    return r;
#endif
}

// out[0..R) = the R rows of q8 blocks from w (row stride IC, scales d with stride nb) times x. R rows at
// once share x's loads, and their R independent sums keep the FMA units busy where one row's chain would
// leave them waiting (decoding is bound by the rate the weight bytes arrive, not by arithmetic). A row sums
// in 16 lanes (a block's values l and 16 + l into lane l), in kVecLen / kLanes registers: GCC keeps a
// 16-float vector in memory where a register holds fewer.
template <int R>
static inline void q8_rows(float* out, const float* x, const int8_t* w, const uint16_t* d, int IC, int nb) {
    const int P = kVecLen / kLanes;
    vn acc[R][P] = {};
    for (int b0 = 0; b0 < nb; b0 += kVecLen) {
        const int n = nb - b0 < kVecLen ? nb - b0 : kVecLen;
        float scale[R][kVecLen];  // this chunk's block scales, 16 converted at once per row
        for (int r = 0; r < R; r++) vf_store(scale[r], vf_from_fp16(d + (size_t)r * nb + b0, n));
        for (int k = 0; k < n; k++) {
            const int i = (b0 + k) * kQ8Block;
            // the next R rows, as fast as these are read: the hardware alone keeps too few lines in flight
            // when each line feeds this much arithmetic
            for (int l = 0; l < R * kQ8Block; l += 64) __builtin_prefetch(w + (size_t)R * IC + (size_t)i * R + l);
            for (int p = 0; p < P; p++) {
                const vn x0 = vn_load(x + i + p * kLanes), x1 = vn_load(x + i + 16 + p * kLanes);
                for (int r = 0; r < R; r++) {
                    const int8_t* wr = w + (size_t)r * IC + i + p * kLanes;
                    acc[r][p] += (vn_from_i8(wr) * x0 + vn_from_i8(wr + 16) * x1) * scale[r][k];
                }
            }
        }
    }
    for (int r = 0; r < R; r++) {  // the 16 lanes summed by halving: 8 + 8, 4 + 4, then pairs
        float a[kVecLen];
        for (int p = 0; p < P; p++) vn_store(a + p * kLanes, acc[r][p]);
        for (int l = 0; l < 8; l++) a[l] += a[l + 8];
        for (int l = 0; l < 4; l++) a[l] += a[l + 4];
        out[r] = (a[0] + a[2]) + (a[1] + a[3]);
    }
}

void matvec_q8(float* out, const float* x, const int8_t* q, const uint16_t* d, const float* b, int N, int IC,
               int OC) {
    assert(IC % kQ8Block == 0);
    const int nb = IC / kQ8Block, R = kLanes == 16 ? 8 : 4, groups = (OC + R - 1) / R;  // R x P accumulators
    parallel_if((size_t)N * IC * OC >= kThreadsFrom, [&] {
#pragma omp for schedule(static)
        for (int g = 0; g < groups; g++) {
            const int j0 = g * R;
            for (int r = 0; r < N; r++) {
                float* o = out + (size_t)r * OC;
                const float* xr = x + (size_t)r * IC;
                if (j0 + R <= OC)
                    q8_rows<R>(o + j0, xr, q + (size_t)j0 * IC, d + (size_t)j0 * nb, IC, nb);
                else
                    for (int j = j0; j < OC; j++)
                        q8_rows<1>(o + j, xr, q + (size_t)j * IC, d + (size_t)j * nb, IC, nb);
                if (b)
                    for (int j = j0; j < j0 + R && j < OC; j++) o[j] += b[j];
            }
        }
    });
}

// Four vectors of 16 as four 4 x 4 transposes: out[j][4 L + r] = v[r][4 L + j], so that out[k & 3] + (k >> 2) * 4
// holds the four vectors' lane k side by side (two stages of interleaving pairs, each 4 lanes to themselves).
static inline void transpose4x4_lanes(const vf16 v[4], float out[4][kVecLen]) {
#define LOW(x, y) __builtin_shufflevector(x, y, 0, 16, 1, 17, 4, 20, 5, 21, 8, 24, 9, 25, 12, 28, 13, 29)
#define HIGH(x, y) __builtin_shufflevector(x, y, 2, 18, 3, 19, 6, 22, 7, 23, 10, 26, 11, 27, 14, 30, 15, 31)
#define EVEN(x, y) __builtin_shufflevector(x, y, 0, 1, 16, 17, 4, 5, 20, 21, 8, 9, 24, 25, 12, 13, 28, 29)
#define ODD(x, y) __builtin_shufflevector(x, y, 2, 3, 18, 19, 6, 7, 22, 23, 10, 11, 26, 27, 14, 15, 30, 31)
    const vf16 a = LOW(v[0], v[1]), b = HIGH(v[0], v[1]), c = LOW(v[2], v[3]), e = HIGH(v[2], v[3]);
    vf_store(out[0], EVEN(a, c));
    vf_store(out[1], ODD(a, c));
    vf_store(out[2], EVEN(b, e));
    vf_store(out[3], ODD(b, e));
#undef LOW
#undef HIGH
#undef EVEN
#undef ODD
}

// out[0..rows) = up to 4 rows of q8 blocks from w (row stride IC, scales d with stride nb) times x's q8 blocks
// xq (scales xd): each block's product in integers, exact (q8_dot.h), then times its two scales into an fp32
// sum, block by block. Past `rows` the last row stands in (its sums unused), so the four always run together.
static inline void q8q8_rows4(float* out, int rows, const int8_t* xq, const float* xd, const int8_t* w,
                              const uint16_t* d, int IC, int nb) {
    const int8_t* wr[4];
    const uint16_t* dr[4];
    for (int r = 0; r < 4; r++) {
        const int at = r < rows ? r : rows - 1;
        wr[r] = w + (size_t)at * IC, dr[r] = d + (size_t)at * nb;
    }
#if defined(Q8_DOT_AVX2) || defined(Q8_DOT_VNNI)
    __m128 acc = _mm_setzero_ps();
#else
    float acc[4] = {};
#endif
    // the scales of the group after the next, as its blocks below: read at each chunk's start, they would wait
    for (size_t l = 0; l <= (size_t)4 * nb * sizeof(uint16_t); l += 64)  // (<=: they need not start a line)
        __builtin_prefetch((const char*)(d + (size_t)8 * nb) + l);
    for (int b0 = 0; b0 < nb; b0 += kVecLen) {
        const int n = nb - b0 < kVecLen ? nb - b0 : kVecLen;
        // this chunk's products of the two blocks' scales, the four rows' side by side: block k's at scale_at(k)
        const vf16 dx = vf_load(xd + b0);
        vf16 rs[4];
        for (int r = 0; r < 4; r++) rs[r] = vf_from_fp16(dr[r] + b0, n) * dx;
        float scales[4][kVecLen];
        transpose4x4_lanes(rs, scales);
        const auto scale_at = [&](int k) { return scales[k & 3] + (k >> 2) * 4; };
#ifdef Q8_DOT_VNNI
        // Two blocks a step: |x| times w with x's signs (vpdpbusd), the four rows' 16-lane sums paired down
        // to each row's block sums (lanes 0-3: block k's four rows, lanes 8-11: k + 1's), then into acc block
        // after block as below.
        for (int k = 0; k < n; k += 2) {
            const int i = (b0 + k) * kQ8Block;
            for (int l = 0; l < 8 * kQ8Block; l += 64)  // two groups ahead: see the loop below
                __builtin_prefetch(w + (size_t)8 * IC + (size_t)i * 4 + l);
            const __mmask64 in = k + 1 < n ? ~(__mmask64)0 : 0xFFFFFFFFu;
            const __m512i xv = _mm512_maskz_loadu_epi8(in, xq + i), ax = _mm512_abs_epi8(xv);
            const __mmask64 negative = _mm512_movepi8_mask(xv);
            const auto dot = [&](const int8_t* wr) {
                const __m512i wv = _mm512_maskz_loadu_epi8(in, wr + i);
                const __m512i signed_w = _mm512_mask_sub_epi8(wv, negative, _mm512_setzero_si512(), wv);
                return (vi16)_mm512_dpbusd_epi32(_mm512_setzero_si512(), ax, signed_w);
            };
            const vi16 halves = sum_lanes4(dot(wr[0]), dot(wr[1]), dot(wr[2]), dot(wr[3]));
            const vi16 sums = halves + __builtin_shufflevector(halves, halves, 4, 5, 6, 7, 0, 1, 2, 3, 12, 13, 14, 15,
                                                               8, 9, 10, 11);  // each block's two halves
            const vf16 f = __builtin_convertvector(sums, vf16);
            acc = _mm_fmadd_ps(__builtin_shufflevector(f, f, 0, 1, 2, 3), _mm_loadu_ps(scale_at(k)), acc);
            if (k + 1 < n)
                acc = _mm_fmadd_ps(__builtin_shufflevector(f, f, 8, 9, 10, 11), _mm_loadu_ps(scale_at(k + 1)), acc);
        }
#else
        for (int k = 0; k < n; k++) {
            const int i = (b0 + k) * kQ8Block;
            // the group of 4 rows after the next, as fast as these are read (rows < 4 only ends a matrix): 6 KB
            // ahead at 768 wide, where one group (3 KB) left bandwidth unused (tests/bench_results.md)
            for (int l = 0; l < 4 * kQ8Block; l += 64) __builtin_prefetch(w + (size_t)8 * IC + (size_t)i * 4 + l);
#ifdef Q8_DOT_AVX2
            const auto load = [&](const int8_t* q) { return _mm256_loadu_si256((const __m256i*)(q + i)); };
            const __m256i h = q8_dot4(load(xq), load(wr[0]), load(wr[1]), load(wr[2]), load(wr[3]));
            const __m128i dot = _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
            acc = _mm_fmadd_ps(_mm_cvtepi32_ps(dot), _mm_loadu_ps(scale_at(k)), acc);
#else
            for (int r = 0; r < 4; r++) acc[r] += (float)q8_dot(wr[r] + i, xq + i) * scale_at(k)[r];
#endif
        }
#endif
    }
#if defined(Q8_DOT_AVX2) || defined(Q8_DOT_VNNI)
    float sums[4];
    _mm_storeu_ps(sums, acc);
#else
    const float* sums = acc;
#endif
    for (int r = 0; r < rows; r++) out[r] = sums[r];
}

// x rounded to q8_0 blocks (q8_round_input_block): values xq, scales xd (zero past the last block, to a whole
// vector). A block q8_0 cannot hold (a non-finite value, or past its range) gets a NaN scale, as in the gemm
// (gemm_q8.cpp): every output is NaN.
static void round_input(const float* x, int IC, int8_t* xq, float* xd) {
    for (int b = 0; b < IC / kQ8Block; b++)
        if (!q8_round_input_block(x + (size_t)b * kQ8Block, xq + (size_t)b * kQ8Block, &xd[b])) {
            std::fill_n(xq + (size_t)b * kQ8Block, kQ8Block, 0);
            xd[b] = NAN;
        }
}

#ifdef Q8_DOT_VNNI
// Decoding's rows together (matvec_q8q8's N >= 2, and one row where the tiles are kept) on AVX512-VNNI, as a
// small mat-mat: each group of 16 output rows is laid out once per call as vpdpbusd's unsigned operand (q8_tile16), and each input row then takes a
// block's 16 products from 8 vpdpbusd with its own bytes broadcast (q8q8_tile_rows), where the one-row kernel
// sums lanes across registers for each row and block. Each output's fp32 sum still takes block after block
// fma(the block's exact product, w's scale x x's scale, sum): q8q8_rows4's order, so the row's numbers alone.

// Lanes I... of a and b (b's from 16), as vector extensions: the intrinsics trip GCC 12's warning of their
// undefined sources (bug 105593).
template <int... I>
static inline vi16 shuffle16(vi16 a, vi16 b) {
    return __builtin_shufflevector(a, b, I...);
}

// Lane c of v[j] becomes lane j of v[c] (16 x 16 32-bit words transposed in place): words, then pairs of
// words, then quarters of the rows interleaved.
static inline void transpose16(vi16* v) {
    vi16 t[16];
    for (int i = 0; i < 16; i += 2) {
        t[i] = shuffle16<0, 16, 1, 17, 4, 20, 5, 21, 8, 24, 9, 25, 12, 28, 13, 29>(v[i], v[i + 1]);
        t[i + 1] = shuffle16<2, 18, 3, 19, 6, 22, 7, 23, 10, 26, 11, 27, 14, 30, 15, 31>(v[i], v[i + 1]);
    }
    for (int i = 0; i < 16; i += 4)  // then v[i + m]'s quarter L: element 4 L + m of rows i .. i + 3
        for (int m = 0; m < 2; m++) {
            v[i + 2 * m] = shuffle16<0, 1, 16, 17, 4, 5, 20, 21, 8, 9, 24, 25, 12, 13, 28, 29>(t[i + m], t[i + m + 2]);
            v[i + 2 * m + 1] =
                shuffle16<2, 3, 18, 19, 6, 7, 22, 23, 10, 11, 26, 27, 14, 15, 30, 31>(t[i + m], t[i + m + 2]);
        }
    for (int m = 0; m < 4; m++) {
        const vi16 x0 = shuffle16<0, 1, 2, 3, 16, 17, 18, 19, 4, 5, 6, 7, 20, 21, 22, 23>(v[m], v[4 + m]);
        const vi16 x1 = shuffle16<8, 9, 10, 11, 24, 25, 26, 27, 12, 13, 14, 15, 28, 29, 30, 31>(v[m], v[4 + m]);
        const vi16 y0 = shuffle16<0, 1, 2, 3, 16, 17, 18, 19, 4, 5, 6, 7, 20, 21, 22, 23>(v[8 + m], v[12 + m]);
        const vi16 y1 = shuffle16<8, 9, 10, 11, 24, 25, 26, 27, 12, 13, 14, 15, 28, 29, 30, 31>(v[8 + m], v[12 + m]);
        t[m] = shuffle16<0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23>(x0, y0);
        t[4 + m] = shuffle16<8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31>(x0, y0);
        t[8 + m] = shuffle16<0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23>(x1, y1);
        t[12 + m] = shuffle16<8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31>(x1, y1);
    }
    for (int j = 0; j < 16; j++) v[j] = t[j];
}

// Rows [0, rows) of w (row stride IC; rows past them repeat the last) as a tile: block k's bytes 4s .. 4s + 3 of
// row c, plus 128 (read as unsigned), at words[(8k + s) * 16 + c], and row c's scale of block k at
// scales[16k + c], both transposed in registers.
static void q8_tile16(uint32_t* words, float* scales, const int8_t* w, const uint16_t* d, int rows, int IC, int nb) {
    int at[16];
    for (int c = 0; c < 16; c++) at[c] = c < rows ? c : rows - 1;
    vi16 v[16];
    for (int k0 = 0; k0 < nb; k0 += 16) {
        for (int c = 0; c < 16; c++) v[c] = (vi16)vf_from_fp16(d + (size_t)at[c] * nb + k0, std::min(16, nb - k0));
        transpose16(v);
        for (int k = k0; k < std::min(nb, k0 + 16); k++) memcpy(scales + 16 * k, &v[k - k0], sizeof v[0]);
    }
    typedef int vi8 __attribute__((vector_size(32)));
    const auto load = [&](int c, int k) {
        vi8 v;
        memcpy(&v, w + (size_t)at[c] * IC + k * kQ8Block, sizeof v);
        return v;
    };
    const vi16 plus128 = (vi16)_mm512_set1_epi8((char)0x80);
    for (int k = 0; k < nb; k++) {
        // the next tile (16 rows on from w, contiguous), a block's worth of its lines per block: the hardware
        // alone does not keep 16 rows' streams fed
        for (int l = 0; l < 8; l++) __builtin_prefetch(w + (size_t)16 * IC + (size_t)(8 * k + l) * 64);
        // 16 rows' 8 words, rows p and p + 8 in one register, transposed 8 x 8 in each half: words, then pairs
        // of words, then 128-bit quarters interleaved (8 registers: transpose16's 16 would not stay in them)
        vi16 z[8], a[8], t[8];
        for (int p = 0; p < 8; p++)
            z[p] = __builtin_shufflevector(load(p, k), load(p + 8, k), 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13,
                                           14, 15);
        for (int p = 0; p < 8; p += 2) {
            a[p] = shuffle16<0, 16, 1, 17, 4, 20, 5, 21, 8, 24, 9, 25, 12, 28, 13, 29>(z[p], z[p + 1]);
            a[p + 1] = shuffle16<2, 18, 3, 19, 6, 22, 7, 23, 10, 26, 11, 27, 14, 30, 15, 31>(z[p], z[p + 1]);
        }
        for (int g = 0; g < 8; g += 4)
            for (int m = 0; m < 2; m++) {
                const vi16 u = a[g + m], v = a[g + m + 2];
                t[g + 2 * m] = shuffle16<0, 1, 16, 17, 4, 5, 20, 21, 8, 9, 24, 25, 12, 13, 28, 29>(u, v);
                t[g + 2 * m + 1] = shuffle16<2, 3, 18, 19, 6, 7, 22, 23, 10, 11, 26, 27, 14, 15, 30, 31>(u, v);
            }
        for (int m = 0; m < 4; m++) {  // words s = m and 4 + m
            const vi16 u = t[m], v = t[4 + m];
            const vi16 lo = shuffle16<0, 1, 2, 3, 16, 17, 18, 19, 8, 9, 10, 11, 24, 25, 26, 27>(u, v) ^ plus128;
            const vi16 hi = shuffle16<4, 5, 6, 7, 20, 21, 22, 23, 12, 13, 14, 15, 28, 29, 30, 31>(u, v) ^ plus128;
            memcpy(words + (8 * k + m) * 16, &lo, sizeof lo);
            memcpy(words + (8 * k + 4 + m) * 16, &hi, sizeof hi);
        }
    }
}

// acc[r] = the tile's 16 outputs for input row r < R: its q8 blocks xq (row stride IC), their scales xd (stride
// xd_row) and -128 x each block's sum corr (stride nb), from which each block's vpdpbusd sums start (taking
// back the 128 the tile added: exact).
template <int R>
static inline void q8q8_tile_rows(__m512* acc, const uint32_t* words, const float* scales, const int8_t* xq,
                                  const float* xd, const int32_t* corr, int IC, int xd_row, int nb,
                                  const uint32_t* ahead) {
    for (int r = 0; r < R; r++) acc[r] = _mm512_setzero_ps();
    for (int k = 0; k < nb; k++) {
        if (ahead) {  // the next kept tile's block k, words and scales: the hardware alone fetches it too late
            for (int l = 0; l < 8; l++) __builtin_prefetch(ahead + (8 * k + l) * 16);
            __builtin_prefetch(ahead + (size_t)nb * 128 + 16 * k);
        }
        __m512i w[8];
        for (int s = 0; s < 8; s++) w[s] = _mm512_loadu_si512(words + (8 * k + s) * 16);
        const __m512 dw = _mm512_loadu_ps(scales + 16 * k);
        for (int r = 0; r < R; r++) {
            // x's words broadcast straight from memory (a word through a general register costs a shuffle)
            typedef int32_t word __attribute__((may_alias, aligned(1)));
            const word* x = reinterpret_cast<const word*>(xq + (size_t)r * IC + k * kQ8Block);
            __m512i dot0 = _mm512_set1_epi32(corr[r * nb + k]), dot1 = _mm512_setzero_si512();
            for (int s = 0; s < 8; s += 2) {  // two chains: the integer sums are exact in any order
                dot0 = _mm512_dpbusd_epi32(dot0, w[s], _mm512_set1_epi32(x[s]));
                dot1 = _mm512_dpbusd_epi32(dot1, w[s + 1], _mm512_set1_epi32(x[s + 1]));
            }
            const __m512 f = __builtin_convertvector((vi16)_mm512_add_epi32(dot0, dot1), __m512);
            acc[r] = _mm512_fmadd_ps(f, _mm512_mul_ps(dw, _mm512_set1_ps(xd[(size_t)r * xd_row + k])), acc[r]);
        }
    }
}

// out (N, OC) from x's rows as q8 blocks (xq, xd, corr as q8q8_tile_rows reads them), 16 output rows at a time
// split by OpenMP, and input rows 4 at a time; each 16 rows' tile laid out here, or read from tiles
// (matvec_q8_tiles) when given.
static void matvec_q8q8_tiles(float* out, const int8_t* xq, const float* xd, const int32_t* corr, const int8_t* q,
                              const uint16_t* d, const float* b, int N, int IC, int OC, int xd_row,
                              const uint32_t* tiles) {
    const int nb = IC / kQ8Block;
    parallel_if((size_t)N * IC * OC >= kThreadsFrom, [&] {
        static thread_local std::vector<uint32_t> laid;
        if (!tiles) laid.resize((size_t)nb * 144);
#pragma omp for schedule(static)
        for (int tile = 0; tile < (OC + 15) / 16; tile++) {
            const int j0 = 16 * tile, cols = std::min(16, OC - j0);
            const uint32_t* words = tiles ? tiles + (size_t)tile * nb * 144 : laid.data();
            const uint32_t* ahead = tiles && 16 * (tile + 1) < OC ? words + (size_t)nb * 144 : nullptr;
            const float* scales = reinterpret_cast<const float*>(words + (size_t)nb * 128);
            if (!tiles)
                q8_tile16(laid.data(), reinterpret_cast<float*>(laid.data() + (size_t)nb * 128), q + (size_t)j0 * IC,
                          d + (size_t)j0 * nb, cols, IC, nb);
            const __mmask16 in = (__mmask16)((1u << cols) - 1);
            const __m512 bias = b ? _mm512_maskz_loadu_ps(in, b + j0) : _mm512_setzero_ps();
            const auto rows = [&](auto R, int r0) {
                __m512 acc[R.value];
                q8q8_tile_rows<R.value>(acc, words, scales, xq + (size_t)r0 * IC, xd + (size_t)r0 * xd_row,
                                        corr + (size_t)r0 * nb, IC, xd_row, nb, r0 == 0 ? ahead : nullptr);
                for (int r = 0; r < R.value; r++)
                    _mm512_mask_storeu_ps(out + (size_t)(r0 + r) * OC + j0, in,
                                          b ? _mm512_add_ps(acc[r], bias) : acc[r]);
            };
            int r0 = 0;
            for (; r0 + 4 <= N; r0 += 4) rows(std::integral_constant<int, 4>(), r0);
            for (; r0 < N; r0++) rows(std::integral_constant<int, 1>(), r0);
        }
    });
}
#endif

size_t matvec_q8_tiles_words(int IC, int OC) { return (size_t)(OC + 15) / 16 * (IC / kQ8Block) * 144; }

bool matvec_q8_tiles(uint32_t* dst, const int8_t* q, const uint16_t* d, int IC, int OC) {
#ifdef Q8_DOT_VNNI
    const int nb = IC / kQ8Block;
#pragma omp parallel for schedule(static)
    for (int tile = 0; tile < (OC + 15) / 16; tile++) {
        uint32_t* words = dst + (size_t)tile * nb * 144;
        q8_tile16(words, reinterpret_cast<float*>(words + (size_t)nb * 128), q + (size_t)16 * tile * IC,
                  d + (size_t)16 * tile * nb, std::min(16, OC - 16 * tile), IC, nb);
    }
    return true;
#else
    return false;
#endif
}

void matvec_q8q8(float* out, const float* x, const int8_t* q, const uint16_t* d, const float* b, int N, int IC,
                 int OC, const uint32_t* tiles) {
    assert(IC % kQ8Block == 0);
    const int nb = IC / kQ8Block, xd_row = (nb + kVecLen - 1) / kVecLen * kVecLen;
    static thread_local std::vector<int8_t> xq;  // decoding calls this ~50 times a token: no allocation each
    static thread_local std::vector<float> xd;
    xq.resize((size_t)N * IC);
    xd.assign((size_t)N * xd_row, 0.0f);
    for (int r = 0; r < N; r++) round_input(x + (size_t)r * IC, IC, &xq[(size_t)r * IC], &xd[(size_t)r * xd_row]);
    const int8_t* xqp = xq.data();
    const float* xdp = xd.data();
#ifdef Q8_DOT_VNNI
    if (N >= 2 || tiles) {
        static thread_local std::vector<int32_t> corr;
        corr.resize((size_t)N * nb);
        for (size_t blk = 0; blk < corr.size(); blk++) {
            int sum = 0;
            for (int i = 0; i < kQ8Block; i++) sum += xq[blk * kQ8Block + i];
            corr[blk] = -128 * sum;
        }
        return matvec_q8q8_tiles(out, xqp, xdp, corr.data(), q, d, b, N, IC, OC, xd_row, tiles);
    }
#endif
    in_row_groups<1>(out, b, N, IC, OC, [&](float* o, int rows, int j0, int r, int) {
        q8q8_rows4(o, rows, xqp + (size_t)r * IC, xdp + (size_t)r * xd_row, q + (size_t)j0 * IC, d + (size_t)j0 * nb,
                   IC, nb);
    });
}

void matvec_q8q8_ref(float* out, const float* x, const int8_t* q, const uint16_t* d, const float* b, int IC, int OC) {
    const int nb = IC / kQ8Block;
    std::vector<int8_t> xq(IC);
    std::vector<float> xd(nb);
    round_input(x, IC, xq.data(), xd.data());
    for (int j = 0; j < OC; j++) {
        double sum = 0;
        for (int k = 0; k < nb; k++) {
            long long dot = 0;
            for (int i = k * kQ8Block; i < (k + 1) * kQ8Block; i++) dot += q[(size_t)j * IC + i] * xq[i];
            sum += (double)fp16_to_float(d[(size_t)j * nb + k]) * xd[k] * (double)dot;
        }
        out[j] = b ? (float)sum + b[j] : (float)sum;
    }
}

void matvec_q8_ref(float* out, const float* x, const int8_t* q, const uint16_t* d, const float* b, int IC, int OC) {
    for (int j = 0; j < OC; j++) {
        double sum = 0;
        for (int i = 0; i < IC; i++)
            sum += (double)fp16_to_float(d[((size_t)j * IC + i) / kQ8Block]) * q[(size_t)j * IC + i] * x[i];
        out[j] = b ? (float)sum + b[j] : (float)sum;
    }
}

KERNELS_END
