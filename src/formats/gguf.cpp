// gguf.cpp: see gguf.h. The header is a magic, a version, counts, then key/value pairs and a table of
// tensors (name, dims, type, offset); tensor data follows, each aligned to general.alignment (32 unless
// the file says otherwise). Everything is little-endian.
#include "formats/gguf.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>
#include <unordered_set>

#include "precision/half.h"
#include "platform/platform.h"
#include "platform/util.h"
#include "formats/checkpoint.h"

namespace {

const char kMagic[4] = {'G', 'G', 'U', 'F'};
const uint32_t kVersion = 3;
const uint64_t kMaxEntries = (uint64_t)1 << 24;  // array elements (tokenizer.ggml.tokens: GPT-2's has 50,257)
const uint64_t kMaxKeys = (uint64_t)1 << 16;     // llama.cpp's files have a few dozen
const uint64_t kMaxTensors = (uint64_t)1 << 18;  // GPT-2 XL has 580; a 1000-layer model 12,004
// The fewest bytes one entry takes in the file, so a count is checked against the bytes that remain before
// anything is allocated for it: a key (length, type, a one-byte value), a tensor (name length, dims count, one
// dim, type, offset), a string (its length).
const uint64_t kMinKeyBytes = 8 + 4 + 1, kMinTensorBytes = 8 + 4 + 8 + 4 + 8, kMinStringBytes = 8;
const size_t kMaxKept = 4096;                    // longest string value kept (tokens, names; not templates)
const uint64_t kAlignment = 32;
const char* const kWriterKey = "gpt2cpp.writer";
const char* const kWriter = "gpt2.cpp";

enum ValueType : uint32_t {
    kU8 = 0, kI8, kU16, kI16, kU32, kI32, kF32, kBool, kString, kArray, kU64, kI64, kF64
};

size_t scalar_size(uint32_t type) {
    switch (type) {
        case kU8: case kI8: case kBool: return 1;
        case kU16: case kI16: return 2;
        case kU32: case kI32: case kF32: return 4;
        case kU64: case kI64: case kF64: return 8;
        default: return 0;
    }
}

double scalar_value(uint32_t type, const uint8_t* p) {
    uint8_t u8; int8_t i8; uint16_t u16; int16_t i16; uint32_t u32; int32_t i32; float f32;
    uint64_t u64; int64_t i64; double f64;
    switch (type) {
        case kU8: case kBool: memcpy(&u8, p, 1); return u8;
        case kI8: memcpy(&i8, p, 1); return i8;
        case kU16: memcpy(&u16, p, 2); return u16;
        case kI16: memcpy(&i16, p, 2); return i16;
        case kU32: memcpy(&u32, p, 4); return u32;
        case kI32: memcpy(&i32, p, 4); return i32;
        case kF32: memcpy(&f32, p, 4); return f32;
        case kU64: memcpy(&u64, p, 8); return (double)u64;
        case kI64: memcpy(&i64, p, 8); return (double)i64;
        default: memcpy(&f64, p, 8); return f64;
    }
}

// Bytes of `numel` values of a tensor type; 0 for a type gpt2 does not read (its size is not checked).
uint64_t type_bytes(uint32_t type, uint64_t numel) {
    switch ((GgufType)type) {
        case GgufType::kF32: return 4 * numel;
        case GgufType::kF16: case GgufType::kBF16: return 2 * numel;
        case GgufType::kQ8_0: return numel / kQ8Block * (2 + kQ8Block);
        default: return 0;
    }
}

const char* type_name(uint32_t type) {
    switch ((GgufType)type) {
        case GgufType::kF32: return "F32";
        case GgufType::kF16: return "F16";
        case GgufType::kBF16: return "BF16";
        case GgufType::kQ8_0: return "Q8_0";
        default: return nullptr;
    }
}

// Reads the header front to back through read_at, a window of 1 MiB at a time, so the many small fields
// cost no call each. Every take() is bounded by the file's size.
class Cursor {
public:
    Cursor(const GgufReadAt& read_at, uint64_t size) : read_at_(read_at), size_(size) {}
    uint64_t pos() const { return pos_; }
    uint64_t left() const { return size_ - pos_; }
    bool take(void* dst, size_t n) {
        if (n > left()) return false;
        if (n > kWindow) {
            if (!read_at_(dst, n, pos_)) return false;
        } else {
            if (pos_ < start_ || pos_ + n > start_ + window_.size()) {
                window_.resize((size_t)std::min<uint64_t>(kWindow, left()));
                if (!read_at_(window_.data(), window_.size(), pos_)) return false;
                start_ = pos_;
            }
            memcpy(dst, window_.data() + (pos_ - start_), n);
        }
        pos_ += n;
        return true;
    }
    template <typename T>
    bool get(T* v) {
        return take(v, sizeof(T));
    }
    bool skip(uint64_t n) {
        if (n > left()) return false;
        pos_ += n;
        return true;
    }
    // A string: its length (u64) and bytes; kept when at most `keep` long, else only skipped.
    bool string(std::string* s, size_t keep) {
        uint64_t n;
        if (!get(&n) || n > left()) return false;
        s->clear();
        if (n > keep) return skip(n);
        s->resize((size_t)n);
        return take(&(*s)[0], (size_t)n);
    }

private:
    static constexpr size_t kWindow = (size_t)1 << 20;
    const GgufReadAt& read_at_;
    uint64_t size_, pos_ = 0, start_ = 0;
    std::vector<uint8_t> window_;
};

bool fail(std::string* err, const std::string& what) {
    *err = what;
    return false;
}

// One value of type `type` (the array's elements counted and skipped; nested arrays `depth` deep).
bool read_value(Cursor* c, uint32_t type, GgufValue* v, int depth, std::string* err) {
    v->type = type;
    if (size_t n = scalar_size(type)) {
        uint8_t b[8];
        if (!c->take(b, n)) return fail(err, "value past the end of the file");
        v->number = scalar_value(type, b);
        return true;
    }
    if (type == kString) return c->string(&v->str, kMaxKept) || fail(err, "string past the end of the file");
    if (type != kArray) return fail(err, "unknown value type " + std::to_string(type));
    if (depth > 3) return fail(err, "arrays nested deeper than 3");
    if (!c->get(&v->array_type) || !c->get(&v->array_count)) return fail(err, "array past the end of the file");
    v->array_at = c->pos();
    if (size_t n = scalar_size(v->array_type)) {
        if (v->array_count > c->left() / n) return fail(err, "array past the end of the file");
        return c->skip(v->array_count * n);
    }
    if (v->array_count > std::min(kMaxEntries, c->left() / kMinStringBytes))
        return fail(err, "array of " + std::to_string(v->array_count) + " past the end of the file");
    for (uint64_t i = 0; i < v->array_count; i++) {
        GgufValue e;
        if (!read_value(c, v->array_type, &e, depth + 1, err)) return false;
    }
    return true;
}

bool read_tensor_info(Cursor* c, GgufTensor* t, std::string* err) {
    uint32_t n_dims;
    if (!c->string(&t->name, 65535) || !c->get(&n_dims)) return fail(err, "tensor table past the end of the file");
    if (n_dims < 1 || n_dims > 4) return fail(err, "tensor " + t->name + " has " + std::to_string(n_dims) + " dims");
    t->dims.resize(n_dims);
    uint64_t numel = 1;
    for (uint64_t& d : t->dims) {
        if (!c->get(&d)) return fail(err, "tensor table past the end of the file");
        if (d < 1 || d > ((uint64_t)1 << 48) / numel) return fail(err, "tensor " + t->name + " has a bad shape");
        numel *= d;
    }
    if (!c->get(&t->type) || !c->get(&t->offset)) return fail(err, "tensor table past the end of the file");
    if (t->type == (uint32_t)GgufType::kQ8_0 && t->dims[0] % kQ8Block != 0)
        return fail(err, "tensor " + t->name + " is Q8_0 with rows of " + std::to_string(t->dims[0]) +
                             " values, not a multiple of 32");
    t->bytes = type_bytes(t->type, numel);
    return true;
}

uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

// Every tensor gpt2 can read lies inside the file, aligned, and no two share a name (indexed by name).
bool place_tensors(GgufHeader* h, uint64_t data_start, uint64_t alignment, uint64_t file_size, std::string* err) {
    h->index.reserve(h->tensors.size());
    for (GgufTensor& t : h->tensors) {
        if (!h->index.emplace(t.name, &t - h->tensors.data()).second)
            return fail(err, "tensor " + t.name + " appears twice");
        if (t.offset % alignment != 0)
            return fail(err, "tensor " + t.name + " is not aligned to " + std::to_string(alignment) + " bytes");
        if (data_start > file_size || t.offset > file_size - data_start ||
            t.bytes > file_size - data_start - t.offset)
            return fail(err, "tensor " + t.name + "'s data lies past the end of the file (truncated?)");
        t.offset += data_start;
    }
    return true;
}

// Number of a metadata value that holds an integer (of any width) in [lo, hi].
bool integer_value(const GgufValue* v, double lo, double hi, double* out) {
    if (!v || v->type == kString || v->type == kArray || v->type == kBool || v->type == kF32 || v->type == kF64)
        return false;
    *out = v->number;
    return v->number >= lo && v->number <= hi;
}

int config_int(const GgufHeader& h, const std::string& key, const std::string& path) {
    double v;
    const GgufValue* kv = h.find(key);
    if (!kv) fatal("missing key %s in %s: expected a positive integer", key.c_str(), path.c_str());
    if (!integer_value(kv, 1, 1 << 24, &v))
        fatal("bad value for key %s in %s: expected a positive integer", key.c_str(), path.c_str());
    return (int)v;
}

// dims GGUF stores for one of our tensors: ne[0] is a row's length.
std::vector<uint64_t> gguf_dims(const TensorInfo& t, const GPT2Config& cfg) {
    if (t.cols == 0) return {t.rows};
    if (t.name == "wte") return {t.cols, (uint64_t)cfg.vocab_size};
    return {t.cols, t.rows};
}

std::string dims_str(const std::vector<uint64_t>& d) {
    std::string s = "[";
    for (size_t i = 0; i < d.size(); i++) s += (i ? ", " : "") + std::to_string(d[i]);
    return s + "]";
}

// Converts count values of tensor t, from its first, into dst, a chunk at a time.
void read_tensor(const GgufTensor& t, const GgufReadAt& read_at, const std::string& path, float* dst) {
    const uint64_t numel = t.numel(), chunk = 1 << 16;  // values per read: a multiple of the q8_0 block
    std::vector<uint8_t> buf;
    for (uint64_t first = 0; first < numel; first += chunk) {
        const uint64_t n = std::min(chunk, numel - first), bytes = type_bytes(t.type, n);
        buf.resize((size_t)bytes);
        if (!read_at(buf.data(), (size_t)bytes, t.offset + type_bytes(t.type, first)))
            fatal("cannot read %s: tensor %s is cut short (the file changed or shrank?)", path.c_str(), t.name.c_str());
        float* out = dst + first;
        const uint8_t* p = buf.data();
        switch ((GgufType)t.type) {
            case GgufType::kF32: memcpy(out, p, 4 * n); break;
            case GgufType::kF16:
            case GgufType::kBF16:
                for (uint64_t i = 0; i < n; i++) {
                    uint16_t x;
                    memcpy(&x, p + 2 * i, 2);
                    out[i] = t.type == (uint32_t)GgufType::kF16 ? fp16_to_float(x) : bf16_to_float(x);
                }
                break;
            case GgufType::kQ8_0:
                for (uint64_t b = 0; b < n / kQ8Block; b++, p += 2 + kQ8Block) {
                    uint16_t d;
                    memcpy(&d, p, 2);
                    const float scale = fp16_to_float(d);
                    for (int j = 0; j < kQ8Block; j++) out[b * kQ8Block + j] = scale * (float)(int8_t)p[2 + j];
                }
                break;
        }
    }
}

}  // namespace

