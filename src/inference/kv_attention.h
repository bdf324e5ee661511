// kv_attention.h: decoding's attention over a KV cache, the kernel inference/infer.cpp gives block_forward
// in place of its attention over the batch.
#pragma once
#include "core/isa.h"

struct GemmOperands;  // core/gemm.h

KERNELS_BEGIN

// The attention of core/layers.h for n new rows of one sequence at positions p0..p0+n-1 over a KV cache:
// qkv (n, 3C) holds their q (k and v are already in the cache); kcache, vcache (>= p0+n, C) hold positions
// 0..p0+n-1. out (n, C) and lse (NH, n) are overwritten. Same blocks and arithmetic as attention_forward.
void attention_forward_cached(float* out, float* lse, const float* qkv, const float* kcache, const float* vcache, int n,
                              int p0, int C, int NH, const GemmOperands* ops = nullptr);

KERNELS_END
