// gemm_tile.h: the tuned gemm (gemm_packed.cpp), which ./gpt2 plugs in as core/gemm.h's gemm_tuned, and
// what its fp32 packing and kernels share with those of other operands (an extension's, through
// GemmOperands below): the register tile and cache blocking sizes, the 16 x 16 in-register transpose the
// packers use, and storing a tile of accumulators into C.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "core/gemm.h"
#include "core/isa.h"
#include "core/simd.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

// Packed operands other than fp32's, from an extension (precision/). gemm_packed.cpp blocks and threads them as
// it does fp32's; their panels are 32-bit words, kwords(kc) of them per row of A's panel (and per column
// of B's) for kc values of k, and the micro-kernel takes that count.
struct GemmOperands {
    int mr;             // rows of A's panels
    int kc;             // K taken kc at a time whatever the shape (each element's sums then run in k order
                        // across blocks, so the split changes no number), or 0: as fp32's (core/gemm.h)
    int whole_a_scale;  // times fp32's limit on the A slab packed once per product (gemm_packed.cpp's WHOLE_A_MAX)
    int (*kwords)(int kc);
    void (*begin)();  // once per thread before its first micro-kernel, or null
    void (*pack_a)(uint32_t* dst, const float* A, int lda, bool trans, int i0, int mc, int k0, int kc);
    void (*pack_b)(uint32_t* dst, const float* B, int ldb, bool trans, int k0, int kc, int j0, int nc);
    // the same from gemm's B_copy (a Weight's copy), read instead of B
    void (*pack_b_copy)(uint32_t* dst, const void* B_copy, int ldb, bool trans, int k0, int kc, int j0, int nc);
    void (*micro_kernel)(int kw, const uint32_t* a, const uint32_t* b, float* C, int ldc, int rows, int cols, bool add);
};

KERNELS_BEGIN

// core/gemm.h's gemm and gemm_serial (serial), tuned: the same numbers, in a fraction of the time.
void gemm_packed(int M, int N, int K, const float* A, int lda, bool transA, const float* B, int ldb, bool transB,
                 float* C, int ldc, bool accumulate, const GemmOperands* ops, const void* B_copy, bool serial);

namespace gemm_tile {

// Register tile per instruction set (overridable with -DGEMM_MR/-DGEMM_NV for experiments): 8 x 48 in
// 24 zmm accumulators with AVX-512 (faster than 8 x 32 on the backward products: tests/bench_results.md; 48
// divides every GPT-2 width: 768, 2304, 3072, 50304); 6 x 16 in 12 ymm with AVX2 and in 24 q registers with
// NEON; 4 x 16 elsewhere.
#if defined(__AVX512F__)
#define GEMM_ISA_MR 8
#define GEMM_ISA_NV 3
#elif defined(__AVX2__) && defined(__FMA__)
#define GEMM_ISA_MR 6
#define GEMM_ISA_NV 1
#elif defined(__aarch64__)
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
const int KC = GEMM_KC;         // depth of one packed panel pair (A's MR x KC micro-panel in L1, B's in L2)
const int MC = 128 / MR * MR;   // rows of A packed at once (MC x KC floats, in L2)
const int NC = 1024 / NR * NR;  // columns of B packed at once (KC x NC floats = 1 MiB, in L2)
// When C is far larger than L2 (the lm_head's logits, 51 MB at B=4 T=64) every extra pass over K
// re-reads and re-writes it from memory; such products take the whole of a K <= KC_DEEP in one pass
// (core/gemm.h's gemm_kc), with a narrower B block to keep it in L2.
const int KC_DEEP = GEMM_KC_DEEP;
const int NC_DEEP = 256 / NR * NR;

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

// Fetches the lines of C's tile (rows x cols floats) for writing, before the micro-kernel's k loop: its
// stores (and loads, when adding) come after thousands of cycles of products, by when an output or gradient
// that was not in cache has arrived instead of stalling the tile's stores.
inline void prefetch_tile(const float* C, int ldc, int rows, int cols) {
    for (int r = 0; r < rows; r++)
        for (int j = 0; j < cols; j += 16) __builtin_prefetch(C + (size_t)r * ldc + j, 1);
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

// fp32's packing and micro-kernel as operands, with no copy to read (pack_b_copy null): for operands
// that are fp32's but for where B's values come from (precision/gemm_copy.cpp: a weight's q8_0 blocks or
// bf16 values).
// The same blocking and sums as a gemm without operands, so the same numbers.
GemmOperands fp32_operands();

}  // namespace gemm_tile

KERNELS_END
