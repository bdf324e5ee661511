// fuzz_tokenfile.cpp: libFuzzer target for llm.c token files (tokenfile_check, which every
// opener runs). Accepted files must hold exactly the header's count of ids, all below the vocabulary;
// rejections must carry a message naming the file.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/dataloader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const int vocab = 50257;
    size_t n = 0;
    std::string err;
    if (!tokenfile_check(data, size, vocab, "fuzz.bin", &n, &err)) {
        if (err.find("fuzz.bin") == std::string::npos) abort();
        return 0;
    }
    int32_t count;
    memcpy(&count, data + 8, 4);
    if ((size_t)count != n || size != 1024 + 2 * n) abort();
    for (size_t i = 0; i < n; i++) {
        uint16_t id;
        memcpy(&id, data + 1024 + 2 * i, 2);
        if (id >= vocab) abort();
    }
    return 0;
}
