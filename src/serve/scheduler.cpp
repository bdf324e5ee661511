// scheduler.cpp: see scheduler.h.
#include "serve/scheduler.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <numeric>

#include "inference/sampler.h"
#include "platform/threads.h"

struct Stream {
    uint64_t job = 0;
    int index = 0;
    InferState st;
    Rng rng;
    int generated = 0, token = -1;
    std::vector<int> seq;  // the prompt and the tokens chosen: the last, token, not yet in the cache
    std::unique_ptr<DraftSeq> draft;  // with a draft, where the prompt leaves its context room
    std::unique_ptr<TokenDecoder> decoder;
    std::string text;  // the choice's text so far (whole characters), cut before a stop string
    size_t reply_at = 0;  // where the reply begins in text: after the prompt's with echo (a stop is sought after it)
    size_t sent = 0;   // bytes of text given out
    size_t token_bytes = 0;  // bytes of the choice's tokens so far: the next one's text_offset
    bool first = true;
};

Scheduler::Scheduler() = default;
Scheduler::~Scheduler() = default;

namespace {

// The team size of each forward, as generate's (platform/threads.h).
ThreadTuner tuner;

// The sampled token's log-probability under the model (its logits, before temperature) and the k most likely.
void add_logprobs(const Tokenizer& tok, const float* logits, int V, int token, int k, size_t offset, Choice* c) {
    float mx = logits[0];
    for (int v = 1; v < V; v++) mx = std::max(mx, logits[v]);
    double sum = 0;
    for (int v = 0; v < V; v++) sum += std::exp((double)logits[v] - mx);
    const double lse = mx + std::log(sum);
    c->tokens.push_back(tok.token_bytes[token]);
    c->token_logprobs.push_back(token < 0 ? NAN : logits[token] - lse);
    c->text_offset.push_back((int)offset);
    std::vector<int> ids(V);
    std::iota(ids.begin(), ids.end(), 0);
    k = std::min(k, V);
    std::partial_sort(ids.begin(), ids.begin() + k, ids.end(),
                      [&](int a, int b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); });
    c->top_logprobs.emplace_back();
    for (int i = 0; i < k; i++) c->top_logprobs.back().push_back({tok.token_bytes[ids[i]], logits[ids[i]] - lse});
}

// Bytes at the end of the reply (text past reply_at) that begin some stop string: held back until the next token
// says.
size_t stop_prefix_held(const std::string& text, size_t reply_at, const std::vector<std::string>& stops) {
    size_t held = 0;
    for (const std::string& s : stops)
        for (size_t k = std::min(s.size() - 1, text.size() - reply_at); k > held; k--)
            if (text.compare(text.size() - k, k, s, 0, k) == 0) {
                held = k;
                break;
            }
    return held;
}

// Appends piece to the stream's text; true when a stop string now appears in the reply (the text is cut before
// it). A stop string is the reply's: one that begins in an echoed prompt does not count, as OpenAI's.
bool add_text(Stream* st, const std::string& piece, const std::vector<std::string>& stops) {
    const size_t from = st->text.size();
    st->text += piece;
    size_t cut = std::string::npos;
    for (const std::string& s : stops) {
        const size_t at = st->text.find(s, std::max(st->reply_at, from >= s.size() ? from - s.size() + 1 : 0));
        if (at != std::string::npos && at >= st->sent) cut = std::min(cut, at);
    }
    if (cut == std::string::npos) return false;
    st->text.resize(cut);
    return true;
}

// The event for what the stream has ready: its text past `sent` (all of it when it ended, else short of a
// possible stop string's beginning).
StreamEvent take_event(Stream* st, const std::string& finish_reason, const std::vector<std::string>& stops) {
    StreamEvent e;
    e.job = st->job, e.index = st->index, e.first = st->first, e.finish_reason = finish_reason;
    const size_t ready =
        finish_reason.empty() ? st->text.size() - stop_prefix_held(st->text, st->reply_at, stops) : st->text.size();
    if (ready > st->sent) e.text = st->text.substr(st->sent, ready - st->sent), st->sent = ready;
    st->first = false;
    return e;
}

