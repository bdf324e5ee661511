// bench_train.cpp: the training cases of run_bench for GPT-2 124M with random weights (no files needed):
// the peak (a register-only FMA loop on all threads; with AVX512_BF16 a vdpbf16ps loop), ms per step
// split into forward, backward and update (grad norm + AdamW with the clip folded in) with achieved
// GFLOP/s against that peak, the first step of a new model against a steady one, and GFLOP/s of each
// matmul. Prints medians; asserts nothing (not a test).
#include <algorithm>
#include <cstdio>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "core/rng.h"
#include "platform/util.h"
#include "bench.h"
#include "core/optimizer.h"
#include "core/gemm.h"
#include "core/model.h"
#include "dispatch/dispatch.h"
#include "precision/adamw_8bit.h"
#include "precision/precision.h"
#include "memory/memory.h"
#include "lora/lora.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace {

const long kPeakIters = 20000000;

// kPeakIters x independent vector FMAs on 16 lanes that never touch memory (32 FLOPs each), as many as
// the registers hold. A kernel (dispatch/dispatch.h), so that it runs the instruction set the kernels run.
// Returns the FLOPs done.
double fma_loop(float* sink) { return fma_peak_loop(kPeakIters, sink); }

#if defined(__x86_64__)
// The same with vdpbf16ps: each multiplies 16 pairs of bf16 values and adds both products into 16 fp32
// lanes, 64 FLOPs.
__attribute__((target("avx512f,avx512bf16"))) double bf16_loop(float* sink) {
    __m512 acc[12];
    __m512bh a = (__m512bh)_mm512_set1_epi32(0x3F803F80), b = (__m512bh)_mm512_set1_epi32(0x3F7F3F7F);
    for (int i = 0; i < 12; i++) acc[i] = _mm512_set1_ps((float)i);
    for (long it = 0; it < kPeakIters; it++)
        for (int i = 0; i < 12; i++) acc[i] = _mm512_dpbf16_ps(acc[i], a, b);
    float lanes[16];
    *sink = 0;
    for (int i = 0; i < 12; i++) _mm512_storeu_ps(lanes, acc[i]), *sink += lanes[0];
    return 64.0 * 12 * kPeakIters;
}

// The same with AMX's TDPBF16PS where bf16_amx(): each multiplies a 16 x 32 tile of bf16 values by a 32 x 16
// one into a 16 x 16 tile of fp32 sums, 16384 FLOPs; four independent sums, the operands loaded once.
__attribute__((target("amx-tile,amx-bf16"))) double amx_loop(float* sink) {
    // palette 1, eight tiles of 16 rows of 64 bytes, as the gemm's (static: see gemm_bf16.cpp's kTileConfig)
    struct TileConfig {
        uint8_t palette, start_row, reserved[14];
        uint16_t bytes_per_row[16];
        uint8_t rows[16];
    };
    alignas(64) static const TileConfig config = {
        1, 0, {}, {64, 64, 64, 64, 64, 64, 64, 64}, {16, 16, 16, 16, 16, 16, 16, 16}};
    _tile_loadconfig(&config);
    alignas(64) uint32_t small[16 * 16];  // pairs of 2^-10: the sums stay finite
    for (uint32_t& w : small) w = 0x3A803A80u;
    alignas(64) float out[16 * 16];
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    _tile_loadd(4, small, 64);
    _tile_loadd(5, small, 64);
    const long iters = kPeakIters / 16;  // a TDPBF16PS does 256 times a vdpbf16ps's work
    for (long it = 0; it < iters; it++) {
        _tile_dpbf16ps(0, 4, 5);
        _tile_dpbf16ps(1, 4, 5);
        _tile_dpbf16ps(2, 4, 5);
        _tile_dpbf16ps(3, 4, 5);
    }
    _tile_stored(0, out, 64);
    *sink = out[0];  // the configuration stays: it is the one the gemm's threads load (gemm_bf16.cpp)
    return 16384.0 * 4 * iters;
}
#endif

