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

// A light run (GPT2_TEST_LIGHT=1): the unit tests run again in another build or place (each kernel set of
// tests/portable.sh, qemu, wine, clang, the sanitizers), where a product with a C of 4M floats takes minutes. The
// tests of those shapes (named ..._for_a_c_of_4m_floats) skip themselves there, and others run fewer or smaller
// cases (test_light()), with the same bounds: make test runs every shape, and tests/portable.sh runs the 4M ones
// under each kernel set; the light runs check the same code on the smaller shapes.
inline bool test_light() {
    const char* light = std::getenv("GPT2_TEST_LIGHT");
    return light && *light && *light != '0';
}
#define SKIP_IF_LIGHT()                                                                                               \
    do {                                                                                                              \
        if (test_light()) SKIP("a light run (GPT2_TEST_LIGHT): C of 4M floats, left to make test and test-portable"); \
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
