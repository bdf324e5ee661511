// fuzz_tokenizer.cpp: libFuzzer target for GPT-2's byte-level BPE. The first byte picks a mode:
//   even: encode the rest as text; every id must be a real, non-<|endoftext|> token, decode(encode(x)) == x,
//         the pre-tokenizer's pieces must concatenate to x, and the streaming decoder must agree.
//   odd:  read the rest as little-endian uint16 ids (mod the vocabulary) and check that the streaming
//         decoder's pushes plus flush equal tokenizer_decode.
// Loads the GPT-2 tokenizer once from $GPT2_DATA_DIR/gpt2 or data/gpt2 (fatal if missing).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "text/tokenizer.h"

static Tokenizer g_tok;

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
    tokenizer_load(&g_tok, tokenizer_default_dir());
    return 0;
}

static std::string stream_decode(const std::vector<int>& ids) {
    TokenDecoder dec(g_tok);
    std::string out;
    for (int id : ids) out += dec.push(id);
    return out + dec.flush();
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    const uint8_t mode = data[0];
    data++, size--;
    if (mode % 2 == 0) {
        std::string text((const char*)data, size);
        std::vector<int> ids = tokenizer_encode(&g_tok, text);
        for (int id : ids)
            if (id < 0 || id >= g_tok.vocab_size || id == kTokenizerEot) abort();
        if (tokenizer_decode(g_tok, ids) != text) {
            fprintf(stderr, "round trip failed for %zu bytes\n", size);
            abort();
        }
        std::string joined;
        for (const std::string& piece : tokenizer_pretokenize(text)) {
            if (piece.empty()) abort();
            joined += piece;
        }
        if (joined != text) abort();
        if (stream_decode(ids) != text) abort();
    } else {
        std::vector<int> ids;
        for (size_t i = 0; i + 1 < size; i += 2) ids.push_back((data[i] | data[i + 1] << 8) % g_tok.vocab_size);
        if (stream_decode(ids) != tokenizer_decode(g_tok, ids)) abort();
    }
    return 0;
}
