// layers.h: GPT-2's forward/backward kernel pairs in fp32, the math of the GPT-2 paper and nanoGPT. Arguments
// in llm.c's order: outputs, caches, inputs, weights, sizes; N = B*T rows. Parameter gradients ACCUMULATE (+=, or
// = where an `add` says so: model.h's gpt2_zero_grad), a null one not computed (a frozen base). Outputs, and
// activation gradients with one writer, are OVERWRITTEN (=); layernorm_backward's dinp alone adds, onto the residual's.
#pragma once
#include <cstddef>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "core/isa.h"

struct GemmOperands;

// Seam: an extension's term on a linear layer (lora/), added to its output (N, OC) and its dinp (N, IC).
struct LinearAdapter {
    virtual void forward(float* out, const float* inp, int N) const = 0;
    virtual void backward(float* dinp, const float* dout, const float* inp, int N) const = 0;
};

// A weight as matmuls read it: fp32 values, gemm operands, a copy packing and decoding use (precision/), an adapter.
struct Weight {
    Weight(const float* f32 = nullptr, const GemmOperands* ops = nullptr, const void* copy = nullptr)
        : f32(f32), ops(ops), copy(copy) {}
    const float* f32;
    const GemmOperands* ops;  // or null
    const void* copy;         // or null
    const LinearAdapter* adapter = nullptr;
};

// The seam for decoding's products: matmul_forward's N rows of `rows`, each a mat-vec with the numbers it has alone,
// from the fp32 weight or its copy. main sets it to inference/matvec.h's matvec_rows. Unset (gpt2-core, which keeps
// no copies), layers.cpp's plain fp32 mat-vec runs them, with the same numbers.
inline void (*matmul_rows)(float* out, const float* inp, const Weight& w, const float* bias, int N, int IC,
                           int OC) = nullptr;

KERNELS_BEGIN

// out (N, C) = wte[tokens] + wpe[t], tokens (B, T); the backward adds dout into dwte (Vp, C) and dwpe (maxT, C).
void encoder_forward(float* out, const int* tokens, const float* wte, const float* wpe, int B, int T, int C);
void encoder_backward(float* dwte, float* dwpe, const float* dout, const int* tokens, int B, int T, int C);

// parallel_if(work >= kThreadsFrom, region): a pass over fewer floats or multiply-adds, as in a decoding step, runs
// on this thread without entering OpenMP (region's `omp for` loops whole): a team, even of one thread, costs more
// to start than the pass (tests/bench_results.md). Inside a parallel region, whose team would share out those
// loops, it makes a team of one.
constexpr size_t kThreadsFrom = 8192;
template <typename Region>
inline void parallel_if(bool threads, const Region& region) {
#ifdef _OPENMP
    if (!threads && !omp_in_parallel()) return region();
#endif
#pragma omp parallel if (threads)
    region();
}

// out (N, C) = (inp - mean) * rstd * weight + bias (eps 1e-5, population variance), keeping mean, rstd (N).
void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight, const float* bias,
                       int N, int C);
// dinp (N, C), dweight (C), dbias (C) += ; reads the mean/rstd cache.
void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                        const float* weight, const float* mean, const float* rstd, int N, int C);

// out (N, OC) = inp (N, IC) weight^T + bias; weight (OC, IC), bias (OC) or null. One gemm, or with `rows`
// (decoding: one new position of each of N sequences; always so for N == 1) a mat-vec per row, every weight read
// once for all N: row i's numbers are those it has alone, whatever N and the other rows.
void matmul_forward(float* out, const float* inp, const Weight& weight, const float* bias, int N, int IC, int OC,
                    bool rows = false);
// dinp (N, IC) = dout (N, OC) weight; dweight (OC, IC) += dout^T inp (= if !add); dbias (OC) += dout's column sums.
void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                     const Weight& weight, int N, int IC, int OC, bool add = true);

// Causal self-attention, HS = C / NH: out (N, C) from qkv (N, 3C), q, k, v per row, and lse (B, NH, T), each query's
// log-sum-exp of scaled scores, from which the backward rebuilds the softmax (no (T, T) probabilities kept).
void attention_forward(float* out, float* lse, const float* qkv, int B, int T, int C, int NH,
                       const GemmOperands* ops = nullptr);
// attention_forward's unit, a KV cache's too (inference/kv_attention): one head, rows <= kQBlock queries at
// positions t0..t0+rows-1 (q: the first, rows q_row floats apart) over the keys and values of positions
// 0..t0+rows-1: key j's channel c at k[j * k_row + c], or k[c * k_row + j] where keys_by_channel, value j's at
// v[j * v_row + c]. Overwrites out (rows x HS, rows out_row apart) and lse.
constexpr int kQBlock = 64;  // queries per block: a multiple of the gemm's register tile
void attend_block(float* out, size_t out_row, float* lse, const float* q, size_t q_row, const float* k, size_t k_row,
                  bool keys_by_channel, const float* v, size_t v_row, int t0, int rows, int HS, float scale,
                  const GemmOperands* ops);
// Its softmax: S (rows, tn), the rows' unscaled scores, becomes P = exp(S * scale - lse) on and below the
// diagonal (0 above), lse (rows) each row's log-sum-exp.
void block_softmax(float* S, float* lse, int t0, int rows, int tn, float scale);
// dqkv (N, 3C) from dout (N, C), recomputing the probabilities from qkv and lse.
void attention_backward(float* dqkv, const float* dout, const float* qkv, const float* lse, int B, int T, int C, int NH,
                        const GemmOperands* ops = nullptr);

// GELU, tanh approximation: out (n) = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))); dinp = dout * gelu'(inp)
// (dinp may be dout: gpt2_backward's is, layout.h).
void gelu_forward(float* out, const float* inp, size_t n);
void gelu_backward(float* dinp, const float* inp, const float* dout, size_t n);

// out (n) = a + b (out may be a or b). Its backward is a copy of dout to both: gpt2_backward needs none (layout.h).
void residual_forward(float* out, const float* a, const float* b, size_t n);

// The classifier's loss fused with its gradient in one (N, Vp) buffer: losses (N) = -log softmax(logits row)[target]
// over its first V columns (targets < V). dloss > 0: logits is OVERWRITTEN by the dlogits of loss * scale, where
// loss is a mean with d(loss)/d(row loss) = dloss: ((softmax - onehot) * dloss) * scale, 0 in V..Vp. A target of -1
// is not scored (answer-only loss): loss 0 and a zero row.
void crossentropy_fused(float* logits, float* losses, const int* targets, int N, int V, int Vp, float dloss,
                        float scale);

KERNELS_END