uint64_t GgufOutTensor::numel() const {
    uint64_t n = 1;
    for (uint64_t d : dims) n *= d;
    return n;
}

uint64_t GgufTensor::numel() const {
    uint64_t n = 1;
    for (uint64_t d : dims) n *= d;
    return n;
}

const GgufValue* GgufHeader::find(const std::string& key) const {
    auto it = kv.find(key);
    return it == kv.end() ? nullptr : &it->second;
}

const GgufTensor* GgufHeader::tensor(const std::string& name) const {
    auto it = index.find(name);
    return it == index.end() ? nullptr : &tensors[it->second];
}

bool gguf_detect(const uint8_t* data, size_t n) { return n >= 4 && memcmp(data, kMagic, 4) == 0; }

bool gguf_parse(const GgufReadAt& read_at, uint64_t file_size, GgufHeader* h, std::string* err) {
    Cursor c(read_at, file_size);
    h->file_size = file_size;
    char magic[4];
    uint64_t n_tensors, n_kv;
    if (!c.take(magic, 4) || memcmp(magic, kMagic, 4) != 0) return fail(err, "no GGUF magic");
    if (!c.get(&h->version) || !c.get(&n_tensors) || !c.get(&n_kv)) return fail(err, "header past the end of the file");
    if (h->version != kVersion)
        return fail(err, "GGUF version " + std::to_string(h->version) + ", expected 3");
    // each count against what the bytes that remain can hold, before anything is allocated for it
    auto too_many = [&](uint64_t n, const char* what, uint64_t most, uint64_t min_bytes) {
        if (n <= std::min(most, c.left() / min_bytes)) return false;
        return !fail(err, "header claims " + std::to_string(n) + " " + what + ", expected at most " +
                              std::to_string(std::min(most, c.left() / min_bytes)) + " in the " +
                              std::to_string(c.left()) + " bytes that follow");
    };
    if (too_many(n_kv, "keys", kMaxKeys, kMinKeyBytes)) return false;
    for (uint64_t i = 0; i < n_kv; i++) {
        std::string key;
        uint32_t type;
        if (!c.string(&key, 65535) || !c.get(&type)) return fail(err, "metadata past the end of the file");
        GgufValue v;
        if (!read_value(&c, type, &v, 0, err)) return fail(err, "key " + key + ": " + *err);
        if (!h->kv.emplace(key, v).second) return fail(err, "key " + key + " appears twice");
    }
    if (too_many(n_tensors, "tensors", kMaxTensors, kMinTensorBytes)) return false;
    h->tensors.resize((size_t)n_tensors);
    for (GgufTensor& t : h->tensors)
        if (!read_tensor_info(&c, &t, err)) return false;
    double alignment = kAlignment;
    if (const GgufValue* a = h->find("general.alignment"))
        if (!integer_value(a, 1, 1 << 16, &alignment) || ((uint64_t)alignment & ((uint64_t)alignment - 1)))
            return fail(err, "general.alignment is not a power of two up to 65536");
    return place_tensors(h, align_up(c.pos(), (uint64_t)alignment), (uint64_t)alignment, file_size, err);
}

