// speculative.cpp: see speculative.h. A round: the token chosen last (t, in seq, not yet in the model's cache) and
// k drafted after it go through one infer_verify pass of k + 1 rows; row i holds the model's logits after t and the
// first i drafted tokens.
#include "inference/speculative.h"

#include <algorithm>
#include <cassert>
#include <cmath>

#include "platform/threads.h"
#include "platform/util.h"
#include "precision/precision.h"

namespace {

// Bytes of weights a decoding pass reads: the matrices (wte as the lm_head) from their copies, bf16 or q8_0, where
// the model has them; the vectors in fp32; of wpe, a row.
double pass_bytes(const GPT2& model) {
    const Precision prec = gpt2_precision(model);
    const double matrix = prec == Precision::kInt8 ? 1 + 2.0 / kQ8Block : prec == Precision::kBf16 ? 2 : 4;
    double bytes = 0;
    for (const TensorInfo& t : model.param_table)
        if (t.name != "wpe") bytes += (double)t.numel() * (t.cols ? matrix : 4);
    return bytes;
}

}  // namespace

DraftCosts::DraftCosts(const GPT2& model, const GPT2& draft)
    : draft_cost_(std::min(1.0, pass_bytes(draft) / pass_bytes(model))) {}

void DraftCosts::kept(int kept, int drafted, bool probe) {
    hits_ = 0.9 * hits_ + kept, misses_ = 0.9 * misses_ + (kept < drafted);
    if (probe) probe_every_ = kept ? kProbeFirst : std::min(2 * probe_every_, kProbeLast);
}

int DraftCosts::choose(int cap, int together, bool* probe) {
    *probe = false;
    if (cap <= 0) return 0;
    const double a = (hits_ + 1) / (hits_ + misses_ + 2);
    const double pass = (1 + kCheckRow * (together - 1)) / together;  // this sequence's part of a pass
    int best = 0;
    double best_rate = 1 / pass, expected = 1, ak = 1;
    for (int k = 1; k <= cap; k++) {
        ak *= a;
        expected += ak;  // tokens a round gives: 1 + a + ... + a^k
        // k draft passes: the last token's and k - 1 drafts' (one more, the last draft's, when all are kept)
        const double rate = expected / ((k + ak) * draft_cost_ * pass + pass + kCheckRow * k);
        if (rate > best_rate) best = k, best_rate = rate;
    }
    if (best > 0) return plain_rounds_ = 0, best;
    if (++plain_rounds_ < probe_every_) return 0;
    plain_rounds_ = 0, *probe = true;
    return 1;
}

int speculative_check(const float* p, const float* q, int V, const SamplerConfig& sampler, int d, Rng* rng,
                      bool* kept) {
    if (sampler.temperature <= 0) {
        const int chosen = sampler_argmax(p, V);
        *kept = chosen == d;
        return chosen;
    }
    return speculative_accept(sampler_distribution(p, V, sampler), sampler_distribution(q, V, sampler), d, rng, kept);
}

namespace {

// How many of the tokens a draft's cache holds (fed, len of them) begin seq, short of seq's last: the cache is cut
// back to them, and the rest fed, so that its newest logits follow seq's last token.
int shared_prefix(const std::vector<int>& fed, int len, const std::vector<int>& seq) {
    int same = 0;
    while (same < len && same + 1 < (int)seq.size() && fed[same] == seq[same]) same++;
    return same;
}

// The draft's side of the rounds: its cache holds `fed`, brought to a prefix of the sequence and up to date
// before it drafts.
struct Drafter {
    const GPT2& model;
    InferState st;
    std::vector<int> fed;  // the tokens its cache holds (st.len of them)
    std::vector<float> q;  // (kDraftMax, Vp): the draft's logits before each drafted token
    ThreadTuner* tuner;

