// speculative.h: generate() with a draft model. Each round a cheaper model (the model's own int8 copy, or a
// smaller GPT-2 with the same vocabulary) proposes k tokens, one pass of its own each; the model scores them all in
// one pass over its weights (infer_verify), keeps the drafted tokens as long as its own choice agrees, and adds one
// token of its own: the one it chose where they parted, or the next one when all were kept.
// Greedy output is plain decoding's token for token: the check's rows are decoding's logits bit for bit. Sampling
// keeps a drafted token d with probability min(1, p(d)/q(d)) (p the model's distribution after the sampler's
// warpers, q the draft's) and otherwise draws from max(0, p - q) normalised, which leaves each token distributed as
// the model alone would draw it (Leviathan et al. 2023; Chen et al. 2023).
// k (0..8, or --draft-min..--draft-max) follows how often drafts are kept and what each pass costs, counted in the
// bytes of weights it reads (nothing timed: a seeded run repeats), to the most tokens for the cost, down to 0: plain
// decoding, with a one-token draft now and then to see whether they agree again. Past the model's (or the draft's)
// context, decoding is plain (the window slides as generate()'s).
#pragma once
#include <memory>
#include <utility>
#include <vector>

#include "inference/generate.h"
#include "platform/threads.h"

constexpr int kDraftMax = 8;  // tokens drafted in a round, at most

// Bytes generate_speculative allocates beyond generate()'s for the same prompt and max_tokens: the draft's cache
// and scratch, and the check's scratch.
double speculative_memory_bytes(const GPT2& model, const GPT2& draft, int prompt_tokens, int max_tokens);

// Bytes a Speculation of a draft cache of len positions and passes of rows allocates.
double speculation_bytes(const GPT2& model, const GPT2& draft, int len, int rows);

// Decoding with a draft beside the model's own cache: the draft's cache (len positions, passes of up to rows), the
// check's scratch and what k is chosen from, kept across calls that go on with one sequence (a chat's turns). Each
// call first cuts the draft's cache back to what it shares with the sequence it is given.
class Speculation {
public:
    Speculation(const GPT2& model, const GPT2& draft, int len, int rows, ThreadTuner* tuner);
    ~Speculation();
    // Feeds the draft seq (a prompt), unless it would fill the draft's cache; `cancelled` (if given) may stop it
    // between its passes.
    void prefill(const std::vector<int>& seq, const std::function<bool()>& cancelled = nullptr);
    // Decodes after *seq, which the model's cache st holds (past the context: its last window), from `next`, the
    // model's logits for the token after it: each token chosen is appended to *seq and given to emit, until emit
    // returns false (st then holds *seq but its last token), opts.cancelled() or logits that are not finite
    // (stats->stop; in both, st holds all of *seq). Draws opts.draft_min..draft_max tokens a round (asserted within 0..kDraftMax);
    // adds to stats' drafted, kept, rounds and slides.
    void decode(InferState* st, std::vector<int>* seq, const float* next, const GenerateOptions& opts, Rng* rng,
                const std::function<bool(int)>& emit, GenerateStats* stats);

private:
    struct Parts;
    std::unique_ptr<Parts> parts_;
};

// generate() with `draft` (the model's vocabulary size, asserted) proposing, opts.draft_min..draft_max tokens a
// round (0 <= draft_min <= draft_max <= kDraftMax, asserted) where the context leaves room; stats->drafted and ->kept count
// the drafted tokens and those kept, stats->rounds the checks.
std::vector<int> generate_speculative(const GPT2& model, const GPT2& draft, const std::vector<int>& prompt,
                                      const GenerateOptions& opts, Rng* rng, const std::function<void(int)>& on_token,
                                      GenerateStats* stats);

// The rule for one drafted token d, drawn from q: d, with *kept true, or a token drawn from max(0, p - q)
// normalised. p and q are sampler_distribution's (token, probability) lists. Exposed for tests.
int speculative_accept(const std::vector<std::pair<int, double>>& p, const std::vector<std::pair<int, double>>& q,
                       int d, Rng* rng, bool* kept);
