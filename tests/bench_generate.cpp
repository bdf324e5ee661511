// bench_generate.cpp: decode speed of the KV-cache path for the 124M geometry with random weights: a
// 64-token prompt in one pass, then 64 single-token steps (greedy, so sampling cost is negligible).
// Reports tok/s and the weight bandwidth it implies (every step streams all fp32 parameters once).
#include <algorithm>
#include <cstdio>
#include <vector>

#include "base/util.h"
#include "bench.h"
#include "model/generate.h"
#include "model/model.h"

BENCH(decode_124m) {
    GPT2 model;
    gpt2_build(&model, config_make(1024, 50257, 12, 12, 768), "bench");
    gpt2_init_random(&model, 1);
    std::vector<int> prompt(64);
    for (int i = 0; i < 64; i++) prompt[i] = (i * 7919) % 50257;
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
    const double gb_per_token = (double)model.num_params * sizeof(float) / 1e9;
    printf(
        "decode 124M fp32, 64-token prompt: %.1f tok/s (median of %zu runs of 64 tokens; %.0f GB/s of weights), "
        "prompt %.0f tok/s\n",
        tps[tps.size() / 2], tps.size(), tps[tps.size() / 2] * gb_per_token, prompt_tps[prompt_tps.size() / 2]);
}
