// layers.h: GPT-2's forward/backward kernel pairs in fp32, the math of the GPT-2 paper and nanoGPT. Arguments
// in llm.c's order: outputs, caches, inputs, weights, sizes; N = B*T rows. Parameter gradients ACCUMULATE
// (+=; zeroed once per optimizer step, so micro-batches add up). An activation gradient with one writer is
// OVERWRITTEN (=), so no pass zeroes them; layernorm_backward's dinp alone adds, onto the residual stream's.
#pragma once
#include <cstddef>

#include "core/isa.h"

struct GemmOperands;

// A weight as the matmuls read it: its fp32 values, the operands its products run on (gemm.h; null: fp32),
// and an extension's reduced-precision copy (precision/precision.h's WeightCopy), which the operands' packing
// and decoding's one-row product read instead of the fp32 values. A plain float pointer is an fp32 weight.
struct Weight {
    Weight(const float* f32 = nullptr, const GemmOperands* ops = nullptr, const void* copy = nullptr)
        : f32(f32), ops(ops), copy(copy) {}
    const float* f32;
    const GemmOperands* ops;  // or null
    const void* copy;         // or null
};

// The seam for decoding's one-row products from a weight's copy: main sets it to inference/matvec.h's
// matvec_copy. Unset (gpt2-core, which keeps no copies), those rows run through the gemm.
inline void (*matmul_row_of_copy)(float* out, const float* inp, const Weight& w, const float* bias, int IC,
                                  int OC) = nullptr;

KERNELS_BEGIN

// out (N, C) = wte[tokens] + wpe[t] (overwrites). tokens (B, T).
void encoder_forward(float* out, const int* tokens, const float* wte, const float* wpe, int B, int T, int C);
// dwte (Vp, C), dwpe (maxT, C) += from dout (N, C).
void encoder_backward(float* dwte, float* dwpe, const float* dout, const int* tokens, int B, int T, int C);

// out (N, C) = (inp - mean) * rstd * weight + bias (eps 1e-5, population variance); overwrites out, mean, rstd (N).
void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight, const float* bias,
                       int N, int C);
// dinp (N, C), dweight (C), dbias (C) += ; reads the mean/rstd cache.
void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                        const float* weight, const float* mean, const float* rstd, int N, int C);

// out (N, OC) = inp (N, IC) weight^T + bias; weight (OC, IC), bias (OC) or null (overwrites).
void matmul_forward(float* out, const float* inp, const Weight& weight, const float* bias, int N, int IC, int OC);
// dinp (N, IC) = dout weight (overwrites); dweight (OC, IC) += dout^T inp; dbias (OC) += column sums of
// dout (if non-null). dout (N, OC). The weight's operands run both products.
void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                     const Weight& weight, int N, int IC, int OC);

// Causal multi-head self-attention, HS = C / NH. qkv (N, 3C) holds q, k, v per row; overwrites out (N, C) and
// lse (B, NH, T), the log-sum-exp of each query's scaled scores: all the backward needs to rebuild the
// softmax, so no (T, T) probabilities are stored. ops: the operands of the products (gemm.h; null: fp32).
void attention_forward(float* out, float* lse, const float* qkv, int B, int T, int C, int NH,
                       const GemmOperands* ops = nullptr);
// attention_forward's unit, decoding's too (inference/kv_attention): one head, rows <= kQBlock queries at
// positions t0..t0+rows-1 (q: the first, rows q_row floats apart) over the keys and values of positions
// 0..t0+rows-1 (k, v: position 0, rows kv_row apart); overwrites out (rows x HS, rows out_row apart) and lse.
constexpr int kQBlock = 64;  // queries per block: a multiple of the gemm's register tile
void attend_block(float* out, size_t out_row, float* lse, const float* q, size_t q_row, const float* k, const float* v,
                  size_t kv_row, int t0, int rows, int HS, float scale, const GemmOperands* ops);
// dqkv (N, 3C) = from dout (N, C) (overwrites), recomputing the probabilities from qkv and lse.
void attention_backward(float* dqkv, const float* dout, const float* qkv, const float* lse, int B, int T, int C, int NH,
                        const GemmOperands* ops = nullptr);

// GELU, tanh approximation: out (n) = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) (overwrites).
void gelu_forward(float* out, const float* inp, size_t n);
// dinp (n) = dout * gelu'(inp) (OVERWRITES: the only writer of its gradient).
void gelu_backward(float* dinp, const float* inp, const float* dout, size_t n);

// out (n) = a + b (overwrites).
void residual_forward(float* out, const float* a, const float* b, size_t n);
// da, db (n) = dout (overwrites both).
void residual_backward(float* da, float* db, const float* dout, size_t n);

// The classifier's loss fused with its gradient: one (N, Vp) buffer serves both. logits (N, Vp): the lm_head's
// output; targets (N) < V. Overwrites losses (N) = -log softmax(row)[target], over the row's first V columns, and
// returns their mean, summed in row order in double (the same for any thread count). grad: each row of logits
// is OVERWRITTEN by d(mean loss)/dlogits = (softmax - onehot(target)) / N, 0 in the padding V..Vp: the dlogits.
float crossentropy_fused(float* logits, float* losses, const int* targets, bool grad, int N, int V, int Vp);
// dlogits (N, Vp) *= loss_scale, once per fused forward: d(loss * loss_scale)/dlogits, for micro-batches.
void crossentropy_backward(float* dlogits, float loss_scale, int N, int Vp);

// Plain scalar references of the vectorised kernels above, same contracts; the tests compare against them.
void gelu_forward_ref(float* out, const float* inp, size_t n);
void gelu_backward_ref(float* dinp, const float* inp, const float* dout, size_t n);
float crossentropy_fused_ref(float* logits, float* losses, const int* targets, bool grad, int N, int V, int Vp);
void attention_forward_ref(float* out, float* lse, const float* qkv, int B, int T, int C, int NH);
void attention_backward_ref(float* dqkv, const float* dout, const float* qkv, const float* lse, int B, int T, int C,
                            int NH);

KERNELS_END