    Drafter(const GPT2& draft, int len, int rows, ThreadTuner* t) : model(draft), tuner(t) {
        infer_init(&st, draft, len, rows);
        q.resize((size_t)kDraftMax * draft.cfg.padded_vocab_size);
    }
    void forward(const int* tokens, int n, float* logits) {
        fed.resize(st.len);
        fed.insert(fed.end(), tokens, tokens + n);
        infer_forward(&st, model, tokens, n, logits, false);
    }
    // The cache cut back to what it shares with seq but seq's last token (fed again, so that q's first row follows
    // it), then fed the rest: up to `singly` tokens (the last round's last draft, when kept, and the model's own)
    // one decoding pass each; more (a prompt, a chat's turn, the plain rounds' tokens) in passes of st.max_rows,
    // between which `cancelled` (if given) may stop it.
    void catch_up(const std::vector<int>& seq, int singly, const std::function<bool()>& cancelled = nullptr) {
        st.len = shared_prefix(fed, st.len, seq);
        while (st.len < (int)seq.size() && !(cancelled && cancelled())) {
            const int missing = (int)seq.size() - st.len, n = missing <= singly ? 1 : std::min(st.max_rows, missing);
            forward(seq.data() + st.len, n, q.data());
        }
    }
    // Drafts up to k tokens after seq into *out (fewer where the draft's logits are not finite).
    void propose(const std::vector<int>& seq, int k, const SamplerConfig& sampler, Rng* rng, std::vector<int>* out) {
        const int Vp = model.cfg.padded_vocab_size;
        out->clear();
        tuner->begin();
        catch_up(seq, 4);
        for (int i = 0; i < k; i++) {
            const float* qi = q.data() + (size_t)i * Vp;
            GenerateStats ignored;
            if (!generate_finite_logits(qi, model.cfg.vocab_size, 0, &ignored)) break;
            out->push_back(sampler_sample(qi, model.cfg.vocab_size, sampler, rng));
            if (i + 1 == k) break;
            forward(&out->back(), 1, q.data() + (size_t)(i + 1) * Vp);
        }
        tuner->end();
    }
};

// One round: k drafted tokens after seq.back() (t, not yet in the model's cache), checked with t in one pass of
// k + 1 rows (row i: the model's logits after t and the first i drafted), kept while the model agrees.
struct Round {
    const GPT2& model;
    const GenerateOptions& opts;
    Rng* rng;
    GenerateStats* s;
    ThreadTuner* tuner;

    // Emits the kept drafts; returns how many were kept, with *chosen the model's own token where they parted
    // (-1 when all were kept: logits row i then holds the model's logits after them), or -1 when generation ended.
    template <class Emit>
    int run(Drafter* drafter, DraftCosts* costs, InferScratch* check, InferState* st, const std::vector<int>& seq,
            int cap, float* logits, const Emit& emit, int* chosen) {
        const int V = model.cfg.vocab_size, Vp = model.cfg.padded_vocab_size;
        bool probe;
        const int k = std::max(costs->choose(std::min(cap, opts.draft_max), 1, &probe), std::min(cap, opts.draft_min));
        std::vector<int> rows = {seq.back()}, drafted;
        if (k > 0) drafter->propose(seq, k, opts.sampler, rng, &drafted);
        rows.insert(rows.end(), drafted.begin(), drafted.end());
        const int base = st->len, n = (int)rows.size();
        tuner->begin();
        infer_verify(check, st, model, rows.data(), n, logits);
        tuner->end();
        s->rounds += n > 1;
        int i = 0;
        bool ended = false;
        for (; i < n - 1 && !ended; i++) {
            const float* p = logits + (size_t)i * Vp;
            if (!generate_finite_logits(p, V, base + i + 1, s)) return st->len = base + 1 + i, -1;
            bool kept;
            const float* q = drafter->q.data() + (size_t)i * drafter->model.cfg.padded_vocab_size;  // its rows
            *chosen = speculative_check(p, q, V, opts.sampler, drafted[i], rng, &kept);
            if (!kept) break;
            *chosen = -1;
            s->kept++;
            ended = !emit(drafted[i]);
        }
        if (ended) {  // at a kept draft (the stop token): it is not fed, nor are those after it
            s->drafted += i;
            st->len = base + i;
            return -1;
        }
        s->drafted += n - 1;
        costs->kept(i, n - 1, probe);
        st->len = base + 1 + i;  // the cache keeps t and the kept drafts (the draft's: Drafter::catch_up)
        return i;
    }
};

}  // namespace

