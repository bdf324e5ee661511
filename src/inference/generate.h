// generate.h: autoregressive generation on the KV-cache path (infer.h) with the sampler (sampler.h).
// Used by the `generate` command and by training's periodic samples. Stops at opts.stop_token or after
// max_tokens. Past the model's context the window slides as nanoGPT's does: each new token is predicted
// from the last maxT tokens, which costs one maxT-token prefill per token (the cache's positions move).
// Knows no tokenizer.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "core/rng.h"
#include "inference/infer.h"
#include "core/model.h"
#include "inference/sampler.h"

struct GenerateOptions {
    int max_tokens = 64;
    SamplerConfig sampler;
    int stop_token = -1;  // generation ends after this token (the tokenizer's <|endoftext|>); -1: never
    std::function<bool()> cancelled;  // asked before each new token: true ends generation (a stop signal)
    int draft_min = 0, draft_max = 8;  // generate_speculative's (speculative.h): tokens drafted a round, within these
};

// kNonFinite: the logits held a NaN or infinity (the weights or activations overflow); nothing was sampled
// from them, and GenerateStats says where.
enum class GenerateStop { kMaxTokens, kStopToken, kCancelled, kNonFinite };

struct GenerateStats {
    int prompt_tokens = 0;
    double prompt_s = 0;  // the batched prompt pass
    int new_tokens = 0;
    double decode_s = 0;  // sampling plus the single-position passes and the slides
    int slides = 0;       // tokens predicted from a re-prefilled window (past the context)
    GenerateStop stop = GenerateStop::kMaxTokens;
    int bad_position = 0, bad_logit = 0;  // kNonFinite: where, and which logit
    float bad_value = 0;
    int drafted = 0, kept = 0, rounds = 0;  // generate_speculative's (speculative.h): drafted tokens, kept, checks
};

// The cache's positions and the rows of generate()'s largest pass: a sequence that will slide past the context
// re-prefills whole windows.
void generate_sizes(const GPT2Config& cfg, int prompt_tokens, int max_tokens, int* len, int* rows);
// Bytes generate() allocates for a prompt of prompt_tokens and max_tokens new ones (the KV cache and the
// scratch for the prompt's pass, or for a whole window when the sequence will slide).
double generate_memory_bytes(const GPT2Config& cfg, int prompt_tokens, int max_tokens);
// Generates after `prompt` (1..the model's context tokens, each in the vocabulary; the caller checks, and
// checks generate_memory_bytes against the memory it has), calling on_token for each new token as soon as
// it is chosen. Returns the new tokens; stats->stop says why it ended.
std::vector<int> generate(const GPT2& model, const std::vector<int>& prompt, const GenerateOptions& opts, Rng* rng,
                          const std::function<void(int)>& on_token, GenerateStats* stats);
// True when the first V logits are finite; otherwise records in *stats where the first that is not is, at
// `position` of the sequence (GenerateStop::kNonFinite). For generate's loops.
bool generate_finite_logits(const float* logits, int V, int position, GenerateStats* stats);
// The one line a caller prints for GenerateStop::kNonFinite.
std::string generate_nonfinite_message(const GenerateStats& stats);