// GFLOP/s of loop() (which returns the FLOPs it did) on every thread, summed over the threads; the best
// of 3.
double measure_peak_gflops(double (*loop)(float* sink)) {
    double best = 0;
    for (int rep = 0; rep < 3; rep++) {
        double t0 = time_now_s();
        float sink = 0;
        double flops = 0;
#pragma omp parallel reduction(+ : sink, flops)
        {
            float s = 0;
            flops += loop(&s);
            sink += s;
        }
        best = std::max(best, flops / (time_now_s() - t0) / 1e9);
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

const char* prec_name(Precision prec) { return prec == Precision::kBf16 ? "bf16" : "fp32"; }

// The peak of prec on all threads, measured now; the highest so far in this run is kept and returned.
// The machine may be shared: a step case measures it again after its steps and uses the higher figure,
// so a neighbour's burst during one measurement does not inflate the percentages.
double peak_now(Precision prec) {
    double p = 0;
    if (prec == Precision::kFp32) p = measure_peak_gflops(fma_loop);
#if defined(__x86_64__)
    else if (bf16_amx()) p = measure_peak_gflops(amx_loop);
    else if (bf16_supported()) p = measure_peak_gflops(bf16_loop);
#endif
    const std::string key = std::string("peak ") + prec_name(prec);
    bench_keep(key, std::max(p, bench_kept(key)));
    return bench_kept(key);
}

int threads_now() {
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

// A 124M model ready to train, and a random batch (B, T).
struct Bench124M {
    GPT2 model;
    AdamW opt;
    std::vector<int> x, y;
    double build_s = 0, init_s = 0;  // gpt2_build + gpt2_enable_training, gpt2_init_random
    double setup_s = 0;              // activations and AdamW's moments, allocated before the first step as train does
};

void setup_124m(Bench124M* b, int B, int T, Precision prec) {
    double t0 = time_now_s();
    gpt2_build(&b->model, config_make(1024, 50257, 12, 12, 768));
    gpt2_enable_training(&b->model);
    double t1 = time_now_s();
    gpt2_init_random(&b->model, 1);
    double t2 = time_now_s();
    b->build_s = t1 - t0, b->init_s = t2 - t1;
    gpt2_set_precision(&b->model, prec);
    gpt2_alloc_acts(&b->model, B, T);
    adamw_prepare(&b->opt, b->model.params.size());
    b->setup_s = time_now_s() - t2;
    Rng rng(2);
    b->x.resize(B * T), b->y.resize(B * T);
    for (int i = 0; i < B * T; i++) b->x[i] = rng.below(50257), b->y[i] = rng.below(50257);
}

struct StepTime {
    double fwd, bwd, upd, total;  // seconds
};

// One training step as the trainer takes it: forward, backward, grad norm, AdamW with the clip folded in.
StepTime train_step_timed(Bench124M* b, int B, int T) {
    AdamWConfig oc;
    double t0 = time_now_s();
    gpt2_zero_grad(&b->model);
    gpt2_forward(&b->model, b->x.data(), b->y.data(), B, T, 1.0f);  // with the head's backward
    double t1 = time_now_s();
    gpt2_backward(&b->model);
    double t2 = time_now_s();
    float norm = optimizer_grad_norm(gpt2_param_set(b->model));
    adamw_update(&b->opt, gpt2_param_set(b->model), oc, 1e-4f, optimizer_clip_factor(norm, 1.0f));
    double t3 = time_now_s();
    return {t1 - t0, t2 - t1, t3 - t2, t3 - t0};
}

// GFLOP/s of the three products of one linear layer (N rows, IC -> OC) as core/layers.cpp calls them.
void bench_linear(const char* name, int N, int IC, int OC, Precision prec) {
    std::vector<float> inp((size_t)N * IC, 0.5f), w((size_t)OC * IC, 0.25f), out((size_t)N * OC);
    std::vector<float> dinp((size_t)N * IC), dw((size_t)OC * IC);
    const double flops = 2.0 * N * IC * OC;
    const GemmOperands* ops = prec == Precision::kBf16 ? bf16_gemm_operands() : nullptr;
    double t[3];
    for (int which = 0; which < 3; which++) {
        std::vector<double> times;
        for (int rep = 0; rep < 7; rep++) {
            double t0 = time_now_s();
            if (which == 0) gemm(N, OC, IC, inp.data(), IC, false, w.data(), IC, true, out.data(), OC, false, ops);
            if (which == 1) gemm(N, IC, OC, out.data(), OC, false, w.data(), IC, false, dinp.data(), IC, true, ops);
            if (which == 2) gemm(OC, IC, N, out.data(), OC, true, inp.data(), IC, false, dw.data(), IC, true, ops);
            times.push_back(time_now_s() - t0);
        }
        t[which] = median(times);
    }
    printf("  %-8s %s N=%d IC=%d OC=%d: forward %.1f ms %.0f GFLOP/s, dinp %.1f ms %.0f, dweight %.1f ms %.0f\n", name,
           prec_name(prec), N, IC, OC, t[0] * 1e3, flops / t[0] / 1e9, t[1] * 1e3, flops / t[1] / 1e9, t[2] * 1e3,
           flops / t[2] / 1e9);
}

}  // namespace

void bench_peak() {
    printf("peak fp32 (register-only FMA loop, %d threads): %.1f GFLOP/s\n", threads_now(), peak_now(Precision::kFp32));
    if (!bf16_supported()) {
        printf("peak bf16: this CPU has no AVX512_BF16; bf16 cases are skipped\n");
        return;
    }
    const double p16 = peak_now(Precision::kBf16);
    printf("peak bf16 (register-only %s loop, %d threads): %.1f GFLOP/s = %.2fx fp32\n",
           bf16_amx() ? "AMX TDPBF16PS" : "vdpbf16ps", threads_now(), p16, p16 / bench_kept("peak fp32"));
}

void bench_adamw_stream() {
    const size_t n = (size_t)1 << 26;  // 64 Mi floats per array: 1 GiB over the four, far past any cache
    std::vector<float> w, g, m, v;
    for (std::vector<float>* a : {&w, &g, &m, &v}) buffer_assign_zero(a, n);  // huge pages, as the model's
    std::vector<double> gbs;
    for (int rep = 0; rep < 6; rep++) {
        const double t0 = time_now_s();
#pragma omp parallel for schedule(static)
        for (size_t i = 0; i < n; i++) {  // AdamW's traffic (w, g, m, v read; w, m, v written), less its sqrt
            const float mi = 0.9f * m[i] + 0.1f * g[i], vi = 0.999f * v[i] + 0.001f * g[i] * g[i];
            m[i] = mi, v[i] = vi;
            w[i] -= 1e-3f * (mi + vi);
        }
        if (rep > 0) gbs.push_back(28.0 * n / (time_now_s() - t0) / 1e9);  // the first is a warm-up
    }
    std::sort(gbs.begin(), gbs.end());
    printf("AdamW-shaped stream (4 arrays read, 3 written, 28 bytes per parameter, %d threads): %.1f GB/s (best of "
           "5; median %.1f)\n", threads_now(), gbs.back(), gbs[2]);
    bench_keep("adamw GB/s", gbs.back());
}

// Item 9 of issue 22: a new run's first step should take at most twice a steady one. Times what `train`
// does before it: allocating the parameters and gradients, the random init, the activations and AdamW's
// moments, then the first step, the second, and the median of the next 5 (a median: a neighbour's burst
// skews a mean).
void bench_first_step() {
    const int B = 4, T = 64, kSteady = 5;
    Bench124M b;
    setup_124m(&b, B, T, Precision::kFp32);
    const StepTime t1 = train_step_timed(&b, B, T);
    const double first = t1.total, second = train_step_timed(&b, B, T).total;
    std::vector<double> steps;
    for (int s = 0; s < kSteady; s++) steps.push_back(train_step_timed(&b, B, T).total);
    const double steady = median(steps);
    printf(
        "124M B=%d T=%d fp32, a new model: build %.0f ms (parameters, gradients), random init %.0f ms, activations "
        "and AdamW state %.0f ms, first step %.0f ms (forward %.0f, backward %.0f, update %.0f), second %.0f ms, "
        "steady %.0f ms (median of the next %d)\n",
        B, T, b.build_s * 1e3, b.init_s * 1e3, b.setup_s * 1e3, first * 1e3, t1.fwd * 1e3, t1.bwd * 1e3, t1.upd * 1e3,
        second * 1e3, steady * 1e3, kSteady);
    printf(
        "first step / steady step: %.2fx (goal: at most 2x); build + init + setup + first step / steady step: %.2fx\n",
        first / steady, (b.build_s + b.init_s + b.setup_s + first) / steady);
}

void bench_train_step(int B, int T, Precision prec) {
    const char* name = prec_name(prec);
    if (prec == Precision::kBf16 && !bf16_supported()) {
        printf("124M B=%d T=%d bf16: skipped (this CPU has no AVX512_BF16)\n", B, T);
        return;
    }
    const int kSteps = 10;
    Bench124M b;
    setup_124m(&b, B, T, prec);
    std::vector<double> fwd, bwd, upd, total;
    for (int s = 0; s < kSteps + 2; s++) {
        StepTime t = train_step_timed(&b, B, T);
        if (s < 2) continue;  // warm-up
        fwd.push_back(t.fwd), bwd.push_back(t.bwd), upd.push_back(t.upd), total.push_back(t.total);
    }
    const double ms = median(total) * 1e3, gflops = step_flops(b.model.cfg, B, T) / median(total) / 1e9;
    const double peak = peak_now(prec);
    printf(
        "124M B=%d T=%d %s: %.0f ms/step (forward %.0f, backward %.0f, update %.0f; median of %d) %.1f GFLOP/s = "
        "%.0f%% of the %s peak (%.1f GFLOP/s, %d threads)\n",
        B, T, name, ms, median(fwd) * 1e3, median(bwd) * 1e3, median(upd) * 1e3, kSteps, gflops, 100 * gflops / peak,
        name, peak, threads_now());
    bench_keep(std::string("step ") + name + " " + std::to_string(B) + "x" + std::to_string(T), ms);
    if (prec == Precision::kBf16 && bf16_amx()) {  // the same steps on vdpbf16ps, as on a CPU without AMX
        bf16_amx_use(false);
        std::vector<double> dp;
        for (int s = 0; s < kSteps / 2 + 1; s++) dp.push_back(train_step_timed(&b, B, T).total);
        bf16_amx_use(true);
        dp.erase(dp.begin());  // warm-up
        printf("124M B=%d T=%d bf16 with AMX off (vdpbf16ps): %.0f ms/step (median of %d); AMX / vdpbf16ps %.2fx\n", B,
               T, median(dp) * 1e3, kSteps / 2, ms / (median(dp) * 1e3));
    }
    const double fp32_ms = bench_kept("step fp32 " + std::to_string(B) + "x" + std::to_string(T));
    if (prec == Precision::kBf16 && fp32_ms > 0)
        printf("bf16 / fp32 step B=%d T=%d: %.2fx (bf16 %.0f ms, fp32 %.0f ms)\n", B, T, ms / fp32_ms, ms, fp32_ms);
    // The step's floor: its FLOPs at the peak plus the optimizer pass's bytes (w, g, m, v read; w, m, v
    // written; bf16 also writes its weight copy) at the AdamW-shaped stream's rate.
    const double stream = bench_kept("adamw GB/s");
    if (stream <= 0) return;
    const double flop_ms = step_flops(b.model.cfg, B, T) / (peak * 1e9) * 1e3;
    const double byte_ms = b.model.num_params * (prec == Precision::kBf16 ? 30.0 : 28.0) / (stream * 1e9) * 1e3;
    printf("%s step B=%d T=%d against its floor: %.0f ms = %.0f ms of FLOPs at the peak + %.0f ms of optimizer "
           "bytes at %.1f GB/s; step / floor %.2fx\n", name, B, T, flop_ms + byte_ms, flop_ms, byte_ms, stream,
           ms / (flop_ms + byte_ms));
}

void bench_matmul(Precision prec) {
    if (prec == Precision::kBf16 && !bf16_supported()) {
        printf("matmuls bf16: skipped (this CPU has no AVX512_BF16)\n");
        return;
    }
    const int N = 4 * 64, C = 768;
    printf("per-matmul, B=4 T=64 (x12 layers except lm_head):\n");
    bench_linear("qkv", N, C, 3 * C, prec);
    bench_linear("attproj", N, C, C, prec);
    bench_linear("fc", N, C, 4 * C, prec);
    bench_linear("fcproj", N, 4 * C, C, prec);
    bench_linear("lm_head", N, C, 50304, prec);
}

// train's memory options on 124M at B=4 T=64, fp32: what each allocates (parameters, gradients, moments,
// activations with their gradients) and its step time, against the plain step.
void bench_memory_options() {
    const int B = 4, T = 64;
    struct Option {
        const char* name;
        bool recompute, in_backward;
        const char* state;                       // --optimizer-state
        Precision lora_base = Precision::kFp32;  // with lora: the frozen base's
        bool lora = false;                       // rank 16 on c_attn, c_proj, c_fc (README's fine-tune)
        bool blocks = false;                     // --recompute-blocks
    };
    const Precision f32 = Precision::kFp32;
    const Option options[] = {{"plain", false, false, "fp32"},
                              {"--recompute", true, false, "fp32"},
                              {"--recompute-blocks", false, false, "fp32", f32, false, true},
                              {"--optimizer-state bf16", false, false, "bf16"},
                              {"--optimizer-state 8bit", false, false, "8bit"},
                              {"--optimizer-in-backward", false, true, "fp32"},
                              {"all three", true, true, "bf16"},
                              {"--recompute-blocks, the other two", false, true, "bf16", f32, false, true},
                              {"--recompute-blocks, in-backward, 8bit", false, true, "8bit", f32, false, true},
                              {"--lora 16", false, false, "fp32", f32, true},
                              {"--lora 16 --precision int8", false, false, "fp32", Precision::kInt8, true}};
    double plain_ms = 0, plain_mib = 0;
    for (const Option& op : options) {
        GPT2 model;
        const GPT2Config cfg = config_make(1024, 50257, 12, 12, 768);
        gpt2_build(&model, cfg);
        TrainingMemory mem;
        mem.recompute = op.recompute, mem.recompute_blocks = op.blocks, mem.layer_grads = op.in_backward;
        memory_enable_training(&model, mem, op.lora);
        gpt2_init_random(&model, 1);
        AdamW opt;
        adamw_use_form(&opt, op.state);
        LoraModel lora;
        if (op.lora) {  // as train --lora sets it up
            gpt2_set_precision(&model, op.lora_base, true);
            LoraConfig lc;
            lc.rank = 16, lc.alpha = 32;
            lora_parse_targets("c_attn,c_proj,c_fc", &lc);
            lora_layout(&lora.adapter, lc, cfg);
            lora_init_random(&lora.adapter, 1);
            lora_attach(&model, &lora, B * T, true);
            adamw_prepare(&lora.opt, lora.adapter.params.size());
        } else {
            adamw_prepare(&opt, model.params.size());
        }
        Rng rng(2);
        std::vector<int> x(B * T), y(B * T);
        for (int i = 0; i < B * T; i++) x[i] = rng.below(50257), y[i] = rng.below(50257);
        AdamWConfig oc;
        std::vector<double> ms;
        for (int s = 0; s < 4; s++) {
            const double t0 = time_now_s();
            gpt2_zero_grad(&model);
            if (op.lora) lora_zero_grad(&lora);
            gpt2_forward(&model, x.data(), y.data(), B, T, 1.0f);
            if (op.in_backward) {
                adamw_step_in_backward(&opt, &model, oc, 1e-4f, 1.0f);
            } else {  // the adapter's optimizer step, or the model's
                gpt2_backward(&model);
                const ParamSet p = op.lora ? lora_param_set(&lora) : gpt2_param_set(model);
                adamw_update(op.lora ? &lora.opt : &opt, p, oc, 1e-4f, optimizer_clip_factor(optimizer_grad_norm(p), 1.0f));
            }
            if (s > 0) ms.push_back((time_now_s() - t0) * 1e3);  // the first warms up
        }
        // a LoRA run's: the base (its int8 blocks and what stays fp32), no gradients or moments but the adapter's
        const double adapter = 3.0 * sizeof(float) * lora.adapter.params.size();
        const double params = op.lora ? gpt2_base_bytes(cfg, op.lora_base) : gpt2_params_bytes(cfg);
        const double moments = op.lora ? adapter : (double)model.num_params * adamw_moments_bytes(opt);
        const double grads = op.lora ? 0 : memory_grads_bytes(cfg, mem);
        const double mib = (params + grads + moments + memory_acts_bytes(cfg, B, T, mem)) / (1024.0 * 1024.0);
        const double step = median(ms);
        if (plain_ms == 0) plain_ms = step, plain_mib = mib;
        printf("124M B=%d T=%d %-37s %5.0f MiB (%.2fx)  %5.0f ms/step (%.2fx; median of %zu)\n", B, T, op.name, mib,
               mib / plain_mib, step, step / plain_ms, ms.size());
    }
}
