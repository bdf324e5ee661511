// bench_isa.cpp: the cases of run_bench for the kernels' instruction sets (core/isa.h). They run the
// run_bench of the dispatching build (ARCH=portable; $PORTABLE_BENCH, which `make bench` builds and names)
// as a child process, since a process chooses its kernels once: its fp32 step against this (native)
// run's, and under each set GPT2_ISA forces, the step and that set's own peak. Prints; asserts nothing.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "bench.h"
#include "dispatch/dispatch.h"

namespace {

// The lines `$PORTABLE_BENCH cases` prints that start with one of `prefixes`, run with GPT2_ISA=isa
// (unset for ""); empty, with a note printed, if it cannot run.
std::string run_portable(const std::string& cases, const std::string& isa) {
    const char* bench = getenv("PORTABLE_BENCH");
    if (!bench || !*bench) {
        printf("skipped: PORTABLE_BENCH is not set (make bench sets it to the ARCH=portable run_bench)\n");
        return "";
    }
    const std::string cmd = (isa.empty() ? std::string("env -u GPT2_ISA ") : "env GPT2_ISA=" + isa + " ") + "'" +
                            bench + "' " + cases + " 2>&1";
    FILE* p = popen(cmd.c_str(), "r");
    if (!p) {
        printf("skipped: cannot run %s\n", bench);
        return "";
    }
    std::string out;
    char line[1024];
    while (fgets(line, sizeof line, p)) out += line;
    if (pclose(p) != 0) {
        printf("skipped: %s %s failed:\n%s", bench, cases.c_str(), out.c_str());
        return "";
    }
    return out;
}

// The first line of `out` that starts with `prefix`, without its newline ("" if none).
std::string line_of(const std::string& out, const std::string& prefix) {
    for (size_t at = 0; at < out.size();) {
        size_t end = out.find('\n', at);
        if (end == std::string::npos) end = out.size();
        if (out.compare(at, prefix.size(), prefix) == 0) return out.substr(at, end - at);
        at = end + 1;
    }
    return "";
}

// The ms/step of a step line "124M B=4 T=64 fp32: N ms/step ...", or 0.
double step_ms(const std::string& line) {
    const size_t colon = line.find(": ");
    return colon == std::string::npos ? 0 : atof(line.c_str() + colon + 2);
}

}  // namespace

void bench_dispatch_step() {
    const std::string out = run_portable("step_fp32_b4t64", "");
    if (out.empty()) return;
    const std::string step = line_of(out, "124M B=4 T=64 fp32:");
    printf("dispatched build (ARCH=portable, kernels chosen at run time): %s\n", step.c_str());
    const double native = bench_kept("step fp32 4x64"), ms = step_ms(step);
    if (native > 0 && ms > 0)
        printf("dispatched / this build (kernels: %s, %s) fp32 step B=4 T=64: %.3fx (%.0f ms against %.0f ms)\n",
               kernels_isa(), kernels_isa_how(), ms / native, ms, native);
}

void bench_isa_paths() {
    for (const char* isa : {"avx512", "avx2", "baseline"}) {
        const std::string out = run_portable("peak step_fp32_b4t64", isa);
        if (out.empty()) continue;
        const std::string peak = line_of(out, "peak fp32"), step = line_of(out, "124M B=4 T=64 fp32:");
        printf("GPT2_ISA=%s: %s\n  %s\n", isa, peak.c_str(), step.c_str());
    }
}
