// fuzz_safetensors.cpp: libFuzzer target for the safetensors reader. Parses the raw bytes as a file image;
// when the header validates, reads every tensor of a readable dtype as fp32, which must touch only bytes
// inside the tensor's span (AddressSanitizer checks) and yield numel() values.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/safetensors.h"
#include "formats/safetensors_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const bool plugged = (safetensors_plug_in(), true);  // F16, BF16, F64 and I32 read as ./gpt2 reads them
    (void)plugged;
    SafeTensors st;
    std::string err;
    if (!safetensors_parse(&st, std::vector<uint8_t>(data, data + size), &err)) {
        if (err.empty()) abort();  // a rejection always says why
        return 0;
    }
    for (const StTensor& t : st.tensors) {
        if (t.begin > t.end || t.end > size) abort();
        if (t.numel() * safetensors_dtype_size(t.dtype) != t.end - t.begin) abort();
        if (st.find(t.name) == nullptr) abort();
        if (t.dtype == "F32" || t.dtype == "F16" || t.dtype == "BF16" || t.dtype == "F64" || t.dtype == "I32") {
            std::vector<float> v = safetensors_read_f32(st, t);
            if (v.size() != t.numel()) abort();
        }
    }
    for (const auto& kv : st.metadata) (void)st.meta(kv.first);
    return 0;
}
