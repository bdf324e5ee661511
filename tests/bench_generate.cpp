// bench_generate.cpp: decode speed of the KV-cache path for the 124M geometry with random weights, at fp32
// (with AVX512_BF16) bf16, or int8: a prompt of 64 or 512 tokens in one pass (its tok/s is the prefill's,
// through gemm), then 64 single-token steps (greedy, so sampling cost is negligible). Reports tok/s and the
// weight bandwidth decoding implies (every step streams all parameters once: 4 bytes each at fp32, 2 at
// bf16, 1 + 2/32 for int8's matrices), against the read bandwidth of a plain summing loop; for bf16 and int8,
// the mat-vecs' own share of the decode time and GB/s. And several sequences decoded together (infer_decode):
// the aggregate tok/s of 1, 4, 8 and 16 at once, each step reading the weights once for all of them.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "platform/threads.h"
#include "platform/util.h"
#include "bench.h"
#include "inference/generate.h"
#include "inference/infer.h"
#include "inference/sampler.h"
#include "inference/speculative.h"
#include "core/model.h"
#include "precision/precision.h"

namespace {

struct DecodeSpeed {
    double tok_s, prompt_tok_s;
    // bf16 and int8: the mat-vecs' part of the decode time, their GB/s, and the rest of a token in seconds
    double matvec_share = 0, matvec_gbs = 0, rest_s = 0;
};

// bf16 and int8 decode through matmul_rows (core/layers.h): timed apart there, their share of the
// decode time splits the weights' streaming from everything else a token does.
void (*g_row_product)(float*, const float*, const Weight&, const float*, int, int, int) = nullptr;
double g_matvec_s = 0, g_matvec_bytes = 0;

void timed_row_product(float* out, const float* inp, const Weight& w, const float* bias, int N, int IC, int OC) {
    const double t0 = time_now_s();
    g_row_product(out, inp, w, bias, N, IC, OC);
    g_matvec_s += time_now_s() - t0;
    const WeightCopy* c = static_cast<const WeightCopy*>(w.copy);
    g_matvec_bytes += (double)IC * OC * (!c ? 4.0 : c->q8 ? 1.0 + 2.0 / kQ8Block : 2.0);
}

DecodeSpeed decode_speed(const GPT2& model, int prompt_len) {
    std::vector<int> prompt(prompt_len);
    for (int i = 0; i < prompt_len; i++) prompt[i] = (i * 7919) % 50257;
    GenerateOptions opts;
    opts.max_tokens = 64;
    opts.sampler.temperature = 0;
    opts.stop_token = -1;
    std::vector<double> tps, prompt_tps, shares, gbs, rest;
    const bool timed = gpt2_precision(model) != Precision::kFp32 && matmul_rows;
    if (timed) g_row_product = matmul_rows, matmul_rows = timed_row_product;
    for (int rep = 0; rep < 4; rep++) {
        Rng rng(1);
        GenerateStats st;
        bool first = true;
        generate(
            model, prompt, opts, &rng,
            [&](int) {  // the decode's time starts here: the prompt's last mat-vec is not in it
                if (first) g_matvec_s = g_matvec_bytes = 0, first = false;
            },
            &st);
        if (rep == 0) continue;  // warm-up
        tps.push_back(st.new_tokens / st.decode_s);
        prompt_tps.push_back(st.prompt_tokens / st.prompt_s);
        shares.push_back(g_matvec_s / st.decode_s), gbs.push_back(g_matvec_s > 0 ? g_matvec_bytes / g_matvec_s : 0);
        rest.push_back((st.decode_s - g_matvec_s) / st.new_tokens);
    }
    if (timed) matmul_rows = g_row_product;
    for (auto* v : {&tps, &prompt_tps, &shares, &gbs, &rest}) std::sort(v->begin(), v->end());
    const size_t mid = tps.size() / 2;
    return {tps[mid], prompt_tps[mid], timed ? shares[mid] : 0, timed ? gbs[mid] / 1e9 : 0, timed ? rest[mid] : 0};
}

// n sequences (prompts of 48 + 2i tokens: caches of different lengths) decoded together for `steps` greedy
// steps, each step's team sized by the load as generate's (platform/threads.h): the median over 3 runs (after a
// warm-up) of the steps' aggregate tok/s. states holds >= n prefilled sequences, set back to their prompts'
// lengths before each run.
double decode_batch_speed(const GPT2& model, std::vector<InferState>& states, int n, int steps) {
    const int Vp = model.cfg.padded_vocab_size;
    std::vector<InferState*> seqs;
    for (int i = 0; i < n; i++) seqs.push_back(&states[i]);
    InferScratch scratch;
    infer_scratch_init(&scratch, model, n);
    std::vector<float> logits((size_t)n * Vp);
    std::vector<int> tokens(n);
    std::vector<double> tps;
    static ThreadTuner tuner;
    for (int rep = 0; rep < 4; rep++) {
        for (int i = 0; i < n; i++) states[i].len = 48 + 2 * i, tokens[i] = (i * 7919 + 13) % 50257;
        const double t0 = time_now_s();
        for (int step = 0; step < steps; step++) {
            tuner.begin();
            infer_decode(&scratch, seqs.data(), model, tokens.data(), n, logits.data());
            tuner.end();
            for (int i = 0; i < n; i++) tokens[i] = sampler_argmax(&logits[(size_t)i * Vp], model.cfg.vocab_size);
        }
        if (rep > 0) tps.push_back(n * steps / (time_now_s() - t0));  // the first is a warm-up
    }
    std::sort(tps.begin(), tps.end());
    return tps[1];
}

}  // namespace

