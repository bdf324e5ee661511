// speculative.cpp: see speculative.h. A round: the token chosen last (t, in seq, not yet in the model's cache) and
// k drafted after it go through one infer_verify pass of k + 1 rows; row i holds the model's logits after t and the
// first i drafted tokens.
#include "inference/speculative.h"

#include <algorithm>
#include <cassert>
#include <cmath>

#include "platform/threads.h"
#include "platform/util.h"

namespace {

// What k is chosen from, each measured and decayed so that it follows the text: seconds of a draft pass, seconds
// of a check of n rows (fitted as a + b * n over the checks seen), and the share of drafted tokens kept.
class Costs {
public:
    void drafted(double seconds, int passes) {
        const double each = seconds / passes;
        draft_s_ = draft_s_ > 0 ? 0.8 * draft_s_ + 0.2 * each : each;
    }
    void checked(int rows, double seconds) {
        w_ = 0.9 * w_ + 1, n_ = 0.9 * n_ + rows, t_ = 0.9 * t_ + seconds;
        nn_ = 0.9 * nn_ + (double)rows * rows, nt_ = 0.9 * nt_ + rows * seconds;
    }
    void kept(int kept, int drafted, bool probe) {
        hits_ = 0.9 * hits_ + kept, misses_ = 0.9 * misses_ + (kept < drafted);
        if (probe) probe_every_ = kept ? kProbeFirst : std::min(2 * probe_every_, kProbeLast);
    }
    // The k (0..cap) with the most tokens a second; *probe: a one-token draft after plain rounds.
    int choose(int cap, bool* probe) {
        *probe = false;
        if (cap <= 0) return 0;
        if (draft_s_ <= 0 || w_ <= 0) return std::min(2, cap);  // nothing measured yet
        const double a = (hits_ + 1) / (hits_ + misses_ + 2);
        int best = 0;
        double best_rate = 1 / check_s(1), expected = 1, ak = 1;
        for (int k = 1; k <= cap; k++) {
            ak *= a;
            expected += ak;  // tokens a round gives: 1 + a + ... + a^k
            const double rate = expected / (k * draft_s_ + check_s(k + 1));
            if (rate > best_rate) best = k, best_rate = rate;
        }
        if (best > 0) return plain_rounds_ = 0, best;
        if (++plain_rounds_ < probe_every_) return 0;
        plain_rounds_ = 0, *probe = true;
        return 1;
    }

private:
    static constexpr int kProbeFirst = 8, kProbeLast = 64;  // plain rounds between probes
    // The fitted seconds of a check of `rows` rows; with one row count seen so far, each more row a tenth of one.
    double check_s(int rows) const {
        const double mean_n = n_ / w_, mean_t = t_ / w_, var = nn_ / w_ - mean_n * mean_n;
        if (var < 0.25) return mean_t * (1 + 0.1 * (rows - 1)) / (1 + 0.1 * (mean_n - 1));
        const double slope = std::max(0.0, (nt_ / w_ - mean_n * mean_t) / var);
        return std::max(1e-9, mean_t + slope * (rows - mean_n));
    }
    double draft_s_ = 0;
    double w_ = 0, n_ = 0, t_ = 0, nn_ = 0, nt_ = 0;
    double hits_ = 0, misses_ = 0;
    int plain_rounds_ = 0, probe_every_ = kProbeFirst;
};

// True when the first V logits are finite; else records where the first that is not is (GenerateStop::kNonFinite).
bool finite_logits(const float* logits, int V, int position, GenerateStats* s) {
    int bad = 0;
    while (bad < V && std::isfinite(logits[bad])) bad++;
    if (bad == V) return true;
    s->stop = GenerateStop::kNonFinite;
    s->bad_position = position, s->bad_logit = bad, s->bad_value = logits[bad];
    return false;
}

// The draft's side of the rounds: its cache holds a prefix of the sequence, fed up to date before it drafts.
struct Drafter {
    const GPT2& model;
    InferState st;
    std::vector<float> q;  // (kDraftMax, Vp): the draft's logits before each drafted token
    ThreadTuner* tuner;

