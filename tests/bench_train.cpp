// bench_train.cpp: ms per training step of GPT-2 124M with random weights (no files needed) at B=4 T=64,
// B=8 T=256 and B=1 T=1024, split into forward, backward and update (grad norm + AdamW with the clip
// folded in), with achieved GFLOP/s against a peak measured here by a register-only FMA loop on all
// threads; with AVX512_BF16 also the bf16 steps at B=4 T=64 and B=8 T=256 against a vdpbf16ps peak, and
// their ratio to fp32's; and GFLOP/s of each matmul at B=4 T=64 at both precisions. Prints medians;
// asserts nothing (not a test).
#include <algorithm>
#include <cstdio>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "base/rng.h"
#include "base/util.h"
#include "bench.h"
#include "kernels/gemm.h"
#include "model/model.h"
#include "train/optimizer.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace {

typedef float v16 __attribute__((vector_size(64)));

const long kPeakIters = 20000000;

// kPeakIters x 12 independent vector FMAs on 16 lanes that never touch memory: 32 FLOPs each.
float fma_loop() {
    v16 acc[12];
    v16 a = v16{} + 1.0000001f, b = v16{} + 0.9999999f;
    for (int i = 0; i < 12; i++) acc[i] = v16{} + (float)i;
    for (long it = 0; it < kPeakIters; it++)
        for (int i = 0; i < 12; i++) acc[i] = acc[i] * a + b;
    float sink = 0;
    for (int i = 0; i < 12; i++) sink += acc[i][0];
    return sink;
}

#if defined(__x86_64__)
// The same with vdpbf16ps: each multiplies 16 pairs of bf16 values and adds both products into 16 fp32
// lanes, 64 FLOPs.
__attribute__((target("avx512f,avx512bf16"))) float bf16_loop() {
    __m512 acc[12];
    __m512bh a = (__m512bh)_mm512_set1_epi32(0x3F803F80), b = (__m512bh)_mm512_set1_epi32(0x3F7F3F7F);
    for (int i = 0; i < 12; i++) acc[i] = _mm512_set1_ps((float)i);
    for (long it = 0; it < kPeakIters; it++)
        for (int i = 0; i < 12; i++) acc[i] = _mm512_dpbf16_ps(acc[i], a, b);
    float lanes[16], sink = 0;
    for (int i = 0; i < 12; i++) _mm512_storeu_ps(lanes, acc[i]), sink += lanes[0];
    return sink;
}
#endif

// GFLOP/s of loop() (kPeakIters x 12 instructions of flops_per_instr) on every thread, summed over the
// threads; the best of 3.
double measure_peak_gflops(float (*loop)(), double flops_per_instr) {
    double best = 0;
    for (int rep = 0; rep < 3; rep++) {
        double t0 = time_now_s();
        float sink = 0;
#pragma omp parallel reduction(+ : sink)
        sink += loop();
        double dt = time_now_s() - t0;
        int threads = 1;
#ifdef _OPENMP
        threads = omp_get_max_threads();
#endif
        best = std::max(best, flops_per_instr * 12 * kPeakIters * threads / dt / 1e9);
        if (sink == 12345.0f) printf(" ");  // keeps the loop alive
    }
    return best;
}

// FLOPs of one training step (forward + backward), counting the matmuls and attention's two products.
double step_flops(const GPT2Config& c, int B, int T) {
    double N = (double)B * T, C = c.channels, L = c.num_layers, Vp = c.padded_vocab_size;
    double linear = L * (C * 3 * C + C * C + C * 4 * C + 4 * C * C) + C * Vp;           // IC*OC summed
    double attn = L * 2.0 * B * c.num_heads * (T * (T + 1) / 2.0) * (C / c.num_heads);  // QK^T and AV MACs
    return 3.0 * 2.0 * (N * linear + attn);  // forward 2 FLOP/MAC, backward twice the forward
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

struct StepTimes {
    int B, T, steps;
    double total, fwd, bwd, upd, gflops;  // medians, seconds
    Precision prec;
};

StepTimes bench_step(int B, int T, int steps, Precision prec = Precision::kFp32) {
    GPT2 model;
    gpt2_build(&model, config_make(1024, 50257, 12, 12, 768));
    gpt2_enable_training(&model);
    gpt2_init_random(&model, 1);
    gpt2_set_precision(&model, prec);
    Rng rng(2);
    std::vector<int> x(B * T), y(B * T);
    for (int i = 0; i < B * T; i++) x[i] = rng.below(50257), y[i] = rng.below(50257);
    AdamW opt;
    AdamWConfig oc;
    std::vector<double> fwd, bwd, upd, total;
    for (int s = 0; s < steps + 2; s++) {
        double t0 = time_now_s();
        gpt2_forward(&model, x.data(), y.data(), B, T);
        double t1 = time_now_s();
        gpt2_zero_grad(&model);
        gpt2_backward(&model, 1.0f);
        double t2 = time_now_s();
        float norm = optimizer_grad_norm(model);
        adamw_update(&opt, &model, oc, 1e-4f, optimizer_clip_factor(norm, 1.0f));
        double t3 = time_now_s();
        if (s < 2) continue;  // warm-up
        fwd.push_back(t1 - t0), bwd.push_back(t2 - t1), upd.push_back(t3 - t2), total.push_back(t3 - t0);
    }
    return {B,           T,           steps,       median(total),
            median(fwd), median(bwd), median(upd), step_flops(model.cfg, B, T) / median(total) / 1e9,
            prec};
}

// GFLOP/s of the three products of one linear layer (N rows, IC -> OC) as matmul.cpp calls them.
void bench_linear(const char* name, int N, int IC, int OC, Precision prec) {
    std::vector<float> inp((size_t)N * IC, 0.5f), w((size_t)OC * IC, 0.25f), out((size_t)N * OC);
    std::vector<float> dinp((size_t)N * IC), dw((size_t)OC * IC);
    const double flops = 2.0 * N * IC * OC;
    double t[3];
    for (int which = 0; which < 3; which++) {
        std::vector<double> times;
        for (int rep = 0; rep < 7; rep++) {
            double t0 = time_now_s();
            if (which == 0) gemm(N, OC, IC, inp.data(), IC, false, w.data(), IC, true, out.data(), OC, false, prec);
            if (which == 1) gemm(N, IC, OC, out.data(), OC, false, w.data(), IC, false, dinp.data(), IC, true, prec);
            if (which == 2) gemm(OC, IC, N, out.data(), OC, true, inp.data(), IC, false, dw.data(), IC, true, prec);
            times.push_back(time_now_s() - t0);
        }
        t[which] = median(times);
    }
    printf("  %-8s %s N=%d IC=%d OC=%d: forward %.1f ms %.0f GFLOP/s, dinp %.1f ms %.0f, dweight %.1f ms %.0f\n", name,
           prec == Precision::kBf16 ? "bf16" : "fp32", N, IC, OC, t[0] * 1e3, flops / t[0] / 1e9, t[1] * 1e3,
           flops / t[1] / 1e9, t[2] * 1e3, flops / t[2] / 1e9);
    fflush(stdout);
}

}  // namespace

