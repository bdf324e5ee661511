// safetensors.cpp: see safetensors.h. Format reference: huggingface/safetensors README.
#include "core/safetensors.h"

#include <algorithm>
#include <cassert>
#include <cstring>
#include <memory>

#include "core/error.h"
#include "core/json.h"

const StTensor* SafeTensors::find(const std::string& name) const {
    auto it = std::find_if(tensors.begin(), tensors.end(), [&](const StTensor& t) { return t.name == name; });
    return it == tensors.end() ? nullptr : &*it;
}

std::string SafeTensors::meta(const std::string& key) const {
    auto it = std::find_if(metadata.begin(), metadata.end(), [&](const auto& kv) { return kv.first == key; });
    return it == metadata.end() ? "" : it->second;
}

size_t safetensors_dtype_size(const std::string& dtype) {
    static const std::pair<const char*, size_t> kSizes[] = {
        {"F64", 8}, {"F32", 4}, {"F16", 2},  {"BF16", 2}, {"I64", 8}, {"I32", 4}, {"I16", 2},
        {"I8", 1},  {"U8", 1},  {"BOOL", 1}, {"U16", 2},  {"U32", 4}, {"U64", 8},
    };
    for (const auto& s : kSizes)
        if (dtype == s.first) return s.second;
    return 0;
}

static bool parse_fail(std::string* err, const std::string& msg) {
    if (err) *err = msg;
    return false;
}

bool safetensors_header_length(const uint8_t* first8, size_t file_size, uint64_t* len, std::string* err) {
    if (file_size < 8) return parse_fail(err, "file shorter than the 8-byte header length");
    uint64_t header_len = 0;
    for (int i = 7; i >= 0; i--) header_len = header_len << 8 | first8[i];
    if (header_len > file_size - 8)
        return parse_fail(err, "header length " + std::to_string(header_len) + " runs past the end of the file (" +
                                   std::to_string(file_size) + " bytes)");
    *len = header_len;
    return true;
}

// One tensor's header entry: dtype known, shape x dtype size equal to a byte span inside the data section.
static bool parse_tensor_entry(const std::string& name, const Json& v, size_t data_start, size_t data_size, StTensor* t,
                               std::string* err) {
    t->name = name;
    const Json *dtype = v.find("dtype"), *shape = v.find("shape"), *offsets = v.find("data_offsets");
    if (!dtype || dtype->type != Json::STRING || !shape || shape->type != Json::ARRAY || !offsets ||
        offsets->type != Json::ARRAY || offsets->items.size() != 2)
        return parse_fail(err, "tensor " + name + ": expected dtype, shape and data_offsets [begin, end]");
    t->dtype = dtype->str;
    size_t esize = safetensors_dtype_size(t->dtype);
    if (esize == 0) return parse_fail(err, "tensor " + name + ": unknown dtype " + t->dtype);
    // numel * esize in 128 bits: each factor is < 2^63 and the product is capped at 2^64 before the next
    unsigned __int128 bytes_needed = esize;
    auto is_count = [](const Json& j) { return j.is_integer && j.integer >= 0; };  // is_integer: a NUMBER
    for (const Json& d : shape->items) {
        if (!is_count(d)) return parse_fail(err, "tensor " + name + ": shape entries must be non-negative integers");
        t->shape.push_back(d.integer);
        bytes_needed *= (uint64_t)d.integer;
        if (bytes_needed > (unsigned __int128)UINT64_MAX)
            return parse_fail(err, "tensor " + name + ": shape too large");
    }
    if (!std::all_of(offsets->items.begin(), offsets->items.end(), is_count))
        return parse_fail(err, "tensor " + name + ": data_offsets must be non-negative integers");
    uint64_t b = (uint64_t)offsets->items[0].integer, e = (uint64_t)offsets->items[1].integer;
    if (b > e || e > data_size)
        return parse_fail(err, "tensor " + name + ": data_offsets [" + std::to_string(b) + ", " + std::to_string(e) +
                                   "] outside the data section of " + std::to_string(data_size) + " bytes");
    if (bytes_needed != (unsigned __int128)(e - b))
        return parse_fail(
            err, "tensor " + name + ": shape x dtype size does not match its byte span of " + std::to_string(e - b));
    t->begin = data_start + b, t->end = data_start + e;
    return true;
}

