// fuzz_openai.cpp: libFuzzer target for serve's request reader (serve/openai.h): any body must be read or refused
// with a message, never crash; a request read must hold what the scheduler assumes (prompts in the vocabulary
// and within the context beside max_tokens, choices and stops within their bounds), and every response shape
// built from it must be valid JSON. The first byte picks completions or chat.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "core/json.h"
#include "serve/openai.h"
#include "text/tokenizer.h"

namespace {

const int kContext = 64, kVocab = 300;

// A byte-level tokenizer (one token per byte, no merges): text prompts of any bytes encode.
Tokenizer* byte_tokenizer() {
    static Tokenizer* tok = [] {
        auto* t = new Tokenizer();
        std::vector<std::string> spellings;
        for (int b = 0; b < 256; b++) spellings.push_back(tokenizer_spelling(std::string(1, (char)b)));
        tokenizer_from_spellings(t, spellings, {}, "fuzz");
        return t;
    }();
    return tok;
}

void must_parse(const std::string& json) {
    Json j;
    std::string err;
    if (!json_parse(json.data(), json.size(), &j, &err)) abort();
}

void check(const CompletionRequest& r) {
    if (r.prompts.empty() || r.n < 1 || (int)r.prompts.size() * r.n > 16 || r.stop.size() > 4) abort();
    for (const auto& p : r.prompts) {
        if (p.empty() || (int)p.size() + r.max_tokens > kContext) abort();
        for (int id : p)
            if (id < 0 || id >= kVocab) abort();
    }
    if (r.max_tokens < 0 || (r.max_tokens == 0 && !r.echo) || r.logprobs > 20) abort();
    Choice c;
    c.text = "x\xff", c.finish_reason = "stop";
    if (r.logprobs >= 0) c.tokens = {"\xe2"}, c.token_logprobs = {-0.5}, c.top_logprobs = {{{"a", -1}}}, c.text_offset = {0};
    must_parse(openai_response(r, "id", "m", 1, {c}, Usage{3, 4}));
    must_parse(openai_chunk(r, "id", "m", 1, 0, "y\x80", "", true, r.logprobs >= 0 ? &c : nullptr));
    must_parse(openai_usage_chunk(r, "id", "m", 1, Usage{1, 2}));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    const bool chat = data[0] & 1;
    Json body;
    std::string err;
    if (!json_parse((const char*)data + 1, size - 1, &body, &err)) return 0;
    CompletionRequest r;
    err = openai_read_request(body, chat, byte_tokenizer(), kContext, kVocab, &r);
    if (err.empty()) check(r);
    else must_parse(openai_error(400, err, err));
    return 0;
}
