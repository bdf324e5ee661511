// kv_attention.h: decoding's attention over a KV cache, the kernel inference/infer.cpp gives block_forward
// in place of its attention over the batch.
#pragma once
#include <cstddef>

#include "core/isa.h"

struct GemmOperands;  // core/gemm.h

// The key cache's row: max_len rounded up to a multiple of kKeysAtOnce floats, whole cache lines and whole
// 16-float vectors (decoding's scores are summed 16 keys at a time, kv_attention.cpp).
constexpr int kKeysAtOnce = 64;
inline int kv_key_row(int max_len) { return (max_len + kKeysAtOnce - 1) / kKeysAtOnce * kKeysAtOnce; }

KERNELS_BEGIN

// The attention of core/layers.h for n new rows of one sequence at positions p0..p0+n-1 over a KV cache,
// which holds positions 0..p0-1 and gets the new rows' keys and values from qkv (n, 3C) first. kcache (C, k_row)
// holds the keys by channel (position p's channel c at c * k_row + p; k_row from kv_key_row), vcache
// (>= p0+n, C) the values. out (n, C) and lse (NH, n) are overwritten. With fp32 operands (ops null) the
// numbers are attention_forward's; one new row, decoding's, multiplies in fp32 whatever ops says.
void attention_forward_cached(float* out, float* lse, const float* qkv, float* kcache, size_t k_row, float* vcache,
                              int n, int p0, int C, int NH, const GemmOperands* ops = nullptr);

// Decoding n sequences together: row i of qkv (n, 3C), sequence i's one new row at position p0[i], over its own
// cache (kcache[i] (C, k_row[i]) and vcache[i] as above), which gets the row's key and value first. out (n, C)
// and lse (n, NH) are overwritten. Each row's numbers are attention_forward_cached's for that row alone (fp32).
void attention_forward_cached_rows(float* out, float* lse, const float* qkv, float* const* kcache,
                                   const size_t* k_row, float* const* vcache, const int* p0, int n, int C, int NH);

KERNELS_END
