// precision.h: how a model's matmuls run, and the reduced-precision copies of its weights that this needs
// (GPT2's params16 and params8, model.h): bf16 operands, or int8 weights in q8_0 blocks for inference.
// The kernels read the copies through gpt2_weight's Weight handle; the forward and backward (model.cpp)
// are the same code at every precision.
#pragma once
#include "core/model.h"

// Sets how the matmuls run: kFp32 (exact), or kBf16, bf16 operands with fp32 accumulation (core/gemm.h;
// fp32 everywhere else: master weights, AdamW, LayerNorm statistics, softmax, residual stream, loss). kBf16
// needs bf16_supported() (asserted) and fills params16 from params, so call it once the weights are in place
// (loaded or initialised); gpt2_params_updated keeps it current from then on.
// kInt8 is for inference only: it quantizes every matrix whose rows are a multiple of kQ8Block (all of them
// at GPT-2's sizes; the rule GGUF's q8_0 export follows) to q8_0 blocks in place: params then hold the
// quantized values, which every matmul uses, and the matrix-vector products of decoding read the one-byte
// copy. A matrix with a value non-finite or past q8_0's range (|x| > 65504 * 127) stays fp32. Returns the
// number of matrices quantized. Irreversible: setting another precision afterwards drops the int8 copy
// but keeps the quantized values.
int gpt2_set_precision(GPT2* model, Precision prec);
