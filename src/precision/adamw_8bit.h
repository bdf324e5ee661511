// adamw_8bit.h: AdamW's moments in 8 bits a value (train --optimizer-state 8bit: a quarter of fp32's
// memory and half of bf16's), block-wise as bitsandbytes' 8-bit AdamW keeps them, for the core's AdamW as its
// AdamWMoments (core/optimizer.h).
//
// Each block of 64 parameters (by index: every tensor starts at a multiple of 64 when n_embd is one) keeps
// the step of its m and of its v in fp32: the block's largest |m| (or v) / 1.875. Each value is a small float
// in units of that step, whose largest, 1.875, is the block's largest value:
//   m: a sign, 4 exponent and 3 mantissa bits, from 2^-17 of the largest;
//   v: 5 exponent and 3 mantissa bits (v >= 0), from 2^-33 of the largest.
// A linear int8 code would round most of a block's v to 0, where m / sqrt(v) explodes: v spans the square
// of the gradients' range (and a v above 0 is never coded 0). Values are rounded stochastically (up with the
// probability of their distance from the code below), as the bf16 moments are, with the same random bits:
// round to nearest would lose every update under half a code's step (12.5% here), which is most of them.
// The weights stay fp32. Each block is read into fp32, updated with the fp32 kernel's expressions and stored
// again. The checkpoint stores the codes as U8 and the steps as F32 (adamw.m_step, adamw.v_step); a resume
// into fp32 or bf16 reads them exactly (then rounds to bf16), and fp32 or bf16 moments resumed as 8bit are
// rounded to the nearest code. ZeRO-1's slices start on a block.
#pragma once
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "core/isa.h"
#include "core/optimizer.h"
#include "precision/adamw_bf16.h"

// The moments of AdamW's range, from its start (a multiple of kBlock), in 8 bits.
struct AdamW8bit : AdamWMoments {
    static constexpr size_t kBlock = 64;
    std::vector<uint8_t> m, v;          // a code per value
    std::vector<float> m_step, v_step;  // per block of kBlock values
    void allocate(size_t n) override;
    size_t size() const override;
    void update(float* w, const float* g, size_t s, size_t n, const AdamWStep& k, size_t index) override;
    float value(int k, size_t s) const override;
    // Values x[0, n) into moment k (0 m, 1 v) from s, both multiples of kBlock (a restore from another form),
    // rounded to the nearest code.
    void store(int k, size_t s, const float* x, size_t n);
};

// Why a model of cfg cannot keep 8-bit moments, or "": its n_embd must be a multiple of 64, so that every
// tensor starts on a block (each one's size is a multiple of n_embd).
std::string adamw_8bit_refusal(const GPT2Config& cfg);
// Makes opt keep its moments in 8 bits (before adamw_prepare); the model's tensors start on blocks
// (adamw_8bit_refusal is "" for its config).
void adamw_use_8bit(AdamW* opt);
// opt's 8-bit moments, or null.
AdamW8bit* adamw_8bit(const AdamW& opt);

// One array of opt's moments, whatever their form, as a save writes it and a ZeRO-1 gather collects it: m and
// v, and in 8 bits each block's steps.
struct MomentsArray {
    const char* name;   // its train state tensor: adamw.m, adamw.v, adamw.m_step or adamw.v_step
    const char* dtype;  // F32, BF16 or U8
    void* data;         // from the start of opt's range
    size_t elem, per;   // bytes an element, parameters an element (1, or kBlock for a step)
};
std::vector<MomentsArray> adamw_moments_arrays(const AdamW& opt);
// Bytes of moments a parameter: 8 (fp32), 4 (bf16) or 2.125 (8 bits).
double adamw_moments_bytes(const AdamW& opt);
// The form of opt's moments, as --optimizer-state names it: "fp32", "bf16" or "8bit".
const char* adamw_form(const AdamW& opt);
// Makes opt keep its moments in that form (before adamw_prepare).
void adamw_use_form(AdamW* opt, const std::string& form);

KERNELS_BEGIN