GPT2Config gguf_config(const GgufHeader& h, const std::string& path, std::string* dtype) {
    const char* p = path.c_str();
    const GgufValue* arch = h.find("general.architecture");
    if (!arch || arch->type != kString) fatal("missing key general.architecture in %s: expected \"gpt2\"", p);
    if (arch->str != "gpt2")
        fatal("not a GPT-2 model (%s): general.architecture is \"%s\", expected \"gpt2\"", p, arch->str.c_str());
    if (const GgufValue* type = h.find("general.type"); type && type->type == kString && type->str == "adapter")
        fatal_hint("give it to llama.cpp with its base (--lora FILE)",
                   "not a model (%s): a LoRA adapter (general.type \"adapter\"), expected a GPT-2 model", p);
    const int C = config_int(h, "gpt2.embedding_length", path);
    const GgufValue* eps = h.find("gpt2.attention.layer_norm_epsilon");
    if (!eps || eps->type != kF32) fatal("missing key gpt2.attention.layer_norm_epsilon in %s: expected a float", p);
    if (std::fabs(eps->number - 1e-5) > 1e-9)
        fatal("unsupported value for key gpt2.attention.layer_norm_epsilon in %s: %g, expected 1e-05", p, eps->number);
    if (config_int(h, "gpt2.feed_forward_length", path) != 4 * C)
        fatal("unsupported value for key gpt2.feed_forward_length in %s: expected 4 x %d", p, C);
    const GgufTensor* wte = h.tensor("token_embd.weight");
    if (!wte || wte->dims.size() != 2 || wte->dims[0] != (uint64_t)C || wte->dims[1] > (1 << 24))
        fatal("missing tensor token_embd.weight in %s: expected dims [%d, vocab]", p, C);
    GPT2Config cfg = config_make(config_int(h, "gpt2.context_length", path), (int)wte->dims[1],
                                 config_int(h, "gpt2.block_count", path),
                                 config_int(h, "gpt2.attention.head_count", path), C);
    if (const std::string bad = config_check(cfg, p); !bad.empty()) fatal("%s", bad.c_str());
    if (const GgufValue* tokens = h.find("tokenizer.ggml.tokens"))
        if (tokens->array_count != (uint64_t)cfg.vocab_size)
            fatal("tokenizer and model disagree (%s): tokenizer.ggml.tokens has %llu tokens, token_embd.weight %d", p,
                  (unsigned long long)tokens->array_count, cfg.vocab_size);
    std::string weights, vectors;  // the types of the 2-D and of the 1-D tensors, or "mixed"
    const std::vector<TensorInfo> table = layout_params(cfg);
    for (const TensorInfo& t : table) {
        const GgufTensor* g = h.tensor(t.gguf_name);
        const std::vector<uint64_t> want = gguf_dims(t, cfg);
        if (!g) fatal("missing tensor %s in %s: expected dims %s", t.gguf_name.c_str(), p, dims_str(want).c_str());
        if (g->dims != want)
            fatal("shape mismatch for tensor %s in %s: expected dims %s, got %s", t.gguf_name.c_str(), p,
                  dims_str(want).c_str(), dims_str(g->dims).c_str());
        const char* name = type_name(g->type);
        if (!name)
            fatal("unsupported tensor type for %s in %s: ggml type %u, expected F32, F16, BF16 or Q8_0",
                  t.gguf_name.c_str(), p, g->type);
        std::string& seen = t.cols ? weights : vectors;
        seen = seen.empty() || seen == name ? name : "mixed";
    }
    std::unordered_set<std::string> ours;
    for (const TensorInfo& t : table) ours.insert(t.gguf_name);
    for (const GgufTensor& g : h.tensors) {
        const bool tied_output = g.name == "output.weight" && g.dims == wte->dims && type_name(g.type);
        if (!tied_output && !ours.count(g.name))
            fatal("unknown tensor %s in %s: expected only GPT-2's tensors", g.name.c_str(), p);
    }
    *dtype = weights == vectors ? weights : weights + ", 1-D tensors " + vectors;
    return cfg;
}