int speculative_accept(const std::vector<std::pair<int, double>>& p, const std::vector<std::pair<int, double>>& q,
                       int d, Rng* rng, bool* kept) {
    int V = d + 1;  // q's probabilities by token: p's and q's tokens looked up at once
    for (const auto& e : p) V = std::max(V, e.first + 1);
    for (const auto& e : q) V = std::max(V, e.first + 1);
    std::vector<double> qt(V, 0.0);
    for (const auto& [t, pr] : q) qt[t] = pr;
    double pd = 0;
    for (const auto& [t, pr] : p)
        if (t == d) pd = pr;
    *kept = qt[d] > 0 && rng->uniform() * qt[d] < pd;
    if (*kept) return d;
    std::vector<std::pair<int, double>> rest;  // max(0, p - q)
    double total = 0;
    for (const auto& [t, pr] : p)
        if (pr > qt[t]) rest.emplace_back(t, pr - qt[t]), total += pr - qt[t];
    if (rest.empty()) return p.front().first;  // p == q to rounding: a rejection had no probability
    const double u = rng->uniform() * total;
    double cum = 0;
    for (const auto& [t, r] : rest)
        if (u < (cum += r)) return t;
    return rest.back().first;
}

DraftSeq::DraftSeq(const GPT2& model, const GPT2& draft, int len, const std::vector<int>& prompt)
    : costs(model, draft) {
    assert(!prompt.empty() && (int)prompt.size() < len);
    infer_init(&st, draft, len, std::min(len, std::max((int)prompt.size(), kDraftCatchUpRows)));
    q.resize((size_t)kDraftMax * draft.cfg.padded_vocab_size);
    infer_forward(&st, draft, prompt.data(), (int)prompt.size(), q.data(), false);
    fed = prompt;
}

double draft_seq_bytes(const GPT2Config& draft, int len, int rows) {
    return infer_memory_bytes(draft, len, rows) + 4.0 * kDraftMax * draft.padded_vocab_size;
}

double draft_together_bytes(const GPT2Config& draft, int n) {
    return infer_scratch_bytes(draft, n * (kDraftMax + 1)) + 4.0 * n * draft.padded_vocab_size;
}

void draft_together(const GPT2& draft, DraftSeq* const* d, const std::vector<int>* const* seqs, const int* k,
                    const SamplerConfig* const* samplers, Rng* const* rngs, int n, InferScratch* scratch,
                    std::vector<float>* logits, std::vector<int>* out) {
    const int V = draft.cfg.vocab_size, Vp = draft.cfg.padded_vocab_size;
    if (scratch->rows < n * (kDraftMax + 1)) infer_scratch_init(scratch, draft, n * (kDraftMax + 1));
    logits->resize((size_t)n * Vp);
    std::vector<DraftSeq*> on;  // the sequences a pass takes, their caches and rows
    std::vector<InferState*> states;
    std::vector<int> counts, tokens;
    auto add = [&](DraftSeq* ds, const int* from, int take) {
        on.push_back(ds), states.push_back(&ds->st), counts.push_back(take);
        tokens.insert(tokens.end(), from, from + take);
        ds->fed.insert(ds->fed.end(), from, from + take);
    };
    auto pass = [&](int row) {  // each run's last logits into its q's row
        infer_decode_runs(scratch, states.data(), counts.data(), (int)on.size(), draft, tokens.data(),
                          logits->data(), false);
        for (size_t j = 0; j < on.size(); j++)
            std::copy_n(logits->data() + j * Vp, Vp, on[j]->q.data() + (size_t)row * Vp);
    };
    for (int i = 0; i < n; i++) {  // each cache cut back, and fed all it lacks but its last kDraftMax + 1 tokens
        out[i].clear();
        if (k[i] <= 0) continue;
        DraftSeq& ds = *d[i];
        const std::vector<int>& seq = *seqs[i];
        ds.st.len = shared_prefix(ds.fed, ds.st.len, seq);
        ds.fed.resize(ds.st.len);
        while ((int)seq.size() - ds.st.len > kDraftMax + 1) {  // (after plain rounds) in passes of a prompt's
            const int take = std::min(ds.st.max_rows, (int)seq.size() - ds.st.len - (kDraftMax + 1));
            ds.fed.insert(ds.fed.end(), seq.data() + ds.st.len, seq.data() + ds.st.len + take);
            infer_forward(&ds.st, draft, seq.data() + ds.st.len, take, ds.q.data(), false);
        }
    }
    for (int i = 0; i < n; i++)  // the rest, every sequence's in one pass
        if (k[i] > 0) add(d[i], seqs[i]->data() + d[i]->st.len, (int)seqs[i]->size() - d[i]->st.len);
    if (!on.empty()) pass(0);
    for (int r = 0;; r++) {  // a token drawn from each q's row r, fed for row r + 1 while more are wanted
        on.clear(), states.clear(), counts.clear(), tokens.clear();
        for (int i = 0; i < n; i++) {
            if ((int)out[i].size() != r || r >= k[i]) continue;  // (one that stopped short is done)
            const float* q = d[i]->q.data() + (size_t)r * Vp;
            GenerateStats ignored;
            if (!generate_finite_logits(q, V, 0, &ignored)) continue;
            out[i].push_back(sampler_sample(q, V, *samplers[i], rngs[i]));
            if (r + 1 < k[i]) add(d[i], &out[i].back(), 1);
        }
        if (on.empty()) break;
        pass(r + 1);
    }
}

