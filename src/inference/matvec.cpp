// matvec.cpp: the matrix-vector products of decoding from a weight's bf16 and q8_0 copies (see matvec.h),
// with the references the tests hold them against. N rows at once (sequences decoded together) run each group
// of output rows for every input row in turn, with the one-row code: the group's weights are read from memory
// once and stay in cache for the other rows, and each row's numbers are those it has alone.
#include "inference/matvec.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/simd.h"
#include "precision/half.h"
#include "precision/q8_dot.h"

#if defined(__x86_64__)
#include <immintrin.h>
#elif defined(__aarch64__)
#include <arm_neon.h>
#endif

KERNELS_BEGIN

// out (N, OC) = x W16^T + b with fp32 x and products: a frozen bf16 base's (precision.h), on any CPU.
static void matvec_bf16_fp32(float* out, const float* x, const uint16_t* W16, const float* b, int N, int IC, int OC) {
#pragma omp parallel for schedule(static)
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
}

// The rows' products of a weight's reduced-precision copy: its q8 blocks, else its bf16 rounding (a frozen
// base's with fp32 products, as its gemm has them).
void matvec_copy(float* out, const float* x, const Weight& w, const float* b, int N, int IC, int OC) {
    const WeightCopy* c = static_cast<const WeightCopy*>(w.copy);
    if (c->q8 && c->q8_inputs) return matvec_q8q8(out, x, c->q8, c->q8_d, b, N, IC, OC);
    if (c->q8) return matvec_q8(out, x, c->q8, c->q8_d, b, N, IC, OC);
    if (c->fp32_dropped) return matvec_bf16_fp32(out, x, c->bf16, b, N, IC, OC);
    matvec_bf16(out, x, c->bf16, b, N, IC, OC);
}

