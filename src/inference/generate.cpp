// generate.cpp: see generate.h.
#include "inference/generate.h"

#include <cassert>
#include <cmath>
#include <cstdio>

#include "platform/threads.h"
#include "platform/util.h"

void generate_sizes(const GPT2Config& cfg, int prompt_tokens, int max_tokens, int* len, int* rows) {
    const bool slides = (long long)prompt_tokens + max_tokens > cfg.max_seq_len;
    *len = slides ? cfg.max_seq_len : prompt_tokens + max_tokens;
    *rows = slides ? cfg.max_seq_len : prompt_tokens;
}

double generate_memory_bytes(const GPT2Config& cfg, int prompt_tokens, int max_tokens) {
    int len, rows;
    generate_sizes(cfg, prompt_tokens, max_tokens, &len, &rows);
    return infer_memory_bytes(cfg, len, rows);
}

std::string generate_nonfinite_message(const GenerateStats& s) {
    char buf[200];
    snprintf(buf, sizeof(buf), "non-finite logits at position %d: logit %d is %g; the model's weights or activations overflow",
             s.bad_position, s.bad_logit, s.bad_value);
    return buf;
}

bool generate_finite_logits(const float* logits, int V, int position, GenerateStats* s) {
    int bad = 0;
    while (bad < V && std::isfinite(logits[bad])) bad++;
    if (bad == V) return true;
    s->stop = GenerateStop::kNonFinite;
    s->bad_position = position, s->bad_logit = bad, s->bad_value = logits[bad];
    return false;
}

std::vector<int> generate(const GPT2& model, const std::vector<int>& prompt, const GenerateOptions& opts, Rng* rng,
                          const std::function<void(int)>& on_token, GenerateStats* stats) {
    const GPT2Config& cfg = model.cfg;
    const int ctx = cfg.max_seq_len;
    assert(!prompt.empty() && (int)prompt.size() <= ctx && "callers check the prompt against the context");
    GenerateStats local;
    GenerateStats* s = stats ? stats : &local;
    *s = GenerateStats();
    int len, rows;
    generate_sizes(cfg, (int)prompt.size(), opts.max_tokens, &len, &rows);
    InferState st;
    infer_init(&st, model, len, rows);
    std::vector<float> logits(cfg.padded_vocab_size);
    // The team size of each forward, from the other processes' load (platform/threads.h); per process, so what
    // it measured carries across calls.
    static ThreadTuner tuner;
    double t0 = time_now_s();
    tuner.begin();
    infer_forward(&st, model, prompt.data(), (int)prompt.size(), logits.data(), false);
    tuner.end();
    s->prompt_tokens = (int)prompt.size();
    s->prompt_s = time_now_s() - t0;

    std::vector<int> out, seq = prompt;  // seq: everything so far, for the slides
    t0 = time_now_s();
    while ((int)out.size() < opts.max_tokens) {
        if (opts.cancelled && opts.cancelled()) {
            s->stop = GenerateStop::kCancelled;
            break;
        }
        if (!generate_finite_logits(logits.data(), cfg.vocab_size, st.len, s)) break;
        int token = sampler_sample(logits.data(), cfg.vocab_size, opts.sampler, rng);
        out.push_back(token);
        seq.push_back(token);
        on_token(token);
        if (token == opts.stop_token) {
            s->stop = GenerateStop::kStopToken;
            break;
        }
        if ((int)out.size() == opts.max_tokens) break;
        tuner.begin();
        if (st.len < ctx) {
            infer_forward(&st, model, &token, 1, logits.data(), false);
        } else {  // slide: the last ctx tokens, from position 0 again
            st.len = 0;
            s->slides++;
            infer_forward(&st, model, seq.data() + seq.size() - ctx, ctx, logits.data(), false);
        }
        tuner.end();
    }
    s->new_tokens = (int)out.size();
    s->decode_s = time_now_s() - t0;
    return out;
}
