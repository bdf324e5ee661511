// test.h: a minimal test registry. TEST(name) { ... } registers a function; CHECK(cond) and
// CHECK_NEAR(a, b, tol) record a failure with file:line and keep going; SKIP(reason) ends a test that
// cannot run here (no AVX512_BF16, a busy machine), which is counted as skipped, never as passed.
// tests/test_main.cpp runs every registered test (or those whose name contains argv[1]) and prints
// `N passed, N failed, N skipped`.
#pragma once
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

struct GPT2;
// A 2-layer, 16-channel GPT-2 (vocabulary 50, context 16) with GPT-2's init, seed 7 (test_train.cpp).
GPT2 tiny_model();

struct TestCase {
    const char* name;
    void (*fn)();
};
std::vector<TestCase>& test_registry();
extern int g_test_failures;     // failures recorded in the running test
extern std::string g_test_skip;  // why the running test skipped itself, or empty

#define SKIP(reason)         \
    do {                     \
        g_test_skip = reason; \
        return;              \
    } while (0)

// Under an emulator (qemu: tests/portable.sh and tests/arm64.sh set GPT2_TEST_EMULATED=1) a product with a C
// of 4M floats takes minutes. The tests of those shapes skip themselves there: the native runs of every
// kernel set (GPT2_ISA) check them, and the emulated run checks the same kernels on the smaller shapes.
// Other tests run fewer or smaller cases there (test_emulated()), with the same bounds.
inline bool test_emulated() {
    const char* emulated = std::getenv("GPT2_TEST_EMULATED");
    return emulated && *emulated && *emulated != '0';
}
#define SKIP_IF_EMULATED()                                                                                        \
    do {                                                                                                          \
        if (test_emulated()) SKIP("under emulation (GPT2_TEST_EMULATED): C of 4M floats, left to the native runs"); \
    } while (0)

struct TestRegistrar {
    TestRegistrar(const char* name, void (*fn)()) { test_registry().push_back({name, fn}); }
};

#define TEST(name)                                                  \
    static void test_##name();                                      \
    static TestRegistrar test_registrar_##name(#name, test_##name); \
    static void test_##name()

#define CHECK(cond)                                                                    \
    do {                                                                               \
        if (!(cond)) {                                                                 \
            g_test_failures++;                                                         \
            fprintf(stderr, "  %s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
        }                                                                              \
    } while (0)

#define CHECK_NEAR(a, b, tol)                                                                                       \
    do {                                                                                                            \
        double check_a_ = (a), check_b_ = (b);                                                                      \
        if (!(std::fabs(check_a_ - check_b_) <= (tol))) {                                                           \
            g_test_failures++;                                                                                      \
            fprintf(stderr, "  %s:%d: CHECK_NEAR failed: %s = %.9g, %s = %.9g, tol %.3g\n", __FILE__, __LINE__, #a, \
                    check_a_, #b, check_b_, (double)(tol));                                                         \
        }                                                                                                           \
    } while (0)

// The larger of m and |x|, for the max |ours - ref| / max |ref| the numeric tests report. A NaN sticks
// (and fails every `<=` check after it) where std::fmax would drop it. It also keeps GCC 12 for aarch64
// from crashing: it vectorizes a std::fmax reduction loop into an internal compiler error.
inline double max_abs(double m, double x) {
    x = std::fabs(x);
    return x > m || x != x ? x : m;
}

// Path of a file under tests/ (tests run from the repo root).
inline std::string test_path(const std::string& rel) { return "tests/" + rel; }
