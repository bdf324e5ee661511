// matvec.h: the matrix-vector products of decoding, out (N, OC) = x (N, IC) W (OC, IC)^T + b, one per form the
// model keeps a weight in: fp32 (summed as the core's, core/layers.cpp), bf16 and q8_0 blocks. Decoding
// a token reads every weight once, so each is a memory-bound dot product per output, not a packed gemm; N
// sequences decoded together (one row each) share that read, and each row's numbers are those it has alone
// (N == 1), whatever N and the other rows. matmul_forward (layers.h) hands them its decoding rows through
// matmul_rows. b (OC) or null; out is overwritten.
#pragma once
#include <cstdint>

#include "core/isa.h"
#include "core/layers.h"
#include "precision/precision.h"

KERNELS_BEGIN

// The rows' products of w: from its fp32 values where it has no copy, else from its copy (precision.h's
// WeightCopy): its q8 blocks if it has them (with x rounded to q8 blocks too if the copy says so), else its bf16
// rounding: what main (and the tests) set core/layers.h's matmul_rows to.
void matvec_rows(float* out, const float* x, const Weight& w, const float* b, int N, int IC, int OC);

// out (N, OC) = bf16(x (N, IC)) bf16(W16 (OC, IC))^T + b: the bf16 matrix-vector products of decoding (needs
// bf16_supported()), and the scalar reference of one row (x rounded to bf16, sums in double).
void matvec_bf16(float* out, const float* x, const uint16_t* W16, const float* b, int N, int IC, int OC);
void matvec_bf16_ref(float* out, const float* x, const uint16_t* W16, const float* b, int IC, int OC);

// out (N, OC) = x W^T + b for W (OC, IC) in q8_0 blocks: q (OC, IC) and fp16 scales d (OC, IC / kQ8Block),
// IC a multiple of kQ8Block; x and the sums in fp32 (weight-only int8: decoding reads a byte per weight).
// And the scalar reference of one row (sums in double).
void matvec_q8(float* out, const float* x, const int8_t* q, const uint16_t* d, const float* b, int N, int IC,
               int OC);
void matvec_q8_ref(float* out, const float* x, const int8_t* q, const uint16_t* d, const float* b, int IC, int OC);

// int8 inference as llama.cpp runs a q8_0 weight (precision.h's gpt2_round_inputs_q8): x rounded to q8_0
// blocks too (q8_round_input_block), each block's dot product in integers, times the two scales, summed in
// fp32. A block of x that q8_0 cannot hold (a non-finite value, or past its range) makes every output of its
// row NaN, as in the gemm (q8_gemm_operands) and in llama.cpp. And the reference of one row (sums in double).
// tiles: the weight laid out once by matvec_q8_tiles (the same numbers, without laying each 16 rows out per call
// for N >= 2, and for one row without the one-row kernel's sums across lanes: about 1.6x its speed from cache),
// or null.
void matvec_q8q8(float* out, const float* x, const int8_t* q, const uint16_t* d, const float* b, int N, int IC,
                 int OC, const uint32_t* tiles = nullptr);
// Words matvec_q8_tiles writes for an (OC, IC) weight: per 16 output rows, 8 words and 16 fp32 scales a block.
size_t matvec_q8_tiles_words(int IC, int OC);
// Lays q8 blocks (q, d: OC rows of IC) out in dst as matvec_q8q8 lays them out per call for several input rows
// (AVX512-VNNI), once; false (nothing written) where that path does not exist.
bool matvec_q8_tiles(uint32_t* dst, const int8_t* q, const uint16_t* d, int IC, int OC);
void matvec_q8q8_ref(float* out, const float* x, const int8_t* q, const uint16_t* d, const float* b, int IC, int OC);

KERNELS_END
