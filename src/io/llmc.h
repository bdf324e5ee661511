// llmc.h: llm.c's model checkpoint format (gpt2_124M.bin and friends): a header of 256 int32 (magic
// 20240326, version, maxT, V, L, NH, C, Vp) followed by the 16 parameter tensors, each concatenated over
// layers (all ln1w, then all ln1b, ...), fp32 for version 3 and bf16 for version 5. Converts to and from
// our per-layer layout; knows nothing of HuggingFace.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "model/model.h"

const int kLlmcMagic = 20240326;

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
// Writes version 3 (fp32) or 5 (bf16, rounded to nearest even) atomically; fatal if a weight is
// not finite in the written dtype.
void llmc_save(const GPT2& model, const std::string& path, int version);
