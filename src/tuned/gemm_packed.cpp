// gemm_packed.cpp: the tuned gemm (gemm_tile.h's gemm_packed), a packed, cache-blocked matrix multiply
// that sums in core/gemm.h's order; other operands' packing and kernel are an extension's (through
// gemm_tile.h's GemmOperands: precision/gemm_bf16.cpp's), the shared tile sizes gemm_tile.h's. The
// micro-kernel keeps an MR x NR tile of C in registers and streams packed panels of A (MR rows) and B (NR
// columns); it is written with AVX-512, AVX2 or NEON intrinsics, chosen at compile time from the target
// (-march), with a vector-extension kernel for anything else. Blocking follows the usual BLIS scheme (Goto & van de
// Geijn, 2008) but for its innermost loop: B's KC x NC block in L2, streamed past each MR-row panel of A in L1.
#include <algorithm>
#include <cassert>
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

#include "core/gemm.h"
#include "core/simd.h"
#include "tuned/gemm_tile.h"

#if defined(__x86_64__)
#include <immintrin.h>
#elif defined(__aarch64__)
#include <arm_neon.h>
#endif

#ifdef _OPENMP
#include <omp.h>
#endif

KERNELS_BEGIN

using namespace gemm_tile;

namespace {

// Floats (or other operands' 32-bit words) in a thread's buffer for B's packed block: at most 1.5 MiB, a
// block of NC columns by KC_DEEP / 2 words (of operands that take K KC_DEEP at a time, two values a word).
const size_t kPackBWords = std::max({(size_t)KC * NC, (size_t)KC_DEEP* NC_DEEP, (size_t)NC* KC_DEEP / 2});

struct Blocking {
    int kc, nc;
};
// Depends on the shape only, never on the thread count: the K split decides the summation order (core/gemm.h's
// gemm_kc, unless the operands fix their kc, gemm_tile.h). K whole (deep) takes a narrower block of B.
Blocking choose_blocking(int M, int N, int K, const GemmOperands* ops) {
    if (ops && ops->kc)
        return {ops->kc, std::min(NC, (int)(kPackBWords / ops->kwords(std::min(K, ops->kc)) / NR * NR))};
    const int kc = gemm_kc(M, N, K);
    return {kc, kc > KC ? NC_DEEP : NC};
}

#if defined(__AVX2__) && !defined(__AVX512F__)
// With 8-float registers the packers transpose 8 x 8 blocks in ymm registers: GCC keeps transpose16's 16
// vectors of 16 floats in memory, and packing took a tenth of a 124M step (tests/bench_results.md).
inline void transpose8(__m256 r[8]) {
    __m256 t[8], s[8];
    for (int i = 0; i < 8; i += 2)
        t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]), t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    for (int i = 0; i < 8; i += 4)
        for (int j = 0; j < 2; j++) {
            s[i + 2 * j] = _mm256_shuffle_ps(t[i + j], t[i + j + 2], _MM_SHUFFLE(1, 0, 1, 0));
            s[i + 2 * j + 1] = _mm256_shuffle_ps(t[i + j], t[i + j + 2], _MM_SHUFFLE(3, 2, 3, 2));
        }
    for (int k = 0; k < 4; k++)
        r[k] = _mm256_permute2f128_ps(s[k], s[k + 4], 0x20), r[k + 4] = _mm256_permute2f128_ps(s[k], s[k + 4], 0x31);
}
#endif

// dst[k * ld + c] = src[c * lds + k] for a 16 x 16 block (16 rows of src become 16 columns of dst).
inline void transpose_block16(float* dst, size_t ld, const float* src, size_t lds) {
#if defined(__AVX2__) && !defined(__AVX512F__)
    for (int c0 = 0; c0 < 16; c0 += 8)
        for (int k0 = 0; k0 < 16; k0 += 8) {
            __m256 r[8];
            for (int c = 0; c < 8; c++) r[c] = _mm256_loadu_ps(src + (c0 + c) * lds + k0);
            transpose8(r);
            for (int k = 0; k < 8; k++) _mm256_storeu_ps(dst + (k0 + k) * ld + c0, r[k]);
        }
#else
    vf16 r[16];
    for (int c = 0; c < 16; c++) memcpy(&r[c], src + c * lds, sizeof(vf16));
    transpose16(r);
    for (int k = 0; k < 16; k++) memcpy(dst + k * ld, &r[k], sizeof(vf16));
#endif
}