void bench_build_124m(GPT2* model, Precision prec) {
    gpt2_build(model, config_make(1024, 50257, 12, 12, 768));
    gpt2_init_random(model, 1);
    gpt2_set_precision(model, prec);
    if (prec == Precision::kInt8) gpt2_round_inputs_q8(model), infer_keep_q8_tiles(model);  // as generate's int8
}

void bench_decode_together(const GPT2& model, const std::vector<int>& counts, int steps,
                           const std::function<void(int n, double tok_s)>& measured) {
    const int most = *std::max_element(counts.begin(), counts.end());
    std::vector<InferState> states(most);
    std::vector<float> logits(model.cfg.padded_vocab_size);
    for (int i = 0; i < most; i++) {
        const int len = 48 + 2 * i;
        std::vector<int> prompt(len);
        for (int t = 0; t < len; t++) prompt[t] = (t * 7919 + i) % 50257;
        infer_init(&states[i], model, len + steps, len);
        infer_forward(&states[i], model, prompt.data(), len, logits.data(), false);
    }
    for (int n : counts) measured(n, decode_batch_speed(model, states, n, steps));
}

double bench_weight_bytes(const GPT2& model) {
    if (gpt2_precision(model) == Precision::kBf16) return 2.0 * model.num_params;
    double bytes = 4.0 * model.num_params;
    const PrecisionCopies* c = gpt2_precision_copies(model);
    for (const TensorInfo& t : model.param_table)  // int8: a byte per weight and 2 per block of 32
        if (c && c->at.count(t.offset) && c->at.at(t.offset).q8) bytes -= t.numel() * (4.0 - 1.0 - 2.0 / kQ8Block);
    return bytes;
}

void bench_read_bandwidth() {
    const size_t n = (size_t)1 << 28;  // 1 GiB of floats: far past any cache
    std::vector<float> a;
    buffer_assign_zero(&a, n);  // huge pages, as the model's weights
    std::vector<double> gbs;
    double sink = 0;
    for (int rep = 0; rep < 6; rep++) {
        const double t0 = time_now_s();
        double total = 0;
#pragma omp parallel for schedule(static) reduction(+ : total)
        for (size_t i0 = 0; i0 < n; i0 += 4096) {  // blocks of 4096 floats, 4 vector sums in flight
            typedef float v16 __attribute__((vector_size(64)));
            v16 s[4] = {};
            for (size_t i = i0; i < i0 + 4096; i += 64)
                for (int l = 0; l < 4; l++) {
                    __builtin_prefetch(&a[i + 16 * l] + 512);  // 2 KB ahead: the hardware alone keeps too few lines in flight
                    v16 v;
                    memcpy(&v, &a[i + 16 * l], sizeof v);
                    s[l] += v;
                }
            for (int l = 0; l < 4; l++)
                for (int k = 0; k < 16; k++) total += s[l][k];
        }
        sink += total;
        if (rep > 0) gbs.push_back(4.0 * n / (time_now_s() - t0) / 1e9);  // the first is a warm-up
    }
    std::sort(gbs.begin(), gbs.end());
    int threads = 1;
#ifdef _OPENMP
    threads = omp_get_max_threads();
#endif
    // the best of 5: the ceiling this machine reached now (a neighbour's traffic only ever lowers it)
    printf("memory read bandwidth (a 1 GiB array summed, %d threads, software prefetch): %.1f GB/s (best of 5; "
           "median %.1f)%s\n", threads, gbs.back(), gbs[2], sink < 0 ? " " : "");
    bench_keep("read GB/s", gbs.back());
}

