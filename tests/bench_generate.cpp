// bench_generate.cpp: decode speed of the KV-cache path for the 124M geometry with random weights, at fp32
// and (with AVX512_BF16) bf16: a prompt of 64 or 512 tokens in one pass (its tok/s is the prefill's, through
// gemm), then 64 single-token steps (greedy, so sampling cost is negligible). Reports tok/s and the weight
// bandwidth decoding implies (every step streams all parameters once: 4 bytes each at fp32, 2 at bf16).
#include <algorithm>
#include <cstdio>
#include <vector>

#include "base/util.h"
#include "bench.h"
#include "model/generate.h"
#include "model/model.h"

namespace {

struct DecodeSpeed {
    double tok_s, prompt_tok_s;
};

DecodeSpeed bench_decode(GPT2& model, int prompt_len) {
    std::vector<int> prompt(prompt_len);
    for (int i = 0; i < prompt_len; i++) prompt[i] = (i * 7919) % 50257;
    GenerateOptions opts;
    opts.max_tokens = 64;
    opts.sampler.temperature = 0;
    opts.stop_token = -1;
    std::vector<double> tps, prompt_tps;
    for (int rep = 0; rep < 4; rep++) {
        Rng rng(1);
        GenerateStats st;
        generate(
            model, prompt, opts, &rng, [](int) {}, &st);
        if (rep == 0) continue;  // warm-up
        tps.push_back(st.new_tokens / st.decode_s);
        prompt_tps.push_back(st.prompt_tokens / st.prompt_s);
    }
    std::sort(tps.begin(), tps.end());
    std::sort(prompt_tps.begin(), prompt_tps.end());
    return {tps[tps.size() / 2], prompt_tps[prompt_tps.size() / 2]};
}

}  // namespace

BENCH(decode_124m) {
    GPT2 model;
    gpt2_build(&model, config_make(1024, 50257, 12, 12, 768));
    gpt2_init_random(&model, 1);
    double fp32_tok_s = 0;
    for (Precision prec : {Precision::kFp32, Precision::kBf16}) {
        if (prec == Precision::kBf16 && !bf16_supported()) {
            printf("decode 124M bf16: skipped (this CPU has no AVX512_BF16)\n");
            continue;
        }
        gpt2_set_precision(&model, prec);
        const char* name = prec == Precision::kBf16 ? "bf16" : "fp32";
        const double bytes = prec == Precision::kBf16 ? 2.0 : 4.0;
        DecodeSpeed s64 = bench_decode(model, 64), s512 = bench_decode(model, 512);
        printf(
            "decode 124M %s, 64-token prompt: %.1f tok/s (median of 3 runs of 64 tokens; %.0f GB/s of weights), "
            "prompt %.0f tok/s; 512-token prompt: %.1f tok/s, prompt %.0f tok/s\n",
            name, s64.tok_s, s64.tok_s * model.num_params * bytes / 1e9, s64.prompt_tok_s, s512.tok_s,
            s512.prompt_tok_s);
        if (prec == Precision::kFp32) fp32_tok_s = s64.tok_s;
        else printf("decode bf16 / fp32: %.2fx\n", s64.tok_s / fp32_tok_s);
    }
}
