// test_main.cpp: runs the tests registered with TEST(); see test.h.
#include <cstdio>
#include <cstring>

#include "cli/extensions.h"
#include "platform/util.h"
#include "platform/output_files.h"
#include "test.h"

std::vector<TestCase>& test_registry() {
    static std::vector<TestCase> registry;
    return registry;
}
int g_test_failures = 0;
std::string g_test_skip;

int main(int argc, char** argv) {
    const char* filter = argc > 1 ? argv[1] : nullptr;
    extensions_plug_in();  // as gpt2's main does (cli/extensions.h)
    int passed = 0, failed = 0, skipped = 0;
    for (const TestCase& t : test_registry()) {
        if (filter && !strstr(t.name, filter)) continue;
        g_test_failures = 0;
        g_test_skip.clear();
        inputs_forget();  // each test is a run of its own: what an earlier one read is no input of this one
        const double t0 = time_now_s();
        t.fn();
        const double took = time_now_s() - t0;
        if (g_test_failures == 0 && !g_test_skip.empty()) {
            skipped++;
            printf("skip %s: %s\n", t.name, g_test_skip.c_str());
        } else if (g_test_failures == 0) {
            passed++;
            printf("ok   %s (%.1f s)\n", t.name, took);
        } else {
            failed++;
            printf("FAIL %s (%d checks, %.1f s)\n", t.name, g_test_failures, took);
        }
        fflush(stdout);
    }
    printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
    return failed ? 1 : 0;
}
