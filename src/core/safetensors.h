// safetensors.h: the format (8-byte little-endian header length, JSON header, raw little-endian data), read and
// written. The whole header is checked before any tensor is read: length within the file, unique keys, known dtype,
// shape x dtype size == byte span, spans end to end over the data section. ./gpt2 adds header-only loads, other dtypes.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

struct StTensor {
    std::string name;
    std::string dtype;  // "F32", "F16", "BF16", "I32", ...
    std::vector<int64_t> shape;
    size_t begin = 0, end = 0;  // byte span within the file
    size_t numel() const { return std::accumulate(shape.begin(), shape.end(), (size_t)1, std::multiplies<size_t>()); }
};

struct SafeTensors {
    std::string path;
    std::vector<StTensor> tensors;                              // in header order
    std::vector<std::pair<std::string, std::string>> metadata;  // "__metadata__"
    // n bytes at file offset `at` (within t) into out: from safetensors_parse's image, or the file (header-only load).
    std::function<void(const StTensor& t, size_t at, size_t n, void* out)> read_at;

    const StTensor* find(const std::string& name) const;
    std::string meta(const std::string& key) const;  // "" if absent
};

size_t safetensors_dtype_size(const std::string& dtype);  // bytes per element, 0 if unknown
// The header length in the first 8 bytes, checked against the file size; false with a message otherwise.
bool safetensors_header_length(const uint8_t* first8, size_t file_size, uint64_t* len, std::string* err);
// Validates the header in the first n bytes of a file of file_size bytes; false with a message on any defect.
bool safetensors_parse_header(SafeTensors* st, const uint8_t* data, size_t n, size_t file_size, std::string* err);
// The same for a whole file image, which st then keeps to read tensors from.
bool safetensors_parse(SafeTensors* st, std::vector<uint8_t> bytes, std::string* err);
// Reads and validates the whole file `path`; fatal naming it on any defect.
void safetensors_load(SafeTensors* st, const std::string& path);
// Reads a tensor stored in a dtype other than F32 into out as fp32. nullptr (the core alone): only F32 is
// read; ./gpt2's safetensors_plug_in (formats/safetensors_file.h) reads F16, BF16, F64 and I32.
inline void (*safetensors_convert)(const SafeTensors& st, const StTensor& t, float* out) = nullptr;
// A tensor's values as fp32 (into out: numel floats); fatal naming the tensor for a dtype it cannot read.
void safetensors_read_into(const SafeTensors& st, const StTensor& t, float* out);
std::vector<float> safetensors_read_f32(const SafeTensors& st, const StTensor& t);
// Bytes [first, first + n) of a tensor's data into out, as stored.
void safetensors_read_bytes(const SafeTensors& st, const StTensor& t, size_t first, size_t n, void* out);

struct StWriteItem {
    std::string name;
    std::string dtype;  // "F32" or "I32" (any known dtype; data is copied as is)
    std::vector<int64_t> shape;
    const void* data;  // the tensor's bytes, unless fill makes them
    // Makes elements [first, first + count) into out, 4 MiB at a time: a transposed or narrowed copy is never whole.
    std::function<void(size_t first, size_t count, void* out)> fill = nullptr;
};
// Where a writer puts its bytes, in order (./gpt2 stages them through platform/output_files.h).
using ByteSink = std::function<void(const void* data, size_t n)>;
// The file's bytes into out, the header padded with spaces to a multiple of 8.
void safetensors_write(const ByteSink& out, const std::vector<StWriteItem>& items,
                       const std::vector<std::pair<std::string, std::string>>& metadata);
