// model.h: GPT-2 (pre-norm transformer, tied lm_head) over one flat parameter buffer and one flat
// activation buffer; forward, backward and zero-grad. Training policy (optimizer, data) lives elsewhere.
// Reference: Radford et al. 2019 (GPT-2); nanoGPT's model.py for the block structure.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "core/layers.h"
#include "core/config.h"
#include "core/layout.h"

// How training keeps its memory down; neither changes a number (train --recompute, --optimizer-in-backward).
struct TrainingMemory {
    bool recompute = false;    // the backward recomputes ln1, ln2 and fch_gelu (layout.h)
    bool layer_grads = false;  // gradients of one layer at a time (gpt2_enable_training)
};

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
    TrainingMemory mem;                 // set by gpt2_enable_training
    std::vector<size_t> grad_offsets;  // where each param_table tensor's gradient starts in grads
    std::pair<size_t, size_t> layer_grads_span;  // with mem.layer_grads: the shared layer's (offset, floats)
    int B = 0, T = 0;  // batch the activations are sized for
    std::vector<float> acts, dacts;
    ActViews act, dact;
    std::vector<int> inputs;     // (B, T) of the last forward
    bool dlogits_ready = false;  // act.logits holds d(mean loss)/dlogits (since the last forward with targets)
    float dlogits_scale = 0;     // the loss_scale a backward scaled them by; 0 before the first
    float mean_loss = 0;
    std::unique_ptr<ModelCopies> copies;  // or null: fp32 (an extension's: precision/precision.h)
};

// One layer's KV cache for inference: keys and values (max positions, C) each; the block appends the
// rows of positions p0.. and attends over 0..p0+i.
struct KvLayer {
    float* k;
    float* v;
    int p0;
};

// Block l of the model, the only copy of its diagram: la.residual3 = x + attn(ln_1(x)), then
// + mlp(ln_2(.)), over B sequences of T positions (x (B*T, C)), on the model's operands. Without a cache,
// attention runs over the batch itself (training, eval) and la keeps everything the backward needs; with
// one (B = 1), this step's keys and values are appended to it first. x may be la.residual3 (read before it
// is written).
void block_forward(const GPT2& model, int l, const LayerActs& la, const float* x, int B, int T, const KvLayer* kv);
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
// mem.layer_grads keeps the gradients of wte, wpe, ln_f and of one layer only, which every layer's g views
// share: gpt2_backward then needs a layer_done that consumes each layer's (an optimizer applied per layer,
// core/optimizer.h) and zeroes them afterwards for the next. gpt2_grad finds a tensor's gradient in either
// layout.
void gpt2_enable_training(GPT2* model, TrainingMemory mem = {});
// The gradient of param_table[i] in grads (with layer_grads: the shared layer's copy, valid in layer_done).
inline float* gpt2_grad(GPT2* model, size_t i) { return model->grads.data() + model->grad_offsets[i]; }
// GPT-2 init: weights N(0, 0.02), residual projections N(0, 0.02/sqrt(2L)), biases 0, LayerNorm 1/0,
// padded wte rows 0.
void gpt2_init_random(GPT2* model, uint64_t seed);
// Sizes the activation buffers for (B, T); a no-op when already that size. Without training, a shape that fits
// in the buffer already allocated reuses it (size it once for the largest shape to vary B and T freely).
// B, T >= 1 and T <= max_seq_len (the caller checks; and checks gpt2_acts_bytes against the memory it has).
void gpt2_alloc_acts(GPT2* model, int B, int T);
// Bytes of the activations for (B, T), with their gradients when training: what gpt2_alloc_acts allocates.
double gpt2_acts_bytes(const GPT2Config& cfg, int B, int T, bool training, bool recompute = false);
// Bytes of the parameter gradients gpt2_enable_training allocates.
double gpt2_grads_bytes(const GPT2Config& cfg, bool layer_grads);
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
// be sent, or consumed, while earlier layers are still being computed.
void gpt2_backward(GPT2* model, float loss_scale, const std::function<void(int layer)>& layer_done = nullptr);
// Parameters that matter to a user: wte counts only the real vocabulary.
size_t gpt2_num_real_params(const GPT2Config& cfg);
