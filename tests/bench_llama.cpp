// bench_llama.cpp: the llama_decode case of run_bench: the random 124M model of the decode cases, exported
// as a q8_0 GGUF, decoded by the real llama.cpp (tests/node/llama_oracle.mjs through node-llama-cpp's
// prebuilt CPU build) at 1 and 2 threads after the same 64-token prompt, 128 greedy tokens each; then our
// int8 decode of the same weights (decode_int8, kept by this run) against llama.cpp's best thread count.
// Skipped with a note when node, tests/node's packages or the tokenizer (the GGUF carries it) are missing,
// or when BENCH_LLAMA=0. The GGUF goes to a temporary directory that is removed afterwards.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "platform/util.h"
#include "bench.h"
#include "formats/gguf.h"
#include "core/model.h"
#include "text/tokenizer.h"

namespace {

const int kPrompt = 64, kThreads[] = {1, 2};

// Why llama.cpp cannot run here, or "" when it can.
std::string missing() {
    const char* on = getenv("BENCH_LLAMA");
    if (on && std::string(on) == "0") return "BENCH_LLAMA=0";
    if (system("node --version >/dev/null 2>&1") != 0) return "node not found";
    if (!file_exists("tests/node/node_modules/node-llama-cpp/package.json"))
        return "tests/node's packages not installed (make node-deps; run from the repository root)";
    if (!tokenizer_files_present(tokenizer_default_dir()))
        return "tokenizer files not found (set GPT2_DATA_DIR): the GGUF carries the tokenizer";
    return "";
}

// llama.cpp's decode tok/s for `gguf` at `threads`, echoing its line; 0 when it failed (said why).
double llama_tok_s(const std::string& gguf, const std::string& prompt_ids, int threads) {
    const std::string cmd = "node tests/node/llama_oracle.mjs bench '" + gguf + "' --threads " +
                            std::to_string(threads) + " --n 128 --prompt-ids " + prompt_ids + " 2>&1";
    fflush(stdout);
    FILE* p = popen(cmd.c_str(), "r");
    if (!p) fatal("cannot start node for llama.cpp: %s", cmd.c_str());
    std::string out;
    char buf[1024];
    while (fgets(buf, sizeof buf, p)) out += buf;
    const int status = pclose(p);
    const size_t at = out.find("\"decode_tokens_per_s\":");
    if (status != 0 || at == std::string::npos) {
        printf("  llama.cpp did not run (status %d): %s", WIFEXITED(status) ? WEXITSTATUS(status) : -1, out.c_str());
        return 0;
    }
    const double tok_s = atof(out.c_str() + at + 22);
    printf("decode 124M llama.cpp q8_0, %d-token prompt, %d thread%s: %.1f tok/s (128 tokens)\n", kPrompt, threads,
           threads == 1 ? "" : "s", tok_s);
    return tok_s;
}

}  // namespace

void bench_llama_decode() {
    const std::string why = missing();
    if (!why.empty()) {
        printf("llama.cpp decode: skipped (%s)\n", why.c_str());
        return;
    }
    GPT2 model;  // the decode cases' model: same geometry, same seed
    gpt2_build(&model, config_make(1024, 50257, 12, 12, 768));
    gpt2_init_random(&model, 1);
    Tokenizer tok;
    tokenizer_load(&tok, tokenizer_default_dir());
    char dir[] = "/tmp/gpt2-bench-llama-XXXXXX";
    if (!mkdtemp(dir)) fatal("cannot create a temporary directory for the GGUF: %s", dir);
    const std::string gguf = std::string(dir) + "/gpt2-124m-q8_0.gguf";
    gguf_save(model, tok, gguf, GgufType::kQ8_0, "bench");
    std::string ids;  // the decode cases' prompt
    for (int i = 0; i < kPrompt; i++) ids += (i ? "," : "") + std::to_string((i * 7919) % 50257);
    double best = 0;
    int best_threads = 0;
    for (int threads : kThreads) {
        const double t = llama_tok_s(gguf, ids, threads);
        if (t > best) best = t, best_threads = threads;
    }
    unlink(gguf.c_str());
    rmdir(dir);
    const double ours = bench_kept("decode int8 64");
    if (best <= 0) return;
    if (ours <= 0)
        printf("ours int8 / llama.cpp q8_0: no figure of ours in this run (run decode_int8 first)\n");
    else
        printf("ours int8 / llama.cpp q8_0 at its best (%d thread%s): %.2fx (ours %.1f tok/s, llama.cpp %.1f; goal 1.5x)\n",
               best_threads, best_threads == 1 ? "" : "s", ours / best, ours, best);
}
