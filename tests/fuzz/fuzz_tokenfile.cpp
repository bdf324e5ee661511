// fuzz_tokenfile.cpp: libFuzzer target for llm.c token files (tokenfile_parse: tokenfile_check, which
// every opener runs, and a copy). Accepted files must hold exactly the header's count of ids, all below the vocabulary,
// and write back byte for byte; rejections must carry a message naming the file.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/tokenfile.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const int vocab = 50257;
    std::vector<uint16_t> tokens;
    std::string err;
    if (!tokenfile_parse(data, size, vocab, "fuzz.bin", &tokens, &err)) {
        if (err.find("fuzz.bin") == std::string::npos) abort();
        return 0;
    }
    int32_t count;
    memcpy(&count, data + 8, 4);
    if ((size_t)count != tokens.size() || size != 1024 + 2 * tokens.size()) abort();
    for (size_t i = 0; i < tokens.size(); i++)
        if (tokens[i] >= vocab || memcmp(&tokens[i], data + 1024 + 2 * i, 2) != 0) abort();
    return 0;
}
