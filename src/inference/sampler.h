// sampler.h: turns one position's logits into a token: temperature, then top-k, then top-p (nucleus),
// the order HuggingFace's generate() applies its warpers in, then a draw from the seeded Rng.
// Temperature 0 means greedy (argmax). Only the first V logits are real; padding never enters.
#pragma once
#include <vector>

#include "core/rng.h"

struct SamplerConfig {
    float temperature = 1.0f;
    int top_k = 50;      // 0 disables
    float top_p = 1.0f;  // 1 disables
};

// Index of the largest of the first V logits (the first one on ties).
int sampler_argmax(const float* logits, int V);
// Probabilities after temperature, top-k and top-p, as (token, probability) pairs sorted by falling
// probability; the kept set renormalised to sum to 1. Exposed for tests.
std::vector<std::pair<int, double>> sampler_distribution(const float* logits, int V, const SamplerConfig& cfg);
// The same in a plain form (each logit a pair, top-k by nth_element), which the tests hold it against.
std::vector<std::pair<int, double>> sampler_distribution_ref(const float* logits, int V, const SamplerConfig& cfg);
// One token.
int sampler_sample(const float* logits, int V, const SamplerConfig& cfg, Rng* rng);