SamplerConfig sampler_of(const CompletionRequest& r) { return SamplerConfig{r.temperature, r.top_k, r.top_p}; }

// The stream's next token from `logits` (the model's, at `position`): sampled, or with a drafted token d >= 0
// (q: the draft's logits it was drawn from) the check's choice, *kept saying whether it was d. "" while the stream
// goes on, else why it ended.
std::string next_token(Scheduler* s, Stream* st, Job* job, const float* logits, int position, StreamEvent* logprobs_to,
                       int d = -1, const float* q = nullptr, bool* kept = nullptr) {
    const GPT2Config& cfg = s->model->cfg;
    const CompletionRequest& r = job->req;
    for (int v = 0; v < cfg.vocab_size; v++)
        if (!std::isfinite(logits[v])) {
            job->error = "non-finite logits at position " + std::to_string(position) +
                         ": the model's weights or activations overflow";
            return "error";
        }
    const SamplerConfig sc = sampler_of(r);
    st->token = d < 0 ? sampler_sample(logits, cfg.vocab_size, sc, &st->rng)
                      : speculative_check(logits, q, cfg.vocab_size, sc, d, &st->rng, kept);
    st->seq.push_back(st->token);
    st->generated++;
    job->usage.completion_tokens++;
    if (r.logprobs >= 0) {  // computed once: the event's, and the whole answer's copy of it
        Choice& e = logprobs_to->logprobs;
        add_logprobs(*s->tok, logits, cfg.vocab_size, st->token, r.logprobs, st->token_bytes, &e);
        Choice& c = job->choices[st->index];
        c.tokens.push_back(e.tokens.back()), c.token_logprobs.push_back(e.token_logprobs.back());
        c.top_logprobs.push_back(e.top_logprobs.back()), c.text_offset.push_back(e.text_offset.back());
    }
    st->token_bytes += s->tok->token_bytes[st->token].size();
    // at the end, the bytes of a character the reply began and never finished are its last (generate prints them)
    if (st->token == kTokenizerEot && kTokenizerEot < cfg.vocab_size)
        return add_text(st, st->decoder->flush(), r.stop), "stop";
    if (add_text(st, st->decoder->push(st->token), r.stop)) return "stop";
    if (st->generated == r.max_tokens) return add_text(st, st->decoder->flush(), r.stop), "length";
    return "";
}

// Prefills choice `index` of job into a new stream, the logits of its first token into *first; with echo, the
// prompt's text (and its logprobs) first.
std::unique_ptr<Stream> admit(Scheduler* s, uint64_t job_id, int index, std::vector<float>* first) {
    Job& job = s->jobs[job_id];
    const CompletionRequest& r = job.req;
    const std::vector<int>& prompt = r.prompts[index / r.n];
    const int P = (int)prompt.size(), Vp = s->model->cfg.padded_vocab_size;
    auto st = std::make_unique<Stream>();
    st->job = job_id, st->index = index;
    st->rng = Rng(r.has_seed ? r.seed + (uint64_t)(index % r.n) : 0x5eed0000 + s->seed_counter++);
    st->decoder = std::make_unique<TokenDecoder>(*s->tok);
    infer_init(&st->st, *s->model, P + r.max_tokens, P);
    const bool prompt_logprobs = r.echo && r.logprobs >= 0;
    std::vector<float> all(prompt_logprobs ? (size_t)P * Vp : (size_t)Vp);
    tuner.begin();
    infer_forward(&st->st, *s->model, prompt.data(), P, all.data(), prompt_logprobs);
    tuner.end();
    first->assign(all.end() - Vp, all.end());
    job.usage.prompt_tokens += P;
    st->seq = prompt;
    if (s->draft) {  // its cache: the request's positions, as far as its context goes (none where it never drafts)
        const int len = std::min(P + r.max_tokens, s->draft->cfg.max_seq_len);
        if (P < len && r.max_tokens >= 3) {  // (a step drafts k tokens for k + 1, after the first one: 1 + 2)
            tuner.begin();
            st->draft = std::make_unique<DraftSeq>(*s->model, *s->draft, len, prompt);
            tuner.end();
        }
        job.usage.drafts = true;
    }
    if (r.echo) {
        Choice& c = job.choices[index];
        for (int t = 0; t < P; t++) {
            if (prompt_logprobs && t == 0) {
                c.tokens.push_back(s->tok->token_bytes[prompt[0]]), c.token_logprobs.push_back(NAN);
                c.top_logprobs.emplace_back(), c.text_offset.push_back(0);
            } else if (prompt_logprobs) {
                add_logprobs(*s->tok, all.data() + (size_t)(t - 1) * Vp, s->model->cfg.vocab_size, prompt[t],
                             r.logprobs, st->token_bytes, &c);
            }
            st->token_bytes += s->tok->token_bytes[prompt[t]].size();
            st->text += st->decoder->push(prompt[t]);
        }
        if (r.max_tokens == 0) st->text += st->decoder->flush();
        st->reply_at = st->text.size();
    }
    return st;
}

}  // namespace

