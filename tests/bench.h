// bench.h: benchmark registry for `make bench`. BENCH(name) { ... } registers a function that prints its
// own lines (medians and ratios, never pass/fail). tests/bench_main.cpp runs them in order of
// registration, or those whose name contains argv[1].
#pragma once
#include <vector>

struct BenchCase {
    const char* name;
    void (*fn)();
};
std::vector<BenchCase>& bench_registry();

struct BenchRegistrar {
    BenchRegistrar(const char* name, void (*fn)()) { bench_registry().push_back({name, fn}); }
};

#define BENCH(name)                                                    \
    static void bench_##name();                                        \
    static BenchRegistrar bench_registrar_##name(#name, bench_##name); \
    static void bench_##name()