BENCH(matmul_124m) {
    const int N = 4 * 64, C = 768;
    printf("per-matmul, B=4 T=64 (x12 layers except lm_head):\n");
    for (Precision prec : {Precision::kFp32, Precision::kBf16}) {
        if (prec == Precision::kBf16 && !bf16_supported()) continue;
        bench_linear("qkv", N, C, 3 * C, prec);
        bench_linear("attproj", N, C, C, prec);
        bench_linear("fc", N, C, 4 * C, prec);
        bench_linear("fcproj", N, 4 * C, C, prec);
        bench_linear("lm_head", N, C, 50304, prec);
    }
}

BENCH(train_step_124m) {
    // The machine may be shared: the peak is measured before and after the steps and the higher one
    // used, so a neighbour's burst during one measurement does not inflate the percentages.
    const bool bf16 = bf16_supported();
    double peak_before = measure_peak_gflops(fma_loop, 32), peak16_before = 0, peak16_after = 0;
#if defined(__x86_64__)
    if (bf16) peak16_before = measure_peak_gflops(bf16_loop, 64);
#endif
    std::vector<StepTimes> runs = {bench_step(4, 64, 10), bench_step(8, 256, 10), bench_step(1, 1024, 10)};
    if (bf16)
        for (int i = 0; i < 2; i++) runs.push_back(bench_step(runs[i].B, runs[i].T, 10, Precision::kBf16));
    double peak_after = measure_peak_gflops(fma_loop, 32), peak = std::max(peak_before, peak_after);
#if defined(__x86_64__)
    if (bf16) peak16_after = measure_peak_gflops(bf16_loop, 64);
#endif
    const double peak16 = std::max(peak16_before, peak16_after);
    int threads = 1;
#ifdef _OPENMP
    threads = omp_get_max_threads();
#endif
    printf("peak (register-only FMA loop, %d threads): %.1f GFLOP/s (before %.1f, after %.1f)\n", threads, peak,
           peak_before, peak_after);
    if (bf16)
        printf(
            "bf16 peak (register-only vdpbf16ps loop, %d threads): %.1f GFLOP/s (before %.1f, after %.1f) = %.2fx "
            "fp32\n",
            threads, peak16, peak16_before, peak16_after, peak16 / peak);
    else printf("bf16: this CPU has no AVX512_BF16; bf16 steps skipped\n");
    for (const StepTimes& r : runs) {
        const bool b16 = r.prec == Precision::kBf16;
        printf(
            "124M B=%d T=%d%s: %.0f ms/step (forward %.0f, backward %.0f, update %.0f; median of %d) "
            "%.1f GFLOP/s = %.0f%% of %s peak\n",
            r.B, r.T, b16 ? " bf16" : "", r.total * 1e3, r.fwd * 1e3, r.bwd * 1e3, r.upd * 1e3, r.steps, r.gflops,
            100 * r.gflops / (b16 ? peak16 : peak), b16 ? "bf16" : "fp32");
    }
    for (const StepTimes& r : runs)
        if (r.prec == Precision::kBf16)
            for (const StepTimes& f : runs)
                if (f.prec == Precision::kFp32 && f.B == r.B && f.T == r.T)
                    printf("bf16 / fp32 step B=%d T=%d: %.2fx (bf16 %.0f ms, fp32 %.0f ms)\n", r.B, r.T,
                           r.total / f.total, r.total * 1e3, f.total * 1e3);
}
