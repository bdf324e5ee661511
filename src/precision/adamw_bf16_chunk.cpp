// adamw_bf16_chunk.cpp: adamw_chunk_bf16 (adamw_bf16.h), core/adamw.cpp's update with the moments in
// bf16, compiled for each instruction set as the core's kernels are.
#include "precision/adamw_bf16.h"

#include <cstring>

#include "precision/bf16.h"
#include "core/simd.h"

KERNELS_BEGIN

namespace {

// Forced: left to itself GCC makes a call per vector, each with a vzeroupper and the constants broadcast anew.
#define ADAMW_INLINE inline __attribute__((always_inline))

// The key of step `step`'s stochastic rounding.
inline uint32_t adamw_round_key(int step) { return (uint32_t)step * 0x9E3779B9u + 0x7F4A7C15u; }

typedef unsigned short vh16 __attribute__((vector_size(32)));

ADAMW_INLINE vf16 bf16_load(const uint16_t* p, int n) {
    vh16 h{};
    memcpy(&h, p, sizeof(uint16_t) * n);
    return (vf16)(__builtin_convertvector(h, vu16) << 16);
}

// x rounded to bf16 by adding 16 random bits below bf16's last one and truncating: rounded up with the
// probability of its distance from the bf16 below. The moments are finite: a non-finite gradient norm
// stops a run before the update.
ADAMW_INLINE void bf16_store_stochastic(uint16_t* p, vf16 x, vu16 random16, int n) {
    const vh16 h = __builtin_convertvector(((vu16)x + random16) >> 16, vh16);
    memcpy(p, &h, sizeof(uint16_t) * n);
}

// 32 random bits per lane from (key, index of the lane): a multiply-xorshift hash.
ADAMW_INLINE vu16 lane_hash(uint32_t key, size_t index) {
    const vu16 lanes = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
    vu16 h = (((uint32_t)index + lanes) ^ key) * 0x85EBCA6Bu;
    h ^= h >> 13;
    h *= 0xC2B2AE35u;
    h ^= h >> 16;
    h *= 0x27D4EB2Fu;
    return h ^ (h >> 15);
}

ADAMW_INLINE void adamw_vec_bf16(float* w, const float* g, uint16_t* m, uint16_t* v, int n, const AdamWStep& s,
                                 size_t index) {
    const bool full = n == kVecLen;
    vf16 gs = (full ? vf_load(g) : vf_load_partial(g, n)) * s.grad_scale;
    vf16 mv = s.beta1 * bf16_load(m, n) + (1.0f - s.beta1) * gs;
    vf16 vv = s.beta2 * bf16_load(v, n) + (1.0f - s.beta2) * gs * gs;
    vf16 denom = vf_sqrt(vv) / s.bc2_sqrt + s.eps;
    vf16 wv = (full ? vf_load(w) : vf_load_partial(w, n)) * s.decay - s.step_size * mv / denom;
    const vu16 r = lane_hash(adamw_round_key(s.t), index);
    bf16_store_stochastic(m, mv, r & 0xFFFFu, n);
    bf16_store_stochastic(v, vv, r >> 16, n);
    if (full) vf_store(w, wv);
    else vf_store_partial(w, wv, n);
}

}  // namespace

void adamw_chunk_bf16(float* w, const float* g, uint16_t* m, uint16_t* v, size_t n, const AdamWStep& step,
                      size_t index) {
    const AdamWStep s = step;  // a local copy: no store below can alias it, so its constants stay in registers
    size_t o = 0;
    for (; o + kVecLen <= n; o += kVecLen) adamw_vec_bf16(w + o, g + o, m + o, v + o, kVecLen, s, index + o);
    if (o < n) adamw_vec_bf16(w + o, g + o, m + o, v + o, (int)(n - o), s, index + o);
}

KERNELS_END
