// checkpoint.h: ./gpt2's checkpoints: loading any format it reads (HuggingFace through core/hf.h, bare
// safetensors, llm.c, GGUF), header-only inspection, and HF exports with F16/BF16 and tokenizer files.
//
// What a load refuses, in one error: line naming the file: a checkpoint with NaN or infinite weights (eval then
// refuses a non-finite loss and generate non-finite logits; train stops unsaved at the first non-finite loss or
// gradient norm, before the update, or at an update that overflows: core/trainer.h); a config.json with duplicate
// keys or a field that would change the math to something gpt2 does not compute (an activation other than GELU-tanh,
// a LayerNorm epsilon other than 1e-5, untied embeddings, another MLP width or attention scaling: core/hf.cpp); an
// input that is not a regular file. Memory is checked before what input sizes is allocated (geometry, -B/-T, prompt
// and sample lengths, file sizes), and info reads headers only. Narrowing to F16/BF16 refuses values past the
// format's range.
#pragma once
#include <string>
#include <vector>

#include "core/hf.h"
#include "core/model.h"
#include "core/safetensors.h"
#include "text/tokenizer.h"

// What checkpoint_load found.
struct CheckpointInfo {
    std::string format;  // "huggingface", "safetensors", "llm.c v3", "llm.c v5" or "gguf v3"
    std::string dtype;   // dtype of the stored weights: F32, F16, BF16, Q8_0 (or "mixed"; GGUF: "Q8_0, 1-D tensors F32")
    // checkpoint_load's `loaded` sees each tensor as it is read (the safetensors formats), not after the whole load
    bool by_tensor = false;
};

// Writes config.json and model.safetensors (HuggingFace names and orientation) into the existing
// directory dir, each file atomically. dtype "F32", "F16" or "BF16" (narrowing rounds to nearest even, as
// PyTorch does). fatal if a weight is not finite or does not fit the dtype's range.
// With `tok`, also the tokenizer files HuggingFace's GPT2Tokenizer loads (vocab.json, merges.txt,
// tokenizer_config.json, special_tokens_map.json) for the model's vocabulary, its first V tokens.
void checkpoint_save_hf(const GPT2& model, const std::string& dir, const std::string& dtype = "F32",
                        const Tokenizer* tok = nullptr);
// `gpt2 export --format hf`: publishes checkpoint_save_hf's files as the directory `out` in one step. `out`
// may be absent, empty, or an export gpt2 wrote; a training checkpoint or anything else is refused.
void checkpoint_export_hf(const GPT2& model, const std::string& out, const std::string& dtype, const Tokenizer* tok);
// Parameters that matter to a user: wte counts only the real vocabulary.
size_t gpt2_num_real_params(const GPT2Config& cfg);
// Loads a model from PATH, detecting the format from the content, not the name:
//  * a directory with config.json + model.safetensors (HuggingFace's GPT-2 layout, ours too): F32, F16
//    or BF16 tensors, optional "transformer." prefix, attention-mask buffers skipped, lm_head.weight
//    accepted when equal to the tied wte;
//  * a bare .safetensors file in that naming: geometry inferred from the shapes, heads = C / 64 (as in
//    every GPT-2 size) unless heads_override > 0;
//  * an llm.c checkpoint (llmc.h);
//  * a GGUF file of architecture gpt2 (gguf.h): F32, F16, BF16 or Q8_0 tensors.
// Missing, unknown or misshapen tensors, truncated files and non-finite weights are fatal, naming the
// tensor and the expected shape.
// With `loaded` (core/hf.h), each tensor is handed to it once its values are in place and checked finite, in the
// table's order; it may then change them or give their memory back (a frozen base quantized as it loads). The
// safetensors formats (info's by_tensor) call it as each tensor is read, into parameters left unset (gpt2_build)
// until then, so that no page is touched before its value is written, and leave the memory check to the caller,
// who knows what loaded keeps; llm.c and GGUF files, after the whole load.
void checkpoint_load(GPT2* model, const std::string& path, int heads_override = 0, CheckpointInfo* info = nullptr,
                     const TensorLoaded& loaded = nullptr);
// What checkpoint_load would find, from the headers alone (config.json, the safetensors header, llm.c's
// header and the file size): the same checks but the values', and no parameter memory.
GPT2Config checkpoint_inspect(const std::string& path, int heads_override, CheckpointInfo* info);
// The tokenizer the checkpoint at PATH carries, loaded into tok: a GGUF's tokenizer.ggml keys, or a
// directory's vocab.json + merges.txt (or encoder.json + vocab.bpe). False when it carries none; fatal
// naming the file when it carries one that is broken.
bool checkpoint_tokenizer(const std::string& path, Tokenizer* tok);