double scheduler_stream_bytes(const GPT2Config& cfg, int len, int rows) {
    return infer_memory_bytes(cfg, len, rows) + infer_scratch_bytes(cfg, 1) + 8.0 * cfg.padded_vocab_size;
}

double scheduler_draft_stream_bytes(const GPT2Config& draft, int len, int rows) {
    return draft_seq_bytes(draft, std::min(len, draft.max_seq_len), std::min(rows, draft.max_seq_len));
}

double scheduler_draft_bytes(const GPT2Config& model, const GPT2Config& draft, int parallel) {
    // the check's rows beside one a stream, and the draft's passes
    const double rows = (double)parallel * kDraftMax;
    return rows * 4.0 * model.padded_vocab_size + infer_scratch_bytes(model, parallel * (kDraftMax + 1)) -
           infer_scratch_bytes(model, parallel) + draft_together_bytes(draft, parallel);
}

void scheduler_init(Scheduler* s, const GPT2& model, const Tokenizer& tok, int parallel, int max_queue) {
    s->model = &model, s->tok = &tok, s->parallel = parallel, s->max_queue = max_queue;
    s->slots.resize(parallel);
    infer_scratch_init(&s->decode, model, parallel);
    s->logits.resize((size_t)parallel * model.cfg.padded_vocab_size);
}

void scheduler_set_draft(Scheduler* s, const GPT2& draft, int draft_min, int draft_max) {
    assert(draft.cfg.vocab_size == s->model->cfg.vocab_size);
    assert(draft_min >= 0 && draft_min <= draft_max && draft_max <= kDraftMax);
    s->draft = &draft, s->draft_min = draft_min, s->draft_max = draft_max;
    infer_scratch_init(&s->decode, *s->model, s->parallel * (kDraftMax + 1));
    infer_scratch_init(&s->drafting, draft, s->parallel * (kDraftMax + 1));
    s->draft_logits.resize((size_t)s->parallel * draft.cfg.padded_vocab_size);
    s->logits.resize((size_t)s->parallel * (kDraftMax + 1) * s->model->cfg.padded_vocab_size);
}

bool scheduler_submit(Scheduler* s, uint64_t job, const CompletionRequest& r) {
    const int choices = (int)r.prompts.size() * r.n;
    if ((int)s->queue.size() + choices > s->max_queue) return false;
    Job& j = s->jobs[job];
    j.req = r;
    j.choices.assign(choices, Choice());
    j.queued = choices;
    for (int i = 0; i < choices; i++) s->queue.push_back({job, i});
    return true;
}

