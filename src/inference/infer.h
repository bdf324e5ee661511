// infer.h: the inference path with a KV cache. A prompt goes through in one batched pass (matmuls over all its
// positions); each further token costs one single-position pass over the cached keys and values, so decoding
// reads the weights once per token. infer_decode decodes a token for each of several sequences in one such pass,
// each sequence's numbers those it has alone. Both run the model's one block_forward (model.h) with the caches
// as attention's source, on one block's worth of activation scratch reused by every layer; nothing for a
// backward pass is kept.
#pragma once
#include <vector>

#include "core/model.h"

// Activations for up to `rows` new rows: the embedding, one block's (layout_acts' layer 0), the final LayerNorm
// with its mean and rstd.
struct InferScratch {
    int rows = 0;
    std::vector<float> x, block, lnf, mean, rstd;
    LayerActs la;  // views into block for `rows` rows; a call of n rows uses their first n
    InferScratch() = default;
    InferScratch(const InferScratch&) = delete;  // la points into block
    InferScratch& operator=(const InferScratch&) = delete;
};

// One sequence: its KV cache, and the scratch of its own passes.
struct InferState {
    int max_len = 0;          // positions the cache holds (<= the model's context)
    int max_rows = 0;         // positions one infer_forward call may add (the prompt's length)
    int len = 0;              // positions filled
    int k_row = 0;            // kv_key_row(max_len) (kv_attention.h)
    std::vector<float> k, v;  // cached keys (L, C, k_row), by channel, and values (L, max_len, C)
    InferScratch scratch;     // max_rows rows
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

// Bytes infer_scratch_init allocates for `rows` rows.
double infer_scratch_bytes(const GPT2Config& cfg, int rows);
// Sizes a scratch for `rows` rows (>= 1): infer_decode's of up to `rows` sequences.
void infer_scratch_init(InferScratch* s, const GPT2& model, int rows);
// Decodes one token for each of n sequences together: tokens[i] at position seqs[i]->len, appended to that
// sequence's cache; row i of logits (n, Vp) is bit for bit what infer_forward(seqs[i], model, &tokens[i], 1,
// row, false) writes, whatever n, the other sequences and their lengths. Every weight is read once for all n.
// The caller keeps n <= s->rows, the sequences distinct with room in their caches, the tokens in range
// (asserted).
void infer_decode(InferScratch* s, InferState* const* seqs, const GPT2& model, const int* tokens, int n,
                  float* logits);

// Decodes tokens[0..n) of one sequence at positions len..len+n-1 in one such pass (speculative decoding's check of
// drafted tokens): row i of logits (n, Vp) is bit for bit what infer_forward(st, model, &tokens[i], 1, row, false)
// writes after the rows before it, each weight read once for all n. n <= s->rows, len + n <= max_len (asserted).
void infer_verify(InferScratch* s, InferState* st, const GPT2& model, const int* tokens, int n, float* logits);

// Both of those at once: sequence i takes counts[i] tokens (>= 1; tokens holds the runs one after another) at
// positions len.. of its cache, each row's logits bit for bit those it has alone after the rows before it, every
// weight read once for all the rows. Logits (one Vp row a token) of every row, or with all_logits false of each
// run's last. The rows (their sum) <= s->rows, the sequences distinct with room (asserted).
void infer_decode_runs(InferScratch* s, InferState* const* seqs, const int* counts, int n, const GPT2& model,
                       const int* tokens, float* logits, bool all_logits);

// Bytes infer_keep_q8_tiles would add to model: 0 unless its weights are q8 with rounded inputs on AVX512-VNNI.
double infer_q8_tiles_bytes(const GPT2& model);
// Keeps an int8 model's q8 weights (rounded inputs) also laid out as infer_decode's products of several rows read
// them (inference/matvec.h's matvec_q8_tiles): a layout each such pass otherwise makes per weight, about as long
// as one row's products, made once, for 1.125 more bytes a weight; one row's products read it too, without the
// one-row kernel's sums across lanes (1.2-1.4x a 124M's decoding). The same numbers. Nothing where the bytes
// would be 0.
void infer_keep_q8_tiles(GPT2* model);
// The same where the layout fits the available memory beside `beside` bytes still to be allocated; otherwise
// nothing (decoding takes the one-row kernel, with the same numbers).
void infer_keep_q8_tiles_if_room(GPT2* model, double beside);
