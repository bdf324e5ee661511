// checkpoint.h: GPT-2 checkpoints in HuggingFace's layout (config.json + model.safetensors). This is the
// only file that knows HuggingFace's tensor names and which matrices are stored transposed (Conv1D keeps
// weights (in, out); we keep (out, in)). Every copy checks the shape it expects.
#pragma once
#include <string>
#include <vector>

#include "model.h"
#include "safetensors.h"

// One of our tensors and its HuggingFace counterpart.
struct HfTensor {
    std::string hf_name;  // without prefix, e.g. "h.0.attn.c_attn.weight"
    size_t table_index;   // index into layout_params(cfg)
    bool transposed;      // stored (in, out) by HuggingFace
};
std::vector<HfTensor> checkpoint_hf_tensors(const GPT2Config& cfg);

// Reads config.json (n_embd, n_head, n_layer, n_positions, vocab_size); fatal naming the file if bad.
GPT2Config checkpoint_read_hf_config(const std::string& path);
// Loads a HuggingFace GPT-2 directory into a freshly built model. F32, F16 and BF16 tensors; an optional
// "transformer." prefix; attention-mask buffers skipped; lm_head.weight accepted when equal to wte.
// Missing, unknown or misshapen tensors are fatal, naming the tensor and the expected shape.
void checkpoint_load_hf(GPT2* model, const std::string& dir);
// Copies tensors named prefix + hf_name out of st into a buffer laid out by layout_params(cfg),
// transposing Conv1D weights. Used for models ("" or "transformer.") and reference gradients ("grad.").
void checkpoint_unpack_hf(const SafeTensors& st, const std::string& prefix, const GPT2Config& cfg, float* base);
// Writes config.json and model.safetensors (F32, HuggingFace names and orientation) into dir.
void checkpoint_save_hf(const GPT2& model, const std::string& dir);
// Loads a model from PATH, detecting the format from the content: for now a HuggingFace directory.
// fatal with a one-line error naming PATH otherwise.
void checkpoint_load(GPT2* model, const std::string& path);