void scheduler_cancel(Scheduler* s, uint64_t job) {
    for (auto& slot : s->slots)
        if (slot && slot->job == job) slot.reset();
    s->queue.erase(std::remove_if(s->queue.begin(), s->queue.end(), [&](const auto& q) { return q.first == job; }),
                   s->queue.end());
    s->jobs.erase(job);
}

bool scheduler_busy(const Scheduler& s) {
    return !s.queue.empty() || std::any_of(s.slots.begin(), s.slots.end(), [](const auto& x) { return x != nullptr; });
}

bool scheduler_done(const Scheduler& s, uint64_t job) {
    const auto it = s.jobs.find(job);
    return it != s.jobs.end() && it->second.queued == 0 && it->second.running == 0;
}

Job scheduler_take(Scheduler* s, uint64_t job) {
    Job j = std::move(s->jobs[job]);
    s->jobs.erase(job);
    return j;
}

namespace {

// Ends stream `slot` with `reason`, its last event to *events.
void finish(Scheduler* s, size_t slot, const std::string& reason, std::vector<StreamEvent>* events, StreamEvent e) {
    Stream* st = s->slots[slot].get();
    Job& job = s->jobs[st->job];
    StreamEvent last = take_event(st, reason, job.req.stop);
    last.logprobs = std::move(e.logprobs);
    if (reason == "error") job.failed = true, last.error = job.error;
    job.choices[st->index].text = st->text;
    job.choices[st->index].finish_reason = reason;
    job.running--, job.finished++;
    events->push_back(std::move(last));
    s->slots[slot].reset();
}

// A free slot takes the first queued choice, prefilled and its first token sampled: one prompt a step, so the
// streams decoding wait for one prefill at most between their tokens, and the choice's first token goes out
// with this step's events rather than after every waiting prompt's prefill.
void admit_queued(Scheduler* s, std::vector<StreamEvent>* events) {
    for (size_t slot = 0; slot < s->slots.size() && !s->queue.empty(); slot++) {
        if (s->slots[slot]) continue;
        const auto [job, index] = s->queue.front();
        s->queue.pop_front();
        std::vector<float> first;
        s->slots[slot] = admit(s, job, index, &first);
        Job& j = s->jobs[job];
        j.queued--, j.running++;
        Stream* st = s->slots[slot].get();
        StreamEvent e;
        if (j.req.echo && j.req.logprobs >= 0) e.logprobs = j.choices[index];  // the prompt's, before its reply's
        const std::string reason =
            j.req.max_tokens == 0 ? "length" : next_token(s, st, &j, first.data(), st->st.len, &e);
        if (!reason.empty()) finish(s, slot, reason, events, std::move(e));
        else {
            StreamEvent out = take_event(st, "", j.req.stop);
            out.logprobs = std::move(e.logprobs);
            events->push_back(std::move(out));
        }
        return;
    }
}

// Each stream's drafts for this step: k of its own (where its request and the draft's context leave room), the
// draft's passes taking them together. *probe: whether each k was a probe of DraftCosts'.
void draft_for(Scheduler* s, const std::vector<Stream*>& live, std::vector<std::vector<int>>* drafted,
               std::vector<char>* probe) {
    const size_t n = live.size();
    std::vector<DraftSeq*> d(n);
    std::vector<const std::vector<int>*> seqs(n);
    std::vector<int> k(n, 0);
    std::vector<SamplerConfig> sc(n);
    std::vector<const SamplerConfig*> samplers(n);
    std::vector<Rng*> rngs(n);
    probe->assign(n, 0);
    bool any = false;
    for (size_t i = 0; i < n; i++) {
        Stream* st = live[i];
        const CompletionRequest& r = s->jobs[st->job].req;
        d[i] = st->draft.get(), seqs[i] = &st->seq, rngs[i] = &st->rng;
        sc[i] = sampler_of(r), samplers[i] = &sc[i];
        if (!d[i]) continue;
        // a round gives k + 1 tokens at most; the draft's cache takes the sequence and k - 1 drafts
        const int cap = std::min({s->draft_max, r.max_tokens - st->generated - 1,
                                  d[i]->st.max_len - (int)st->seq.size() + 1});
        bool p = false;
        // a sampled stream's k, and with it its draws, follows its own history alone: its seed repeats whatever
        // decodes beside it; a greedy stream's (its tokens the same whatever k) also weighs the shared pass
        const int together = r.temperature > 0 ? 1 : (int)n;
        k[i] = std::max(d[i]->costs.choose(cap, together, &p), std::min(cap, s->draft_min));
        (*probe)[i] = p, any = any || k[i] > 0;
    }
    drafted->assign(n, {});
    if (!any) return;
    tuner.begin();
    draft_together(*s->draft, d.data(), seqs.data(), k.data(), samplers.data(), rngs.data(), (int)n, &s->drafting,
                   &s->draft_logits, drafted->data());
    tuner.end();
}

// Stream `slot`'s tokens from its rows of the step's check (its last token, then its drafts): the drafts kept while
// the model agrees, then the model's own; its cache cut back to what they were checked after.
void take_rows(Scheduler* s, size_t slot, const std::vector<int>& drafted, const float* logits, bool probe,
               std::vector<StreamEvent>* events) {
    Stream* st = s->slots[slot].get();
    Job& job = s->jobs[st->job];
    const int n = (int)drafted.size(), Vp = s->model->cfg.padded_vocab_size;
    const int base = st->st.len - n - 1;  // where the last token went
    StreamEvent e;
    std::string reason;
    int kept = 0;
    for (int i = 0; i <= n && reason.empty(); i++) {
        bool agreed = false;
        const float* q = i < n ? st->draft->q.data() + (size_t)i * s->draft->cfg.padded_vocab_size : nullptr;
        reason = next_token(s, st, &job, logits + (size_t)i * Vp, base + 1 + i, &e, i < n ? drafted[i] : -1, q,
                            &agreed);
        if (!agreed) break;
        kept++;
    }
    if (n > 0) {
        st->draft->costs.kept(kept, n, probe);
        job.usage.accepted += kept, job.usage.rejected += n - kept;
    }
    st->st.len = base + 1 + kept;  // the last token and the kept drafts; the model's own token is fed next step
    if (!reason.empty()) return finish(s, slot, reason, events, std::move(e));
    StreamEvent out = take_event(st, "", job.req.stop);
    out.logprobs = std::move(e.logprobs);
    if (!out.text.empty() || !out.logprobs.tokens.empty()) events->push_back(std::move(out));
}

}  // namespace