void gguf_read_params(const GgufHeader& h, const GgufReadAt& read_at, const std::string& path,
                      const GPT2Config& cfg, float* params) {
    const std::vector<TensorInfo> table = layout_params(cfg);
    for (const TensorInfo& t : table) read_tensor(*h.tensor(t.gguf_name), read_at, path, params + t.offset);
    if (const GgufTensor* out = h.tensor("output.weight")) {
        std::vector<float> w(out->numel());
        read_tensor(*out, read_at, path, w.data());
        const TensorInfo& wte = table[0];
        if (memcmp(w.data(), params + wte.offset, w.size() * sizeof(float)) != 0)
            fatal("untied output.weight in %s: expected it to equal token_embd.weight (GPT-2 ties them)", path.c_str());
    }
}

bool gguf_tokenizer(const GgufHeader& h, const GgufReadAt& read_at, const std::string& path, Tokenizer* tok) {
    const GgufValue *tokens = h.find("tokenizer.ggml.tokens"), *merges = h.find("tokenizer.ggml.merges");
    if (!tokens) return false;
    const GgufValue* model = h.find("tokenizer.ggml.model");
    const char* p = path.c_str();
    if (!model || model->type != kString || model->str != "gpt2")
        fatal_hint("pass --tokenizer DIR", "unsupported tokenizer (%s): tokenizer.ggml.model is %s, expected \"gpt2\"",
                   p, model && model->type == kString ? ("\"" + model->str + "\"").c_str() : "missing");
    auto strings = [](const GgufValue* v) { return v && v->type == kArray && v->array_type == kString; };
    if (!strings(tokens) || !strings(merges))
        fatal("bad tokenizer (%s): expected tokenizer.ggml.tokens and tokenizer.ggml.merges as arrays of strings", p);
    auto elements = [&](const GgufValue* v) {  // read again from the file: gguf_parse checked their bounds
        Cursor c(read_at, h.file_size);
        std::vector<std::string> out((size_t)v->array_count);
        bool ok = c.skip(v->array_at);
        for (std::string& e : out) ok = ok && c.string(&e, kMaxKept);
        if (!ok) fatal("cannot read %s: tokenizer.ggml arrays are cut short (the file changed or shrank?)", p);
        return out;
    };
    tokenizer_from_spellings(tok, elements(tokens), elements(merges), path);
    return true;
}

