// fuzz_json.cpp: libFuzzer target for the JSON reader (safetensors headers, config.json, encoder.json).
// Any byte string must parse or be rejected with a message, never crash or recurse without bound. On
// success, every string in the tree must survive json_escape -> json_parse unchanged, and the lookups
// config.json reading does (find, is_integer) must be safe. hf_read_config itself exits on
// bad input, so it is covered through these pieces rather than called.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "core/json.h"

static void check_string_roundtrip(const std::string& s) {
    std::string quoted = json_escape(s);
    Json back;
    std::string err;
    if (!json_parse(quoted.data(), quoted.size(), &back, &err) || back.type != Json::STRING || back.str != s) abort();
}

static void walk(const Json& j, int depth) {
    if (depth > 10000) abort();  // the parser's depth limit must hold
    switch (j.type) {
        case Json::STRING: check_string_roundtrip(j.str); break;
        case Json::ARRAY:
            for (const Json& item : j.items) walk(item, depth + 1);
            break;
        case Json::OBJECT:
            for (const auto& m : j.members) {
                check_string_roundtrip(m.first);
                if (j.find(m.first) == nullptr) abort();
                walk(m.second, depth + 1);
            }
            break;
        case Json::NUMBER:
            if (j.is_integer && (double)j.integer != j.number) abort();
            break;
        default: break;
    }
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    Json j;
    std::string err;
    if (!json_parse((const char*)data, size, &j, &err)) {
        if (err.empty()) abort();
        return 0;
    }
    walk(j, 0);
    // The keys config.json reading looks up, as it looks them up.
    for (const char* key : {"n_embd", "n_head", "n_layer", "n_positions", "n_ctx", "vocab_size"}) {
        const Json* v = j.find(key);
        if (v && v->type == Json::NUMBER && v->is_integer) (void)(v->integer > 0 && v->integer < (1 << 30));
    }
    return 0;
}
