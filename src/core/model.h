// model.h: GPT-2 (pre-norm, tied lm_head; Radford et al. 2019, nanoGPT's model.py for the block) over one flat
// parameter buffer and one flat activation buffer: forward, backward, zero-grad. No optimizer, no data.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "core/layers.h"
#include "core/layout.h"

// Seam: the copies (bf16, int8: precision/precision.h) of the weights the matmuls use (gpt2_weight; operands():
// attention's products), refreshed by gpt2_params_updated. A model without them is fp32.
struct ModelCopies {
    virtual ~ModelCopies() = default;
    virtual Weight weight(const float* w, size_t offset) const = 0;
    virtual const GemmOperands* operands() const = 0;
    virtual void params_updated(const float* params, size_t offset, size_t n) = 0;
};

struct GPT2 {
    GPT2Config cfg;
    std::vector<TensorInfo> param_table;
    size_t num_params = 0;                             // floats in params (the padded vocabulary included)
    std::vector<float, UnsetAllocator<float>> params;  // zeroed, or left unset for a load to write (gpt2_build)
    std::vector<float> grads;                          // grads (and dacts) only after gpt2_enable_training
    ParamViews param, grad;
    bool training = false;
    std::vector<size_t> grad_offsets;  // where each param_table tensor's gradient starts in grads
    // Seams for keeping fewer activations (memory/: --recompute), null by default: acts_table lays out a training
    // forward's (else layout_acts); layer_begin(model, l) refills what it left out before layer l's backward.
    std::vector<TensorInfo> (*acts_table)(const GPT2Config& cfg, int B, int T) = nullptr;
    void (*layer_begin)(GPT2* model, int layer) = nullptr;
    int B = 0, T = 0;  // batch the activations are sized for
    std::vector<float> acts, dacts;
    ActViews act, dact;
    std::vector<int> inputs, targets;     // (B, T) of the last forward; targets empty without
    bool head_grads = false;              // gpt2_head's gradients are in grads and dact.lnf, for one backward
    bool grads_unset = false;             // gpt2_zero_grad's: the matrices' gradients are the next backward's to set
    int head_last_row = 0;                // act.logits holds rows head_last_row.. of the last gpt2_head
    std::unique_ptr<ModelCopies> copies;  // or null: fp32
    std::function<const LinearAdapter*(size_t offset)> adapter_of;  // Seam: a weight's adapter (lora/), or null
};

// Seam: la.atty and la.att_lse from la.qkv in place of block_forward's (decoding's reads a KV cache: inference/).
using BlockAttention = std::function<void(const LayerActs& la, const GemmOperands* ops)>;
// Block l, the only copy of its diagram: la.residual3 = x + attn(ln_1(x)), then + mlp(ln_2(.)), over B
// sequences of T positions (x (B*T, C)). la keeps what the backward needs. x may be la.residual3. T == 1 (decoding
// B sequences together: inference/infer.cpp) runs each row's products as that row alone (matmul_forward's rows).
void block_forward(const GPT2& model, int l, const LayerActs& la, const float* x, int B, int T,
                   const BlockAttention& attention = nullptr);
// The handle the matmuls take for the tensor of model.params at w: its values, and its copy if any.
Weight gpt2_weight(const GPT2& model, const float* w);
// params[offset, offset + n) changed (the optimizer calls it per chunk, in cache): refreshes their copies; serial.
void gpt2_params_updated(GPT2* model, size_t offset, size_t n);
// Allocates zeroed parameters for cfg, which the caller has checked (config_check): enough for inference. Not
// zeroed: left unset and untouched, for a load that writes every value (formats/checkpoint.h's TensorLoaded).
void gpt2_build(GPT2* model, const GPT2Config& cfg, bool zeroed = true);
// Adds parameter gradients (unless memory/ laid them out, or frozen: none, null views) and activation gradients.
void gpt2_enable_training(GPT2* model, bool frozen = false);
// GPT-2's init, each tensor's TensorInit (layout.h); padded wte rows stay 0.
void gpt2_init_random(GPT2* model, uint64_t seed);
// Sizes the activation buffers for (B, T), checked by the caller (the memory too: memory/memory.h); a no-op
// when already that size. Without training, a shape that fits the buffer reuses it (size it for the largest).
void gpt2_alloc_acts(GPT2* model, int B, int T);
// Forward over inputs (B, T); with targets (B, T) also gpt2_head's mean loss, returned (else 0), and per-position
// losses. Token ids must be < vocab_size (asserted: the loaders check them). A loss_scale >= 0 (training, with
// targets: the micro-batch's share of the step's loss) also runs the head's backward: gpt2_backward goes on from it.
float gpt2_forward(GPT2* model, const int* inputs, const int* targets, int B, int T, float loss_scale = -1);
// The head after the final LayerNorm: logits = lnf wte^T, layout_head_rows(N) rows at a time, each consumed at once
// by the loss of the last forward's targets (if any) and, with loss_scale >= 0, by the head's backward (d(loss *
// loss_scale) added to grad.wte, and dact.lnf's rows): no (N, Vp) buffer. act.logits keeps the last rows'.
float gpt2_head(GPT2* model, float loss_scale);
// Zeroes the gradients but the matrices' (wte and the blocks' four): the next head's first rows and the next
// backward write theirs over them instead of adding (a 124M step neither zeroes nor reads back 494 MB).
void gpt2_zero_grad(GPT2* model);
// Adds the rest of d(loss * loss_scale)/dparams to grads (see gpt2_zero_grad), from the head's (gpt2_head, above);
// another backward needs gpt2_head again (memory/ runs two: gpt2_zero_grad, gpt2_head, gpt2_backward).
// Seam: layer_done(l) runs as soon as layer l's gradients are final (in reverse; wte, wpe and ln_f at the end),
// to send or consume them while earlier layers run (memory/'s one-layer gradients need one).
void gpt2_backward(GPT2* model, const std::function<void(int layer)>& layer_done = nullptr);