    Drafter(const GPT2& draft, int len, int rows, ThreadTuner* t) : model(draft), tuner(t) {
        infer_init(&st, draft, len, rows);
        q.resize((size_t)kDraftMax * draft.cfg.padded_vocab_size);
    }
    // Drafts up to k tokens after seq into *out (fewer where the draft's logits are not finite); the seconds of
    // its one-token passes into *seconds.
    void propose(const std::vector<int>& seq, int k, const SamplerConfig& sampler, Rng* rng, std::vector<int>* out,
                 double* seconds) {
        const int Vp = model.cfg.padded_vocab_size;
        out->clear();
        tuner->begin();
        // what it has not seen: the last round's last token or two (the last draft, when kept, and the model's
        // own), one decoding pass each; the plain rounds' tokens in passes of st.max_rows
        while (st.len < (int)seq.size()) {
            const int missing = (int)seq.size() - st.len, n = missing <= 4 ? 1 : std::min(st.max_rows, missing);
            infer_forward(&st, model, seq.data() + st.len, n, q.data(), false);
        }
        tuner->end();
        const double t0 = time_now_s();
        for (int i = 0; i < k; i++) {
            const float* qi = q.data() + (size_t)i * Vp;
            GenerateStats ignored;
            if (!finite_logits(qi, model.cfg.vocab_size, 0, &ignored)) break;
            out->push_back(sampler_sample(qi, model.cfg.vocab_size, sampler, rng));
            if (i + 1 == k) break;
            tuner->begin();
            infer_forward(&st, model, &out->back(), 1, q.data() + (size_t)(i + 1) * Vp, false);
            tuner->end();
        }
        *seconds = time_now_s() - t0;
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
    int run(Drafter* drafter, Costs* costs, InferScratch* check, InferState* st, const std::vector<int>& seq, int cap,
            float* logits, const Emit& emit, int* chosen) {
        const int V = model.cfg.vocab_size, Vp = model.cfg.padded_vocab_size;
        bool probe;
        const int k = costs->choose(cap, &probe);
        double draft_s = 0;
        std::vector<int> rows = {seq.back()}, drafted;
        if (k > 0) drafter->propose(seq, k, opts.sampler, rng, &drafted, &draft_s);
        if (!drafted.empty()) costs->drafted(draft_s, (int)drafted.size());
        rows.insert(rows.end(), drafted.begin(), drafted.end());
        const int base = st->len, n = (int)rows.size();
        const double t0 = time_now_s();
        tuner->begin();
        infer_verify(check, st, model, rows.data(), n, logits);
        tuner->end();
        costs->checked(n, time_now_s() - t0);
        s->rounds += n > 1;
        int i = 0;
        bool ended = false;
        for (; i < n - 1 && !ended; i++) {
            const float* p = logits + (size_t)i * Vp;
            if (!finite_logits(p, V, base + i + 1, s)) return -1;
            bool kept;
            if (opts.sampler.temperature <= 0) {
                *chosen = sampler_argmax(p, V);
                kept = *chosen == drafted[i];
            } else {
                *chosen = speculative_accept(sampler_distribution(p, V, opts.sampler),
                                             sampler_distribution(drafter->q.data() + (size_t)i * Vp, V, opts.sampler),
                                             drafted[i], rng, &kept);
            }
            if (!kept) break;
            *chosen = -1;
            s->kept++;
            ended = !emit(drafted[i]);
        }
        s->drafted += n - 1;
        costs->kept(i, n - 1, probe);
        if (ended) return -1;
        // the caches keep the sequence: the model's t and the kept drafts, the draft's what it fed of them
        st->len = base + 1 + i;
        drafter->st.len = std::min(drafter->st.len, (int)seq.size());
        return i;
    }
};

}  // namespace

int speculative_accept(const std::vector<std::pair<int, double>>& p, const std::vector<std::pair<int, double>>& q,
                       int d, Rng* rng, bool* kept) {
    auto prob = [](const std::vector<std::pair<int, double>>& dist, int token) {
        for (const auto& [t, pr] : dist)
            if (t == token) return pr;
        return 0.0;
    };
    const double pd = prob(p, d), qd = prob(q, d);
    *kept = qd > 0 && rng->uniform() * qd < pd;
    if (*kept) return d;
    std::vector<std::pair<int, double>> rest;  // max(0, p - q)
    double total = 0;
    for (const auto& [t, pr] : p) {
        const double r = pr - prob(q, t);
        if (r > 0) rest.emplace_back(t, r), total += r;
    }
    if (rest.empty()) return p.front().first;  // p == q to rounding: a rejection had no probability
    double u = rng->uniform() * total, cum = 0;
    for (const auto& [t, r] : rest) {
        cum += r;
        if (u < cum) return t;
    }
    return rest.back().first;
}

double speculative_memory_bytes(const GPT2& model, const GPT2& draft, int prompt_tokens, int max_tokens) {
    int len, rows;
    generate_sizes(draft.cfg, prompt_tokens, max_tokens, &len, &rows);
    const double logits = 4.0 * ((2.0 * kDraftMax + 1) * model.cfg.padded_vocab_size);
    return infer_memory_bytes(draft.cfg, len, std::max(std::min(len, 64), std::min(len, rows + 1))) +
           infer_scratch_bytes(model.cfg, kDraftMax + 1) + logits;
}

std::vector<int> generate_speculative(const GPT2& model, const GPT2& draft, const std::vector<int>& prompt,
                                      const GenerateOptions& opts, Rng* rng, const std::function<void(int)>& on_token,
                                      GenerateStats* stats) {
    const GPT2Config& cfg = model.cfg;
    const int ctx = cfg.max_seq_len, V = cfg.vocab_size, Vp = cfg.padded_vocab_size;
    assert(!prompt.empty() && (int)prompt.size() <= ctx && draft.cfg.vocab_size == V);
    GenerateStats local;
    GenerateStats* s = stats ? stats : &local;
    *s = GenerateStats();
    int len, rows, dlen, drows;
    generate_sizes(cfg, (int)prompt.size(), opts.max_tokens, &len, &rows);
    generate_sizes(draft.cfg, std::min((int)prompt.size(), draft.cfg.max_seq_len), opts.max_tokens, &dlen, &drows);
    InferState st;
    infer_init(&st, model, len, rows);
    InferScratch check;
    infer_scratch_init(&check, model, kDraftMax + 1);
    static ThreadTuner tuner;  // per process, as generate()'s
    Drafter drafter(draft, dlen, std::max(std::min(dlen, 64), std::min(dlen, drows + 1)), &tuner);
    Costs costs;
    std::vector<float> logits((size_t)(kDraftMax + 1) * Vp);  // the check's rows; row 0 the plain pass's
    double t0 = time_now_s();
    tuner.begin();
    infer_forward(&st, model, prompt.data(), (int)prompt.size(), logits.data(), false);
    // the draft's prompt in one pass as the model's (a model drafting for itself agrees with itself throughout)
    if ((int)prompt.size() <= drafter.st.max_rows && (int)prompt.size() < drafter.st.max_len)
        infer_forward(&drafter.st, draft, prompt.data(), (int)prompt.size(), drafter.q.data(), false);
    tuner.end();
    s->prompt_tokens = (int)prompt.size();
    s->prompt_s = time_now_s() - t0;

    std::vector<int> out, seq = prompt;  // seq: everything so far
    auto emit = [&](int token) {          // false when generation ends with it
        out.push_back(token);
        seq.push_back(token);
        on_token(token);
        if (token == opts.stop_token) s->stop = GenerateStop::kStopToken;
        return token != opts.stop_token && (int)out.size() < opts.max_tokens;
    };
    t0 = time_now_s();
    const float* next = logits.data();  // the model's logits for the token after seq
    int position = st.len, chosen = -1;  // chosen: where a round's draft and the model parted, the model's token
    while (true) {
        if (opts.cancelled && opts.cancelled()) {
            s->stop = GenerateStop::kCancelled;
            break;
        }
        if (chosen < 0 && !finite_logits(next, V, position, s)) break;
        if (!emit(chosen >= 0 ? chosen : sampler_sample(next, V, opts.sampler, rng))) break;
        chosen = -1;
        if (st.len == ctx) {  // slide: the last ctx tokens, from position 0 again
            st.len = 0;
            s->slides++;
            tuner.begin();
            infer_forward(&st, model, seq.data() + seq.size() - ctx, ctx, logits.data(), false);
            tuner.end();
            next = logits.data(), position = st.len;
            continue;
        }
        // k drafted tokens after seq.back(): the round gives at most k + 1, the check writes k + 1 positions
        const int cap = std::min({kDraftMax, opts.max_tokens - (int)out.size() - 1, st.max_len - st.len - 1,
                                  drafter.st.max_len - (int)seq.size() + 1});
        const int base = st.len;
        Round r{model, opts, rng, s, &tuner};
        const int i = r.run(&drafter, &costs, &check, &st, seq, cap, logits.data(), emit, &chosen);
        if (i < 0) break;
        next = logits.data() + (size_t)i * Vp, position = base + i + 1;  // when all were kept
    }
    s->new_tokens = (int)out.size();
    s->decode_s = time_now_s() - t0;
    return out;
}