void bench_decode(Precision prec, int prompt_len) {
    const char* name = prec == Precision::kBf16 ? "bf16" : prec == Precision::kInt8 ? "int8" : "fp32";
    if (prec == Precision::kBf16 && !bf16_supported()) {
        printf("decode 124M bf16: skipped (this CPU has no AVX512_BF16)\n");
        return;
    }
    GPT2 model;
    bench_build_124m(&model, prec);
    const double bytes = bench_weight_bytes(model), read_gbs = bench_kept("read GB/s");
    DecodeSpeed s = decode_speed(model, prompt_len);
    printf(
        "decode 124M %s, %d-token prompt: %.1f tok/s (median of 3 runs of 64 tokens; %.1f GB/s of weights%s), "
        "prompt %.0f tok/s\n",
        name, prompt_len, s.tok_s, s.tok_s * bytes / 1e9,
        read_gbs > 0 ? (", " + std::to_string((int)std::lround(100 * s.tok_s * bytes / 1e9 / read_gbs)) +
                        "% of the read bandwidth").c_str()
                     : "",
        s.prompt_tok_s);
    if (s.matvec_share > 0)
        printf("  its mat-vecs (with their threads' start and join): %.0f%% of the decode time, at %.1f GB/s%s; the "
               "rest (attention, LayerNorm, GELU, sampling, and their threads') %.0f%%, %.2f ms a token\n",
               100 * s.matvec_share, s.matvec_gbs,
               read_gbs > 0 ? (" (" + std::to_string((int)std::lround(100 * s.matvec_gbs / read_gbs)) +
                               "% of the read bandwidth)").c_str()
                            : "",
               100 * (1 - s.matvec_share), 1e3 * s.rest_s);
    const std::string key = std::string("decode ") + name + " " + std::to_string(prompt_len);
    bench_keep(key, s.tok_s);
    const double fp32_tok_s = bench_kept("decode fp32 " + std::to_string(prompt_len));
    if (prec != Precision::kFp32 && fp32_tok_s > 0)
        printf("decode %s / fp32, %d-token prompt: %.2fx\n", name, prompt_len, s.tok_s / fp32_tok_s);
}

void bench_decode_batch(Precision prec) {
    const char* name = prec == Precision::kBf16 ? "bf16" : prec == Precision::kInt8 ? "int8" : "fp32";
    if (prec == Precision::kBf16 && !bf16_supported()) {
        printf("decode 124M bf16, sequences together: skipped (this CPU has no AVX512_BF16)\n");
        return;
    }
    GPT2 model;
    bench_build_124m(&model, prec);
    const int steps = prec == Precision::kFp32 ? 16 : 32;
    double one = 0;
    bench_decode_together(model, {1, 4, 8, 16}, steps, [&](int n, double tok_s) {
        if (n == 1) one = tok_s;
        printf("decode 124M %s, %2d sequences together (%d steps, median of 3): %.1f tok/s aggregate, %.2fx one "
               "sequence's, %.1f ms a step\n", name, n, steps, tok_s, tok_s / one, 1e3 * n / tok_s);
        bench_keep(std::string("decode together ") + name + " " + std::to_string(n), tok_s);
    });
}

namespace {

// Greedy decoding of 128 tokens after a 16-token prompt, plain (draft null) or speculative: tok/s.
double draft_decode_speed(const GPT2& model, const GPT2* draft, GenerateStats* stats) {
    std::vector<int> prompt(16);
    for (int i = 0; i < 16; i++) prompt[i] = (i * 7919) % 50257;
    GenerateOptions opts;
    opts.max_tokens = 128;
    opts.sampler.temperature = 0;
    opts.stop_token = -1;
    Rng rng(1);
    if (draft) generate_speculative(model, *draft, prompt, opts, &rng, [](int) {}, stats);
    else generate(model, prompt, opts, &rng, [](int) {}, stats);
    return (stats->new_tokens - 1) / stats->decode_s;
}

}  // namespace

void bench_decode_draft() {
    GPT2 model, int8, other;
    bench_build_124m(&model, Precision::kFp32);
    gpt2_build(&int8, model.cfg);  // the model's own int8 copy, as generate --draft int8 makes it
    int8.params = model.params;
    gpt2_set_precision(&int8, Precision::kInt8, true);
    gpt2_round_inputs_q8(&int8);
    infer_keep_q8_tiles(&int8);
    gpt2_build(&other, config_make(1024, 50257, 2, 12, 768));  // a 2-layer draft that agrees with nothing
    gpt2_init_random(&other, 2);
    // plain, then each draft, in turn: each run's ratio to the plain run just before it (a shared machine's
    // speed drifts over a minute), the median of 3 after a warm-up
    const GPT2* drafts[] = {&int8, &other};
    std::vector<double> plain, ratio[2];
    GenerateStats stats[2], plain_stats;
    for (int rep = 0; rep < 4; rep++) {
        const double base = draft_decode_speed(model, nullptr, &plain_stats);
        for (int d = 0; d < 2; d++) {
            const double fast = draft_decode_speed(model, drafts[d], &stats[d]);
            if (rep > 0) ratio[d].push_back(fast / base);
        }
        if (rep > 0) plain.push_back(base);
    }
    for (auto* v : {&plain, &ratio[0], &ratio[1]}) std::sort(v->begin(), v->end());
    printf("decode 124M fp32, 16-token prompt, 128 tokens greedy: %.1f tok/s (median of 3)\n", plain[1]);
    for (int d = 0; d < 2; d++) {
        const GenerateStats& s = stats[d];
        printf("  with %s drafting: %.2fx plain (median of 3, each against the plain run before it); %d of %d "
               "drafted tokens kept (%.0f%%) in %d checks\n", d == 0 ? "its own int8 copy" : "a 2-layer random model",
               ratio[d][1], s.kept, s.drafted, 100.0 * s.kept / std::max(s.drafted, 1), s.rounds);
        bench_keep(d == 0 ? "draft int8 / plain" : "draft disagreeing / plain", ratio[d][1]);
    }
}