namespace {

template <typename T>
void put(std::string* buf, T v) {
    buf->append(reinterpret_cast<const char*>(&v), sizeof(v));
}
void put_str(std::string* buf, const std::string& s) {
    put<uint64_t>(buf, s.size());
    *buf += s;
}

}  // namespace

void GgufKeys::key(const std::string& k, uint32_t type) {
    put_str(&buf, k);
    put<uint32_t>(&buf, type);
    count++;
}
void GgufKeys::str(const std::string& k, const std::string& v) { key(k, kString), put_str(&buf, v); }
void GgufKeys::u32(const std::string& k, uint32_t v) { key(k, kU32), put(&buf, v); }
void GgufKeys::f32(const std::string& k, float v) { key(k, kF32), put(&buf, v); }
void GgufKeys::strings(const std::string& k, const std::vector<std::string>& v) {
    key(k, kArray), put<uint32_t>(&buf, kString), put<uint64_t>(&buf, v.size());
    for (const std::string& s : v) put_str(&buf, s);
}
void GgufKeys::i32s(const std::string& k, const std::vector<int32_t>& v) {
    key(k, kArray), put<uint32_t>(&buf, kI32), put<uint64_t>(&buf, v.size());
    for (int32_t x : v) put(&buf, x);
}
void GgufKeys::mark_ours() {
    u32("general.alignment", kAlignment);
    str(kWriterKey, kWriter);
}

