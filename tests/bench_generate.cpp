// bench_generate.cpp: decode speed of the KV-cache path for the 124M geometry with random weights, at fp32
// or (with AVX512_BF16) bf16: a prompt of 64 or 512 tokens in one pass (its tok/s is the prefill's, through
// gemm), then 64 single-token steps (greedy, so sampling cost is negligible). Reports tok/s and the weight
// bandwidth decoding implies (every step streams all parameters once: 4 bytes each at fp32, 2 at bf16).
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "base/util.h"
#include "bench.h"
#include "model/generate.h"
#include "model/model.h"

namespace {

struct DecodeSpeed {
    double tok_s, prompt_tok_s;
};

DecodeSpeed decode_speed(const GPT2& model, int prompt_len) {
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

void bench_decode(Precision prec, int prompt_len) {
    const char* name = prec == Precision::kBf16 ? "bf16" : "fp32";
    if (prec == Precision::kBf16 && !bf16_supported()) {
        printf("decode 124M bf16: skipped (this CPU has no AVX512_BF16)\n");
        return;
    }
    GPT2 model;
    gpt2_build(&model, config_make(1024, 50257, 12, 12, 768));
    gpt2_init_random(&model, 1);
    gpt2_set_precision(&model, prec);
    const double bytes = prec == Precision::kBf16 ? 2.0 : 4.0;
    DecodeSpeed s = decode_speed(model, prompt_len);
    printf(
        "decode 124M %s, %d-token prompt: %.1f tok/s (median of 3 runs of 64 tokens; %.0f GB/s of weights), "
        "prompt %.0f tok/s\n",
        name, prompt_len, s.tok_s, s.tok_s * model.num_params * bytes / 1e9, s.prompt_tok_s);
    const std::string key = std::string("decode ") + name + " " + std::to_string(prompt_len);
    bench_keep(key, s.tok_s);
    const double fp32_tok_s = bench_kept("decode fp32 " + std::to_string(prompt_len));
    if (prec == Precision::kBf16 && fp32_tok_s > 0)
        printf("decode bf16 / fp32, %d-token prompt: %.2fx\n", prompt_len, s.tok_s / fp32_tok_s);
}
