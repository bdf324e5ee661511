// hf.h: GPT-2 in HuggingFace's layout (config.json + model.safetensors in a directory, transformers' GPT2LMHeadModel
// names), by the parameter table's names and orientations (layout.h: Conv1D keeps weights (in, out), we (out, in)):
// this file copies, transposes and checks every shape; ./gpt2's loader and exporter (formats/checkpoint.h) build on it.
#pragma once
#include <string>
#include <vector>

#include "core/model.h"
#include "core/safetensors.h"

const char* const kHfWriter = "gpt2.cpp";  // metadata "writer": gpt2 export may replace a directory whose model says so

// config.json's geometry, refusing fields that change the math to something gpt2 does not compute; fatal
// naming the file if bad. hf_config_json: config.json for cfg, as HuggingFace writes it for GPT-2.
GPT2Config hf_read_config(const std::string& path);
std::string hf_config_json(const GPT2Config& cfg);
// The prefix of the names in st: "transformer." (GPT2LMHeadModel's state dict) or "" (GPT2Model's).
std::string hf_prefix(const SafeTensors& st);
// Checks st's header against cfg: every parameter in HuggingFace's shape, nothing else but attention-mask
// buffers and an lm_head.weight of wte's shape; fatal naming the tensor. Returns the parameters' dtype, or "mixed".
std::string hf_check_header(const SafeTensors& st, const std::string& prefix, const GPT2Config& cfg);
// Seam: each tensor of a load, once its values are in place and before the next is read (in the table's order):
// ./gpt2 quantizes a frozen base a matrix at a time as it loads (formats/checkpoint.h).
using TensorLoaded = std::function<void(const TensorInfo& t)>;
// Copies tensors named prefix + hf_name into a buffer laid out by layout_params(cfg), transposing Conv1D
// weights and zeroing wte's padded rows: a model's ("" or "transformer.") or reference gradients ("grad.",
// gpt2 compare). Each tensor in place, it calls loaded (if any).
void hf_unpack(const SafeTensors& st, const std::string& prefix, const GPT2Config& cfg, float* base,
               const TensorLoaded& loaded = nullptr);
// hf_unpack into a model built for st (gpt2_build); a stored lm_head.weight must equal the tied wte.
void hf_read_params(const SafeTensors& st, GPT2* model, const TensorLoaded& loaded = nullptr);
// The model's parameters as HuggingFace stores them (F32, Conv1D transposed a piece at a time), for safetensors_write.
std::vector<StWriteItem> hf_tensors(const GPT2& model);

// The core alone: loads the HuggingFace GPT-2 directory `dir` into model, and writes model.safetensors into out.
void hf_load(GPT2* model, const std::string& dir);
// fatal naming the tensor if a parameter is NaN or infinite (`where`: the file); `doing` ends the message. With
// `only`, that tensor's alone.
void checkpoint_check_finite(const GPT2& model, const std::string& where, const char* doing,
                             const TensorInfo* only = nullptr);
void hf_write_safetensors(const GPT2& model, const ByteSink& out);