bool safetensors_parse_header(SafeTensors* st, const uint8_t* data, size_t n, size_t file_size, std::string* err) {
    st->tensors.clear(), st->metadata.clear();
    uint64_t header_len = 0;
    if (n < 8) return parse_fail(err, "file shorter than the 8-byte header length");
    if (!safetensors_header_length(data, file_size, &header_len, err)) return false;
    if (header_len > n - 8) return parse_fail(err, "header cut short");
    Json header;
    std::string jerr;
    if (!json_parse(reinterpret_cast<const char*>(data) + 8, header_len, &header, &jerr))
        return parse_fail(err, "malformed JSON header: " + jerr);
    if (header.type != Json::OBJECT) return parse_fail(err, "JSON header is not an object");
    const size_t data_start = 8 + header_len, data_size = file_size - data_start;
    for (const auto& [name, v] : header.members) {
        if (name == "__metadata__") {
            if (v.type != Json::OBJECT) return parse_fail(err, "__metadata__ is not an object");
            for (const auto& [key, value] : v.members) {
                if (value.type != Json::STRING) return parse_fail(err, "__metadata__ value is not a string");
                st->metadata.push_back({key, value.str});
            }
            continue;
        }
        StTensor t;
        if (!parse_tensor_entry(name, v, data_start, data_size, &t, err)) return false;
        st->tensors.push_back(std::move(t));
    }
    // From the data section's start to the file's end, as the official reader checks: no overlap, no hole.
    std::vector<const StTensor*> sorted;
    for (const StTensor& t : st->tensors) sorted.push_back(&t);
    std::sort(sorted.begin(), sorted.end(), [](const StTensor* x, const StTensor* y) {
        return x->begin != y->begin ? x->begin < y->begin : x->end < y->end;
    });
    size_t expect = data_start;
    for (size_t i = 0; i < sorted.size(); i++) {
        if (sorted[i]->begin < expect)
            return parse_fail(err, "tensors " + sorted[i - 1]->name + " and " + sorted[i]->name + " overlap");
        if (sorted[i]->begin > expect)
            return parse_fail(err, "hole of " + std::to_string(sorted[i]->begin - expect) + " bytes before tensor " +
                                       sorted[i]->name + ": expected tensors laid end to end");
        expect = sorted[i]->end;
    }
    if (expect != file_size)
        return parse_fail(err, std::to_string(file_size - expect) +
                                   " bytes after the last tensor: expected the data section to end the file");
    return true;
}

bool safetensors_parse(SafeTensors* st, std::vector<uint8_t> bytes, std::string* err) {
    if (!safetensors_parse_header(st, bytes.data(), bytes.size(), bytes.size(), err)) return false;
    auto image = std::make_shared<const std::vector<uint8_t>>(std::move(bytes));
    st->read_at = [image](const StTensor&, size_t at, size_t n, void* out) {
        if (n) memcpy(out, image->data() + at, n);
    };
    return true;
}

void safetensors_load(SafeTensors* st, const std::string& path) {
    std::string err;
    st->path = path;
    if (!safetensors_parse(st, read_whole_file(path, SIZE_MAX), &err))
        fatal("corrupt safetensors file (%s): %s", path.c_str(), err.c_str());
}

void safetensors_read_bytes(const SafeTensors& st, const StTensor& t, size_t first, size_t n, void* out) {
    assert(first + n <= t.end - t.begin && "a span inside the tensor");
    assert(st.read_at && "a parsed file (safetensors_parse) or a header-only load");
    st.read_at(t, t.begin + first, n, out);
}

void safetensors_read_into(const SafeTensors& st, const StTensor& t, float* out) {
    if (t.dtype == "F32") return safetensors_read_bytes(st, t, 0, t.numel() * 4, out);
    if (!safetensors_convert)
        fatal("unsupported dtype for tensor %s (%s): expected F32, got %s", t.name.c_str(), st.path.c_str(),
              t.dtype.c_str());
    safetensors_convert(st, t, out);
}

std::vector<float> safetensors_read_f32(const SafeTensors& st, const StTensor& t) {
    std::vector<float> out(t.numel());
    safetensors_read_into(st, t, out.data());
    return out;
}

void safetensors_write(const ByteSink& out, const std::vector<StWriteItem>& items,
                       const std::vector<std::pair<std::string, std::string>>& metadata) {
    std::string header = "{";
    if (!metadata.empty()) {
        header += "\"__metadata__\":{";
        for (size_t i = 0; i < metadata.size(); i++)
            header += (i ? "," : "") + json_escape(metadata[i].first) + ":" + json_escape(metadata[i].second);
        header += "}";
    }
    size_t offset = 0;
    std::vector<size_t> sizes;
    for (const StWriteItem& it : items) {
        size_t n = safetensors_dtype_size(it.dtype);  // times the shape below: the tensor's bytes
        assert(n > 0 && "safetensors_write of an unknown dtype");
        std::string shape;
        for (size_t d = 0; d < it.shape.size(); d++) {
            n *= (size_t)it.shape[d];
            shape += (d ? "," : "") + std::to_string(it.shape[d]);
        }
        if (header.size() > 1) header += ",";
        header += json_escape(it.name) + ":{\"dtype\":\"" + it.dtype + "\",\"shape\":[" + shape +
                  "],\"data_offsets\":[" + std::to_string(offset) + "," + std::to_string(offset + n) + "]}";
        sizes.push_back(n);
        offset += n;
    }
    header += "}";
    while (header.size() % 8 != 0) header += ' ';
    uint8_t len[8];
    for (int i = 0; i < 8; i++) len[i] = (uint8_t)((uint64_t)header.size() >> (8 * i));
    out(len, 8);
    out(header.data(), header.size());
    std::vector<uint8_t> piece((size_t)4 << 20);  // what fill makes, 4 MiB at a time
    for (size_t i = 0; i < items.size(); i++) {
        const size_t esize = safetensors_dtype_size(items[i].dtype), per = piece.size() / esize;
        for (size_t first = 0; first * esize < sizes[i]; first += per) {
            const size_t count = std::min(per, sizes[i] / esize - first);
            if (items[i].fill) items[i].fill(first, count, piece.data());
            out(items[i].fill ? piece.data() : static_cast<const uint8_t*>(items[i].data) + first * esize,
                count * esize);
        }
    }
}
