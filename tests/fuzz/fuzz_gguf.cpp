// fuzz_gguf.cpp: libFuzzer target for GGUF headers (gguf_parse, the non-exiting core of the loader).
// An accepted header must place every tensor gpt2 can read inside the file, and name no tensor twice.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>

#include "formats/gguf.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    GgufHeader h;
    std::string err;
    const bool ok = gguf_parse(
        [&](void* dst, size_t n, uint64_t at) {
            if (at > size || n > size - at) return false;
            memcpy(dst, data + at, n);
            return true;
        },
        size, &h, &err);
    if (!ok) {
        if (err.empty()) abort();
        return 0;
    }
    if (!gguf_detect(data, size)) abort();
    std::set<std::string> names;
    for (const GgufTensor& t : h.tensors) {
        if (!names.insert(t.name).second) abort();
        if (t.offset > size || t.bytes > size - t.offset) abort();
    }
    return 0;
}