namespace {

// llama.cpp's tokenizer keys for GPT-2's BPE over the model's first V tokens: their spellings, their kinds
// (1 normal, 3 control: <|endoftext|>) and the merges whose two sides and result all lie below V.
void tokenizer_keys(GgufKeys* w, const Tokenizer& tok, int V) {
    std::vector<std::string> tokens, merges;
    tokenizer_spellings(tok, V, &tokens, &merges);
    std::vector<int32_t> kinds(V, 1);
    if (V > kTokenizerEot) kinds[kTokenizerEot] = 3;
    w->str("tokenizer.ggml.model", "gpt2");
    w->str("tokenizer.ggml.pre", "gpt-2");
    w->strings("tokenizer.ggml.tokens", tokens);
    w->i32s("tokenizer.ggml.token_type", kinds);
    w->strings("tokenizer.ggml.merges", merges);
    if (V > kTokenizerEot) {
        w->u32("tokenizer.ggml.bos_token_id", kTokenizerEot);
        w->u32("tokenizer.ggml.eos_token_id", kTokenizerEot);
    }
}

// llama.cpp's general.file_type for a file whose weights are `type` ("mostly F16", ...).
uint32_t file_type(GgufType type) {
    switch (type) {
        case GgufType::kF16: return 1;
        case GgufType::kQ8_0: return 7;
        case GgufType::kBF16: return 32;
        default: return 0;
    }
}

// The type a tensor is stored in.
GgufType stored_type(const TensorInfo& t, GgufType type) {
    if (t.cols == 0) return GgufType::kF32;
    if (type == GgufType::kQ8_0 && t.cols % kQ8Block != 0) return GgufType::kF32;
    return type;
}

// n values of src in `type` appended to out; fatal naming the tensor when one does not fit (f16's range).
void encode(const float* src, size_t n, GgufType type, const std::string& name, const std::string& path,
            std::vector<uint8_t>* out) {
    auto half = [&](float x, size_t i) {
        const uint16_t h = type == GgufType::kBF16 ? bf16_round(x) : fp16_round(x);
        if (std::isinf(type == GgufType::kBF16 ? bf16_to_float(h) : fp16_to_float(h)))
            fatal_hint("export as f32 or bf16", "value out of %s range (%s): %s[%zu] is %g", type_name((uint32_t)type),
                       path.c_str(), name.c_str(), i, x);
        return h;
    };
    const size_t at = out->size();
    out->resize(at + type_bytes((uint32_t)type, n));
    uint8_t* p = out->data() + at;
    if (type == GgufType::kF32) {
        memcpy(p, src, 4 * n);
    } else if (type != GgufType::kQ8_0) {
        for (size_t i = 0; i < n; i++) {
            const uint16_t h = half(src[i], i);
            memcpy(p + 2 * i, &h, 2);
        }
    } else {
        for (size_t b = 0; b < n / kQ8Block; b++, p += 2 + kQ8Block) {
            const uint16_t dh = q8_quantize_block(src + b * kQ8Block, (int8_t*)(p + 2));
            if (std::isinf(fp16_to_float(dh)))
                fatal_hint("export as f32 or bf16", "value out of Q8_0 range (%s): %s[%zu..%zu] has a value past %g",
                           path.c_str(), name.c_str(), b * kQ8Block, (b + 1) * kQ8Block - 1, 65504.0 * 127);
            memcpy(p, &dh, 2);
        }
    }
}

}  // namespace

