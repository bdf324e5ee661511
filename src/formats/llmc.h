// llmc.h: llm.c's model checkpoint format (gpt2_124M.bin and friends): a header of 256 int32 (magic
// 20240326, version, maxT, V, L, NH, C, Vp) followed by the 16 parameter tensors, each concatenated over
// layers (all ln1w, then all ln1b, ...), fp32 for version 3 and bf16 for version 5. Converts to and from
// our per-layer layout; knows nothing of HuggingFace. Also reads llm.c's PyTorch reference dump
// (gpt2_124M_debug_state.bin), whose gradients follow the same tensor order.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "platform/output_files.h"
#include "core/model.h"

const int kLlmcMagic = 20240326;
const int kLlmcStateMagic = 20240327;  // the debug state written by llm.c's train_gpt2.py (write_state)

// llm.c's reference dump: one batch, PyTorch's logits and loss on it, and the gradient of every parameter.
struct LlmcState {
    int B = 0, T = 0;
    std::vector<int> x, y;      // (B, T)
    std::vector<float> logits;  // (B, T, V), not padded
    float loss = 0;
    std::vector<float> grads;  // our layout (layout_params(cfg)), wte with Vp rows
};

// True when the bytes start with llm.c's model magic (used to detect the format from the content).
bool llmc_detect(const uint8_t* data, size_t n);
// Parses a whole file image into a config and parameters in our layout (layout_params order). Returns false
// with a message on a bad header, an unknown version or a size that does not match the header.
bool llmc_parse(const std::vector<uint8_t>& bytes, GPT2Config* cfg, std::vector<float>* params, int* version,
                std::string* err);
// The header checks of llmc_parse from the first n bytes of a file of file_size bytes (geometry, and the
// size the geometry implies), without reading parameters.
bool llmc_parse_header(const uint8_t* data, size_t n, size_t file_size, GPT2Config* cfg, int* version,
                       std::string* err);
// Reads the parameters of a file whose header llmc_parse_header accepted (cfg, version) from the file
// straight into params (layout_params order), so loading holds them once.
// fatal if the file is no longer the one (inode file_ino) whose header was read.
void llmc_read_params(const std::string& path, const GPT2Config& cfg, int version, uint64_t file_ino, float* params);
// True when `path` is a regular file that starts with llm.c's model magic (export may replace it).
bool llmc_is_checkpoint_file(const std::string& path);
extern const OutputKind kLlmcKind;
// True when the bytes start with the debug state's magic.
bool llmc_state_detect(const uint8_t* data, size_t n);
// Reads a debug state (header: magic, version 2, B, T; then x, y as int32, logits fp32 (B, T, V), the loss,
// and the gradients fp32 in llm.c's order with wte padded to Vp rows) for a model of geometry cfg.
// fatal, naming the file, on a size that does not match cfg (a wte padded to another Vp is named as
// such), a T past cfg's context, a token out of range or a non-finite value.
void llmc_state_load(const std::string& path, const GPT2Config& cfg, LlmcState* st);
// Writes version 3 (fp32) or 5 (bf16, rounded to nearest even) atomically, replacing only an llm.c
// checkpoint (`flag` names the path in messages); fatal if a weight is not finite in the written dtype.
void llmc_save(const GPT2& model, const std::string& path, int version, const char* flag);
