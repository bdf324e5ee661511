// scheduler.cpp: see scheduler.h.
#include "serve/scheduler.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "inference/sampler.h"
#include "platform/threads.h"

struct Stream {
    uint64_t job = 0;
    int index = 0;
    InferState st;
    Rng rng;
    std::vector<float> logits;  // (Vp): the next token's
    int generated = 0, token = -1;
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

// Samples the stream's next token from its logits; "" while it goes on, else why it ended.
std::string next_token(Scheduler* s, Stream* st, Job* job, StreamEvent* logprobs_to) {
    const GPT2Config& cfg = s->model->cfg;
    const CompletionRequest& r = job->req;
    for (int v = 0; v < cfg.vocab_size; v++)
        if (!std::isfinite(st->logits[v])) {
            job->error = "non-finite logits at position " + std::to_string(st->st.len) +
                         ": the model's weights or activations overflow";
            return "error";
        }
    const SamplerConfig sc{r.temperature, r.top_k, r.top_p};
    st->token = sampler_sample(st->logits.data(), cfg.vocab_size, sc, &st->rng);
    st->generated++;
    job->usage.completion_tokens++;
    if (r.logprobs >= 0) {  // computed once: the event's, and the whole answer's copy of it
        Choice& e = logprobs_to->logprobs;
        add_logprobs(*s->tok, st->logits.data(), cfg.vocab_size, st->token, r.logprobs, st->token_bytes, &e);
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

// Prefills choice `index` of job into a new stream; with echo, the prompt's text (and its logprobs) first.
std::unique_ptr<Stream> admit(Scheduler* s, uint64_t job_id, int index) {
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
    st->logits.assign(all.end() - Vp, all.end());
    job.usage.prompt_tokens += P;
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

void scheduler_init(Scheduler* s, const GPT2& model, const Tokenizer& tok, int parallel, int max_queue) {
    s->model = &model, s->tok = &tok, s->parallel = parallel, s->max_queue = max_queue;
    s->slots.resize(parallel);
    infer_scratch_init(&s->decode, model, parallel);
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
        s->slots[slot] = admit(s, job, index);
        Job& j = s->jobs[job];
        j.queued--, j.running++;
        Stream* st = s->slots[slot].get();
        StreamEvent e;
        if (j.req.echo && j.req.logprobs >= 0) e.logprobs = j.choices[index];  // the prompt's, before its reply's
        const std::string reason = j.req.max_tokens == 0 ? "length" : next_token(s, st, &j, &e);
        if (!reason.empty()) finish(s, slot, reason, events, std::move(e));
        else {
            StreamEvent out = take_event(st, "", j.req.stop);
            out.logprobs = std::move(e.logprobs);
            events->push_back(std::move(out));
        }
        return;
    }
}

}  // namespace

void scheduler_step(Scheduler* s, std::vector<StreamEvent>* events) {
    // the streams that go on feed their last token: one pass for all of them, then each samples its next
    std::vector<InferState*> states;
    std::vector<int> tokens;
    for (auto& slot : s->slots)
        if (slot) states.push_back(&slot->st), tokens.push_back(slot->token);
    if (!states.empty()) {
        const size_t Vp = s->model->cfg.padded_vocab_size;
        std::vector<float> logits(states.size() * Vp);
        tuner.begin();
        infer_decode(&s->decode, states.data(), *s->model, tokens.data(), (int)states.size(), logits.data());
        tuner.end();
        size_t row = 0;
        for (auto& slot : s->slots)
            if (slot) std::copy_n(logits.data() + row++ * Vp, Vp, slot->logits.data());
    }
    for (size_t slot = 0; slot < s->slots.size(); slot++) {
        Stream* st = s->slots[slot].get();
        if (!st) continue;
        Job& job = s->jobs[st->job];
        StreamEvent e;
        const std::string reason = next_token(s, st, &job, &e);
        if (!reason.empty()) {
            finish(s, slot, reason, events, std::move(e));
            continue;
        }
        StreamEvent out = take_event(st, "", job.req.stop);
        out.logprobs = std::move(e.logprobs);
        if (!out.text.empty() || !out.logprobs.tokens.empty()) events->push_back(std::move(out));
    }
    admit_queued(s, events);
}