void gguf_write(const std::string& path, const char* flag, const OutputKind& kind, const GgufKeys& keys,
                const std::vector<GgufOutTensor>& tensors) {
    std::string table;  // tensor infos, data offsets aligned
    uint64_t offset = 0;
    for (const GgufOutTensor& t : tensors) {
        put_str(&table, t.name);
        put<uint32_t>(&table, (uint32_t)t.dims.size());
        for (uint64_t d : t.dims) put(&table, d);
        put<uint32_t>(&table, (uint32_t)t.type);
        put(&table, offset);
        offset = align_up(offset + type_bytes((uint32_t)t.type, t.numel()), kAlignment);
    }
    std::string head(kMagic, 4);
    put(&head, kVersion);
    put<uint64_t>(&head, tensors.size());
    put<uint64_t>(&head, keys.count);
    head += keys.buf + table;
    head.resize(align_up(head.size(), kAlignment), '\0');

    OutputFile out(path, flag, kind);
    out.write(head.data(), head.size());
    std::vector<uint8_t> bytes;
    for (const GgufOutTensor& t : tensors) {
        bytes.clear();
        encode(t.data, t.numel(), t.type, t.name, path, &bytes);
        bytes.resize(align_up(bytes.size(), kAlignment), 0);
        out.write(bytes.data(), bytes.size());
    }
    out.publish();
}

void gguf_save(const GPT2& model, const Tokenizer& tok, const std::string& path, GgufType type, const char* flag) {
    const GPT2Config& c = model.cfg;
    if (tok.vocab_size < c.vocab_size)
        fatal("tokenizer and model disagree (%s): tokenizer has %d tokens, model %d", tok.dir.c_str(), tok.vocab_size,
              c.vocab_size);
    checkpoint_check_finite(model, path, "not saving non-finite weights");
    GgufKeys kv;
    kv.str("general.architecture", "gpt2");
    kv.u32("general.file_type", file_type(type));
    kv.mark_ours();
    kv.u32("gpt2.context_length", c.max_seq_len);
    kv.u32("gpt2.embedding_length", c.channels);
    kv.u32("gpt2.feed_forward_length", 4 * c.channels);
    kv.u32("gpt2.block_count", c.num_layers);
    kv.u32("gpt2.attention.head_count", c.num_heads);
    kv.f32("gpt2.attention.layer_norm_epsilon", 1e-5f);
    tokenizer_keys(&kv, tok, c.vocab_size);
    std::vector<GgufOutTensor> tensors;  // wte with the real vocabulary only (gguf_dims)
    for (const TensorInfo& t : model.param_table)
        tensors.push_back({t.gguf_name, gguf_dims(t, c), stored_type(t, type), model.params.data() + t.offset});
    gguf_write(path, flag, kGgufKind, kv, tensors);
}

namespace {

// The parsed header of a regular file gpt2 wrote (its metadata says so); false for any other file.
bool parse_ours(const std::string& path, GgufHeader* h) {
    const int fd = os_open_read(path);
    FileInfo info;
    if (fd < 0) return false;
    std::string err;
    const bool parsed = os_fstat(fd, &info) &&
                        gguf_parse([&](void* dst, size_t n, uint64_t at) { return os_pread(fd, dst, n, at) == (long)n; },
                                   info.size, h, &err);
    os_close(fd);
    const GgufValue* w = parsed ? h->find(kWriterKey) : nullptr;
    return w && w->type == kString && w->str == kWriter;
}

// Whether path is a GGUF gpt2 wrote and a LoRA adapter (general.type "adapter") as `adapter` says.
bool ours_of_type(const std::string& path, bool adapter) {
    GgufHeader h;
    if (!parse_ours(path, &h)) return false;
    const GgufValue* type = h.find("general.type");
    return (type && type->type == kString && type->str == "adapter") == adapter;
}

}  // namespace

bool gguf_is_ours(const std::string& path) { return ours_of_type(path, false); }
bool gguf_adapter_is_ours(const std::string& path) { return ours_of_type(path, true); }

const OutputKind kGgufKind = {"a model GGUF gpt2 wrote", gguf_is_ours};
const OutputKind kGgufAdapterKind = {"a GGUF adapter gpt2 wrote", gguf_adapter_is_ours};
