// bench_torch.cpp: the PyTorch cases of run_bench: scripts/bench_torch.py (the same 124M training step) and
// scripts/bench_torch_generate.py (the same KV-cache decode), run by $PYTHON (default /usr/bin/python3)
// unbuffered, each line echoed as it comes, then the ratio to our figure of the same shape if this run
// measured it. BENCH_TORCH=0 skips them. A PyTorch step takes several times ours, so it is the median of 3
// after one warm-up step (AdamW's state), not of 10. Threads: OpenBLAS gets ours and torch's own ops one
// thread, PyTorch's fastest setting on a 2-core machine (against torch's defaults and 2 OpenMP threads:
// tests/bench_results.md); where OPENBLAS_CORETYPE is set, with it and without it, the better counting.
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "platform/util.h"
#include "bench.h"

namespace {

// Why PyTorch's cases cannot run (printed), or "" when they can.
std::string torch_unusable(const char* script) {
    const char* on = getenv("BENCH_TORCH");
    if (on && std::string(on) == "0") return "skipped (BENCH_TORCH=0)";
    if (!file_exists(script)) return std::string("skipped: ") + script + " not found (run from the repository root)";
    return "";
}

// Runs script (a path from the repository root) with args under $PYTHON, echoing its stdout line by line,
// with OPENBLAS_CORETYPE taken out of that command's environment when `unset_coretype`; returns its lines, or
// prints why it did not finish and returns none.
std::vector<std::string> run_torch(const char* script, const std::string& args, bool unset_coretype) {
    const char* py = getenv("PYTHON");
    int threads = 1;
#ifdef _OPENMP
    threads = omp_get_max_threads();
#endif
    // The interpreter is quoted for the shell; a quote in it would end the quoting, so it is refused.
    const std::string python = py && py[0] ? py : "/usr/bin/python3";
    if (python.find('\'') != std::string::npos) fatal("PYTHON holds a quote: expected a path, got %s", python.c_str());
    const std::string cmd = std::string(unset_coretype ? "env -u OPENBLAS_CORETYPE " : "") +
                            "OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=" + std::to_string(threads) + " '" + python +
                            "' -u " + script + " " + args;
    fflush(stdout);
    FILE* p = popen(cmd.c_str(), "r");
    if (!p) fatal("cannot start %s: %s", python.c_str(), cmd.c_str());
    std::vector<std::string> lines;
    char buf[1024];
    while (fgets(buf, sizeof buf, p)) {
        fputs(buf, stdout);
        lines.push_back(buf);
    }
    int status = pclose(p);
    if (status != 0) {
        printf("  PyTorch did not finish (%s exited with status %d; is python3-torch installed?)\n", script,
               WIFEXITED(status) ? WEXITSTATUS(status) : -1);
        return {};
    }
    return lines;
}

// The number before `unit` on the first line starting with prefix, or 0.
double figure(const std::vector<std::string>& lines, const std::string& prefix, const char* unit) {
    for (const std::string& l : lines) {
        size_t at = l.find(unit);
        if (l.compare(0, prefix.size(), prefix) || at == std::string::npos) continue;
        size_t from = l.rfind(' ', at - 2);
        return atof(l.c_str() + (from == std::string::npos ? 0 : from + 1));
    }
    return 0;
}

// PyTorch's figure (the number before `unit` on its line starting with prefix) at its best setting: where the
// machine sets OPENBLAS_CORETYPE (OpenBLAS then runs that CPU's kernels, not its own choice for this one), the
// script runs with it and again without it, in that command alone, and the better figure counts (`higher`:
// larger is better). 0 when it did not run.
double torch_best(const char* script, const std::string& args, const std::string& prefix, const char* unit,
                  bool higher) {
    const std::string why = torch_unusable(script);
    if (!why.empty()) {
        printf("  %s\n", why.c_str());
        return 0;
    }
    const char* core = getenv("OPENBLAS_CORETYPE");
    const double as_set = figure(run_torch(script, args, false), prefix, unit);
    if (!core || !core[0]) return as_set;
    printf("  and without OPENBLAS_CORETYPE=%s (OpenBLAS's own choice of kernels for this CPU):\n", core);
    const double unset = figure(run_torch(script, args, true), prefix, unit);
    const bool unset_wins = unset > 0 && (as_set <= 0 || (higher ? unset > as_set : unset < as_set));
    printf("  PyTorch's better: %.1f %s, %s OPENBLAS_CORETYPE=%s (with it %.1f, without %.1f)\n",
           unset_wins ? unset : as_set, unit, unset_wins ? "without" : "with", core, as_set, unset);
    return unset_wins ? unset : as_set;
}

}  // namespace

void bench_torch_step(int B, int T, bool autocast) {
    if (autocast && !bf16_supported()) {
        printf("torch bf16 124M B=%d T=%d: skipped (this CPU has no AVX512_BF16, so we run no bf16 step)\n", B, T);
        return;
    }
    const std::string shape = std::to_string(B) + "x" + std::to_string(T);
    const std::string kind = autocast ? "torch bf16" : "torch";
    const double theirs =
        torch_best("scripts/bench_torch.py",
                   "--threads 1 --steps 3 --warmup 1 " + std::string(autocast ? "--autocast " : "") + shape,
                   kind + " 124M B=", "ms/step", false);
    const double ours = bench_kept(std::string("step ") + (autocast ? "bf16 " : "fp32 ") + shape);
    if (theirs <= 0) return;
    if (ours <= 0)
        printf("PyTorch / ours: no figure of ours for B=%d T=%d in this run (run step_%s_b%dt%d first)\n", B, T,
               autocast ? "bf16" : "fp32", B, T);
    else
        printf("PyTorch%s / ours%s step B=%d T=%d: %.2fx (PyTorch %.0f ms, ours %.0f ms)\n",
               autocast ? " autocast bf16" : " fp32", autocast ? " bf16" : " fp32", B, T, theirs / ours, theirs, ours);
}

void bench_torch_decode() {
    const double theirs = torch_best("scripts/bench_torch_generate.py", "", "torch decode", "tok/s", true);
    const double ours = bench_kept("decode fp32 64");
    if (theirs <= 0) return;
    if (ours <= 0) printf("ours / PyTorch decode: no figure of ours in this run (run decode_fp32 first)\n");
    else
        printf("ours / PyTorch decode, fp32, 64-token prompt: %.2fx (ours %.1f tok/s, PyTorch %.1f tok/s)\n",
               ours / theirs, ours, theirs);
}