// Packs op(A)[i0:i0+mc, k0:k0+kc] as panels of MR rows, k-major within a panel, zero-padded.
void pack_a(float* dst, const float* A, int lda, bool trans, int i0, int mc, int k0, int kc) {
    if (trans) {
        // op(A)'s column k is A's row k: each row's mc floats read once, in order, into the panels. Rows can be
        // 201 KB apart (the logits' gradient): read panel by panel, 24 bytes a row, the loads waited on memory.
        for (int k = 0; k < kc; k++) {
            const float* src = A + (size_t)(k0 + k) * lda + i0;
            for (int c = 0; c < mc && k + 4 < kc; c += 16) __builtin_prefetch(src + 4 * (size_t)lda + c);  // 4 ahead
            for (int p = 0; p < mc; p += MR) {
                float* d = dst + (size_t)p * kc + (size_t)k * MR;
                if (p + MR <= mc) memcpy(d, src + p, sizeof(float) * MR);
                else
                    for (int r = 0; r < MR; r++) d[r] = p + r < mc ? src[p + r] : 0.0f;
            }
        }
        return;
    }
    for (int p = 0; p < mc; p += MR) {
        int rows = std::min(MR, mc - p);
        int k = 0;
#if defined(__AVX2__) && !defined(__AVX512F__)
        if (rows == MR && MR <= 8) {
            // 8 k at a time through an 8 x 8 block whose first MR rows are this panel
            const __m256i first = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
            const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(MR), first);
            for (; k + 8 <= kc; k += 8) {
                __m256 r[8];
                for (int c = 0; c < 8; c++)
                    r[c] = c < MR ? _mm256_loadu_ps(A + (size_t)(i0 + p + c) * lda + k0 + k) : _mm256_setzero_ps();
                transpose8(r);
                // 8 floats a k, each store's last 8 - MR overwritten by the next; the last one masked
                for (int kk = 0; kk < 7; kk++) _mm256_storeu_ps(dst + (size_t)(k + kk) * MR, r[kk]);
                _mm256_maskstore_ps(dst + (size_t)(k + 7) * MR, mask, r[7]);
            }
        }
#endif
        if (rows == MR && MR <= 16) {  // (after the AVX2 loop above, fewer than 8 k are left)
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

#if defined(__AVX512F__)
// C[0:rows, 0:cols] (+)= packed A panel (MR x kc) * packed B panel (kc x NR), AVX-512: MR x NR/16
// accumulators stay in zmm registers; each k broadcasts MR values of A against NR/16 vectors of B.
void micro_kernel(int kc, const float* a, const float* b, float* C, int ldc, int rows, int cols, bool add) {
    const int NV = GEMM_NV;
    prefetch_tile(C, ldc, rows, cols);
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
    prefetch_tile(C, ldc, rows, cols);
    __m256 acc[MR][NV];
    for (int r = 0; r < MR; r++)
        for (int v = 0; v < NV; v++) acc[r][v] = _mm256_setzero_ps();
    for (int k = 0; k < kc; k++) {
        __m256 bv[NV];
        for (int v = 0; v < NV; v++) bv[v] = _mm256_load_ps(b + (size_t)k * NR + 8 * v);
        for (int r = 0; r < MR; r++) {
            // a float read, not _mm256_broadcast_ss: GCC 12 took that load as one that may read the accumulators
            // (__m256 may alias anything) and stored all 12 to the stack on every k (tests/bench_results.md)
            __m256 av = _mm256_set1_ps(a[k * MR + r]);
            for (int v = 0; v < NV; v++) acc[r][v] = _mm256_fmadd_ps(av, bv[v], acc[r][v]);
        }
    }
    if (rows == MR && cols == NR) {
        for (int r = 0; r < MR; r++)
            for (int v = 0; v < NV; v++) {
                float* c = C + (size_t)r * ldc + 8 * v;
                _mm256_storeu_ps(c, add ? _mm256_add_ps(acc[r][v], _mm256_loadu_ps(c)) : acc[r][v]);
            }
        return;
    }
    for (int r = 0; r < rows; r++) {
        float tile[NR];
        for (int v = 0; v < NV; v++) _mm256_storeu_ps(tile + 8 * v, acc[r][v]);
        float* c = C + (size_t)r * ldc;
        for (int j = 0; j < cols; j++) c[j] = add ? c[j] + tile[j] : tile[j];
    }
}
#elif defined(__aarch64__)
// The same with NEON's 4-float q registers: MR x NR/4 accumulators (6 x 4 = 24 of the 32), multiplied by
// lanes of A. The generic kernel below keeps its 64-byte vectors in memory on aarch64 (GCC 12: per k,
// 16 fmla against 26 stack loads and stores); here the inner loop is 24 fmla and 5 loads.
void micro_kernel(int kc, const float* a, const float* b, float* C, int ldc, int rows, int cols, bool add) {
    const int NV = 4 * GEMM_NV;
    float32x4_t acc[MR][NV];
    for (int r = 0; r < MR; r++)
        for (int v = 0; v < NV; v++) acc[r][v] = vdupq_n_f32(0.0f);
    static_assert(MR == 6, "the NEON kernel multiplies by the lanes of A's 6 values in two registers");
    for (int k = 0; k < kc; k++) {
        // 24 accumulators + 4 of B + 2 of A: 30 of the 32 registers (6 broadcast values would spill)
        const float32x4_t a03 = vld1q_f32(a + k * MR);
        const float32x2_t a45 = vld1_f32(a + k * MR + 4);
        for (int v = 0; v < NV; v++) {
            const float32x4_t bv = vld1q_f32(b + (size_t)k * NR + 4 * v);
            acc[0][v] = vfmaq_laneq_f32(acc[0][v], bv, a03, 0);
            acc[1][v] = vfmaq_laneq_f32(acc[1][v], bv, a03, 1);
            acc[2][v] = vfmaq_laneq_f32(acc[2][v], bv, a03, 2);
            acc[3][v] = vfmaq_laneq_f32(acc[3][v], bv, a03, 3);
            acc[4][v] = vfmaq_lane_f32(acc[4][v], bv, a45, 0);
            acc[5][v] = vfmaq_lane_f32(acc[5][v], bv, a45, 1);
        }
    }
    // the whole tile first: indexing acc by the run-time `rows` would keep it in memory throughout
    float tile[MR][NR];
    for (int r = 0; r < MR; r++)
        for (int v = 0; v < NV; v++) vst1q_f32(&tile[r][4 * v], acc[r][v]);
    for (int r = 0; r < rows; r++) {
        float* c = C + (size_t)r * ldc;
        for (int j = 0; j < cols; j++) c[j] = add ? c[j] + tile[r][j] : tile[r][j];
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

// Per-thread packing buffers, allocated on a thread's first gemm and kept: a fresh 1 MiB allocation per
// call came back from the kernel as page faults on every small product. `whole_a` holds all of a
// thread's A slab packed at once (see gemm_block), grown to the largest slab seen.
struct PackBuffers {
    float* a = nullptr;
    float* b = nullptr;
    std::vector<float> whole_a;
    PackBuffers() {
        a = new (std::align_val_t(64)) float[(size_t)MC * std::max(KC, KC_DEEP)];
        b = new (std::align_val_t(64)) float[kPackBWords];
    }
    ~PackBuffers() {
        operator delete[](a, std::align_val_t(64));
        operator delete[](b, std::align_val_t(64));
    }
};

PackBuffers& pack_buffers() {
    static thread_local PackBuffers buffers;
    return buffers;
}

// A slab of at most this many elements is packed once per gemm rather than once per column block of C:
// the lm_head's 256 x 768 input was packed ~100 times per thread, once per 240 of its 50,304 columns.
const size_t WHOLE_A_MAX = (size_t)1 << 20;

// One thread's block C[i0:i1, j0:j1], with ops's operands (null: fp32's). B_copy, if given, is read
// instead of B by ops.
void gemm_block(Blocking blk, int i0, int i1, int j0, int j1, int K, const float* A, int lda, bool transA,
                const float* B, const void* B_copy, int ldb, bool transB, float* C, int ldc, bool accumulate,
                PackBuffers& buf, const GemmOperands* ops) {
    assert((B || (ops && B_copy)) && "a weight without fp32 values (precision.h's drop_fp32) is read from its copy");
    const int mr = ops ? ops->mr : MR, mcb = MC / mr * mr;  // rows of A packed at once: whole panels of mr
    const int nic = (i1 - i0 + mcb - 1) / mcb, npc = (K + blk.kc - 1) / blk.kc;
    // floats (or words) of one packed (ic, pc) block, an upper bound
    const size_t a_block = (size_t)mcb * (ops ? ops->kwords(std::min(blk.kc, K)) : blk.kc);
    auto pack_a_block = [&](float* dst, int ic, int pc) {
        const int mc = std::min(mcb, i1 - ic), kc = std::min(blk.kc, K - pc);
        uint32_t* words = reinterpret_cast<uint32_t*>(dst);
        if (ops) ops->pack_a(words, A, lda, transA, ic, mc, pc, kc);
        else pack_a(dst, A, lda, transA, ic, mc, pc, kc);
    };
    if (ops && ops->begin) ops->begin();
    const bool whole = j1 - j0 > blk.nc && (size_t)(i1 - i0) * K <= (ops ? ops->whole_a_scale : 1) * WHOLE_A_MAX;
    if (whole) {
        if (buf.whole_a.size() < a_block * nic * npc) buf.whole_a.resize(a_block * nic * npc);
        for (int p = 0; p < npc; p++)
            for (int i = 0; i < nic; i++)
                pack_a_block(buf.whole_a.data() + a_block * (p * nic + i), i0 + i * mcb, p * blk.kc);
    }
    uint32_t* pb_words = reinterpret_cast<uint32_t*>(buf.b);
    for (int jc = j0; jc < j1; jc += blk.nc) {
        int nc = std::min(blk.nc, j1 - jc);
        for (int p = 0, pc = 0; pc < K; p++, pc += blk.kc) {
            int kc = std::min(blk.kc, K - pc), kw = ops ? ops->kwords(kc) : kc;
            bool add = accumulate || pc > 0;
            if (ops && B_copy) ops->pack_b_copy(pb_words, B_copy, ldb, transB, pc, kc, jc, nc);
            else if (ops) ops->pack_b(pb_words, B, ldb, transB, pc, kc, jc, nc);
            else pack_b(buf.b, B, ldb, transB, pc, kc, jc, nc);
            for (int i = 0, ic = i0; ic < i1; i++, ic += mcb) {
                int mc = std::min(mcb, i1 - ic);
                float* pa = buf.a;
                if (whole) pa = buf.whole_a.data() + a_block * (p * nic + i);
                else pack_a_block(pa, ic, pc);
                const uint32_t* pa_words = reinterpret_cast<const uint32_t*>(pa);
                // Each MR-row panel of A (8 KiB with AVX-512) stays in L1 while B's block streams past it from L2:
                // B's micro-panel (48 KiB) kept in L1 across A's panels was evicted by them (tests/bench_results.md).
                for (int ir = 0; ir < mc; ir += mr)
                    for (int jr = 0; jr < nc; jr += NR) {
                        float* c = C + (size_t)(ic + ir) * ldc + jc + jr;
                        const int rows = std::min(mr, mc - ir), cols = std::min(NR, nc - jr);
                        if (ops)
                            ops->micro_kernel(kw, pa_words + (size_t)ir * kw, pb_words + (size_t)jr * kw, c, ldc, rows,
                                              cols, add);
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

int fp32_words(int kc) { return kc; }
void pack_a_words(uint32_t* dst, const float* A, int lda, bool trans, int i0, int mc, int k0, int kc) {
    pack_a(reinterpret_cast<float*>(dst), A, lda, trans, i0, mc, k0, kc);
}
void pack_b_words(uint32_t* dst, const float* B, int ldb, bool trans, int k0, int kc, int j0, int nc) {
    pack_b(reinterpret_cast<float*>(dst), B, ldb, trans, k0, kc, j0, nc);
}
void micro_kernel_words(int kc, const uint32_t* a, const uint32_t* b, float* C, int ldc, int rows, int cols, bool add) {
    micro_kernel(kc, reinterpret_cast<const float*>(a), reinterpret_cast<const float*>(b), C, ldc, rows, cols, add);
}

}  // namespace

GemmOperands gemm_tile::fp32_operands() {
    return {MR, 0, 1, fp32_words, nullptr, pack_a_words, pack_b_words, nullptr, micro_kernel_words};
}

void gemm_packed(int M, int N, int K, const float* A, int lda, bool transA, const float* B, int ldb, bool transB,
                 float* C, int ldc, bool accumulate, const GemmOperands* ops, const void* B_copy, bool serial) {
    if (gemm_trivial(M, N, K, C, ldc, accumulate)) return;
    if (serial) {
        gemm_block(choose_blocking(M, N, K, ops), 0, M, 0, N, K, A, lda, transA, B, nullptr, ldb, transB, C, ldc,
                   accumulate, pack_buffers(), ops);
        return;
    }
#pragma omp parallel
    {
        int nt = 1, tid = 0;
#ifdef _OPENMP
        nt = omp_get_num_threads();
        tid = omp_get_thread_num();
#endif
        // Split the longer side of C into nt slabs aligned to the register (or the operands') tile.
        int i0 = 0, i1 = M, j0 = 0, j1 = N;
        if (M >= N) {
            const int mr = ops ? ops->mr : MR, tiles = (M + mr - 1) / mr;
            i0 = std::min(M, tiles * tid / nt * mr);
            i1 = std::min(M, tiles * (tid + 1) / nt * mr);
        } else {
            int tiles = (N + NR - 1) / NR;
            j0 = std::min(N, tiles * tid / nt * NR);
            j1 = std::min(N, tiles * (tid + 1) / nt * NR);
        }
        if (i0 < i1 && j0 < j1) {
            gemm_block(choose_blocking(M, N, K, ops), i0, i1, j0, j1, K, A, lda, transA, B, B_copy, ldb, transB, C, ldc,
                       accumulate, pack_buffers(), ops);
        }
    }
}

KERNELS_END
