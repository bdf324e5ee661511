// infer.h: the inference path with a KV cache, batch size 1. A prompt goes through in one batched pass
// (matmuls over all its positions); each further token costs one single-position pass over the cached
// keys and values, so decoding reads the weights once per token. It runs the model's one block_forward
// (model.h) with the cache as attention's source, on one block's worth of activation scratch reused by
// every layer; nothing for a backward pass is kept.
#pragma once
#include <vector>

#include "core/model.h"

struct InferState {
    int max_len = 0;          // positions the cache holds (<= the model's context)
    int max_rows = 0;         // positions one infer_forward call may add (the prompt's length)
    int len = 0;              // positions filled
    int k_row = 0;            // kv_key_row(max_len) (kv_attention.h)
    std::vector<float> k, v;  // cached keys (L, C, k_row), by channel, and values (L, max_len, C)
    // scratch for up to max_rows rows: the embedding, one block's activations (layout_acts' layer 0), and the
    // final LayerNorm with its mean and rstd
    std::vector<float> x, block, lnf, mean, rstd;
    LayerActs la;  // views into block for max_rows rows; a call of n rows uses their first n
    InferState() = default;
    InferState(const InferState&) = delete;  // la points into block
    InferState& operator=(const InferState&) = delete;
};

// Bytes infer_init allocates for these sizes.
double infer_memory_bytes(const GPT2Config& cfg, int max_len, int max_rows);
// Sizes the cache for max_len positions and the scratch for max_rows per call (1 <= max_rows <= max_len <=
// the context, asserted); the caller checks infer_memory_bytes against the memory it has first.
void infer_init(InferState* st, const GPT2& model, int max_len, int max_rows);
// Runs tokens[0..n) at positions len..len+n-1 and appends them to the cache. Writes the logits (Vp per
// row) of every new position to `logits` when all_logits is true, else only the last one's.
// The caller keeps n <= max_rows, the cache from overflowing and the tokens in range (asserted).
void infer_forward(InferState* st, const GPT2& model, const int* tokens, int n, float* logits, bool all_logits);
