// adamw_bf16.h: AdamW's moments in bf16 (train --optimizer-state bf16: half the memory), kept for the
// core's AdamW as its AdamWMoments (core/optimizer.h), rounded stochastically: a value is rounded up with
// the probability of its distance from the bf16 below, so it is right on average. Round to nearest would
// lose every update smaller than half a bf16 step, which beta2 = 0.95..0.999 makes of most of them: v would
// stop moving. The random bits come from a hash of the step and the parameter's index, so a run does not
// depend on threads, slices or a resume. The weights themselves stay fp32 (the master copy). The checkpoint
// stores them as BF16 (half the file); a resume may switch between fp32 and bf16 (rounded to nearest, or widened).
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/optimizer.h"
#include "core/isa.h"

// The moments of AdamW's range, from its start, in bf16.
struct AdamWBf16 : AdamWMoments {
    std::vector<uint16_t> m, v;
    void allocate(size_t n) override;
    size_t size() const override;
    void update(float* w, const float* g, size_t s, size_t n, const AdamWStep& k, size_t index) override;
    float value(int k, size_t s) const override;
};

// Makes opt keep its moments in bf16 (before adamw_prepare).
void adamw_use_bf16(AdamW* opt);
// opt's bf16 moments, or null when they are fp32.
AdamWBf16* adamw_bf16(const AdamW& opt);

KERNELS_BEGIN

// The random bits of the moments' stochastic rounding (here and in adamw_8bit.h): step `step`'s key.
inline uint32_t adamw_round_key(int step) { return (uint32_t)step * 0x9E3779B9u + 0x7F4A7C15u; }

// 32 random bits from (key, the value's index): a multiply-xorshift hash.
inline uint32_t index_hash(uint32_t key, uint32_t index) {
    uint32_t h = (index ^ key) * 0x85EBCA6Bu;
    h ^= h >> 13;
    h *= 0xC2B2AE35u;
    h ^= h >> 16;
    h *= 0x27D4EB2Fu;
    return h ^ (h >> 15);
}

inline uint32_t float_bits(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof(u));
    return u;
}

// adamw_chunk (core/optimizer.h) with m and v in bf16: read widened to fp32, written back rounded
// stochastically, with random bits from a hash of (step s.t, index + i), index being the first element's
// parameter index.
void adamw_chunk_bf16(float* w, const float* g, uint16_t* m, uint16_t* v, size_t n, const AdamWStep& s, size_t index);

KERNELS_END