// Output row i of input row r, out[r * OC + i] = rows4(out + r * OC + j0, rows, j0, r) for each group of four
// output rows j0.. (the last group: rows < 4) and each input row r, the groups split by OpenMP, plus b.
template <typename Rows4>
static void in_row_groups(float* out, const float* b, int N, int OC, Rows4 rows4) {
#pragma omp parallel for schedule(static)
    for (int g = 0; g < (OC + 3) / 4; g++) {
        const int j0 = g * 4, rows = OC - j0 < 4 ? OC - j0 : 4;
        for (int r = 0; r < N; r++) {
            float* o = out + (size_t)r * OC;
            rows4(o + j0, rows, j0, r);
            if (b)
                for (int j = j0; j < j0 + rows; j++) o[j] += b[j];
        }
    }
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
// fetching the next four ahead (the first input row's pass: `fetch`), then the four 16-lane sums paired down
// together. A row's last partial vector is read through a mask. Rows past `rows` repeat the last (their sums
// unused).
// (A function of its own: clang does not carry a target attribute into an OpenMP region.)
__attribute__((target("avx512f,avx512bw,avx512bf16"))) static void rows4_bf16_avx512(float* out, int rows,
                                                                                   const uint16_t* w,
                                                                                   const uint16_t* x16, int IC,
                                                                                   bool fetch) {
    const uint16_t* wr[4];
    for (int r = 0; r < 4; r++) wr[r] = w + (size_t)(r < rows ? r : rows - 1) * IC;
    __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
    for (int i = 0; i < IC; i += 32) {
        for (int l = 0; fetch && l < 4 * 64; l += 64)
            __builtin_prefetch((const char*)(w + (size_t)4 * IC + (size_t)4 * i) + l);
        const __mmask32 in = IC - i >= 32 ? ~(__mmask32)0 : (__mmask32)((1u << (IC - i)) - 1);
        const __m512bh x = (__m512bh)_mm512_maskz_loadu_epi16(in, x16 + i);
        for (int r = 0; r < 4; r++)
            acc[r] = _mm512_dpbf16_ps(acc[r], (__m512bh)_mm512_maskz_loadu_epi16(in, wr[r] + i), x);
    }
    const vf16 q = sum_lanes4((vf16)acc[0], (vf16)acc[1], (vf16)acc[2], (vf16)acc[3]);
    float sums[16];
    memcpy(sums, &q, sizeof sums);
    for (int r = 0; r < rows; r++) out[r] = (sums[r] + sums[4 + r]) + (sums[8 + r] + sums[12 + r]);
}

static void matvec_bf16_avx512(float* out, const uint16_t* x16, const uint16_t* W16, const float* b, int N, int IC,
                               int OC) {
    in_row_groups(out, b, N, OC, [&](float* o, int rows, int j0, int r) {
        rows4_bf16_avx512(o, rows, W16 + (size_t)j0 * IC, x16 + (size_t)r * IC, IC, r == 0);
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

// out[0..R) = the R rows of q8 blocks from w (row stride IC, scales d with stride nb) times x, fetching the next
// R rows ahead if `fetch` (the first input row's pass). R rows at once share x's loads, and their R independent
// sums keep the FMA units busy where one row's chain would leave them waiting (decoding is bound by the rate the
// weight bytes arrive, not by arithmetic). A row sums in 16 lanes (a block's values l and 16 + l into lane l),
// in kVecLen / kLanes registers: GCC keeps a 16-float vector in memory where a register holds fewer.
template <int R>
static inline void q8_rows(float* out, const float* x, const int8_t* w, const uint16_t* d, int IC, int nb,
                           bool fetch) {
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
            for (int l = 0; fetch && l < R * kQ8Block; l += 64)
                __builtin_prefetch(w + (size_t)R * IC + (size_t)i * R + l);
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
#pragma omp parallel for schedule(static)
    for (int g = 0; g < groups; g++) {
        const int j0 = g * R;
        for (int r = 0; r < N; r++) {
            float* o = out + (size_t)r * OC;
            const float* xr = x + (size_t)r * IC;
            if (j0 + R <= OC)
                q8_rows<R>(o + j0, xr, q + (size_t)j0 * IC, d + (size_t)j0 * nb, IC, nb, r == 0);
            else
                for (int j = j0; j < OC; j++)
                    q8_rows<1>(o + j, xr, q + (size_t)j * IC, d + (size_t)j * nb, IC, nb, r == 0);
            if (b)
                for (int j = j0; j < j0 + R && j < OC; j++) o[j] += b[j];
        }
    }
}

// out[0..rows) = up to 4 rows of q8 blocks from w (row stride IC, scales d with stride nb) times x's q8 blocks
// xq (scales xd): each block's product in integers, exact (q8_dot.h), then times its two scales into an fp32
// sum, block by block. Past `rows` the last row stands in (its sums unused), so the four always run together.
// `fetch`: the first input row's pass, which fetches the rows ahead.
static inline void q8q8_rows4(float* out, int rows, const int8_t* xq, const float* xd, const int8_t* w,
                              const uint16_t* d, int IC, int nb, bool fetch) {
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
    for (int b0 = 0; b0 < nb; b0 += kVecLen) {
        const int n = nb - b0 < kVecLen ? nb - b0 : kVecLen;
        float rows_scale[4][kVecLen], scale[kVecLen][4];  // this chunk's products of the two blocks' scales
        const vf16 dx = vf_load(xd + b0);
        for (int r = 0; r < 4; r++) vf_store(rows_scale[r], vf_from_fp16(dr[r] + b0, n) * dx);
        for (int k = 0; k < n; k++)
            for (int r = 0; r < 4; r++) scale[k][r] = rows_scale[r][k];
#ifdef Q8_DOT_VNNI
        // Two blocks a step: |x| times w with x's signs (vpdpbusd), the four rows' 16-lane sums paired down
        // to each row's block sums (lanes 0-3: block k's four rows, lanes 8-11: k + 1's), then into acc block
        // after block as below.
        for (int k = 0; k < n; k += 2) {
            const int i = (b0 + k) * kQ8Block;
            for (int l = 0; fetch && l < 8 * kQ8Block; l += 64)  // two groups ahead: see the loop below
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
            acc = _mm_fmadd_ps(__builtin_shufflevector(f, f, 0, 1, 2, 3), _mm_loadu_ps(scale[k]), acc);
            if (k + 1 < n)
                acc = _mm_fmadd_ps(__builtin_shufflevector(f, f, 8, 9, 10, 11), _mm_loadu_ps(scale[k + 1]), acc);
        }
#else
        for (int k = 0; k < n; k++) {
            const int i = (b0 + k) * kQ8Block;
            // the group of 4 rows after the next, as fast as these are read (rows < 4 only ends a matrix): 6 KB
            // ahead at 768 wide, where one group (3 KB) left bandwidth unused (tests/bench_results.md)
            for (int l = 0; fetch && l < 4 * kQ8Block; l += 64)
                __builtin_prefetch(w + (size_t)8 * IC + (size_t)i * 4 + l);
#ifdef Q8_DOT_AVX2
            const auto load = [&](const int8_t* q) { return _mm256_loadu_si256((const __m256i*)(q + i)); };
            const __m256i h = q8_dot4(load(xq), load(wr[0]), load(wr[1]), load(wr[2]), load(wr[3]));
            const __m128i dot = _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
            acc = _mm_fmadd_ps(_mm_cvtepi32_ps(dot), _mm_loadu_ps(scale[k]), acc);
#else
            for (int r = 0; r < 4; r++) acc[r] += (float)q8_dot(wr[r] + i, xq + i) * scale[k][r];
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

void matvec_q8q8(float* out, const float* x, const int8_t* q, const uint16_t* d, const float* b, int N, int IC,
                 int OC) {
    assert(IC % kQ8Block == 0);
    const int nb = IC / kQ8Block, xd_row = (nb + kVecLen - 1) / kVecLen * kVecLen;
    static thread_local std::vector<int8_t> xq;  // decoding calls this ~50 times a token: no allocation each
    static thread_local std::vector<float> xd;
    xq.resize((size_t)N * IC);
    xd.assign((size_t)N * xd_row, 0.0f);
    for (int r = 0; r < N; r++) round_input(x + (size_t)r * IC, IC, &xq[(size_t)r * IC], &xd[(size_t)r * xd_row]);
    const int8_t* xqp = xq.data();
    const float* xdp = xd.data();
    in_row_groups(out, b, N, OC, [&](float* o, int rows, int j0, int r) {
        q8q8_rows4(o, rows, xqp + (size_t)r * IC, xdp + (size_t)r * xd_row, q + (size_t)j0 * IC, d + (size_t)j0 * nb,
                   IC, nb, r == 0);
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