namespace {

// The draft's cache positions, within the model's cache (past it the model slides and decodes plain), and the
// rows of its largest pass: the prompt and its first token, or 64 tokens missed in plain rounds.
void draft_sizes(const GPT2Config& model, const GPT2Config& draft, int prompt_tokens, int max_tokens, int* len,
                 int* rows) {
    int model_len, unused;
    generate_sizes(model, prompt_tokens, max_tokens, &model_len, &unused);
    generate_sizes(draft, std::min(prompt_tokens, draft.max_seq_len), max_tokens, len, rows);
    *len = std::min(*len, model_len);
    *rows = std::min(*len, std::max(64, *rows + 1));
}

}  // namespace

double speculation_bytes(const GPT2& model, const GPT2& draft, int len, int rows) {
    const double logits = 4.0 * ((kDraftMax + 1.0) * model.cfg.padded_vocab_size +  // the check's, and the draft's
                                 (double)kDraftMax * draft.cfg.padded_vocab_size);
    return infer_memory_bytes(draft.cfg, len, rows) + infer_scratch_bytes(model.cfg, kDraftMax + 1) + logits;
}

double speculative_memory_bytes(const GPT2& model, const GPT2& draft, int prompt_tokens, int max_tokens) {
    int len, rows;
    draft_sizes(model.cfg, draft.cfg, prompt_tokens, max_tokens, &len, &rows);
    return speculation_bytes(model, draft, len, rows);
}

struct Speculation::Parts {
    const GPT2& model;
    ThreadTuner* tuner;
    Drafter drafter;
    DraftCosts costs;
    InferScratch check;
    std::vector<float> logits;  // (kDraftMax + 1, Vp): the check's rows; row 0 also a slide's

    Parts(const GPT2& m, const GPT2& draft, int len, int rows, ThreadTuner* t)
        : model(m), tuner(t), drafter(draft, len, rows, t), costs(m, draft),
          logits((size_t)(kDraftMax + 1) * m.cfg.padded_vocab_size) {
        assert(draft.cfg.vocab_size == m.cfg.vocab_size);
        infer_scratch_init(&check, m, kDraftMax + 1);
    }
};

Speculation::Speculation(const GPT2& model, const GPT2& draft, int len, int rows, ThreadTuner* tuner)
    : parts_(std::make_unique<Parts>(model, draft, len, rows, tuner)) {}

Speculation::~Speculation() = default;

void Speculation::prefill(const std::vector<int>& seq, const std::function<bool()>& cancelled) {
    Drafter& d = parts_->drafter;
    if ((int)seq.size() >= d.st.max_len) return;  // (its cache would be full before a token is drafted)
    parts_->tuner->begin();
    d.catch_up(seq, 0, cancelled);
    parts_->tuner->end();
}

