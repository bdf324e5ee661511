// bench_tokenizer.cpp: single-threaded GPT-2 encode throughput on tiny shakespeare: the first run with a
// cold piece cache, then the median of 5 runs with a warm one. Reads the tokenizer from
// tokenizer_default_dir() and the text from $GPT2_DATA_DIR or data/ (either tinyshakespeare.txt or
// tinyshakespeare/input.txt); prints what is missing instead of timing.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "platform/util.h"
#include "bench.h"
#include "text/tokenizer.h"

static std::string find_shakespeare() {
    const char* env = getenv("GPT2_DATA_DIR");
    std::string root = env && env[0] ? env : "data";
    for (const char* rel : {"tinyshakespeare.txt", "tinyshakespeare/input.txt"}) {
        std::string p = path_join(root, rel);
        if (file_exists(p)) return p;
    }
    return "";
}

void bench_tokenizer_encode() {
    std::string dir = tokenizer_default_dir(), path = find_shakespeare();
    if (!dir_exists(dir) || path.empty()) {
        printf("  skipped: tokenizer (%s) or tiny shakespeare not found; set GPT2_DATA_DIR or run `make data`\n",
               dir.c_str());
        return;
    }
    double t0 = time_now_s();
    Tokenizer tok;
    tokenizer_load(&tok, dir);
    double load_s = time_now_s() - t0;
    std::vector<uint8_t> bytes = file_read(path);
    std::string text(bytes.begin(), bytes.end());
    double mb = text.size() / 1e6;

    t0 = time_now_s();
    size_t n_tokens = tokenizer_encode(&tok, text).size();
    double cold_s = time_now_s() - t0;
    std::vector<double> warm;
    for (int r = 0; r < 5; r++) {
        t0 = time_now_s();
        size_t n = tokenizer_encode(&tok, text).size();
        warm.push_back(time_now_s() - t0);
        if (n != n_tokens) printf("  warning: token count changed between runs (%zu vs %zu)\n", n, n_tokens);
    }
    std::sort(warm.begin(), warm.end());
    double med = warm[warm.size() / 2];
    printf("  load tokenizer: %.1f ms\n", load_s * 1e3);
    printf("  %s: %.2f MB, %zu tokens\n", path.c_str(), mb, n_tokens);
    printf("  encode, cold cache: %.1f ms = %.1f MB/s\n", cold_s * 1e3, mb / cold_s);
    printf("  encode, warm cache: %.1f ms = %.1f MB/s (median of 5)\n", med * 1e3, mb / med);
}
