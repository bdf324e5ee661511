// bench_llama.cpp: the llama_bench case of run_bench, a table in llama-bench's terms: pp512 (a 512-token
// prompt in one pass) and tg128 (128 tokens decoded one at a time from an empty context) of our fp32, bf16
// and int8 beside the real llama.cpp's f32, bf16 and q8_0 (tests/node/llama_oracle.mjs `speed`, through
// node-llama-cpp's prebuilt CPU build) on the same random 124M weights, exported as GGUFs, in one run.
// llama.cpp runs at 1 and 2 threads and keeps its faster; ours at its own thread count. Every figure is the
// best of 3: a shared machine's neighbours only ever slow a run. Ours int8 is as `generate --precision int8`
// runs it (inputs rounded to q8_0 blocks, as llama.cpp's q8_0); ours bf16 needs AVX512_BF16 (else "-").
// And decode_batch_llama: ours int8 decoding 1, 4, 8 and 16 sequences together (infer_decode, as `serve` runs
// them) beside llama.cpp's batching on the q8_0 GGUF: the sequences of one context, each step's tokens in one
// llama_decode (llama_oracle.mjs `batch`, which counts the calls, so a step that was not batched is said).
// Skipped with a note when node (or a Node older than 20), tests/node's packages or the tokenizer (the GGUF
// carries it) are missing, or when BENCH_LLAMA=0. The GGUFs go to a temporary directory removed afterwards.
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

// What `cmd` printed (stdout and stderr), and its exit status in *status.
std::string run_command(const std::string& cmd, int* status) {
    fflush(stdout);
    FILE* p = popen((cmd + " 2>&1").c_str(), "r");
    if (!p) fatal("cannot start a shell for: %s", cmd.c_str());
    std::string out;
    char buf[1024];
    while (fgets(buf, sizeof buf, p)) out += buf;
    *status = pclose(p);
    return out;
}

