// safetensors_file.h: ./gpt2's side of core/safetensors.h: loads that read only the header and then each
// tensor from the file (checked to be the file the header came from), atomic writes, and the dtypes other
// than F32 (F16 and BF16 widened exactly, as PyTorch does; F64 rounded; I32).
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/safetensors.h"

// Reads and validates the header of `path`; tensors are then read from the file through st->read_at (fatal
// if the file changed since its header was read, or is short). fatal naming the file on any defect.
void safetensors_load_header(SafeTensors* st, const std::string& path);
// Writes atomically (staged, fsync, rename) as a new file.
void safetensors_write_file(const std::string& path, const std::vector<StWriteItem>& items,
                            const std::vector<std::pair<std::string, std::string>>& metadata);
// Plugs ./gpt2's versions into the core's hooks: platform/util.h's file_read as core/error.h's
// file_read_hook, the other dtypes' reading as safetensors_convert. main() calls it first.
void safetensors_plug_in();
