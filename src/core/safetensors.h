// safetensors.h: reads and writes the safetensors format (8-byte little-endian header length, JSON
// header, raw little-endian data). The whole header is validated before any tensor is read: length
// within the file, JSON well-formed with unique keys, dtype known, shape x dtype size == byte span, spans
// laid end to end over the data section (no overlap, no hole). Knows nothing of GPT-2 (see checkpoint.h).
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

struct StTensor {
    std::string name;
    std::string dtype;  // "F32", "F16", "BF16", "I32", ...
    std::vector<int64_t> shape;
    size_t begin = 0, end = 0;  // byte span within the file
    size_t numel() const;
};

struct SafeTensors {
    std::string path;
    std::vector<uint8_t> bytes;                                 // the whole file; empty when only the header was read
    uint64_t file_dev = 0, file_ino = 0, file_size = 0;         // the file the header came from (header-only loads)
    std::vector<StTensor> tensors;                              // in header order
    std::vector<std::pair<std::string, std::string>> metadata;  // "__metadata__"

    const StTensor* find(const std::string& name) const;
    std::string meta(const std::string& key) const;  // "" if absent
};

// Bytes per element of a dtype name, 0 if unknown.
size_t safetensors_dtype_size(const std::string& dtype);
// Parses and validates a file image; false with a message on any defect (no tensor is read).
bool safetensors_parse(SafeTensors* st, std::vector<uint8_t> bytes, std::string* err);
// The same checks from the first n bytes of a file of file_size bytes (n covers the header); st->bytes
// stays empty.
bool safetensors_parse_header(SafeTensors* st, const uint8_t* data, size_t n, size_t file_size, std::string* err);
// Reads and validates `path` (only its header when header_only); fatal with a one-line error naming the
// file on any defect.
void safetensors_load(SafeTensors* st, const std::string& path, bool header_only = false);
// A tensor's values as fp32, converting F16 and BF16 as PyTorch does (exact widening); also accepts
// F64 (rounded) and I32. fatal for other dtypes, naming the tensor. After a header-only load the values
// come from the file (a short read is fatal).
std::vector<float> safetensors_read_f32(const SafeTensors& st, const StTensor& t);
// The same into out (numel floats), without a temporary: F32 is read straight into it.
void safetensors_read_into(const SafeTensors& st, const StTensor& t, float* out);
// Bytes [first, first + n) of a tensor's data into out, as stored: from the image, or after a header-only
// load from the file (fatal if it changed since its header was read, or is short).
void safetensors_read_bytes(const SafeTensors& st, const StTensor& t, size_t first, size_t n, void* out);

struct StWriteItem {
    std::string name;
    std::string dtype;  // "F32" or "I32" (any known dtype; data is copied as is)
    std::vector<int64_t> shape;
    const void* data;  // the tensor's bytes, or nullptr when fill makes them
    // Writes elements [first, first + count) of a tensor made as it is written into out, a piece of at most
    // 4 MiB at a time: a transposed or narrowed copy of a model is then never held whole.
    std::function<void(size_t first, size_t count, void* out)> fill = nullptr;
};
// Writes atomically (temporary name, fsync, rename). Header padded with spaces to a multiple of 8.
void safetensors_write(const std::string& path, const std::vector<StWriteItem>& items,
                       const std::vector<std::pair<std::string, std::string>>& metadata);

