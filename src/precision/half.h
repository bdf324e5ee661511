// half.h: the two 16-bit float formats and the one rounding each uses, for every path that narrows or widens
// (checkpoint loaders and writers, the bf16 kernels): round to nearest, ties to even, a NaN kept a (quiet)
// NaN, as PyTorch's .bfloat16() and .half() do. bf16 is fp32's sign, 8-bit exponent and top 7 mantissa bits;
// fp16 (IEEE binary16) has a 5-bit exponent, so narrowing past 65504 gives infinity. The 16-lane bf16
// rounding of the kernels is in core/bf16.h; the tests check it gives these bits.
#pragma once
#include <cstdint>
#include <cstring>

inline uint16_t bf16_round(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof(u));
    if ((u & 0x7FFFFFFFu) > 0x7F800000u) return (uint16_t)((u >> 16) | 0x40);  // NaN: keep it quiet
    return (uint16_t)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}
inline float bf16_to_float(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float x;
    memcpy(&x, &u, sizeof(x));
    return x;
}
// x rounded to the nearest bf16, as a float.
inline float bf16_rounded(float x) { return bf16_to_float(bf16_round(x)); }

// Exact widening of IEEE half, subnormals included.
float fp16_to_float(uint16_t h);
// Narrowing to IEEE half, to nearest even; past the largest half (65504) it gives infinity.
uint16_t fp16_round(float x);

// q8_0 blocks, ggml's 8-bit form: kQ8Block values share one fp16 scale d = max|x| / 127 and each is stored as
// q = round(x / d) in -127..127 (halves away from zero, as ggml's reference does), standing for d * q (d
// widened from fp16; the product is exact in fp32). The GGUF writer and the int8 weights of decoding
// (model.h) both quantize through this one function.
const int kQ8Block = 32;
// Quantizes x[0..kQ8Block) (finite: the callers check) into q; returns d's fp16 bits, which are infinite
// when max|x| / 127 is past fp16's range (65504): the callers check that too.
uint16_t q8_quantize_block(const float* x, int8_t* q);