// adamw_chunk (core/optimizer.h) with m and v in 8 bits, n values (a multiple of 64) from parameter `index`:
// each block's moments are read into fp32, updated with adamw_chunk's expressions, and stored again with
// their new steps m_step[b] and v_step[b], rounded with random bits from a hash of (s.t, index + i).
void adamw_chunk_8bit(float* w, const float* g, uint8_t* m, uint8_t* v, float* m_step, float* v_step, size_t n,
                      const AdamWStep& s, size_t index);
// The codes: an unsigned small float of E exponent and 3 mantissa bits whose largest value is 1.875. Code c
// >= 8 is (1 + (c & 7) / 8) 2^((c >> 3) - (2^E - 1)); below 8, subnormal, c / 8 2^(2 - 2^E). m's code is
// a sign bit and E = 4; v's is E = 5.
template <int E>
inline float small_float_value(uint32_t c) {
    constexpr uint32_t top = (1u << E) - 1;
    const uint32_t bits = (c + ((127 - top) << 3)) << 20;
    float normal;
    memcpy(&normal, &bits, sizeof(normal));
    const float sub = (float)(int32_t)c * (1.0f / 8) / (float)(1u << (top - 1));
    const uint32_t is_normal = 0u - (uint32_t)(c >= 8);  // a mask, not a branch: the loops vectorize
    const uint32_t value = (float_bits(normal) & is_normal) | (float_bits(sub) & ~is_normal);
    float x;
    memcpy(&x, &value, sizeof(x));
    return x;
}
// The code of y in [0, 1.875], rounded stochastically with r (16 random bits; 0x8000: to nearest).
template <int E>
inline uint32_t small_float_code(float y, uint32_t r) {
    constexpr uint32_t top = (1u << E) - 1, largest = top << 3 | 7;
    const uint32_t normal = ((float_bits(y) + (r << 4)) >> 20) - ((127 - top) << 3);
    const float scaled = y * (float)(1u << (top - 1));  // 1 at the smallest normal
    const uint32_t capped_bits = std::min(float_bits(scaled), 0x3F800000u);  // min(scaled, 1), as bits: no branch
    float capped;
    memcpy(&capped, &capped_bits, sizeof(capped));
    const uint32_t sub = (uint32_t)(int32_t)(capped * 8.0f + (float)(int32_t)r * (1.0f / 65536));  // at most 8
    const uint32_t is_normal = 0u - (uint32_t)(scaled >= 1.0f);  // a mask, as above
    const uint32_t c = (normal & is_normal) | (sub & ~is_normal);
    return c < largest ? c : largest;
}
inline float m_code_value(uint8_t c) {  // the sign as a bit: no branch, so the loops vectorize
    const uint32_t bits = float_bits(small_float_value<4>(c & 0x7Fu)) | (uint32_t)(c & 0x80u) << 24;
    float x;
    memcpy(&x, &bits, sizeof(x));
    return x;
}
inline uint8_t m_code(float y, uint32_t r) {  // -0 for a negative value rounded to 0
    return (uint8_t)((float_bits(y) >> 24 & 0x80u) | small_float_code<4>(std::fabs(y), r));
}
inline float v_code_value(uint8_t c) { return small_float_value<5>(c); }
// A block's step from its largest value (|m| or v), and in *inv what turns a value into units of it, for the
// codes (0 below the smallest normal float, whose 1.875 / largest would be inf: such a block is stored as 0s).
inline float block_step(float largest, float* inv) {
    *inv = largest >= FLT_MIN ? 1.875f / largest : 0.0f;
    return largest / 1.875f;
}
// A v above 0 never rounds to 0: its m would be divided by eps alone. Below the smallest code (2^-33 of the
// block's largest) it takes that code, a smaller update than fp32's, not a far larger one.
inline uint8_t v_code(float y, uint32_t r) {
    const uint32_t c = small_float_code<5>(std::fabs(y), r);
    return (uint8_t)(c + ((uint32_t)(c == 0) & (uint32_t)(y > 0)));  // &, not &&: no branch, the loop vectorizes
}

KERNELS_END