// Why llama.cpp cannot run here, or "" when it can: the reasons of tests/lib.sh's llama_oracle_unusable, and
// what this case itself needs.
std::string missing() {
    const char* on = getenv("BENCH_LLAMA");
    if (on && std::string(on) == "0") return "BENCH_LLAMA=0";
    int status = 0;
    std::string version = run_command("node --version", &status);
    if (status != 0) return "node not found";
    if (!version.empty() && version.back() == '\n') version.pop_back();
    if (atoi(version.c_str() + 1) < 20)  // "v20.1.0": node-llama-cpp 3.22's floor (Debian 12 has Node 18)
        return "llama.cpp's oracle (node-llama-cpp 3.22) needs Node >= 20; this Node is " + version;
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
                                std::to_string(kTG) + " --reps " + std::to_string(kReps);
        int status = 0;
        const std::string out = run_command(cmd, &status);
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

namespace {

const int kBatchSteps = 32;  // as decode_batch_int8's

// llama.cpp's figures for n sequences of one context decoded together (llama_oracle.mjs batch).
struct Batch {
    double tok_s = 0;  // the decode steps' aggregate tokens/s, median of 3
    int threads = 0;
    int steps = 0, calls = 0, fewest = 0, most = 0;  // timed steps, their llama_decode calls, tokens in one
};

// llama.cpp's n sequences on `gguf` at 1 and at 2 threads, each said as measured; the faster, or a zero tok_s
// when neither ran (said why).
Batch llama_batch(const std::string& gguf, int n) {
    Batch best;
    for (int threads : {1, 2}) {
        const std::string cmd = "node tests/node/llama_oracle.mjs batch '" + gguf + "' --threads " +
                                std::to_string(threads) + " --sequences " + std::to_string(n) + " --tokens " +
                                std::to_string(kBatchSteps) + " --reps 3";
        int status = 0;
        const std::string out = run_command(cmd, &status);
        Batch b;
        b.tok_s = json_field(out, "decode_tokens_per_s"), b.threads = threads;
        b.steps = (int)json_field(out, "decode_steps"), b.calls = (int)json_field(out, "llama_decode_calls");
        b.fewest = (int)json_field(out, "fewest_tokens_per_call");
        b.most = (int)json_field(out, "most_tokens_per_call");
        if (status != 0 || b.tok_s <= 0) {
            printf("  llama.cpp did not run %d sequences at %d thread%s (status %d): %s", n, threads,
                   threads == 1 ? "" : "s", WIFEXITED(status) ? WEXITSTATUS(status) : -1, out.c_str());
            continue;
        }
        // one llama_decode of n tokens per step is what batching means; anything else is said beside the figure
        const bool batched = b.calls == b.steps && b.fewest == n && b.most == n;
        printf("llama.cpp q8_0, %2d sequence%s together, %d thread%s: %.1f tok/s aggregate; its %d timed steps took "
               "%d llama_decode calls of %d to %d tokens%s\n",
               n, n == 1 ? "" : "s", threads, threads == 1 ? "" : "s", b.tok_s, b.steps, b.calls, b.fewest, b.most,
               batched ? "" : " (NOT one call of all the sequences per step)");
        if (b.tok_s > best.tok_s) best = b;
    }
    return best;
}

}  // namespace

void bench_decode_batch_llama() {
    const std::string why = missing();
    if (!why.empty()) {
        printf("llama.cpp, sequences together: skipped (%s)\n", why.c_str());
        return;
    }
    Tokenizer tok;
    tokenizer_load(&tok, tokenizer_default_dir());
    char dir[] = "/tmp/gpt2-bench-llama-XXXXXX";
    if (!mkdtemp(dir)) fatal("cannot create a temporary directory for the GGUF: %s", dir);
    const std::string gguf = std::string(dir) + "/gpt2-124m-q8_0.gguf";
    GPT2 model;  // exported at fp32, as llama_bench exports it, then made int8 as bench_build_124m makes it
    bench_build_124m(&model, Precision::kFp32);
    gguf_save(model, tok, gguf, GgufType::kQ8_0, "bench");
    gpt2_set_precision(&model, Precision::kInt8);
    gpt2_round_inputs_q8(&model);
    infer_keep_q8_tiles(&model);  // as serve keeps them
    const std::vector<int> counts = {1, 4, 8, 16};
    std::vector<double> ours;
    std::vector<Batch> theirs;
    for (int n : counts) {  // each count's two sides one after the other: a neighbour's load moves both alike
        bench_decode_together(model, {n}, kBatchSteps, [&](int, double tok_s) {
            printf("ours int8, %2d sequence%s together: %.1f tok/s aggregate\n", n, n == 1 ? "" : "s", tok_s);
            ours.push_back(tok_s);
        });
        theirs.push_back(llama_batch(gguf, n));
    }
    unlink(gguf.c_str());
    rmdir(dir);
    printf("124M int8 / q8_0 (the same weights), sequences decoded together, %d steps, aggregate tokens/s (median of "
           "3); llama.cpp at its faster thread count (in brackets); n / 1: against that side's one sequence\n",
           kBatchSteps);
    printf("| sequences | ours t/s | ours n / 1 | llama.cpp t/s | llama.cpp n / 1 | ours / llama.cpp |\n");
    printf("|-----------|----------|------------|---------------|-----------------|------------------|\n");
    for (size_t k = 0; k < counts.size(); k++) {
        char t[32] = "-", ts[32] = "-", r[32] = "-";
        if (theirs[k].tok_s > 0) snprintf(t, sizeof t, "%.1f (%d)", theirs[k].tok_s, theirs[k].threads);
        if (theirs[k].tok_s > 0 && theirs[0].tok_s > 0)
            snprintf(ts, sizeof ts, "%.2fx", theirs[k].tok_s / theirs[0].tok_s);
        if (theirs[k].tok_s > 0) snprintf(r, sizeof r, "%.2fx", ours[k] / theirs[k].tok_s);
        printf("| %9d | %8.1f | %9.2fx | %-13s | %-15s | %-16s |\n", counts[k], ours[k], ours[k] / ours[0], t, ts, r);
    }
}
