// gemm_bf16.cpp: gemm's bf16 operands (bf16_gemm_operands, bf16.h): packing A and B as pairs of bf16 values
// along k, rounded to nearest even as they are packed (or read from the model's bf16 weight copy), and the
// AVX512_BF16 micro-kernel that multiplies them with vdpbf16ps into fp32 accumulators, or, where the CPU
// has AMX (bf16_amx()), the tile kernel and its packing; the blocking and threading are the tuned gemm's
// (tuned/gemm_packed.cpp), which runs these through tuned/gemm_tile.h's GemmOperands. Also
// the scalar reference, the CPU checks and the array rounding.
#include <atomic>
#include <cassert>
#include <cstring>

#include "platform/platform.h"
#include "core/gemm.h"
#include "precision/bf16.h"
#include "precision/precision.h"
#include "tuned/gemm_tile.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

KERNELS_BEGIN

namespace gemm_tile {

// The bf16 operands (gemm_bf16.cpp): panels of k-pair words for vdpbf16ps, and its micro-kernel. B's
// source is fp32 (rounded as it is packed) or the model's bf16 copy (uint16_t, read as is).
void pack_a_bf16(uint32_t* dst, const float* A, int lda, bool trans, int i0, int mc, int k0, int kc);
template <typename T>
void pack_b_bf16(uint32_t* dst, const T* B, int ldb, bool trans, int k0, int kc, int j0, int nc);
void micro_kernel_bf16(int kc2, const uint32_t* a, const uint32_t* b, float* C, int ldc, int rows, int cols, bool add);

// The same operands on AMX tiles, where bf16_amx(): TDPBF16PS multiplies a tile of 16 rows
// of A by a tile of 16 k-pair rows of B, each 64 bytes wide, so both panels hold k in blocks of 16 pairs
// (kc2 rounded up, amx_kc2), zero-padded. A's panels have AMX_MR = 16 rows, each block a tile: [16 rows]
// [16 words]. B's panels are pack_b_bf16's ([k2][NR] words), each 16-column strip of a block a tile.
const int AMX_MR = 16;
inline int amx_kc2(int kc) { return ((kc + 1) / 2 + 15) / 16 * 16; }
void amx_configure();  // once per thread, before its first amx micro-kernel
void pack_a_amx(uint32_t* dst, const float* A, int lda, bool trans, int i0, int mc, int k0, int kc);
template <typename T>
void pack_b_amx(uint32_t* dst, const T* B, int ldb, bool trans, int k0, int kc, int j0, int nc);
void micro_kernel_amx(int kc2p, const uint32_t* a, const uint32_t* b, float* C, int ldc, int rows, int cols, bool add);

// ---- bf16 operands. vdpbf16ps multiplies pairs of bf16 values along k and adds both
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

// Packs op(A)[i0:i0+mc, k0:k0+kc] as panels of MR rows of k-pair words, zero-padded. With MR = 8 (AVX-512)
// two panels are packed at once where 16 rows remain, so every load, rounding and transpose is 16 lanes
// wide: one panel alone fills half of each (and its 8-float loads, through the stack, stalled on store
// forwarding: most of this function's time in a 124M bf16 step; tests/bench_results.md).
void pack_a_bf16(uint32_t* dst, const float* A, int lda, bool trans, int i0, int mc, int k0, int kc) {
    const int kc2 = (kc + 1) / 2;
    for (int p = 0; p < mc; p += MR) {
        const int rows = std::min(MR, mc - p);
        const bool two = MR == 8 && mc - p >= 16;
        uint32_t* dst2 = dst + (size_t)MR * kc2;  // the next panel, when two
        const int n = two ? 16 : MR;              // rows (or, transposed, values of a row) taken at once
        const bool vec = (two || rows == MR) && MR <= 16;
        int k = 0;
        if (!trans && vec) {
            // 16 words (32 k) of n rows, transposed: word kk of row c is lane c of r[kk]
            for (; k + 32 <= kc; k += 32) {
                vf16 r[16];
                for (int c = 0; c < 16; c++)
                    r[c] = c < n ? pair_words(A + (size_t)(i0 + p + c) * lda + k0 + k) : vf16{};
                transpose16(r);
                for (int kk = 0; kk < 16; kk++) {
                    memcpy(dst + (size_t)(k / 2 + kk) * MR, &r[kk], sizeof(float) * MR);
                    if (two)
                        memcpy(dst2 + (size_t)(k / 2 + kk) * MR, reinterpret_cast<const float*>(&r[kk]) + MR,
                               sizeof(float) * MR);
                }
            }
        } else if (trans && vec) {
            for (; k + 2 <= kc; k += 2) {  // rows k and k + 1 hold the panels' n values side by side
                const float* src = A + (size_t)(k0 + k) * lda + i0 + p;
                vu16 w = two ? vbf16_pairs(vf_load(src), vf_load(src + lda))
                             : vbf16_pairs(vf_load_partial(src, MR), vf_load_partial(src + lda, MR));
                memcpy(dst + (size_t)(k / 2) * MR, &w, sizeof(uint32_t) * MR);
                if (two)
                    memcpy(dst2 + (size_t)(k / 2) * MR, reinterpret_cast<const uint32_t*>(&w) + MR,
                           sizeof(uint32_t) * MR);
            }
        }
        const int panels = two ? 2 : 1;
        for (int h = 0; h < panels; h++) {  // the rest, scalar: an odd kc's last pair, a short panel
            const int ph = p + h * MR, live = std::min(MR, mc - ph);
            uint32_t* d = dst + (size_t)h * MR * kc2;
            for (int k2 = k / 2; k2 < kc2; k2++)
                for (int r = 0; r < MR; r++) {
                    const int i = i0 + ph + r, ka = k0 + 2 * k2;
                    float even = r < live ? op_at(A, lda, trans, i, ka) : 0.0f;
                    float odd = r < live && 2 * k2 + 1 < kc ? op_at(A, lda, trans, i, ka + 1) : 0.0f;
                    d[(size_t)k2 * MR + r] = pair_word(even, odd);
                }
        }
        p += (panels - 1) * MR;
        dst += (size_t)panels * MR * kc2;
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

// Packs op(B)[k0:k0+kc, j0:j0+nc] as panels of NR columns of k-pair words, zero-padded. Untransposed, the
// full panels are packed two rows at a time across all of them, so each row streams in order (a panel at a
// time walked NR columns down kc rows, and the loads waited on memory: the weights come from DRAM);
// transposed, the next panel's rows are fetched one block ahead, as pack_b does.
template <typename T>
void pack_b_bf16(uint32_t* dst, const T* B, int ldb, bool trans, int k0, int kc, int j0, int nc) {
    const int kc2 = (kc + 1) / 2;
    auto at = [&](int k, int j) -> uint32_t {
        return bf16_bits(trans ? B[(size_t)j * ldb + k] : B[(size_t)k * ldb + j]);
    };
    // panel q's k-pairs from k2 on, one element at a time: an odd kc's last pair, a short panel
    auto rest = [&](uint32_t* d, int q, int k2) {
        const int cols = std::min(NR, nc - q);
        for (; k2 < kc2; k2++)
            for (int c = 0; c < NR; c++) {
                const int j = j0 + q + c, kb = k0 + 2 * k2;
                uint32_t even = c < cols ? at(kb, j) : 0;
                uint32_t odd = c < cols && 2 * k2 + 1 < kc ? at(kb + 1, j) : 0;
                d[(size_t)k2 * NR + c] = even | odd << 16;
            }
    };
    const int full = nc / NR * NR;  // columns in full panels
    if (!trans && NR % 16 == 0) {
        for (int k = 0; k + 2 <= kc; k += 2) {  // rows k and k + 1, 16 columns at a time
            const T* src = B + (size_t)(k0 + k) * ldb + j0;
            for (int q = 0; q < full; q += NR)
                for (int c = 0; c < NR; c += 16) {
                    vu16 w = row_pairs(src + q + c, ldb);
                    memcpy(dst + (size_t)q * kc2 + (size_t)(k / 2) * NR + c, &w, sizeof(w));
                }
        }
        for (int q = 0; q < full; q += NR) rest(dst + (size_t)q * kc2, q, kc / 2);
    } else if (trans && NR % 16 == 0) {
        for (int q = 0; q < full; q += NR) {
            uint32_t* d = dst + (size_t)q * kc2;
            int k = 0;
            for (; k + 32 <= kc; k += 32) {
                for (int c = 0; c < NR; c += 16) {  // 16 columns x 16 words, transposed
                    vf16 r[16];
                    for (int cc = 0; cc < 16; cc++) r[cc] = words32(B + (size_t)(j0 + q + c + cc) * ldb + k0 + k);
                    transpose16(r);
                    for (int kk = 0; kk < 16; kk++) memcpy(d + (size_t)(k / 2 + kk) * NR + c, &r[kk], sizeof(vf16));
                }
                if (q + 2 * NR <= nc)
                    for (int c = 0; c < NR; c++)
                        for (size_t b = 0; b < 32 * sizeof(T); b += 64)  // the lines of 32 values
                            __builtin_prefetch(
                                reinterpret_cast<const char*>(B + (size_t)(j0 + q + NR + c) * ldb + k0 + k) + b);
            }
            rest(d, q, k / 2);
        }
    } else {
        for (int q = 0; q < full; q += NR) rest(dst + (size_t)q * kc2, q, 0);
    }
    if (full < nc) rest(dst + (size_t)full * kc2, full, 0);
}

#if defined(__x86_64__)
// The bf16 micro-kernel: as the fp32 one, but each step takes a pair of k, broadcasting one word of A
// per row against NR/16 vectors of B words with vdpbf16ps (fp32 accumulation).
__attribute__((target("avx512f,avx512bf16"))) void micro_kernel_bf16(int kc2, const uint32_t* a, const uint32_t* b,
                                                                     float* C, int ldc, int rows, int cols, bool add) {
    const int NV = GEMM_NV;
    prefetch_tile(C, ldc, rows, cols);
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

// ---- AMX tiles (bf16_amx(); the layout is above). Tiles 0..2 hold C's 16 x NR tile as 16 x 16
// blocks, tile 4 a block of A, tiles 5..7 the strips of B.

// Packs op(A)[i0:i0+mc, k0:k0+kc] as panels of AMX_MR rows, each block of 16 k-pairs a tile: [16 rows]
// [16 words], zero-padded.
void pack_a_amx(uint32_t* dst, const float* A, int lda, bool trans, int i0, int mc, int k0, int kc) {
    const int kc2p = amx_kc2(kc);
    for (int p = 0; p < mc; p += AMX_MR, dst += (size_t)AMX_MR * kc2p) {
        const int rows = std::min(AMX_MR, mc - p);
        for (int kb = 0; kb < kc2p / 16; kb++) {
            uint32_t* tile = dst + (size_t)kb * 16 * AMX_MR;  // row r's 16 words at tile + 16 r
            const int k = 32 * kb;                            // the block's first k
            if (rows == AMX_MR && k + 32 <= kc) {
                vf16 r[16];
                if (!trans) {
                    for (int i = 0; i < 16; i++) r[i] = pair_words(A + (size_t)(i0 + p + i) * lda + k0 + k);
                } else {  // rows k + 2j and k + 2j + 1 hold pair j of all 16 rows side by side: transposed
                    for (int j = 0; j < 16; j++) {
                        const float* src = A + (size_t)(k0 + k + 2 * j) * lda + i0 + p;
                        r[j] = (vf16)vbf16_pairs(vf_load(src), vf_load(src + lda));
                    }
                    transpose16(r);
                }
                memcpy(tile, r, sizeof(r));
                continue;
            }
            for (int i = 0; i < AMX_MR; i++)
                for (int j = 0; j < 16; j++) {
                    const int ka = k + 2 * j;
                    const float even = i < rows && ka < kc ? op_at(A, lda, trans, i0 + p + i, k0 + ka) : 0.0f;
                    const float odd = i < rows && ka + 1 < kc ? op_at(A, lda, trans, i0 + p + i, k0 + ka + 1) : 0.0f;
                    tile[16 * i + j] = pair_word(even, odd);
                }
        }
    }
}

// Packs op(B)[k0:k0+kc, j0:j0+nc] as pack_b_bf16 does, each panel's k-pairs zero-padded to amx_kc2(kc).
template <typename T>
void pack_b_amx(uint32_t* dst, const T* B, int ldb, bool trans, int k0, int kc, int j0, int nc) {
    const int kc2 = (kc + 1) / 2, kc2p = amx_kc2(kc);
    for (int q = 0; q < nc; q += NR, dst += (size_t)NR * kc2p) {
        pack_b_bf16(dst, B, ldb, trans, k0, kc, j0 + q, std::min(NR, nc - q));
        memset(dst + (size_t)NR * kc2, 0, sizeof(uint32_t) * NR * (kc2p - kc2));
    }
}

// Linux only: the system must grant the tile state (os_request_amx), and on LLP64 Windows GCC's tile load
// macros cast the stride to a 32-bit long that is no address register.
#if defined(__x86_64__) && defined(__linux__)
static_assert(NR == 16 || NR == 48, "the AMX kernel holds C's tile in one or three 16 x 16 tiles");

// Palette 1 with all eight tiles of 16 rows of 64 bytes. In static storage: GCC's _tile_loadconfig tells the
// compiler it reads 8 bytes, so the stores that fill a local copy were dropped as dead (a #GP at ldtilecfg).
struct TileConfig {
    uint8_t palette, start_row, reserved[14];
    uint16_t bytes_per_row[16];
    uint8_t rows[16];
};
alignas(64) const TileConfig kTileConfig = {
    1, 0, {}, {64, 64, 64, 64, 64, 64, 64, 64}, {16, 16, 16, 16, 16, 16, 16, 16}};

__attribute__((target("amx-tile"))) void amx_configure() {
    static thread_local bool done = false;
    if (done) return;
    _tile_loadconfig(&kTileConfig);
    done = true;
}

// C[0:rows, 0:cols] (+)= packed A panel * packed B panel on AMX tiles. Every element of C starts from C (or
// zero) and takes the products in the same order, whether its tile is whole or at an edge (copied through
// a buffer): the result does not depend on where the threads' blocks begin.
__attribute__((target("amx-tile,amx-bf16"))) void micro_kernel_amx(int kc2p, const uint32_t* a, const uint32_t* b,
                                                                   float* C, int ldc, int rows, int cols, bool add) {
    const bool whole = rows == AMX_MR && cols == NR;
    alignas(64) float edge[AMX_MR][NR];
    float* c = C;
    long ld = sizeof(float) * ldc;
    if (!whole) {
        c = &edge[0][0], ld = sizeof(float) * NR;
        for (int r = 0; r < AMX_MR; r++)
            for (int j = 0; j < NR; j++) edge[r][j] = add && r < rows && j < cols ? C[(size_t)r * ldc + j] : 0.0f;
    }
    if (add || !whole) {
        _tile_loadd(0, c, ld);
        if (NR > 16) {
            _tile_loadd(1, c + 16, ld);
            _tile_loadd(2, c + 32, ld);
        }
    } else {
        _tile_zero(0);
        if (NR > 16) {
            _tile_zero(1);
            _tile_zero(2);
        }
    }
    const long bld = sizeof(uint32_t) * NR;
    for (int kb = 0; kb < kc2p / 16; kb++) {
        const uint32_t* bk = b + (size_t)kb * 16 * NR;
        _tile_loadd(4, a + (size_t)kb * 16 * AMX_MR, 64);
        _tile_loadd(5, bk, bld);
        _tile_dpbf16ps(0, 4, 5);
        if (NR > 16) {
            _tile_loadd(6, bk + 16, bld);
            _tile_dpbf16ps(1, 4, 6);
            _tile_loadd(7, bk + 32, bld);
            _tile_dpbf16ps(2, 4, 7);
        }
    }
    _tile_stored(0, c, ld);
    if (NR > 16) {
        _tile_stored(1, c + 16, ld);
        _tile_stored(2, c + 32, ld);
    }
    if (!whole)
        for (int r = 0; r < rows; r++) memcpy(C + (size_t)r * ldc, edge[r], sizeof(float) * cols);
}
#else
void amx_configure() { assert(!"AMX off x86-64 Linux"); }
void micro_kernel_amx(int, const uint32_t*, const uint32_t*, float*, int, int, int, bool) {
    assert(!"AMX off x86-64 Linux");
}
#endif

// ---- What the tuned gemm runs for bf16 (tuned/gemm_tile.h's GemmOperands).

namespace {
int pair_count(int kc) { return (kc + 1) / 2; }
// B from a weight's copy (precision.h's WeightCopy): its bf16 rounding, read as is.
void pack_b_copy_bf16(uint32_t* dst, const void* copy, int ldb, bool trans, int k0, int kc, int j0, int nc) {
    pack_b_bf16(dst, static_cast<const WeightCopy*>(copy)->bf16, ldb, trans, k0, kc, j0, nc);
}
void pack_b_copy_amx(uint32_t* dst, const void* copy, int ldb, bool trans, int k0, int kc, int j0, int nc) {
    pack_b_amx(dst, static_cast<const WeightCopy*>(copy)->bf16, ldb, trans, k0, kc, j0, nc);
}
}  // namespace

}  // namespace gemm_tile

using namespace gemm_tile;

// On AMX tiles the K split changes no sum (each element of C is loaded into a tile and takes the products
// in k order, one K block after the other): K is taken KC_DEEP at a time, the fewest passes over C (B's
// block, NC columns by KC_DEEP / 2 pairs, is 1.5 MiB: AMX CPUs have 2 MiB of L2 per core or more). And
// AMX multiplies so fast that repacking A per block of B's columns cost more than the products (the
// lm_head at B=8 T=256: A packed 38 times per thread); its words take half the bytes: a 4x larger slab.
const GemmOperands* bf16_gemm_operands() {
    assert(bf16_supported());
    static const GemmOperands dot = {
        MR, 0, 1, pair_count, nullptr, pack_a_bf16, pack_b_bf16<float>, pack_b_copy_bf16, micro_kernel_bf16};
    static const GemmOperands amx = {
        AMX_MR, KC_DEEP, 4, amx_kc2, amx_configure, pack_a_amx, pack_b_amx<float>, pack_b_copy_amx, micro_kernel_amx};
    return bf16_amx() ? &amx : &dot;
}

void gemm_bf16_ref(int M, int N, int K, const float* A, int lda, bool transA, const float* B, int ldb, bool transB,
                   float* C, int ldc, bool accumulate) {
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double sum = 0;  // the products of bf16 values are exact; only the summation order differs
            for (int k = 0; k < K; k++)
                sum += (double)bf16_rounded(op_at(A, lda, transA, i, k)) * bf16_rounded(op_at(B, ldb, transB, k, j));
            float* c = C + (size_t)i * ldc + j;
            *c = accumulate ? *c + (float)sum : (float)sum;
        }
}

bool bf16_supported() {
#if defined(__x86_64__)
    // (every CPU with AVX512_BF16 has AVX512BW, whose masked loads decoding's mat-vec uses: checked all the same)
    static const bool yes = __builtin_cpu_supports("avx512bf16") && __builtin_cpu_supports("avx512bw");
    return yes;
#else
    return false;
#endif
}

namespace {
// The CPU has AMX-BF16 and AMX-TILE (CPUID leaf 7: EDX bits 22 and 24) and the system granted the tile
// state; asked once.
bool amx_available() {
#if defined(__x86_64__) && defined(__linux__)
    static const bool yes = [] {
        unsigned a, b, c, d;
        if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
        return (d >> 22 & 1) && (d >> 24 & 1) && os_request_amx();
    }();
    return yes;
#else
    return false;
#endif
}
std::atomic<bool> amx_off{false};
}  // namespace

bool bf16_amx() { return !amx_off && bf16_supported() && amx_available(); }
void bf16_amx_use(bool on) { amx_off = !on; }

void bf16_round_array(uint16_t* dst, const float* src, size_t n) {
    const long nv = (long)(n / kVecLen);
#pragma omp parallel for schedule(static)
    for (long i = 0; i < nv; i++) vbf16_store(dst + i * kVecLen, vf_load(src + i * kVecLen), kVecLen);
    for (size_t i = (size_t)nv * kVecLen; i < n; i++) dst[i] = bf16_round(src[i]);
}

KERNELS_END
