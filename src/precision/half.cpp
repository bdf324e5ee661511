// half.cpp: see half.h.
#include "precision/half.h"

#include <algorithm>
#include <cmath>

float fp16_to_float(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1F, mant = h & 0x3FF, bits;
    if (exp == 0) {
        if (mant == 0) {
            bits = sign;
        } else {  // subnormal: renormalise
            exp = 127 - 15 + 1;
            while (!(mant & 0x400)) {
                mant <<= 1;
                exp--;
            }
            bits = sign | exp << 23 | (mant & 0x3FF) << 13;
        }
    } else if (exp == 31) {
        bits = sign | 0x7F800000u | mant << 13;
    } else {
        bits = sign | (exp + 127 - 15) << 23 | mant << 13;
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

uint16_t fp16_round(float x) {
    uint32_t bits;
    memcpy(&bits, &x, 4);
    const uint16_t sign = (uint16_t)((bits >> 16) & 0x8000);
    const uint32_t abs = bits & 0x7FFFFFFFu;
    if (abs >= 0x7F800000u) return sign | (abs > 0x7F800000u ? 0x7E00 : 0x7C00);  // NaN, Inf
    if (abs >= 0x477FF000u) return sign | 0x7C00;                                 // rounds past 65504: overflow to Inf
    int exp = (int)(abs >> 23) - 127 + 15;
    uint32_t mant = (abs & 0x7FFFFF) | 0x800000;  // with the implicit bit
    int shift = exp >= 1 ? 13 : 13 + (1 - exp);   // subnormals lose more bits
    if (shift > 24) return sign;                  // below half the smallest subnormal
    uint32_t half = mant >> shift, rest = mant & ((1u << shift) - 1), mid = 1u << (shift - 1);
    if (rest > mid || (rest == mid && (half & 1))) half++;  // to nearest even; may carry into the exponent
    if (exp >= 1) return sign | (uint16_t)((((uint32_t)exp << 10) + half - 0x400));
    return sign | (uint16_t)half;
}

// The largest |x[j]| of a block, as its bits: past the largest finite float's only for an infinity or a NaN. A max
// over integers, which the compiler vectorizes (over floats it stays a scalar loop; a branch per value, checking
// for non-finite values, took as long as the rounding).
static uint32_t abs_max_bits(const float* x) {
    uint32_t top = 0;
    for (int j = 0; j < kQ8Block; j++) {
        uint32_t bits;
        memcpy(&bits, x + j, 4);
        top = std::max(top, bits & 0x7FFFFFFFu);
    }
    return top;
}

// q8_quantize_block with the block's abs_max_bits known.
static uint16_t quantize_block(const float* x, int8_t* q, uint32_t top) {
    float amax;
    memcpy(&amax, &top, 4);
    const float d = amax / 127, inv = d > 1e-30f ? 1 / d : 0;  // q from the fp32 d, as ggml does (a d this small
                                                                // is 0 in fp16, and 1 / d may not be finite)
    for (int j = 0; j < kQ8Block; j++) {  // std::lround's halves away from zero, inline: |r| <= 127.5
        const float r = x[j] * inv;
        int v = (int)r;                       // toward zero
        const float frac = r - (float)v;      // exact
        v += (frac >= 0.5f) - (frac <= -0.5f);
        q[j] = (int8_t)v;
    }
    return fp16_round(d);
}

uint16_t q8_quantize_block(const float* x, int8_t* q) { return quantize_block(x, q, abs_max_bits(x)); }

bool q8_round_input_block(const float* x, int8_t* q, float* d) {
    const uint32_t top = abs_max_bits(x);
    if (top >= 0x7F800000u) return false;  // an infinity or a NaN
    int8_t out[kQ8Block];
    *d = fp16_to_float(quantize_block(x, out, top));
    if (!std::isfinite(*d)) return false;
    memcpy(q, out, sizeof out);
    return true;
}