void Speculation::decode(InferState* st, std::vector<int>* seq, const float* next, const GenerateOptions& opts,
                         Rng* rng, const std::function<bool(int)>& emit, GenerateStats* s) {
    Parts& p = *parts_;
    const GPT2Config& cfg = p.model.cfg;
    const int ctx = cfg.max_seq_len, V = cfg.vocab_size, Vp = cfg.padded_vocab_size;
    assert(opts.draft_min >= 0 && opts.draft_min <= opts.draft_max && opts.draft_max <= kDraftMax);
    auto push = [&](int token) {  // false when decoding ends with it
        seq->push_back(token);
        return emit(token);
    };
    int position = st->len, chosen = -1;  // chosen: where a round's draft and the model parted, the model's token
    for (int emitted = 0;; emitted++) {
        if (opts.cancelled && opts.cancelled()) {
            s->stop = GenerateStop::kCancelled;
            break;
        }
        if (chosen < 0 && !generate_finite_logits(next, V, position, s)) break;
        if (!push(chosen >= 0 ? chosen : sampler_sample(next, V, opts.sampler, rng))) break;
        chosen = -1;
        if (st->len == ctx) {  // slide: the last ctx tokens, from position 0 again
            st->len = 0;
            s->slides++;
            p.tuner->begin();
            infer_forward(st, p.model, seq->data() + seq->size() - ctx, ctx, p.logits.data(), false);
            p.tuner->end();
            next = p.logits.data(), position = st->len;
            continue;
        }
        // k drafted tokens after seq->back(): the round gives at most k + 1, the check writes k + 1 positions
        const int cap = std::min({kDraftMax, opts.max_tokens - emitted - 2, st->max_len - st->len - 1,
                                  p.drafter.st.max_len - (int)seq->size() + 1});
        const int base = st->len;
        Round r{p.model, opts, rng, s, p.tuner};
        const int i = r.run(&p.drafter, &p.costs, &p.check, st, *seq, cap, p.logits.data(), push, &chosen);
        if (i < 0) break;
        emitted += i;
        next = p.logits.data() + (size_t)i * Vp, position = base + i + 1;  // when all were kept
    }
}

std::vector<int> generate_speculative(const GPT2& model, const GPT2& draft, const std::vector<int>& prompt,
                                      const GenerateOptions& opts, Rng* rng, const std::function<void(int)>& on_token,
                                      GenerateStats* stats) {
    const GPT2Config& cfg = model.cfg;
    assert(!prompt.empty() && (int)prompt.size() <= cfg.max_seq_len);
    GenerateStats local;
    GenerateStats* s = stats ? stats : &local;
    *s = GenerateStats();
    int len, rows, dlen, drows;
    generate_sizes(cfg, (int)prompt.size(), opts.max_tokens, &len, &rows);
    draft_sizes(cfg, draft.cfg, (int)prompt.size(), opts.max_tokens, &dlen, &drows);
    InferState st;
    infer_init(&st, model, len, rows);
    static ThreadTuner tuner;  // per process, as generate()'s
    Speculation spec(model, draft, dlen, drows, &tuner);
    std::vector<float> logits(cfg.padded_vocab_size);
    double t0 = time_now_s();
    tuner.begin();
    infer_forward(&st, model, prompt.data(), (int)prompt.size(), logits.data(), false);
    tuner.end();
    spec.prefill(prompt);  // in one pass as the model's (a model drafting for itself agrees with itself throughout)
    s->prompt_tokens = (int)prompt.size();
    s->prompt_s = time_now_s() - t0;

    std::vector<int> out, seq = prompt;  // seq: everything so far
    t0 = time_now_s();
    spec.decode(&st, &seq, logits.data(), opts, rng, [&](int token) {
        out.push_back(token);
        on_token(token);
        if (token == opts.stop_token) s->stop = GenerateStop::kStopToken;
        return token != opts.stop_token && (int)out.size() < opts.max_tokens;
    }, s);
    s->new_tokens = (int)out.size();
    s->decode_s = time_now_s() - t0;
    return out;
}
