// gemm_bf16.cpp: gemm's bf16 operands (Precision::kBf16, gemm.h): packing A and B as pairs of bf16 values
// along k, rounded to nearest even as they are packed (or read from the model's bf16 weight copy), and the
// AVX512_BF16 micro-kernel that multiplies them with vdpbf16ps into fp32 accumulators; the blocking and
// threading are gemm.cpp's. Also the scalar reference, the CPU check and the array rounding.
#include <cassert>
#include <cstring>

#include "kernels/bf16.h"
#include "kernels/gemm.h"
#include "kernels/gemm_tile.h"

KERNELS_BEGIN

namespace gemm_tile {

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

template void pack_b_bf16<float>(uint32_t*, const float*, int, bool, int, int, int, int);
template void pack_b_bf16<uint16_t>(uint32_t*, const uint16_t*, int, bool, int, int, int, int);

}  // namespace gemm_tile

using namespace gemm_tile;

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

KERNELS_END
