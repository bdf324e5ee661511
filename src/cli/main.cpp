// main.cpp: dispatches `gpt2 <command>` to the command's entry point and prints top-level usage.
// No math lives here.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <new>
#include <string>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "cli/extensions.h"
#include "platform/platform.h"
#include "dispatch/dispatch.h"
#include "platform/signals.h"
#include "platform/util.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "precision/bf16.h"
#include "core/isa.h"

struct Command {
    const char* name;
    int (*run)(int, char**);
    const char* about;
};

static const Command kCommands[] = {
    {"train", cmd_train, "train GPT-2 from scratch or from a checkpoint on token files"},
    {"eval", cmd_eval, "mean loss of a checkpoint over consecutive windows of a token file"},
    {"generate", cmd_generate, "sample text from a checkpoint (KV cache, temperature, top-k, top-p)"},
    {"chat", cmd_chat, "talk with a chat model in the terminal (the template tokenize --instructions trains on)"},
    {"serve", cmd_serve, "serve a model over OpenAI's API with continuous batching, and a chat page"},
    {"tokenize", cmd_tokenize, "encode text to GPT-2 token ids or token files"},
    {"compare", cmd_compare, "check forward, backward and AdamW against a PyTorch reference dump"},
    {"info", cmd_info, "print a checkpoint's format, geometry, parameter count and dtype"},
    {"export", cmd_export, "convert a checkpoint to HuggingFace's layout, llm.c's format or GGUF"},
    {"plot", cmd_plot, "draw the loss of one or more train --log files on one PNG"},
};

static const char kVersion[] = "0.4.0";

static void print_usage() {
    printf("usage: gpt2 <command> [flags]    (gpt2 <command> --help for its flags; gpt2 --version)\n\ncommands:\n");
    for (const Command& c : kCommands) printf("  %-10s %s\n", c.name, c.about);
}

// The version, then how this binary was built and what it finds on this CPU: what a bug report needs.
static void print_version() {
#ifdef _OPENMP
    const char* omp = "OpenMP";
    const int threads = omp_get_max_threads();
#else
    const char* omp = "no OpenMP";
    const int threads = 1;
#endif
#ifdef GPT2_MPI
    const char* mpi = "MPI";
#else
    const char* mpi = "no MPI";
#endif
    printf("gpt2.cpp %s (built with %s, %s; kernels: %s, %s; this CPU: %s, %d threads)\n", kVersion, omp, mpi,
           kernels_isa(), kernels_isa_how(),
           bf16_amx()         ? "AMX tiles for --precision bf16"
           : bf16_supported() ? "AVX512_BF16 for --precision bf16"
                              : "no AVX512_BF16, --precision bf16 runs fp32",
           threads);
}

// An allocation that fails anyway (memory_check guards the large ones) ends with one error line, not an
// abort.
static void on_out_of_memory() {
    fatal("out of memory: an allocation failed; expected a smaller model, batch or input");
}

// Output the command printed but could not write (a full disk, a closed pipe) is an error too.
static int finish(int rc) {
    errno = 0;
    const bool flush_failed = fflush(stdout) != 0;
    const int err = errno;
    if (flush_failed || ferror(stdout)) {
        fprintf(stderr, "error: cannot write standard output: %s\n",
                flush_failed && err ? strerror(err) : "an earlier write failed");
        return rc ? rc : 1;
    }
    return rc;
}

int main(int argc, char** argv) {
    std::set_new_handler(on_out_of_memory);
    if (argc > 0) program_set_name(argv[0]);  // as typed: the hints that name a command say it so
    os_init();       // platform/platform.h: the operating system's part
    extensions_plug_in();  // ./gpt2's versions of the core's seams (cli/extensions.h)
    stop_install();  // signals: platform/signals.h
    // the kernels' instruction set: a bad GPT2_ISA stops here, before any work (the kernels never print)
    if (const std::string bad_isa = kernels_isa_error(); !bad_isa.empty()) fatal("%s", bad_isa.c_str());
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        print_usage();
        if (argc < 2) fatal("missing command: expected one of the commands above");
        return 0;
    }
    if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
        print_version();
        return finish(0);
    }
    std::string name = argv[1];
    std::string best;
    int best_d = 1 << 30;
    for (const Command& c : kCommands) {
        if (name == c.name) return finish(c.run(argc - 2, argv + 2));
        int d = cli_edit_distance(name, c.name);
        if (d < best_d) best_d = d, best = c.name;
    }
    if (best_d <= 3)
        fatal_hint("did you mean `" + program_name() + " " + best + "`?", "unknown command '%s'", name.c_str());
    fatal_hint("run `" + program_name() + " --help` for the list of commands", "unknown command '%s'", name.c_str());
}
