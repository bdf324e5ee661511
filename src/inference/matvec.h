// matvec.h: the matrix-vector products of decoding, out (OC) = W (OC, IC) x (IC) + b, one per form the
// model keeps a weight in: fp32, bf16 and q8_0 blocks. Decoding one token reads every weight once, so
// each is a memory-bound dot product per output, not a packed gemm; matmul_forward (layers.h) hands them
// its one-row products. b (OC) or null; out is overwritten.
#pragma once
#include <cstdint>

#include "core/bf16.h"
#include "core/isa.h"

KERNELS_BEGIN

// W and x in fp32.
void matvec_fp32(float* out, const float* x, const float* W, const float* b, int IC, int OC);

// out (OC) = bf16(W16 (OC, IC)) bf16(x (IC)) + b: the bf16 matrix-vector product of decoding (needs
// bf16_supported()), and its scalar reference (x rounded to bf16, sums in double).
void matvec_bf16(float* out, const float* x, const uint16_t* W16, const float* b, int IC, int OC);
void matvec_bf16_ref(float* out, const float* x, const uint16_t* W16, const float* b, int IC, int OC);

// out (OC) = W x + b for W (OC, IC) in q8_0 blocks: q (OC, IC) and fp16 scales d (OC, IC / kQ8Block),
// IC a multiple of kQ8Block; x and the sums in fp32 (weight-only int8: decoding reads a byte per weight).
// And its scalar reference (sums in double).
void matvec_q8(float* out, const float* x, const int8_t* q, const uint16_t* d, const float* b, int IC, int OC);
void matvec_q8_ref(float* out, const float* x, const int8_t* q, const uint16_t* d, const float* b, int IC, int OC);

KERNELS_END
