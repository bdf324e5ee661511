// gguf.h: GPT-2 in GGUF version 3, the file llama.cpp and the apps built on it load (architecture
// "gpt2"). Export writes the weights (f32, f16, bf16 or q8_0) with GPT-2's tokenizer; import reads any of
// those four tensor types back into our fp32 parameters. Names come from the parameter table (layout.h:
// blk.N.attn_qkv.weight, ...); weights are stored as we keep them, (out, in) row-major, which ggml calls
// ne = [in, out]. wte is stored with the model's own vocabulary (the padded rows left out), and llama.cpp
// ties the output projection to it as we do. The 1-D tensors (LayerNorm weights, biases) stay f32 whatever the
// type, as llama.cpp's own converters keep them. Reference: the GGUF specification (ggml's docs/gguf.md) and
// llama.cpp's gpt2 loader for the keys it requires.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "platform/output_files.h"
#include "core/model.h"
#include "text/tokenizer.h"

// ggml's numbers for the tensor types gpt2 reads and writes.
enum class GgufType : uint32_t { kF32 = 0, kF16 = 1, kQ8_0 = 8, kBF16 = 30 };

// One metadata value: numbers of every width in `number` (integers exactly up to 2^53), strings whole
// (up to 4 KiB; longer ones only counted), arrays counted and where their elements start (not kept).
struct GgufValue {
    uint32_t type = 0;  // GGUF's value type: 0-7 and 10-12 numbers and bool, 8 string, 9 array
    double number = 0;
    std::string str;
    uint32_t array_type = 0;
    uint64_t array_count = 0;
    uint64_t array_at = 0;  // file offset of the first element
};

struct GgufTensor {
    std::string name;
    std::vector<uint64_t> dims;  // ne[0] (contiguous) first
    uint32_t type = 0;
    uint64_t offset = 0;  // in the file
    uint64_t bytes = 0;
    uint64_t numel() const;
};

struct GgufHeader {
    uint32_t version = 0;
    std::map<std::string, GgufValue> kv;
    std::vector<GgufTensor> tensors;
    std::unordered_map<std::string, size_t> index;  // tensor name -> its place in tensors
    uint64_t file_size = 0;
    const GgufValue* find(const std::string& key) const;
    const GgufTensor* tensor(const std::string& name) const;
};

// read_at(dst, n, offset): n bytes of the file at offset, false if it cannot.
using GgufReadAt = std::function<bool(void* dst, size_t n, uint64_t offset)>;

// True when the bytes start with GGUF's magic.
bool gguf_detect(const uint8_t* data, size_t n);
// Parses the header of a file of file_size bytes: metadata and tensor table, every count and length checked
// against the bytes that remain before anything is allocated for it (memory stays a few times the header's
// size), every tensor's data inside the file and of its type's size. False with a message on anything else
// (another version, an unknown value or tensor type, a truncated file).
bool gguf_parse(const GgufReadAt& read_at, uint64_t file_size, GgufHeader* h, std::string* err);
// The GPT-2 geometry a parsed header describes, and the stored dtype ("F16", "Q8_0, 1-D tensors F32", ...):
// fatal naming the file and the key or tensor when it is not GPT-2, a key is missing or a shape is wrong.
GPT2Config gguf_config(const GgufHeader& h, const std::string& path, std::string* dtype);
// Converts the weights of a header gguf_config accepted into params (layout_params(cfg) order). fatal if
// the file can no longer be read, or if it stores an output.weight that is not wte (untied).
void gguf_read_params(const GgufHeader& h, const GgufReadAt& read_at, const std::string& path,
                      const GPT2Config& cfg, float* params);
// The tokenizer the file stores (tokenizer.ggml.tokens and .merges of model "gpt2", as gguf_save writes
// them; their strings read through read_at) into tok, named by path; false when it stores none, fatal naming
// the file when it is unusable.
bool gguf_tokenizer(const GgufHeader& h, const GgufReadAt& read_at, const std::string& path, Tokenizer* tok);
// A header's metadata, appended key by key in the file's encoding; count: the keys written.
struct GgufKeys {
    std::string buf;
    uint64_t count = 0;
    void str(const std::string& k, const std::string& v);
    void u32(const std::string& k, uint32_t v);
    void f32(const std::string& k, float v);
    void strings(const std::string& k, const std::vector<std::string>& v);
    void i32s(const std::string& k, const std::vector<int32_t>& v);
    void mark_ours();  // general.alignment and the key that says gpt2 wrote the file (gguf_is_ours)
private:
    void key(const std::string& k, uint32_t type);
};
// One tensor for gguf_write: dims ne[0] first, the type it is stored in, its fp32 values (numel of them).
struct GgufOutTensor {
    std::string name;
    std::vector<uint64_t> dims;
    GgufType type;
    const float* data;
    uint64_t numel() const;
};
// Writes a GGUF file at path as one OutputFile of `kind` (`flag` names it in messages): the keys, the tensor
// table, each tensor's data aligned; fatal naming the tensor when a value does not fit its type.
void gguf_write(const std::string& path, const char* flag, const OutputKind& kind, const GgufKeys& keys,
                const std::vector<GgufOutTensor>& tensors);
// Writes model as a GGUF file at path (replacing only a GGUF gpt2 wrote; `flag` names it in messages), with
// the first vocab_size tokens of `tok`. 2-D weights take `type` (q8_0: those whose rows are a multiple of
// 32 long, all of GPT-2's), 1-D tensors stay f32 as llama.cpp's converters keep them.
void gguf_save(const GPT2& model, const Tokenizer& tok, const std::string& path, GgufType type, const char* flag);
// A regular file that is a model GGUF gpt2 wrote (its metadata says so); gguf_adapter_is_ours: a LoRA adapter one.
bool gguf_is_ours(const std::string& path);
bool gguf_adapter_is_ours(const std::string& path);
extern const OutputKind kGgufKind, kGgufAdapterKind;
