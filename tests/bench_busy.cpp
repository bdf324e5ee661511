// bench_busy.cpp: GPT-2 124M (random weights) on a machine that is not ours alone: the training step
// (B=4 T=64) and KV-cache decode, each idle and with one busy process (a forked child spinning on one
// CPU, killed after), each as the program runs them (all OpenMP threads, team size tuned per round as
// train_step and generate do: platform/threads.h) and with one thread (omp_set_num_threads(1)). Prints medians
// and the ratios "busy: tuned / 1 thread"; the goal is a step no slower and a decode no slower than one
// thread's when another process holds a CPU, and idle speed no lower than all threads'. The settings are
// interleaved over rounds so a neighbour's burst lands on all of them. Asserts nothing (not a test).
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <signal.h>
#include <string>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "core/rng.h"
#include "platform/threads.h"
#include "platform/util.h"
#include "bench.h"
#include "inference/generate.h"
#include "core/model.h"
#include "core/optimizer.h"

namespace {

const int kB = 4, kT = 64, kSteps = 8;                        // steps timed per round, after one warm-up step
const int kPrompt = 64, kDecodeTokens = 64, kDecodeRuns = 2;  // decode runs timed per round, after one

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

// A child that spins until killed: the "other process" holding a CPU.
pid_t busy_start() {
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) fatal("fork failed: cannot start the busy process");
    if (pid == 0) {
        volatile unsigned long n = 0;
        for (;;) n = n + 1;
    }
    usleep(100 * 1000);  // let it reach a CPU
    return pid;
}

void busy_stop(pid_t pid) {
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
}

// Seconds of each of kSteps training steps, appended to *out.
void time_steps(GPT2* model, const std::vector<int>& x, const std::vector<int>& y, AdamW* opt,
                std::vector<double>* out) {
    AdamWConfig oc;
    static ThreadTuner tuner;  // as the trainer's, one for the run
    for (int s = 0; s < kSteps + 1; s++) {
        double t0 = time_now_s();
        tuner.begin();
        gpt2_zero_grad(model);
        gpt2_forward(model, x.data(), y.data(), kB, kT, 1.0f);
        gpt2_backward(model);
        float norm = optimizer_grad_norm(gpt2_param_set(*model));
        adamw_update(opt, gpt2_param_set(*model), oc, 1e-4f, optimizer_clip_factor(norm, 1.0f));
        tuner.end();
        if (s > 0) out->push_back(time_now_s() - t0);
    }
}

// Tokens per second of each of kDecodeRuns greedy decodes after a kPrompt-token prompt, appended to *out.
void time_decode(const GPT2& model, std::vector<double>* out) {
    std::vector<int> prompt(kPrompt);
    for (int i = 0; i < kPrompt; i++) prompt[i] = (i * 7919) % 50257;
    GenerateOptions opts;
    opts.max_tokens = kDecodeTokens;
    opts.sampler.temperature = 0;
    opts.stop_token = -1;
    for (int r = 0; r < kDecodeRuns + 1; r++) {
        Rng rng(1);
        GenerateStats st;
        generate(
            model, prompt, opts, &rng, [](int) {}, &st);
        if (r > 0) out->push_back(st.new_tokens / st.decode_s);
    }
}

const char* env_or(const char* name, const char* fallback) {
    const char* v = getenv(name);
    return v ? v : fallback;
}

}  // namespace

void bench_busy() {
    int all = 1;
#ifdef _OPENMP
    all = omp_get_max_threads();
#endif
    GPT2 model;
    gpt2_build(&model, config_make(1024, 50257, 12, 12, 768));
    gpt2_enable_training(&model);
    gpt2_init_random(&model, 1);
    Rng rng(2);
    std::vector<int> x(kB * kT), y(kB * kT);
    for (int i = 0; i < kB * kT; i++) x[i] = rng.below(50257), y[i] = rng.below(50257);
    AdamW opt;

    // threads 0: tuned (the program's way); all: fixed at all threads, as OMP_NUM_THREADS set would (the
    // tuner stands aside when that variable exists); 1: one thread.
    struct Setting {
        bool busy;
        int threads;
        std::vector<double> step_s, tok_s;
    };
    std::vector<Setting> settings = {{false, 0, {}, {}}, {false, all, {}, {}}, {false, 1, {}, {}},
                                     {true, 0, {}, {}},  {true, all, {}, {}},  {true, 1, {}, {}}};
    const bool user_fixed = getenv("OMP_NUM_THREADS") != nullptr;
    for (int round = 0; round < 2; round++)
        for (Setting& s : settings) {
#ifdef _OPENMP
            omp_set_num_threads(s.threads ? s.threads : all);
#endif
            if (s.threads == all && !user_fixed) setenv("OMP_NUM_THREADS", std::to_string(all).c_str(), 1);
            pid_t child = s.busy ? busy_start() : 0;
            time_steps(&model, x, y, &opt, &s.step_s);
            time_decode(model, &s.tok_s);
            if (child) busy_stop(child);
            if (s.threads == all && !user_fixed) unsetenv("OMP_NUM_THREADS");
        }
#ifdef _OPENMP
    omp_set_num_threads(all);
#endif
    printf("OMP_WAIT_POLICY=%s GOMP_SPINCOUNT=%s, %ld CPUs online\n", env_or("OMP_WAIT_POLICY", "(unset)"),
           env_or("GOMP_SPINCOUNT", "(unset)"), sysconf(_SC_NPROCESSORS_ONLN));
    for (const Setting& s : settings)
        printf("%s %-9s: 124M B=%d T=%d %.0f ms/step (median of %zu), decode %.1f tok/s (median of %zu)\n",
               s.busy ? "busy" : "idle",
               s.threads == 0   ? "tuned"
               : s.threads == 1 ? "1 thread"
                                : (std::to_string(s.threads) + " threads").c_str(),
               kB, kT, median(s.step_s) * 1e3, s.step_s.size(), median(s.tok_s), s.tok_s.size());
    auto ratio = [&](const char* what, const Setting& a, const Setting& b, const char* want) {
        printf("%s: step time %.2fx, decode tok/s %.2fx (%s)\n", what, median(a.step_s) / median(b.step_s),
               median(a.tok_s) / median(b.tok_s), want);
    };
    ratio("busy, tuned / 1 thread", settings[3], settings[5], "want step <= 1, decode >= 1");
    ratio("busy, all threads / 1 thread (untuned)", settings[4], settings[5], "the collapse the tuner avoids");
    ratio("idle, tuned / all threads", settings[0], settings[1], "want ~1: no idle regression");
}
