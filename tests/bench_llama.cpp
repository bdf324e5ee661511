// bench_llama.cpp: the llama_bench case of run_bench, a table in llama-bench's terms: pp512 (a 512-token
// prompt in one pass) and tg128 (128 tokens decoded one at a time from an empty context) of our fp32, bf16
// and int8 beside the real llama.cpp's f32, bf16 and q8_0 (tests/node/llama_oracle.mjs `speed`, through
// node-llama-cpp's prebuilt CPU build) on the same random 124M weights, exported as GGUFs, in one run.
// llama.cpp runs at 1 and 2 threads and keeps its faster; ours at its own thread count. Every figure is the
// best of 3: a shared machine's neighbours only ever slow a run. Ours int8 is as `generate --precision int8`
// runs it (inputs rounded to q8_0 blocks, as llama.cpp's q8_0); ours bf16 needs AVX512_BF16 (else "-").
// Skipped with a note when node, tests/node's packages or the tokenizer (the GGUF carries it) are missing,
// or when BENCH_LLAMA=0. The GGUFs go to a temporary directory that is removed afterwards.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "platform/util.h"
#include "bench.h"
#include "formats/gguf.h"
#include "core/model.h"
#include "inference/generate.h"
#include "inference/infer.h"
#include "text/tokenizer.h"

namespace {

const int kPP = 512, kTG = 128, kReps = 3;

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

struct Speed {
    double pp = 0, tg = 0;  // tokens/s
    int pp_threads = 0, tg_threads = 0;
};

// A number field of the JSON line `out`, or 0 when absent.
double json_field(const std::string& out, const std::string& name) {
    const size_t at = out.find("\"" + name + "\":");
    return at == std::string::npos ? 0 : atof(out.c_str() + at + name.size() + 3);
}

// llama.cpp's pp and tg on `gguf`, the faster of 1 and 2 threads each; zeros when neither ran (said why).
Speed llama_speed(const std::string& gguf) {
    Speed best;
    for (int threads : {1, 2}) {
        const std::string cmd = "node tests/node/llama_oracle.mjs speed '" + gguf + "' --threads " +
                                std::to_string(threads) + " --pp " + std::to_string(kPP) + " --tg " +
                                std::to_string(kTG) + " --reps " + std::to_string(kReps) + " 2>&1";
        fflush(stdout);
        FILE* p = popen(cmd.c_str(), "r");
        if (!p) fatal("cannot start node for llama.cpp: %s", cmd.c_str());
        std::string out;
        char buf[1024];
        while (fgets(buf, sizeof buf, p)) out += buf;
        const int status = pclose(p);
        const double pp = json_field(out, "pp_tokens_per_s"), tg = json_field(out, "tg_tokens_per_s");
        if (status != 0 || pp <= 0 || tg <= 0) {  // said; the other thread count's figures stand
            printf("  llama.cpp did not run on %s at %d thread%s (status %d): %s", gguf.c_str(), threads,
                   threads == 1 ? "" : "s", WIFEXITED(status) ? WEXITSTATUS(status) : -1, out.c_str());
            continue;
        }
        if (pp > best.pp) best.pp = pp, best.pp_threads = threads;
        if (tg > best.tg) best.tg = tg, best.tg_threads = threads;
    }
    return best;
}

// Ours on `model`: pp as generate's prompt pass, tg as its decoding from a 1-token prompt; best of kReps.
Speed our_speed(const GPT2& model) {
    Speed best;
    std::vector<int> prompt(kPP);
    for (int i = 0; i < kPP; i++) prompt[i] = (i * 7919) % model.cfg.vocab_size;
    std::vector<float> logits(model.cfg.padded_vocab_size);
    GenerateOptions opts;
    opts.max_tokens = kTG + 1;  // the first token comes from the prompt's pass; then kTG one-token passes
    opts.sampler.temperature = 0;
    opts.stop_token = -1;
    for (int rep = 0; rep < kReps; rep++) {
        InferState st;
        infer_init(&st, model, kPP, kPP);
        const double t0 = time_now_s();
        infer_forward(&st, model, prompt.data(), kPP, logits.data(), false);
        best.pp = std::max(best.pp, kPP / (time_now_s() - t0));
        Rng rng(1);
        GenerateStats stats;
        generate(model, {prompt[0]}, opts, &rng, [](int) {}, &stats);
        best.tg = std::max(best.tg, kTG / stats.decode_s);
    }
    return best;
}

void print_row(const char* ours_name, const char* theirs_name, const char* test, double ours, double theirs,
               int threads) {
    char o[32] = "-", t[32] = "-", r[32] = "-";
    if (ours > 0) snprintf(o, sizeof o, "%.1f", ours);
    if (theirs > 0) snprintf(t, sizeof t, "%.1f (%d)", theirs, threads);
    if (ours > 0 && theirs > 0) snprintf(r, sizeof r, "%.2fx", ours / theirs);
    const std::string name = std::string(ours_name) + " / " + theirs_name;
    printf("| %-16s | %-5s | %8s | %-16s | %-7s |\n", name.c_str(), test, o, t, r);
}

}  // namespace

void bench_llama() {
    const std::string why = missing();
    if (!why.empty()) {
        printf("llama.cpp: skipped (%s)\n", why.c_str());
        return;
    }
    Tokenizer tok;
    tokenizer_load(&tok, tokenizer_default_dir());
    char dir[] = "/tmp/gpt2-bench-llama-XXXXXX";
    if (!mkdtemp(dir)) fatal("cannot create a temporary directory for the GGUFs: %s", dir);
    struct Row {
        const char *ours, *theirs;
        Precision prec;
        GgufType type;
    } rows[] = {{"fp32", "f32", Precision::kFp32, GgufType::kF32},
                {"bf16", "bf16", Precision::kBf16, GgufType::kBF16},
                {"int8", "q8_0", Precision::kInt8, GgufType::kQ8_0}};
    std::vector<Speed> ours, theirs;
    for (const Row& row : rows) {
        GPT2 model;  // the decode cases' model: same geometry, same seed
        gpt2_build(&model, config_make(1024, 50257, 12, 12, 768));
        gpt2_init_random(&model, 1);
        const std::string gguf = std::string(dir) + "/gpt2-124m-" + row.theirs + ".gguf";
        gguf_save(model, tok, gguf, row.type, "bench");
        theirs.push_back(llama_speed(gguf));
        unlink(gguf.c_str());
        if (row.prec == Precision::kBf16 && !bf16_supported()) {
            ours.push_back(Speed());
            continue;
        }
        gpt2_set_precision(&model, row.prec);
        if (row.prec == Precision::kInt8) gpt2_round_inputs_q8(&model);  // as generate --precision int8 runs
        ours.push_back(our_speed(model));
    }
    rmdir(dir);
    printf("124M, random weights; tokens/s, best of %d; llama.cpp at its faster thread count (in brackets)%s\n", kReps,
           bf16_supported() ? "" : "; ours bf16 needs AVX512_BF16");
    printf("| ours / llama.cpp | test  | ours t/s | llama.cpp t/s    | ratio   |\n");
    printf("|------------------|-------|----------|------------------|---------|\n");
    for (size_t i = 0; i < ours.size(); i++) {
        print_row(rows[i].ours, rows[i].theirs, "pp512", ours[i].pp, theirs[i].pp, theirs[i].pp_threads);
        print_row(rows[i].ours, rows[i].theirs, "tg128", ours[i].tg, theirs[i].tg, theirs[i].tg_threads);
    }
}
