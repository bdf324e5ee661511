// memory.h: training in less memory, without changing a number: train --recompute and --recompute-blocks
// (fewer activations kept) and --optimizer-in-backward (one layer's gradients at a time, AdamW applied as the
// backward goes). They reach the core through its seams: the model's acts_table and layer_begin, the gradients laid out
// before gpt2_enable_training (which keeps them, gpt2_param_set reads them through grad_offsets), and
// gpt2_backward's layer_done.
//
// What train allocates, it prints first (`memory: N MiB (parameters, gradients, AdamW state, activations,
// samples)`, the last the sampler's KV cache: gpt2_params_bytes and the functions below), stops with an error
// when the machine does not have it, and prints its measured peak at the end. Plain fp32 AdamW needs 16 bytes
// per parameter before any activation. A save writes from these buffers (the matrices transposed to
// HuggingFace's layout 4 MiB at a time) and a --resume reads the saved moments straight into them, a million
// values at a time, so neither adds to the peak. Without any flag the activations' gradients of one layer are
// shared by all layers, in 6 C floats a row (core/layout.h), and no projection's output is kept: it is added
// into the residual stream in place. The flags here change no number; --optimizer-state bf16 and 8bit
// (precision/adamw_bf16.h, adamw_8bit.h) are the memory flags that do. The update inside the backward needs
// --grad-accum 1 and one process, since the gradients must be final when the backward produces them.
#pragma once
#include "core/optimizer.h"

struct TrainingMemory {
    // The forward keeps one copy of ln1, ln2 and fch_gelu, which every layer's views share, and the backward
    // recomputes a layer's from what it kept, before that layer (the model's layer_begin): about a third less
    // activation memory (tests/bench_results.md).
    bool recompute = false;
    // More: the forward keeps each block's input alone (and one copy of the rest, every layer's views sharing
    // it), and the backward runs the block's forward again before that block (HF's gradient checkpointing).
    bool recompute_blocks = false;
    // The gradients of wte, wpe, ln_f and of one layer only, which every layer's views share: the backward
    // then needs a layer_done that consumes each layer's (adamw_step_in_backward) and then clears them
    // (memory_clear_layer_grads) for the next.
    bool layer_grads = false;
};

// Bytes of one copy of the parameters (gpt2_build allocates one; training adds gradients and AdamW's two),
// and of the activations for (B, T), with their gradients when training: what gpt2_alloc_acts allocates
// without acts_table.
double gpt2_params_bytes(const GPT2Config& cfg);
double gpt2_acts_bytes(const GPT2Config& cfg, int B, int T, bool training);
// gpt2_enable_training with mem's layouts; frozen (a LoRA base): no parameter gradients, so recompute alone.
void memory_enable_training(GPT2* model, TrainingMemory mem, bool frozen = false);
// Bytes of the parameter gradients, and of the activations for (B, T) with their gradients, that
// memory_enable_training and then gpt2_alloc_acts allocate.
double memory_grads_bytes(const GPT2Config& cfg, TrainingMemory mem);
double memory_acts_bytes(const GPT2Config& cfg, int B, int T, TrainingMemory mem);
// With layer_grads: zeroes the one layer's gradients every layer shares, once a layer_done has consumed
// them, so that the next layer's biases and LayerNorms accumulate into zeros (its matrices may be overwritten).
void memory_clear_layer_grads(GPT2* model);
// One step with the update inside the backward, for a model with layer_grads (memory_enable_training), after
// gpt2_zero_grad and a forward with targets and loss_scale 1: AdamW is applied to each layer as soon as its
// gradients are final, so only one layer's gradients (and wte's, wpe's and ln_f's) exist at a time. Clipping to
// grad_clip (> 0) needs the norm of all of them before the first update, so a first backward measures it and a
// second one, computing the same gradients again from the same activations (gpt2_head's too), applies them: the
// weights equal those of optimizer_grad_norm + adamw_update on the full gradients bit for bit. Without clipping
// one backward does both. Returns the gradient norm; when clipping and it is not finite, nothing is updated.
float adamw_step_in_backward(AdamW* opt, GPT2* model, const AdamWConfig& cfg, float lr, float grad_clip);
