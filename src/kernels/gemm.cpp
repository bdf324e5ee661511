// gemm.cpp: packed, cache-blocked fp32 matrix multiply (see gemm.h). The micro-kernel keeps an
// MR x NR tile of C in registers and streams packed panels of A (MR rows) and B (NR columns); it is
// written with AVX-512 or AVX2 intrinsics, chosen at compile time from the target (-march), with a
// vector-extension kernel for anything else. Blocking follows the usual BLIS scheme (Goto & van de
// Geijn, 2008): B's KC x NC block in L2, its KC x NR micro-panel in L1 across the MR-row panels of A.
#include "kernels/gemm.h"

#include <algorithm>
#include <cassert>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "kernels/bf16.h"
#include "kernels/simd.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#ifdef _OPENMP
#include <omp.h>
#endif

namespace {

// Register tile per instruction set (overridable with -DGEMM_MR/-DGEMM_NV for experiments): 8 x 48 in
// 24 zmm accumulators with AVX-512 (10-20% faster than 8 x 32 on the backward products here, and 48
// divides every GPT-2 width: 768, 2304, 3072, 50304); 6 x 16 in 12 ymm with AVX2; 4 x 16 elsewhere.
#if defined(__AVX512F__)
#define GEMM_ISA_MR 8
#define GEMM_ISA_NV 3
#elif defined(__AVX2__) && defined(__FMA__)
#define GEMM_ISA_MR 6
#define GEMM_ISA_NV 1
#else
#define GEMM_ISA_MR 4
#define GEMM_ISA_NV 1
#endif
#ifndef GEMM_MR
#define GEMM_MR GEMM_ISA_MR
#endif
#ifndef GEMM_NV
#define GEMM_NV GEMM_ISA_NV
#endif
const int MR = GEMM_MR;         // rows of the register tile
const int NR = 16 * GEMM_NV;    // columns of the register tile: GEMM_NV 16-float vectors
const int KC = 256;             // depth of one packed panel pair (B's KC x NR micro-panel: 48 KiB, in L1/L2)
const int MC = 128 / MR * MR;   // rows of A packed at once (MC x KC floats, in L2)
const int NC = 1024 / NR * NR;  // columns of B packed at once (KC x NC floats = 1 MiB, in L2)
// When C is far larger than L2 (the lm_head's logits, 51 MB at B=4 T=64) every extra pass over K
// re-reads and re-writes it from memory; such products take the whole of a K <= KC_DEEP in one pass,
// with a narrower B block to keep it in L2.
const int KC_DEEP = 768;
const int NC_DEEP = 256 / NR * NR;
const size_t DEEP_MIN_C = (size_t)4 << 20;  // floats of C (16 MB)

struct Blocking {
    int kc, nc;
};
// Depends on the shape only, never on the thread count: the K split decides the summation order.
Blocking choose_blocking(int M, int N, int K) {
    if ((size_t)M * N >= DEEP_MIN_C && K > KC && K <= KC_DEEP) return {K, NC_DEEP};
    return {KC, NC};
}

inline float a_at(const float* A, int lda, bool trans, int i, int k) {
    return trans ? A[(size_t)k * lda + i] : A[(size_t)i * lda + k];
}
inline float b_at(const float* B, int ldb, bool trans, int k, int j) {
    return trans ? B[(size_t)j * ldb + k] : B[(size_t)k * ldb + j];
}

// In-register transposes for packing operands whose k runs along memory: each stage swaps the
// off-diagonal b x b blocks of every 2b x 2b block (b = 8, 4, 2, 1), leaving row i holding column i.
#define SHUF16(x, y, ...) __builtin_shufflevector(x, y, __VA_ARGS__)
inline void transpose16(vf16 r[16]) {
    for (int j = 0; j < 8; j++) {
        vf16 x = r[j], y = r[j + 8];
        r[j] = SHUF16(x, y, 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23);
        r[j + 8] = SHUF16(x, y, 8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31);
    }
    for (int i = 0; i < 16; i += 8)
        for (int j = 0; j < 4; j++) {
            vf16 x = r[i + j], y = r[i + j + 4];
            r[i + j] = SHUF16(x, y, 0, 1, 2, 3, 16, 17, 18, 19, 8, 9, 10, 11, 24, 25, 26, 27);
            r[i + j + 4] = SHUF16(x, y, 4, 5, 6, 7, 20, 21, 22, 23, 12, 13, 14, 15, 28, 29, 30, 31);
        }
    for (int i = 0; i < 16; i += 4)
        for (int j = 0; j < 2; j++) {
            vf16 x = r[i + j], y = r[i + j + 2];
            r[i + j] = SHUF16(x, y, 0, 1, 16, 17, 4, 5, 20, 21, 8, 9, 24, 25, 12, 13, 28, 29);
            r[i + j + 2] = SHUF16(x, y, 2, 3, 18, 19, 6, 7, 22, 23, 10, 11, 26, 27, 14, 15, 30, 31);
        }
    for (int i = 0; i < 16; i += 2) {
        vf16 x = r[i], y = r[i + 1];
        r[i] = SHUF16(x, y, 0, 16, 2, 18, 4, 20, 6, 22, 8, 24, 10, 26, 12, 28, 14, 30);
        r[i + 1] = SHUF16(x, y, 1, 17, 3, 19, 5, 21, 7, 23, 9, 25, 11, 27, 13, 29, 15, 31);
    }
}
#undef SHUF16

// dst[k * ld + c] = src[c * lds + k] for a 16 x 16 block (16 rows of src become 16 columns of dst).
inline void transpose_block16(float* dst, size_t ld, const float* src, size_t lds) {
    vf16 r[16];
    for (int c = 0; c < 16; c++) memcpy(&r[c], src + c * lds, sizeof(vf16));
    transpose16(r);
    for (int k = 0; k < 16; k++) memcpy(dst + k * ld, &r[k], sizeof(vf16));
}

// Packs op(A)[i0:i0+mc, k0:k0+kc] as panels of MR rows, k-major within a panel, zero-padded.
void pack_a(float* dst, const float* A, int lda, bool trans, int i0, int mc, int k0, int kc) {
    for (int p = 0; p < mc; p += MR) {
        int rows = std::min(MR, mc - p);
        if (!trans) {
            int k = 0;
            if (rows == MR && MR <= 16) {
                // transpose 16 k at a time through a 16 x 16 block whose first MR rows are this panel
                for (; k + 16 <= kc; k += 16) {
                    vf16 r[16];
                    for (int c = 0; c < MR; c++) memcpy(&r[c], A + (size_t)(i0 + p + c) * lda + k0 + k, sizeof(vf16));
                    for (int c = MR; c < 16; c++) r[c] = vf16{};
                    transpose16(r);
                    for (int kk = 0; kk < 16; kk++) memcpy(dst + (size_t)(k + kk) * MR, &r[kk], sizeof(float) * MR);
                }
            }
            for (int r = 0; r < MR; r++) {
                const float* src = r < rows ? A + (size_t)(i0 + p + r) * lda + k0 : nullptr;
                for (int kk = k; kk < kc; kk++) dst[kk * MR + r] = src ? src[kk] : 0.0f;
            }
        } else {
            for (int k = 0; k < kc; k++) {
                const float* src = A + (size_t)(k0 + k) * lda + i0 + p;
                if (rows == MR) {
                    memcpy(dst + k * MR, src, sizeof(float) * MR);
                    continue;
                }
                for (int r = 0; r < MR; r++) dst[k * MR + r] = r < rows ? src[r] : 0.0f;
            }
        }
        dst += (size_t)MR * kc;
    }
}

// Packs op(B)[k0:k0+kc, j0:j0+nc] as panels of NR columns, k-major within a panel, zero-padded.
void pack_b(float* dst, const float* B, int ldb, bool trans, int k0, int kc, int j0, int nc) {
    for (int q = 0; q < nc; q += NR) {
        int cols = std::min(NR, nc - q);
        if (!trans) {
            for (int k = 0; k < kc; k++) {
                const float* src = B + (size_t)(k0 + k) * ldb + j0 + q;
                float* d = dst + (size_t)k * NR;
                if (cols == NR) {
                    memcpy(d, src, sizeof(float) * NR);
                    continue;
                }
                for (int c = 0; c < NR; c++) d[c] = c < cols ? src[c] : 0.0f;
            }
        } else {
            int k = 0;
            if (cols == NR && NR % 16 == 0)
                for (; k + 16 <= kc; k += 16) {
                    for (int c = 0; c < NR; c += 16)
                        transpose_block16(dst + (size_t)k * NR + c, NR, B + (size_t)(j0 + q + c) * ldb + k0 + k, ldb);
                    // the next panel's NR rows are NR separate streams (the lm_head's weights come from
                    // DRAM): fetch their lines one transpose ahead
                    if (q + 2 * NR <= nc)
                        for (int c = 0; c < NR; c++) __builtin_prefetch(B + (size_t)(j0 + q + NR + c) * ldb + k0 + k);
                }
            for (int c = 0; c < NR; c++) {
                const float* src = c < cols ? B + (size_t)(j0 + q + c) * ldb + k0 : nullptr;
                for (int kk = k; kk < kc; kk++) dst[(size_t)kk * NR + c] = src ? src[kk] : 0.0f;
            }
        }
        dst += (size_t)NR * kc;
    }
}

#if defined(__x86_64__)
// C[0:rows, 0:cols] = (or +=) an MR x NR tile held in MR x NR/16 zmm accumulators.
__attribute__((target("avx512f"))) inline void store_tile(const __m512 (*acc)[GEMM_NV], float* C, int ldc, int rows,
                                                          int cols, bool add) {
    const int NV = GEMM_NV;
    if (rows == MR && cols == NR) {
        for (int r = 0; r < MR; r++)
            for (int v = 0; v < NV; v++) {
                float* c = C + (size_t)r * ldc + 16 * v;
                __m512 x = add ? _mm512_add_ps(acc[r][v], _mm512_loadu_ps(c)) : acc[r][v];
                _mm512_storeu_ps(c, x);
            }
        return;
    }
    for (int r = 0; r < rows; r++)
        for (int v = 0; v < NV && 16 * v < cols; v++) {
            int n = std::min(16, cols - 16 * v);
            __mmask16 m = (__mmask16)((1u << n) - 1);
            float* c = C + (size_t)r * ldc + 16 * v;
            __m512 x = add ? _mm512_add_ps(acc[r][v], _mm512_maskz_loadu_ps(m, c)) : acc[r][v];
            _mm512_mask_storeu_ps(c, m, x);
        }
}
#endif

#if defined(__AVX512F__)
// C[0:rows, 0:cols] (+)= packed A panel (MR x kc) * packed B panel (kc x NR), AVX-512: MR x NR/16
// accumulators stay in zmm registers; each k broadcasts MR values of A against NR/16 vectors of B.
void micro_kernel(int kc, const float* a, const float* b, float* C, int ldc, int rows, int cols, bool add) {
    const int NV = GEMM_NV;
    __m512 acc[MR][NV];
    for (int r = 0; r < MR; r++)
        for (int v = 0; v < NV; v++) acc[r][v] = _mm512_setzero_ps();
    for (int k = 0; k < kc; k++) {
        __m512 bv[NV];
        for (int v = 0; v < NV; v++) bv[v] = _mm512_load_ps(b + (size_t)k * NR + 16 * v);
        for (int r = 0; r < MR; r++) {
            __m512 av = _mm512_set1_ps(a[k * MR + r]);
            for (int v = 0; v < NV; v++) acc[r][v] = _mm512_fmadd_ps(av, bv[v], acc[r][v]);
        }
    }
    store_tile(acc, C, ldc, rows, cols, add);
}
#elif defined(__AVX2__) && defined(__FMA__)
// The same with AVX2: MR x NR/8 ymm accumulators.
void micro_kernel(int kc, const float* a, const float* b, float* C, int ldc, int rows, int cols, bool add) {
    const int NV = 2 * GEMM_NV;
    __m256 acc[MR][NV];
    for (int r = 0; r < MR; r++)
        for (int v = 0; v < NV; v++) acc[r][v] = _mm256_setzero_ps();
    for (int k = 0; k < kc; k++) {
        __m256 bv[NV];
        for (int v = 0; v < NV; v++) bv[v] = _mm256_load_ps(b + (size_t)k * NR + 8 * v);
        for (int r = 0; r < MR; r++) {
            __m256 av = _mm256_broadcast_ss(a + k * MR + r);
            for (int v = 0; v < NV; v++) acc[r][v] = _mm256_fmadd_ps(av, bv[v], acc[r][v]);
        }
    }
    for (int r = 0; r < rows; r++) {
        float tile[NR];
        for (int v = 0; v < NV; v++) _mm256_storeu_ps(tile + 8 * v, acc[r][v]);
        float* c = C + (size_t)r * ldc;
        for (int j = 0; j < cols; j++) c[j] = add ? c[j] + tile[j] : tile[j];
    }
}
#else
// Portable: GCC/Clang vector extensions, lowered to whatever vector unit the target has.
void micro_kernel(int kc, const float* a, const float* b, float* C, int ldc, int rows, int cols, bool add) {
    const int NV = GEMM_NV;
    vf16 acc[MR][NV];
    for (int r = 0; r < MR; r++)
        for (int v = 0; v < NV; v++) acc[r][v] = vf16{};
    for (int k = 0; k < kc; k++) {
        vf16 bv[NV];
        for (int v = 0; v < NV; v++) memcpy(&bv[v], b + (size_t)k * NR + 16 * v, sizeof(vf16));
        for (int r = 0; r < MR; r++)
            for (int v = 0; v < NV; v++) acc[r][v] += a[k * MR + r] * bv[v];
    }
    for (int r = 0; r < rows; r++) {
        float tile[NR];
        memcpy(tile, acc[r], sizeof(tile));
        float* c = C + (size_t)r * ldc;
        for (int j = 0; j < cols; j++) c[j] = add ? c[j] + tile[j] : tile[j];
    }
}
#endif

// ---- bf16 operands (Precision::kBf16). vdpbf16ps multiplies pairs of bf16 values along k and adds both
// products into one fp32 lane, so both packed operands hold k in pairs: 32-bit words (bf16 of k even,
// bf16 of k odd << 16), A's panel as [k/2][MR] words and B's as [k/2][NR] words, an odd kc padded with a
// zero. The operands are rounded (bf16_round) as they are packed, from fp32 sources.

// Words of 32 consecutive floats: lane j = pair (p[2j], p[2j + 1]).
inline vf16 pair_words(const float* p) {
    vf16 lo = vf_load(p), hi = vf_load(p + 16);
    vf16 even = __builtin_shufflevector(lo, hi, 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    vf16 odd = __builtin_shufflevector(lo, hi, 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    return (vf16)vbf16_pairs(even, odd);
}

inline uint32_t pair_word(float even, float odd) {
    return (uint32_t)bf16_round(even) | (uint32_t)bf16_round(odd) << 16;
}

// Packs op(A)[i0:i0+mc, k0:k0+kc] as panels of MR rows of k-pair words, zero-padded.
void pack_a_bf16(uint32_t* dst, const float* A, int lda, bool trans, int i0, int mc, int k0, int kc) {
    const int kc2 = (kc + 1) / 2;
    for (int p = 0; p < mc; p += MR) {
        const int rows = std::min(MR, mc - p);
        int k = 0;
        if (!trans && rows == MR && MR <= 16) {
            // 16 words (32 k) of each row, transposed so each k-pair's MR words are contiguous
            for (; k + 32 <= kc; k += 32) {
                vf16 r[16];
                for (int c = 0; c < MR; c++) r[c] = pair_words(A + (size_t)(i0 + p + c) * lda + k0 + k);
                for (int c = MR; c < 16; c++) r[c] = vf16{};
                transpose16(r);
                for (int kk = 0; kk < 16; kk++) memcpy(dst + (size_t)(k / 2 + kk) * MR, &r[kk], sizeof(float) * MR);
            }
        } else if (trans && rows == MR && MR <= 16) {
            for (; k + 2 <= kc; k += 2) {  // rows k and k + 1 hold the panel's MR values side by side
                const float* src = A + (size_t)(k0 + k) * lda + i0 + p;
                vu16 w = vbf16_pairs(vf_load_partial(src, MR), vf_load_partial(src + lda, MR));
                memcpy(dst + (size_t)(k / 2) * MR, &w, sizeof(uint32_t) * MR);
            }
        }
        for (int k2 = k / 2; k2 < kc2; k2++)
            for (int r = 0; r < MR; r++) {
                const int i = i0 + p + r, ka = k0 + 2 * k2;
                float even = r < rows ? a_at(A, lda, trans, i, ka) : 0.0f;
                float odd = r < rows && 2 * k2 + 1 < kc ? a_at(A, lda, trans, i, ka + 1) : 0.0f;
                dst[(size_t)k2 * MR + r] = pair_word(even, odd);
            }
        dst += (size_t)MR * kc2;
    }
}

// B's source for the bf16 packing: fp32 values, rounded here, or their bf16 rounding already made (the
// model's bf16 weight copy), read as is: half the bytes and no rounding, the same words.
inline uint16_t bf16_bits(float x) { return bf16_round(x); }
inline uint16_t bf16_bits(uint16_t h) { return h; }
// Words of the 32 consecutive values at p: lane j = pair (p[2j], p[2j + 1]).
inline vf16 words32(const float* p) { return pair_words(p); }
inline vf16 words32(const uint16_t* p) {
    vf16 v;
    memcpy(&v, p, sizeof(v));
    return v;
}
// Words of 16 columns of two rows: lane j = pair (p[j], p[ld + j]).
inline vu16 row_pairs(const float* p, size_t ld) { return vbf16_pairs(vf_load(p), vf_load(p + ld)); }
inline vu16 row_pairs(const uint16_t* p, size_t ld) {
    typedef unsigned short vh16 __attribute__((vector_size(32)));
    vh16 even, odd;
    memcpy(&even, p, sizeof(even));
    memcpy(&odd, p + ld, sizeof(odd));
    return __builtin_convertvector(even, vu16) | (__builtin_convertvector(odd, vu16) << 16);
}

// Packs op(B)[k0:k0+kc, j0:j0+nc] as panels of NR columns of k-pair words, zero-padded.
template <typename T>
void pack_b_bf16(uint32_t* dst, const T* B, int ldb, bool trans, int k0, int kc, int j0, int nc) {
    const int kc2 = (kc + 1) / 2;
    auto at = [&](int k, int j) -> uint32_t {
        return bf16_bits(trans ? B[(size_t)j * ldb + k] : B[(size_t)k * ldb + j]);
    };
    for (int q = 0; q < nc; q += NR) {
        const int cols = std::min(NR, nc - q);
        int k = 0;
        if (!trans && cols == NR && NR % 16 == 0) {
            for (; k + 2 <= kc; k += 2) {  // rows k and k + 1, 16 columns at a time
                const T* src = B + (size_t)(k0 + k) * ldb + j0 + q;
                for (int c = 0; c < NR; c += 16) {
                    vu16 w = row_pairs(src + c, ldb);
                    memcpy(dst + (size_t)(k / 2) * NR + c, &w, sizeof(w));
                }
            }
        } else if (trans && cols == NR && NR % 16 == 0) {
            for (; k + 32 <= kc; k += 32)
                for (int c = 0; c < NR; c += 16) {  // 16 columns x 16 words, transposed
                    vf16 r[16];
                    for (int cc = 0; cc < 16; cc++) r[cc] = words32(B + (size_t)(j0 + q + c + cc) * ldb + k0 + k);
                    transpose16(r);
                    for (int kk = 0; kk < 16; kk++) memcpy(dst + (size_t)(k / 2 + kk) * NR + c, &r[kk], sizeof(vf16));
                }
        }
        for (int k2 = k / 2; k2 < kc2; k2++)
            for (int c = 0; c < NR; c++) {
                const int j = j0 + q + c, kb = k0 + 2 * k2;
                uint32_t even = c < cols ? at(kb, j) : 0;
                uint32_t odd = c < cols && 2 * k2 + 1 < kc ? at(kb + 1, j) : 0;
                dst[(size_t)k2 * NR + c] = even | odd << 16;
            }
        dst += (size_t)NR * kc2;
    }
}

#if defined(__x86_64__)
// The bf16 micro-kernel: as the fp32 one, but each step takes a pair of k, broadcasting one word of A
// per row against NR/16 vectors of B words with vdpbf16ps (fp32 accumulation).
__attribute__((target("avx512f,avx512bf16"))) void micro_kernel_bf16(int kc2, const uint32_t* a, const uint32_t* b,
                                                                     float* C, int ldc, int rows, int cols, bool add) {
    const int NV = GEMM_NV;
    __m512 acc[MR][NV];
    for (int r = 0; r < MR; r++)
        for (int v = 0; v < NV; v++) acc[r][v] = _mm512_setzero_ps();
    for (int k = 0; k < kc2; k++) {
        __m512bh bv[NV];
        for (int v = 0; v < NV; v++) bv[v] = (__m512bh)_mm512_load_si512(b + (size_t)k * NR + 16 * v);
        for (int r = 0; r < MR; r++) {
            __m512bh av = (__m512bh)_mm512_set1_epi32((int)a[k * MR + r]);
            for (int v = 0; v < NV; v++) acc[r][v] = _mm512_dpbf16_ps(acc[r][v], av, bv[v]);
        }
    }
    store_tile(acc, C, ldc, rows, cols, add);
}
#else
void micro_kernel_bf16(int, const uint32_t*, const uint32_t*, float*, int, int, int, bool) {
    assert(!"bf16 gemm without AVX512_BF16");
}
#endif

// Per-thread packing buffers, allocated on a thread's first gemm and kept: a fresh 1 MiB allocation per
// call came back from the kernel as page faults on every small product. `whole_a` holds all of a
// thread's A slab packed at once (see gemm_block), grown to the largest slab seen.
struct PackBuffers {
    float* a = nullptr;
    float* b = nullptr;
    std::vector<float> whole_a;
    PackBuffers() {
        a = static_cast<float*>(aligned_alloc(64, sizeof(float) * MC * std::max(KC, KC_DEEP)));
        b = static_cast<float*>(aligned_alloc(64, sizeof(float) * std::max(KC * NC, KC_DEEP * NC_DEEP)));
    }
    ~PackBuffers() {
        free(a);
        free(b);
    }
};

PackBuffers& pack_buffers() {
    static thread_local PackBuffers buffers;
    return buffers;
}

// A slab of at most this many elements is packed once per gemm rather than once per column block of C:
// the lm_head's 256 x 768 input was packed ~100 times per thread, once per 240 of its 50,304 columns.
const size_t WHOLE_A_MAX = (size_t)1 << 20;

// One thread's block C[i0:i1, j0:j1]. B16, if given, is B's bf16 rounding, read instead of B under kBf16.
void gemm_block(Blocking blk, int i0, int i1, int j0, int j1, int K, const float* A, int lda, bool transA,
                const float* B, const uint16_t* B16, int ldb, bool transB, float* C, int ldc, bool accumulate,
                PackBuffers& buf, Precision prec) {
    const bool bf16 = prec == Precision::kBf16;
    const int nic = (i1 - i0 + MC - 1) / MC, npc = (K + blk.kc - 1) / blk.kc;
    const size_t a_block = (size_t)MC * blk.kc;  // floats of one packed (ic, pc) block, an upper bound
    auto pack_a_block = [&](float* dst, int ic, int pc) {
        const int mc = std::min(MC, i1 - ic), kc = std::min(blk.kc, K - pc);
        if (bf16) pack_a_bf16(reinterpret_cast<uint32_t*>(dst), A, lda, transA, ic, mc, pc, kc);
        else pack_a(dst, A, lda, transA, ic, mc, pc, kc);
    };
    const bool whole = j1 - j0 > blk.nc && (size_t)(i1 - i0) * K <= WHOLE_A_MAX;
    if (whole) {
        if (buf.whole_a.size() < a_block * nic * npc) buf.whole_a.resize(a_block * nic * npc);
        for (int p = 0; p < npc; p++)
            for (int i = 0; i < nic; i++)
                pack_a_block(buf.whole_a.data() + a_block * (p * nic + i), i0 + i * MC, p * blk.kc);
    }
    uint32_t* pb16 = reinterpret_cast<uint32_t*>(buf.b);
    for (int jc = j0; jc < j1; jc += blk.nc) {
        int nc = std::min(blk.nc, j1 - jc);
        for (int p = 0, pc = 0; pc < K; p++, pc += blk.kc) {
            int kc = std::min(blk.kc, K - pc), kc2 = (kc + 1) / 2;
            bool add = accumulate || pc > 0;
            if (bf16 && B16) pack_b_bf16(pb16, B16, ldb, transB, pc, kc, jc, nc);
            else if (bf16) pack_b_bf16(pb16, B, ldb, transB, pc, kc, jc, nc);
            else pack_b(buf.b, B, ldb, transB, pc, kc, jc, nc);
            for (int i = 0, ic = i0; ic < i1; i++, ic += MC) {
                int mc = std::min(MC, i1 - ic);
                float* pa = buf.a;
                if (whole) pa = buf.whole_a.data() + a_block * (p * nic + i);
                else pack_a_block(pa, ic, pc);
                const uint32_t* pa16 = reinterpret_cast<const uint32_t*>(pa);
                for (int jr = 0; jr < nc; jr += NR)
                    for (int ir = 0; ir < mc; ir += MR) {
                        float* c = C + (size_t)(ic + ir) * ldc + jc + jr;
                        const int rows = std::min(MR, mc - ir), cols = std::min(NR, nc - jr);
                        if (bf16)
                            micro_kernel_bf16(kc2, pa16 + (size_t)ir * kc2, pb16 + (size_t)jr * kc2, c, ldc, rows, cols,
                                              add);
                        else micro_kernel(kc, pa + (size_t)ir * kc, buf.b + (size_t)jr * kc, c, ldc, rows, cols, add);
                    }
            }
        }
    }
}

bool gemm_trivial(int M, int N, int K, float* C, int ldc, bool accumulate) {
    if (M <= 0 || N <= 0) return true;
    if (K > 0) return false;
    if (!accumulate)
        for (int i = 0; i < M; i++) memset(C + (size_t)i * ldc, 0, sizeof(float) * N);
    return true;
}

}  // namespace

void gemm(int M, int N, int K, const float* A, int lda, bool transA, const float* B, int ldb, bool transB, float* C,
          int ldc, bool accumulate, Precision prec, const uint16_t* B16) {
    if (gemm_trivial(M, N, K, C, ldc, accumulate)) return;
    assert(prec == Precision::kFp32 || bf16_supported());
#pragma omp parallel
    {
        int nt = 1, tid = 0;
#ifdef _OPENMP
        nt = omp_get_num_threads();
        tid = omp_get_thread_num();
#endif
        // Split the longer side of C into nt slabs aligned to the register tile.
        int i0 = 0, i1 = M, j0 = 0, j1 = N;
        if (M >= N) {
            int tiles = (M + MR - 1) / MR;
            i0 = std::min(M, tiles * tid / nt * MR);
            i1 = std::min(M, tiles * (tid + 1) / nt * MR);
        } else {
            int tiles = (N + NR - 1) / NR;
            j0 = std::min(N, tiles * tid / nt * NR);
            j1 = std::min(N, tiles * (tid + 1) / nt * NR);
        }
        if (i0 < i1 && j0 < j1) {
            gemm_block(choose_blocking(M, N, K), i0, i1, j0, j1, K, A, lda, transA, B, B16, ldb, transB, C, ldc,
                       accumulate, pack_buffers(), prec);
        }
    }
}

void gemm_serial(int M, int N, int K, const float* A, int lda, bool transA, const float* B, int ldb, bool transB,
                 float* C, int ldc, bool accumulate, Precision prec) {
    if (gemm_trivial(M, N, K, C, ldc, accumulate)) return;
    assert(prec == Precision::kFp32 || bf16_supported());
    gemm_block(choose_blocking(M, N, K), 0, M, 0, N, K, A, lda, transA, B, nullptr, ldb, transB, C, ldc, accumulate,
               pack_buffers(), prec);
}

void gemm_ref(int M, int N, int K, const float* A, int lda, bool transA, const float* B, int ldb, bool transB, float* C,
              int ldc, bool accumulate) {
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double sum = 0;
            for (int k = 0; k < K; k++) sum += (double)a_at(A, lda, transA, i, k) * b_at(B, ldb, transB, k, j);
            float* c = C + (size_t)i * ldc + j;
            *c = accumulate ? *c + (float)sum : (float)sum;
        }
}

void gemm_bf16_ref(int M, int N, int K, const float* A, int lda, bool transA, const float* B, int ldb, bool transB,
                   float* C, int ldc, bool accumulate) {
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double sum = 0;  // the products of bf16 values are exact; only the summation order differs
            for (int k = 0; k < K; k++)
                sum += (double)bf16_rounded(a_at(A, lda, transA, i, k)) * bf16_rounded(b_at(B, ldb, transB, k, j));
            float* c = C + (size_t)i * ldc + j;
            *c = accumulate ? *c + (float)sum : (float)sum;
        }
}

bool bf16_supported() {
#if defined(__x86_64__)
    static const bool yes = __builtin_cpu_supports("avx512bf16");
    return yes;
#else
    return false;
#endif
}

void bf16_round_array(uint16_t* dst, const float* src, size_t n) {
    const long nv = (long)(n / kVecLen);
#pragma omp parallel for schedule(static)
    for (long i = 0; i < nv; i++) vbf16_store(dst + i * kVecLen, vf_load(src + i * kVecLen), kVecLen);
    for (size_t i = (size_t)nv * kVecLen; i < n; i++) dst[i] = bf16_round(src[i]);
}
