// generate.h: autoregressive generation on the KV-cache path (infer.h) with the sampler (sampler.h).
// Used by the `generate` command and by training's periodic samples. Stops at opts.stop_token, after
// max_tokens, or when the context is full (it does not slide the window). Knows no tokenizer.
#pragma once
#include <functional>
#include <vector>

#include "base/rng.h"
#include "model/infer.h"
#include "model/model.h"
#include "model/sampler.h"

struct GenerateOptions {
    int max_tokens = 64;
    SamplerConfig sampler;
    int stop_token = -1;  // generation ends after this token (the tokenizer's <|endoftext|>); -1: never
};

struct GenerateStats {
    int prompt_tokens = 0;
    double prompt_s = 0;  // the batched prompt pass
    int new_tokens = 0;
    double decode_s = 0;  // sampling plus the single-position passes
    bool context_full = false;
};

// Generates after `prompt` (non-empty), calling on_token for each new token as soon as it is chosen.
// Returns the new tokens. fatal if the prompt does not fit the model's context.
std::vector<int> generate(const GPT2& model, const std::vector<int>& prompt, const GenerateOptions& opts, Rng* rng,
                          const std::function<void(int)>& on_token, GenerateStats* stats);
