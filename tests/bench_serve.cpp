// bench_serve.cpp: the serve_latency cases of run_bench: what a client of `gpt2 serve` waits for, measured through
// its scheduler (serve/scheduler.h) without sockets, on 124M with random weights. n requests are submitted at once
// (64-token prompts, 32 greedy tokens each, as `serve --parallel 8` takes them) and stepped until done: each
// stream's time to its first event (from the submission to the end of the step that admitted it: its prompt
// prefilled, its first token sampled) and between its tokens (the steps that decode every stream's row in one
// pass). And a chat's second turn as `gpt2 chat` runs it (cli/chat_cmd.cpp): the cache kept, only the new turn
// prefilled, against the whole conversation prefilled again. Skipped without the tokenizer files (the scheduler
// turns tokens into text) and, for bf16, without AVX512_BF16.
#include <algorithm>
#include <cstdio>
#include <map>
#include <vector>

#include "bench.h"
#include "core/model.h"
#include "inference/infer.h"
#include "platform/threads.h"
#include "platform/util.h"
#include "serve/scheduler.h"
#include "text/tokenizer.h"

namespace {

const int kPrompt = 64, kMaxTokens = 32, kParallel = 8, kRuns = 3;

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const size_t m = v.size() / 2;
    return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

// What one run's streams waited for, in seconds; a run's figures are appended to those of the earlier runs.
struct Latency {
    std::vector<double> first;  // per stream: from the submission to its first event
    std::vector<double> gap;    // per stream: the median time between two of its tokens after the first
    std::vector<double> step;   // each step that decoded the streams (after the one that admitted them)
};

// n requests, one stream each, submitted together and stepped until done. A stream's tokens are counted by its
// job's usage after each step: an event may carry no text (a token that ends inside a character), a token always
// counts.
void serve_run(const GPT2& model, const Tokenizer& tok, int n, Latency* out) {
    Scheduler s;
    scheduler_init(&s, model, tok, kParallel, 64);
    std::map<uint64_t, std::vector<double>> token_at;  // per job: when each of its tokens was given out
    const double t0 = time_now_s();
    for (int i = 0; i < n; i++) {
        CompletionRequest r;
        r.prompts.assign(1, std::vector<int>(kPrompt));
        for (int t = 0; t < kPrompt; t++) r.prompts[0][t] = (t * 7919 + i) % 50257;
        r.max_tokens = kMaxTokens, r.temperature = 0;
        scheduler_submit(&s, i + 1, r);
        token_at[i + 1];
    }
    std::vector<StreamEvent> events;
    for (int step = 0; scheduler_busy(s); step++) {
        const double before = time_now_s();
        events.clear();
        scheduler_step(&s, &events);
        const double now = time_now_s();
        if (step > 0) out->step.push_back(now - before);
        for (const StreamEvent& e : events)
            if (e.first) out->first.push_back(now - t0);
        for (auto& [job, at] : token_at)
            at.resize(s.jobs[job].usage.completion_tokens, now);  // a step gives a stream at most one token
    }
    for (auto& [job, at] : token_at) {
        std::vector<double> gaps;
        for (size_t k = 1; k < at.size(); k++) gaps.push_back(at[k] - at[k - 1]);
        if (!gaps.empty()) out->gap.push_back(median(gaps));
        scheduler_take(&s, job);
    }
}

// The chat's second turn: a conversation of `history` tokens in the cache, then a turn of `turn` tokens prefilled
// alone (as gpt2 chat does), against all history + turn tokens from an empty cache; both fed 256 positions a pass,
// as chat feeds them, and timed to the turn's last logits (its reply's first token is sampled from them). Medians
// of 3 after a warm-up, in seconds: {alone, again}.
std::pair<double, double> chat_second_turn(const GPT2& model, int history, int turn) {
    const int rows = 256;
    InferState st;
    infer_init(&st, model, model.cfg.max_seq_len, rows);
    std::vector<int> tokens(history + turn);
    for (int t = 0; t < history + turn; t++) tokens[t] = (t * 7919 + 5) % 50257;
    std::vector<float> logits(model.cfg.padded_vocab_size);
    ThreadTuner tuner;
    auto feed = [&](int from, int to) {  // tokens[from, to) after the cache's first `from`
        st.len = from;
        for (int at = from; at < to; at += rows) {
            tuner.begin();
            infer_forward(&st, model, &tokens[at], std::min(rows, to - at), logits.data(), false);
            tuner.end();
        }
    };
    feed(0, history);
    std::vector<double> alone, again;
    for (int rep = 0; rep <= 3; rep++) {
        double t0 = time_now_s();
        feed(history, history + turn);
        if (rep > 0) alone.push_back(time_now_s() - t0);
        t0 = time_now_s();
        feed(0, history + turn);  // leaves the first `history` positions as they were: the same tokens
        if (rep > 0) again.push_back(time_now_s() - t0);
    }
    return {median(alone), median(again)};
}

}  // namespace

void bench_serve_latency(Precision prec) {
    const char* name = prec == Precision::kBf16 ? "bf16" : prec == Precision::kInt8 ? "int8" : "fp32";
    if (prec == Precision::kBf16 && !bf16_supported()) {
        printf("serve latency 124M bf16: skipped (this CPU has no AVX512_BF16)\n");
        return;
    }
    if (!tokenizer_files_present(tokenizer_default_dir())) {
        printf("serve latency 124M %s: skipped (tokenizer files not found: set GPT2_DATA_DIR)\n", name);
        return;
    }
    Tokenizer tok;
    tokenizer_load(&tok, tokenizer_default_dir());
    GPT2 model;
    bench_build_124m(&model, prec);
    infer_keep_q8_tiles(&model);  // int8: as serve keeps them
    Latency warm;
    serve_run(model, tok, 1, &warm);  // the first run's page faults and thread start are not a client's wait
    double first_one = 0;
    for (int n : {1, 8}) {
        Latency l;
        for (int run = 0; run < kRuns; run++) serve_run(model, tok, n, &l);
        const double first = median(l.first), gap = median(l.gap);
        if (n == 1) first_one = first;
        char times[32] = "";
        if (n > 1) snprintf(times, sizeof times, "; %.1fx one request's", first / first_one);
        printf(
            "serve 124M %s, %d request%s at once (%d-token prompts, %d tokens each, %d runs): first token after "
            "%.0f ms (median over the streams; the latest %.0f ms%s), then a token every %.1f ms (each stream's "
            "median gap, the median stream's; the slowest stream's %.1f ms), a decoding step %.1f ms (median): "
            "%.1f tok/s a stream, %.1f in all\n",
            name, n, n == 1 ? "" : "s", kPrompt, kMaxTokens, kRuns, 1e3 * first,
            1e3 * *std::max_element(l.first.begin(), l.first.end()), times, 1e3 * gap,
            1e3 * *std::max_element(l.gap.begin(), l.gap.end()), 1e3 * median(l.step), 1 / gap, n / gap);
    }
    const int history = 400, turn = 30;
    const auto [alone, again] = chat_second_turn(model, history, turn);
    printf(
        "chat 124M %s, a second turn of %d tokens after %d: prefilled alone (the cache kept, as gpt2 chat does) "
        "%.1f ms, against %.1f ms for all %d from an empty cache: %.1fx faster to its first token\n",
        name, turn, history, 1e3 * alone, 1e3 * again, history + turn, again / alone);
}