void scheduler_step(Scheduler* s, std::vector<StreamEvent>* events) {
    // the streams that go on feed their last token and their drafts: one pass for all of them, then each takes
    // its tokens from its rows
    std::vector<Stream*> live;
    std::vector<size_t> at;
    for (size_t slot = 0; slot < s->slots.size(); slot++)
        if (s->slots[slot]) live.push_back(s->slots[slot].get()), at.push_back(slot);
    if (!live.empty()) {
        std::vector<std::vector<int>> drafted(live.size());
        std::vector<char> probe(live.size(), 0);
        if (s->draft) draft_for(s, live, &drafted, &probe);
        std::vector<InferState*> states;
        std::vector<int> counts, tokens;
        for (size_t i = 0; i < live.size(); i++) {
            states.push_back(&live[i]->st), counts.push_back(1 + (int)drafted[i].size());
            tokens.push_back(live[i]->token);
            tokens.insert(tokens.end(), drafted[i].begin(), drafted[i].end());
        }
        tuner.begin();
        infer_decode_runs(&s->decode, states.data(), counts.data(), (int)live.size(), *s->model, tokens.data(),
                          s->logits.data(), true);
        tuner.end();
        size_t row = 0;
        for (size_t i = 0; i < live.size(); i++) {
            take_rows(s, at[i], drafted[i], s->logits.data() + row * s->model->cfg.padded_vocab_size, probe[i],
                      events);
            row += counts[i];
        }
    }
    admit_queued(s, events);
}
