// model.h: GPT-2 (pre-norm transformer, tied lm_head) over one flat parameter buffer and one flat
// activation buffer; forward, backward and zero-grad. Training policy (optimizer, data) lives elsewhere.
// Reference: Radford et al. 2019 (GPT-2); nanoGPT's model.py for the block structure.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "core/layers.h"
#include "core/config.h"
#include "core/layout.h"

// The copies an extension keeps of the weights beside their fp32 values (precision/precision.h), which
// gpt2_weight hands the matmuls and gpt2_params_updated refreshes. A model without them is fp32.
struct ModelCopies {
    virtual ~ModelCopies() = default;
    // The handle of the tensor at offset in the parameters (w points to it): its operands and its copy.
    virtual Weight weight(const float* w, size_t offset) const = 0;
    // The operands of the products that read no weight (attention's), or null: fp32.
    virtual const GemmOperands* operands() const = 0;
    // params[offset, offset + n) changed: refreshes their copies. Serial: called from each thread.
    virtual void params_updated(const float* params, size_t offset, size_t n) = 0;
};

struct GPT2 {
    GPT2Config cfg;
    std::vector<TensorInfo> param_table;
    size_t num_params = 0;             // floats in the parameter buffer (padded vocabulary included)
    std::vector<float> params, grads;  // grads (and dacts) only after gpt2_enable_training
    ParamViews param, grad;                 // views into params and grads
    bool training = false;
    std::vector<size_t> grad_offsets;  // where each param_table tensor's gradient starts in grads
    // The seams of an extension that keeps fewer activations (memory/: train --recompute), null on the plain
    // path: acts_table lays out the forward's activations for training (gpt2_alloc_acts; else layout_acts),
    // and gpt2_backward calls layer_begin(model, l) before layer l's backward, to refill what it left out.
    std::vector<TensorInfo> (*acts_table)(const GPT2Config& cfg, int B, int T) = nullptr;
    void (*layer_begin)(GPT2* model, int layer) = nullptr;
    int B = 0, T = 0;  // batch the activations are sized for
    std::vector<float> acts, dacts;
    ActViews act, dact;
    std::vector<int> inputs;     // (B, T) of the last forward
    bool dlogits_ready = false;  // act.logits holds d(mean loss)/dlogits (since the last forward with targets)
    float dlogits_scale = 0;     // the loss_scale a backward scaled them by; 0 before the first
    float mean_loss = 0;
    std::unique_ptr<ModelCopies> copies;  // or null: fp32 (an extension's: precision/precision.h)
};

// attention(la, ops): la.atty and la.att_lse from la.qkv on the block's operands, in place of block_forward's
// attention over the batch itself; decoding's (inference/infer.cpp) reads earlier positions from a KV cache.
using BlockAttention = std::function<void(const LayerActs& la, const GemmOperands* ops)>;
// Block l of the model, the only copy of its diagram: la.residual3 = x + attn(ln_1(x)), then
// + mlp(ln_2(.)), over B sequences of T positions (x (B*T, C)), on the model's operands. la keeps
// everything the backward needs. x may be la.residual3 (read before it is written).
void block_forward(const GPT2& model, int l, const LayerActs& la, const float* x, int B, int T,
                   const BlockAttention& attention = nullptr);
// The weight handle of a tensor of model.params (w points into it) for the matmuls: its values, and the
// operands and copy of its products if the model keeps copies (core/layers.h).
Weight gpt2_weight(const GPT2& model, const float* w);
// The operands of the model's products that read no weight (attention's): null for fp32.
const GemmOperands* gpt2_operands(const GPT2& model);
// Called by whoever changed params[offset, offset + n) (the optimizer, per chunk while it is in cache):
// refreshes the model's copies of those values. Serial: call it from each thread.
void gpt2_params_updated(GPT2* model, size_t offset, size_t n);
// Allocates zeroed parameters for cfg, which the caller has checked (config_check). Inference needs nothing
// more.
void gpt2_build(GPT2* model, const GPT2Config& cfg);
// Adds what training needs: parameter gradients, and activation gradients from the next forward on.
// Gradients an extension has laid out already (grads, grad and grad_offsets: memory/'s one layer for all)
// are kept; else they take the parameters' layout.
void gpt2_enable_training(GPT2* model);
// The gradient of param_table[i] in grads, in either layout (grad_offsets).
inline float* gpt2_grad(GPT2* model, size_t i) { return model->grads.data() + model->grad_offsets[i]; }
// GPT-2 init: weights N(0, 0.02), residual projections N(0, 0.02/sqrt(2L)), biases 0, LayerNorm 1/0,
// padded wte rows 0.
void gpt2_init_random(GPT2* model, uint64_t seed);
// Sizes the activation buffers for (B, T); a no-op when already that size. Without training, a shape that fits
// in the buffer already allocated reuses it (size it once for the largest shape to vary B and T freely).
// B, T >= 1 and T <= max_seq_len (the caller checks; and checks gpt2_acts_bytes against the memory it has).
void gpt2_alloc_acts(GPT2* model, int B, int T);
// Bytes of the activations for (B, T), with their gradients when training: what gpt2_alloc_acts allocates
// (without acts_table).
double gpt2_acts_bytes(const GPT2Config& cfg, int B, int T, bool training);
// Bytes of one copy of the parameters (gpt2_build allocates one; training adds gradients and AdamW's two).
double gpt2_params_bytes(const GPT2Config& cfg);
// Forward over inputs (B, T); with targets (B, T) also the loss, returned (else returns 0), and the
// per-position losses in a.losses. Token ids must be < vocab_size (asserted: the loaders check them).
// act.logits then holds the logits, except after a forward with targets on a training model: there the
// classifier is fused with its backward and act.logits holds d(mean loss)/dlogits (layout.h). To read the
// logits of a training model, run a forward without targets.
float gpt2_forward(GPT2* model, const int* inputs, const int* targets, int B, int T);
void gpt2_zero_grad(GPT2* model);
// Accumulates d(loss * loss_scale)/dparams into grads; needs gpt2_enable_training and a forward with
// targets first. loss_scale is 1/grad_accum when accumulating micro-batches. The first backward after a
// forward scales act.logits' dlogits by it; a second one with the same loss_scale computes the same
// gradients again (the forward's activations are left as they were), which an optimizer applied per
// layer uses to learn the clipping norm first. layer_done(l), when given, is called as soon as layer l's
// parameter gradients are final (layers in reverse order; wte, wpe and ln_f only at the end), so they can
// be sent, or consumed, while earlier layers are still being computed. Gradients laid out for one layer
// (memory/) need a layer_done that consumes and clears each layer's.
void gpt2_backward(GPT2* model, float loss_scale, const std::function<void(int layer)>& layer_done = nullptr);
// Parameters that matter to a user: wte counts only the real vocabulary.
size_t gpt2_num_real_params(const GPT2Config& cfg);
