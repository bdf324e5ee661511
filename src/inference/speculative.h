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
constexpr int kDraftCatchUpRows = 64;

// What k is chosen from, for one sequence: the drafted tokens' share kept (decayed so that it follows the text), and
// the costs of the passes in units of the model's one-token pass, from the bytes of weights each reads (decoding
// streams them): a draft pass the draft's bytes over the model's, a check of n rows 1 + kCheckRow * (n - 1).
// Nothing timed, so that k, and with it the random draws of a seeded run, are the same on every run.
class DraftCosts {
public:
    DraftCosts(const GPT2& model, const GPT2& draft);
    // A check's outcome: `kept` of `drafted` (probe: the one-token draft choose() asked for).
    void kept(int kept, int drafted, bool probe);
    // The k (0..cap) with the most tokens for the cost, the sequence's passes (its draft's and its checks') shared
    // with `together` - 1 others, each a row of them; *probe: a one-token draft after plain rounds.
    int choose(int cap, int together, bool* probe);

private:
    static constexpr int kProbeFirst = 8, kProbeLast = 64;  // plain rounds between probes
    static constexpr double kCheckRow = 0.2;  // a check's each further row, of a one-token pass (its products)
    double draft_cost_;
    double hits_ = 4, misses_ = 0;  // at first, drafts taken to agree 5 times in 6
    int plain_rounds_ = 0, probe_every_ = kProbeFirst;
};

// One sequence's draft, for drafting with others in the same passes (serve's streams): its cache, the tokens
// it holds, the logits it drafted from and its k chooser. Its own passes (the prompt, and what plain rounds left
// it to catch up) take up to the prompt's rows or kDraftCatchUpRows.
struct DraftSeq {
    InferState st;
    std::vector<int> fed;  // the tokens its cache holds (st.len of them)
    std::vector<float> q;  // (kDraftMax, the draft's Vp): its logits before each drafted token
    DraftCosts costs;
    // A cache of len positions (<= the draft's context), fed first `prompt` (fewer than len tokens) in one pass.
    DraftSeq(const GPT2& model, const GPT2& draft, int len, const std::vector<int>& prompt);
};

// Bytes a DraftSeq of len positions and passes of `rows` allocates (at most: rows >= the prompt's, and
// kDraftCatchUpRows within len).
double draft_seq_bytes(const GPT2Config& draft, int len, int rows);
// Bytes draft_together's scratch and logits take for up to n sequences.
double draft_together_bytes(const GPT2Config& draft, int n);

// The draft's passes for n sequences together: sequence i (its tokens so far *seqs[i], the last not yet in the
// model's cache) gets up to k[i] tokens in out[i], drawn with samplers[i] and rngs[i] (fewer where the draft's
// logits are not finite; none for k[i] 0). Each draft's cache is cut back to what it shares with its sequence,
// whose last token it is fed again; a pass then takes every drafting sequence's last kDraftMax + 1 missing tokens
// (more go first through the draft's own passes), and one pass each drafted token. `scratch` and `logits` are
// sized for n where they are smaller.
void draft_together(const GPT2& draft, DraftSeq* const* d, const std::vector<int>* const* seqs,
                    const int* k, const SamplerConfig* const* samplers, Rng* const* rngs, int n,
                    InferScratch* scratch, std::vector<float>* logits, std::vector<int>* out);

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

// The check of one drafted token d against the model's logits p (V of them), the draft's q those it was drawn
// from: greedy, the model's argmax (kept when it is d); sampling, speculative_accept's rule under the sampler.
int speculative_check(const float* p, const float* q, int V, const SamplerConfig& sampler, int d, Rng* rng,
                      bool* kept);

// The rule for one drafted token d, drawn from q: d, with *kept true, or a token drawn from max(0, p - q)
// normalised. p and q are sampler_distribution's (token, probability) lists. Exposed for tests.
int speculative_accept(const std::vector<std::pair<int, double>>& p, const std::vector<std::pair<int, double>>& q,
                       int d, Rng* rng, bool* kept);
