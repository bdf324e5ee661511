// half.h: the 16-bit float formats for every path that narrows or widens (checkpoint loaders and writers,
// GGUF): bf16's rounding is bf16.h's (the kernels use it too); fp16 here, rounded the same way (to
// nearest, ties to even, a NaN kept a quiet NaN, as PyTorch's .half() does). fp16 (IEEE binary16) has a
// 5-bit exponent, so narrowing past 65504 gives infinity. And q8_0 quantization.
#pragma once
#include <cstdint>
#include <cstring>

#include "precision/bf16.h"

// Exact widening of IEEE half, subnormals included.
float fp16_to_float(uint16_t h);
// Narrowing to IEEE half, to nearest even; past the largest half (65504) it gives infinity.
uint16_t fp16_round(float x);

// q8_0 blocks, ggml's 8-bit form: kQ8Block values share one fp16 scale d = max|x| / 127 and each is stored as
// q = round(x / d) in -127..127 (halves away from zero, as ggml's reference does), standing for d * q (d
// widened from fp16; the product is exact in fp32). The GGUF writer, the int8 weights (precision.h) and, in int8
// inference, the matmuls' inputs (q8_round_input_block) all quantize through this one function.
const int kQ8Block = 32;
// Quantizes x[0..kQ8Block) (finite: the callers check) into q; returns d's fp16 bits, which are infinite
// when max|x| / 127 is past fp16's range (65504): the callers check that too.
uint16_t q8_quantize_block(const float* x, int8_t* q);
// A block of a q8_0 weight's input rounded as llama.cpp rounds it (int8 inference: precision.h's
// gpt2_round_inputs_q8): q8_quantize_block's q, as ggml's reference quantizer (its AVX2 and NEON ones round
// halves to even and scale by 127 / max: a last-bit difference, on ties), and d as the float it stands for.
// False, q untouched (d not), when a value is non-finite or d is past fp16's range: int8 inference then gives
// that row NaN outputs (matvec_q8q8, q8_gemm_operands), as llama.cpp's overflowing fp16 scale does.
bool q8_round_input_block(const float* x, int8_t* q, float* d);
