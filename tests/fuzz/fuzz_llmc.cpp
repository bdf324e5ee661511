// fuzz_llmc.cpp: libFuzzer target for llm.c model checkpoints (llmc_parse, the non-exiting core of the
// loader). Accepted files must give a geometry whose parameter count matches the file size exactly.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "formats/llmc.h"
#include "core/layout.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::vector<uint8_t> bytes(data, data + size);
    GPT2Config cfg;
    std::vector<float> params;
    int version = 0;
    std::string err;
    if (!llmc_parse(bytes, &cfg, &params, &version, &err)) {
        if (err.empty()) abort();
        return 0;
    }
    if (!llmc_detect(data, size)) abort();
    size_t esize = version == 3 ? 4 : version == 5 ? 2 : 0;
    if (esize == 0) abort();
    size_t n = layout_params_size(layout_params(cfg));
    if (params.size() != n || size != 1024 + n * esize) abort();
    return 0;
}
