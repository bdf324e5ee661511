// bench_main.cpp: run_bench, the driver of `make bench`: the table of cases in the order they run, then
// the choice of cases from the command line. stdout is line-buffered so each figure shows (through a pipe
// or tee too) as soon as it is measured, and a stopped run keeps what it printed.
//   run_bench              the headline cases (`make bench`, a few minutes)
//   run_bench --all        every case (`make bench-full`)
//   run_bench NAME...      the named cases, in the table's order (`make bench CASES="NAME..."`)
//   run_bench --list       the names, which are headline, and what each prints
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "cli/extensions.h"
#include "platform/util.h"
#include "bench.h"

namespace {

struct BenchCase {
    const char* name;
    bool headline;  // part of the default run
    const char* what;
    void (*fn)();
};

// Ratios need their two figures in order: fp32 before bf16, ours before PyTorch's.
const BenchCase kCases[] = {
    {"peak", true, "peak GFLOP/s of an fp32 FMA loop and a bf16 vdpbf16ps loop on all threads", bench_peak},
    {"adamw_stream", true, "GB/s of a loop moving AdamW's bytes (4 arrays read, 3 written): the step floors' memory part",
     bench_adamw_stream},
    {"first_step", true, "124M B=4 T=64: allocation, random init, first step, steady step, first / steady",
     bench_first_step},
    {"step_fp32_b4t64", true, "124M fp32 step B=4 T=64: ms, GFLOP/s, % of peak",
     [] { bench_train_step(4, 64, Precision::kFp32); }},
    {"dispatch_fp32_b4t64", true,
     "the ARCH=portable build's fp32 step B=4 T=64 (kernels chosen at run time), and its ratio to this build's",
     bench_dispatch_step},
    {"isa_paths", false, "each kernel set forced by GPT2_ISA (avx512, avx2, baseline): its fp32 peak and step",
     bench_isa_paths},
    {"step_fp32_b8t256", false, "124M fp32 step B=8 T=256", [] { bench_train_step(8, 256, Precision::kFp32); }},
    {"step_fp32_b1t1024", false, "124M fp32 step B=1 T=1024", [] { bench_train_step(1, 1024, Precision::kFp32); }},
    {"memory_options", true,
     "124M B=4 T=64: MiB allocated and ms/step with --recompute(-blocks), --optimizer-state bf16 and 8bit, "
     "--optimizer-in-backward, and of LoRA (rank 16, c_attn, c_proj, c_fc) on an fp32 and an int8 base",
     bench_memory_options},
    {"step_bf16_b4t64", true, "124M bf16 step B=4 T=64: ms, % of bf16 peak, bf16 / fp32",
     [] { bench_train_step(4, 64, Precision::kBf16); }},
    {"step_bf16_b8t256", false, "124M bf16 step B=8 T=256", [] { bench_train_step(8, 256, Precision::kBf16); }},
    {"matmul_fp32", false, "GFLOP/s of each 124M matmul at B=4 T=64, fp32", [] { bench_matmul(Precision::kFp32); }},
    {"matmul_bf16", false, "the same in bf16", [] { bench_matmul(Precision::kBf16); }},
    {"read_bandwidth", true, "GB/s of a plain summing loop over 1 GiB on all threads: decode's ceiling",
     bench_read_bandwidth},
    {"decode_fp32", true, "124M KV-cache decode, 64-token prompt then 64 tokens: tok/s, GB/s of weights",
     [] { bench_decode(Precision::kFp32, 64); }},
    {"decode_bf16", true, "the same in bf16, and bf16 / fp32", [] { bench_decode(Precision::kBf16, 64); }},
    {"decode_int8", true, "the same with int8 weights (q8_0 blocks), and int8 / fp32",
     [] { bench_decode(Precision::kInt8, 64); }},
    {"decode_batch_int8", true,
     "124M int8 (inputs rounded): 1, 4, 8, 16 sequences decoded together, aggregate tok/s and the ratio to one",
     [] { bench_decode_batch(Precision::kInt8); }},
    {"decode_draft_int8", true,
     "124M fp32 greedy decode with --draft int8 (its own q8_0 copy) and with a disagreeing draft, / plain",
     bench_decode_draft},
    {"decode_batch_bf16", true, "the same in bf16", [] { bench_decode_batch(Precision::kBf16); }},
    {"decode_batch_fp32", false, "the same in fp32", [] { bench_decode_batch(Precision::kFp32); }},
    {"llama_bench", true,
     "llama-bench's pp512 and tg128: ours fp32, bf16, int8 beside llama.cpp's f32, bf16, q8_0 (same weights), ratios",
     bench_llama},
    {"decode_batch_llama", true,
     "124M int8 beside llama.cpp's q8_0 (node-llama-cpp, one context's sequences): 1, 4, 8, 16 sequences decoded "
     "together, aggregate tok/s, each side's ratio to one sequence, ours / llama.cpp",
     bench_decode_batch_llama},
    {"serve_latency_int8", true,
     "124M int8 through serve's scheduler: time to first token and between tokens at 1 and 8 streams; a chat's "
     "second turn prefilled alone against the whole conversation again",
     [] { bench_serve_latency(Precision::kInt8); }},
    {"serve_latency_bf16", false, "the same in bf16", [] { bench_serve_latency(Precision::kBf16); }},
    {"decode_prompt512", false, "decode after a 512-token prompt, fp32 then bf16",
     [] { bench_decode(Precision::kFp32, 512), bench_decode(Precision::kBf16, 512); }},
    {"busy_124m", false, "step and decode beside a busy process: tuned threads against 1 and all", bench_busy},
    {"tokenizer_encode", false, "GPT-2 encode MB/s on tiny shakespeare, one thread", bench_tokenizer_encode},
    {"torch_fp32_b4t64", true, "PyTorch fp32 step B=4 T=64, and PyTorch / ours",
     [] { bench_torch_step(4, 64, false); }},
    {"torch_fp32_b8t256", false, "PyTorch fp32 step B=8 T=256", [] { bench_torch_step(8, 256, false); }},
    {"torch_fp32_b1t1024", false, "PyTorch fp32 step B=1 T=1024", [] { bench_torch_step(1, 1024, false); }},
    {"torch_bf16_b4t64", true, "PyTorch bf16 autocast step B=4 T=64, and PyTorch / ours bf16",
     [] { bench_torch_step(4, 64, true); }},
    {"torch_bf16_b8t256", false, "PyTorch bf16 autocast step B=8 T=256", [] { bench_torch_step(8, 256, true); }},
    {"torch_decode", true, "PyTorch fp32 KV-cache decode, and ours / PyTorch", bench_torch_decode},
};

std::map<std::string, double>& kept() {
    static std::map<std::string, double> figures;
    return figures;
}

// "CPU model, N threads, load average a b c" from /proc (Linux; what is missing is left out), for the
// first line: a figure means little without the machine and how busy it was.
std::string machine_line() {
    std::string cpu, load;
    char line[256];
    if (FILE* f = fopen("/proc/cpuinfo", "r")) {
        while (cpu.empty() && fgets(line, sizeof line, f))
            if (!strncmp(line, "model name", 10) && strchr(line, ':')) cpu = strchr(line, ':') + 2;
        fclose(f);
    }
    if (!cpu.empty() && cpu.back() == '\n') cpu.pop_back();
    if (FILE* f = fopen("/proc/loadavg", "r")) {
        double a, b, c;
        if (fscanf(f, "%lf %lf %lf", &a, &b, &c) == 3)
            snprintf(line, sizeof line, ", load average %.2f %.2f %.2f", a, b, c), load = line;
        fclose(f);
    }
    int threads = 1;
#ifdef _OPENMP
    threads = omp_get_max_threads();
#endif
    return (cpu.empty() ? "" : cpu + ", ") + std::to_string(threads) + " threads" + load;
}

void list_cases() {
    for (const BenchCase& c : kCases) printf("%-20s %-9s %s\n", c.name, c.headline ? "headline" : "", c.what);
}

// Which cases argv picks (see the top of this file).
std::vector<const BenchCase*> pick_cases(int argc, char** argv) {
    const bool all = argc == 2 && !strcmp(argv[1], "--all");
    std::vector<bool> named(sizeof kCases / sizeof kCases[0], false);
    for (int i = 1; i < argc && !all; i++) {
        size_t k = 0;
        while (k < named.size() && strcmp(kCases[k].name, argv[i])) k++;
        if (k == named.size())
            fatal_hint("run_bench --list names them",
                       "unknown bench case (argument %d): expected a case name, --all "
                       "or --list, got '%s'",
                       i, argv[i]);
        named[k] = true;
    }
    std::vector<const BenchCase*> picked;
    for (size_t k = 0; k < named.size(); k++)
        if (all || named[k] || (argc == 1 && kCases[k].headline)) picked.push_back(&kCases[k]);
    return picked;
}

}  // namespace

void bench_keep(const std::string& key, double value) { kept()[key] = value; }
double bench_kept(const std::string& key) {
    auto it = kept().find(key);
    return it == kept().end() ? 0 : it->second;
}

int main(int argc, char** argv) {
    setvbuf(stdout, nullptr, _IOLBF, 0);
    extensions_plug_in();  // as gpt2's main does (cli/extensions.h)
    if (argc == 2 && !strcmp(argv[1], "--list")) {
        list_cases();
        return 0;
    }
    std::vector<const BenchCase*> picked = pick_cases(argc, argv);
    printf("run_bench: %zu cases on %s\n", picked.size(), machine_line().c_str());
    const double t0 = time_now_s();
    for (const BenchCase* c : picked) {
        printf("== %s\n", c->name);
        const double tc = time_now_s();
        c->fn();
        printf("   (%s: %.1f s)\n", c->name, time_now_s() - tc);
    }
    printf("run_bench: %zu cases in %.0f s\n", picked.size(), time_now_s() - t0);
    return 0;
}
