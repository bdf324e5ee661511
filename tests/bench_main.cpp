// bench_main.cpp: runs the benchmarks registered with BENCH(); see bench.h.
#include <cstdio>
#include <cstring>

#include "bench.h"

std::vector<BenchCase>& bench_registry() {
    static std::vector<BenchCase> registry;
    return registry;
}

int main(int argc, char** argv) {
    const char* filter = argc > 1 ? argv[1] : nullptr;
    for (const BenchCase& b : bench_registry()) {
        if (filter && !strstr(b.name, filter)) continue;
        printf("== %s\n", b.name);
        fflush(stdout);
        b.fn();
    }
    return 0;
}
