// test_speculative.cpp: speculative decoding (inference/speculative.h): the check's rows against one-token passes
// byte for byte, greedy output against plain decoding token for token with drafts that always, sometimes and
// never agree, and the accept/reject rule leaving each token distributed as the model alone draws it.
#include <cmath>
#include <cstdio>
#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/model.h"
#include "core/rng.h"
#include "formats/checkpoint.h"
#include "inference/generate.h"
#include "inference/infer.h"
#include "inference/sampler.h"
#include "inference/speculative.h"
#include "precision/precision.h"
#include "platform/threads.h"
#include "test.h"

namespace {

const char* kTrained = "tests/fixtures/trained_tiny";  // 2 layers, C 32, context 32, a vocabulary of 1000

// The model's own int8 copy, as `generate --draft int8` makes it.
void int8_copy(const GPT2& model, GPT2* draft) {
    gpt2_build(draft, model.cfg);
    draft->params = model.params;
    gpt2_set_precision(draft, Precision::kInt8, true);
    gpt2_round_inputs_q8(draft);
}

// A model of the same shape that agrees with nothing: GPT-2's init.
void random_copy(const GPT2& model, GPT2* draft, uint64_t seed) {
    gpt2_build(draft, model.cfg);
    gpt2_init_random(draft, seed);
}

}  // namespace

TEST(a_check_of_n_rows_equals_n_one_token_passes) {
    GPT2 trained, int8;
    checkpoint_load(&trained, kTrained);
    int8_copy(trained, &int8);
    for (const GPT2* model : {&trained, &int8}) {
        const int Vp = model->cfg.padded_vocab_size;
        for (int n : {1, 2, 5, 9}) {
            InferState checked, alone;
            const std::vector<int> prompt = {3, 14, 15, 92, 65};
            std::vector<float> rows((size_t)n * Vp), row(Vp);
            for (InferState* st : {&checked, &alone}) {
                infer_init(st, *model, 20, 5);
                infer_forward(st, *model, prompt.data(), 5, row.data(), false);
            }
            InferScratch scratch;
            infer_scratch_init(&scratch, *model, 9);
            std::vector<int> tokens(n);
            for (int i = 0; i < n; i++) tokens[i] = (97 * i + 11) % model->cfg.vocab_size;
            infer_verify(&scratch, &checked, *model, tokens.data(), n, rows.data());
            int differ = 0;
            for (int i = 0; i < n; i++) {
                infer_forward(&alone, *model, &tokens[i], 1, row.data(), false);
                differ += memcmp(row.data(), &rows[(size_t)i * Vp], sizeof(float) * Vp) != 0;
            }
            printf("    %s, a check of %d rows: %d rows differ from one-token passes\n",
                   model == &trained ? "fp32" : "int8", n, differ);
            CHECK(differ == 0);
            CHECK(checked.len == alone.len);
            // the next one-token pass after it, on what the check left in the cache
            infer_forward(&checked, *model, &tokens[0], 1, rows.data(), false);
            infer_forward(&alone, *model, &tokens[0], 1, row.data(), false);
            CHECK(memcmp(row.data(), rows.data(), sizeof(float) * Vp) == 0);
        }
    }
}

TEST(speculative_greedy_equals_plain_greedy) {
    GPT2 model, int8, other;
    checkpoint_load(&model, kTrained);
    int8_copy(model, &int8);
    random_copy(model, &other, 7);
    struct Case {
        std::vector<int> prompt;
        int max_tokens, stop_token;
    };
    std::vector<int> long_prompt;
    for (int t = 0; t < 30; t++) long_prompt.push_back((37 * t + 5) % 1000);
    const std::vector<Case> cases = {
        {{5, 6}, 1, -1},  {{5, 6}, 2, -1}, {{5, 6}, 30, -1}, {{5, 6}, 80, -1},      {{7}, 31, -1},
        {long_prompt, 2, -1}, {long_prompt, 40, -1}, {{9, 9, 9}, 25, -1}, {{5, 6}, 60, 0 /* set below */},
    };
    const char* names[] = {"itself", "its int8 copy", "a random model"};
    int index = 0;
    for (const GPT2* draft : {&model, &int8, &other}) {
        // tokens drafted a round (0: chosen by the costs and the share kept); a light run (test.h) the fewest and most
        for (int fixed : test_light() ? std::vector<int>{0, 1, 8} : std::vector<int>{0, 1, 3, 8}) {
            int equal = 0, drafted = 0, kept = 0;
            for (Case c : cases) {
                GenerateOptions opts;
                opts.max_tokens = c.max_tokens;
                opts.sampler.temperature = 0;
                if (fixed) opts.draft_min = opts.draft_max = fixed;
                Rng rng(1);
                GenerateStats plain_stats, stats;
                if (c.stop_token == 0) {  // stop at the plain run's 12th token
                    opts.stop_token = -1;
                    opts.stop_token = generate(model, c.prompt, opts, &rng, [](int) {}, nullptr)[11];
                }
                std::vector<int> streamed;
                const std::vector<int> plain = generate(model, c.prompt, opts, &rng, [](int) {}, &plain_stats);
                const std::vector<int> fast = generate_speculative(
                    model, *draft, c.prompt, opts, &rng, [&](int t) { streamed.push_back(t); }, &stats);
                const bool same = fast == plain && streamed == plain && stats.stop == plain_stats.stop &&
                                  stats.slides == plain_stats.slides && stats.new_tokens == (int)plain.size();
                if (!same)
                    printf("    draft %s, k %d, prompt of %zu, %d tokens: %zu tokens, plain %zu\n", names[index],
                           fixed, c.prompt.size(), c.max_tokens, fast.size(), plain.size());
                equal += same;
                drafted += stats.drafted, kept += stats.kept;
                CHECK(stats.kept <= stats.drafted);
            }
            printf("    draft %s, k %s: %d of %zu runs equal plain greedy; %d of %d drafted tokens kept\n",
                   names[index], fixed ? std::to_string(fixed).c_str() : "chosen", equal, cases.size(), kept,
                   drafted);
            CHECK(equal == (int)cases.size());
            if (fixed) CHECK(drafted > 0);
            if (fixed && draft == &model) CHECK(kept == drafted);  // a model always agrees with itself
        }
        index++;
    }
}

TEST(speculative_accept_leaves_the_models_distribution) {
    // p the model's, q the draft's: mass where the other has none, both ways, and shared tokens either side of 1
    using Dist = std::vector<std::pair<int, double>>;
    const std::vector<std::pair<Dist, Dist>> cases = {
        {{{0, 0.5}, {1, 0.3}, {2, 0.2}}, {{1, 0.6}, {3, 0.3}, {0, 0.1}}},
        {{{4, 1.0}}, {{5, 0.9}, {4, 0.1}}},
        {{{0, 0.25}, {1, 0.25}, {2, 0.25}, {3, 0.25}}, {{0, 0.25}, {1, 0.25}, {2, 0.25}, {3, 0.25}}},
    };
    Rng rng(11);
    const int draws = 200000;
    for (const auto& [p, q] : cases) {
        std::map<int, int> counts;
        for (int i = 0; i < draws; i++) {
            double u = rng.uniform(), cum = 0;
            int d = q.back().first;
            for (const auto& [t, pr] : q)
                if (u < (cum += pr)) {
                    d = t;
                    break;
                }
            bool kept;
            const int out = speculative_accept(p, q, d, &rng, &kept);
            counts[out]++;
            if (kept && out != d) CHECK(!"a kept draft is the token drafted");
        }
        double worst = 0;  // in binomial standard deviations
        for (const auto& [t, pr] : p) {
            const double sd = std::sqrt(draws * pr * (1 - pr)) + 1e-9;
            worst = std::max(worst, std::fabs(counts[t] - draws * pr) / sd);
        }
        int outside = 0;
        for (const auto& [t, n] : counts) {
            bool in_p = false;
            for (const auto& e : p) in_p |= e.first == t;
            outside += in_p ? 0 : n;
        }
        printf("    %zu tokens: the worst token %.2f standard deviations from p; %d draws outside p\n", p.size(),
               worst, outside);
        CHECK(worst < 5);
        CHECK(outside == 0);
    }
}

TEST(speculative_sampling_draws_as_the_model_alone) {
    // The first three tokens' joint distribution under top-k 3 (the second and third drafted: a run of 4 drafts up
    // to 2 after the first), from a draft that agrees with nothing and from the
    // model's own int8 copy, against the model's own probabilities worked out from its logits.
    GPT2 model, other, int8;
    checkpoint_load(&model, kTrained);
    random_copy(model, &other, 9);
    int8_copy(model, &int8);
    const int Vp = model.cfg.padded_vocab_size, V = model.cfg.vocab_size;
    GenerateOptions opts;
    opts.max_tokens = 4;
    opts.draft_min = opts.draft_max = 2;
    opts.sampler.temperature = 1.5f;
    opts.sampler.top_k = 3;
    const std::vector<int> prompt = {5, 6};
    using Three = std::vector<int>;
    std::map<Three, double> exact;
    {
        InferState st;
        std::vector<float> logits(Vp);
        infer_init(&st, model, 5, 2);
        infer_forward(&st, model, prompt.data(), 2, logits.data(), false);
        for (const auto& [t1, p1] : sampler_distribution(logits.data(), V, opts.sampler)) {
            st.len = 2;
            infer_forward(&st, model, &t1, 1, logits.data(), false);
            for (const auto& [t2, p2] : sampler_distribution(logits.data(), V, opts.sampler)) {
                st.len = 3;
                infer_forward(&st, model, &t2, 1, logits.data(), false);
                for (const auto& [t3, p3] : sampler_distribution(logits.data(), V, opts.sampler))
                    exact[{t1, t2, t3}] = p1 * p2 * p3;
            }
        }
    }
    for (const GPT2* draft : {&other, &int8}) {
        Rng rng(5);
        const int runs = test_light() ? 1500 : 6000;  // 3 minutes under qemu; the native run draws all
        std::map<Three, int> counts;
        int drafted = 0;
        for (int i = 0; i < runs; i++) {
            GenerateStats stats;
            const std::vector<int> out = generate_speculative(model, *draft, prompt, opts, &rng, [](int) {}, &stats);
            counts[{out[0], out[1], out[2]}]++;
            drafted += stats.drafted;
        }
        double worst = 0;
        int outside = 0;
        for (const auto& [pair, n] : counts)
            if (!exact.count(pair)) outside += n;
        for (const auto& [pair, pr] : exact) {  // (+1: a count of one where less than one is expected is no outlier)
            const double sd = std::sqrt(runs * pr * (1 - pr)) + 1;
            worst = std::max(worst, std::fabs(counts[pair] - runs * pr) / sd);
        }
        printf("    draft %s: %zu sequences of 3 tokens, the worst %.2f standard deviations from the model's; %d of %d drawn "
               "outside its top-k; %d tokens drafted\n", draft == &other ? "a random model" : "its int8 copy",
               exact.size(), worst, outside, runs, drafted);
        CHECK(worst < 5);
        CHECK(outside == 0);
        CHECK(drafted > 0);
    }
}

TEST(speculative_sampling_is_repeatable_from_its_seed) {
    // k is chosen from what the tokens were, never from timings: a seed gives the same tokens on every run
    GPT2 model, int8;
    checkpoint_load(&model, kTrained);
    int8_copy(model, &int8);
    GenerateOptions opts;
    opts.max_tokens = 60;
    opts.sampler.temperature = 0.9f;
    opts.sampler.top_k = 40;
    std::vector<int> first;
    int same = 0;
    for (int run = 0; run < 5; run++) {
        Rng rng(7);
        GenerateStats stats;
        const std::vector<int> out = generate_speculative(model, int8, {5, 6}, opts, &rng, [](int) {}, &stats);
        if (run == 0) first = out;
        same += out == first;
    }
    printf("    5 runs from seed 7: %d give the first run's 60 tokens\n", same);
    CHECK(same == 5);
}

TEST(a_draft_of_a_longer_context_is_sized_by_the_models) {
    // drafting stops where the model's cache does (it slides past it): the draft's cache is no longer
    GPT2 model, short_draft, long_draft;
    gpt2_build(&model, config_make(32, 1000, 1, 2, 32));
    gpt2_build(&short_draft, config_make(32, 1000, 1, 2, 32));
    gpt2_build(&long_draft, config_make(4096, 1000, 1, 2, 32));
    const double a = speculative_memory_bytes(model, short_draft, 2, 1 << 20),
                 b = speculative_memory_bytes(model, long_draft, 2, 1 << 20);
    printf("    a draft of context 32: %.0f bytes; of context 4096: %.0f\n", a, b);
    CHECK(a == b);
}

TEST(a_drafts_padded_vocabulary_changes_nothing) {
    // the draft's logits rows are as wide as its own padded vocabulary (an llm.c file may pad it otherwise than
    // the model): the same weights padded three ways draft the same tokens, and sampling draws the same
    GPT2 model, drafts[3];
    checkpoint_load(&model, kTrained);
    const int paddings[3] = {model.cfg.padded_vocab_size, model.cfg.vocab_size, 2048};
    for (int d = 0; d < 3; d++) {
        GPT2Config cfg = model.cfg;
        cfg.padded_vocab_size = paddings[d];
        gpt2_build(&drafts[d], cfg);
        for (const TensorInfo& t : drafts[d].param_table)  // the model's values (wte: its first rows), zero past them
            for (const TensorInfo& from : model.param_table)
                if (from.name == t.name)
                    std::copy_n(model.params.begin() + from.offset, std::min(t.numel(), from.numel()),
                                drafts[d].params.begin() + t.offset);
        for (const TensorInfo& t : drafts[d].param_table)  // sharper logits: drafts the model sometimes rejects
            if (t.name == "lnfw")
                for (size_t i = 0; i < t.numel(); i++) drafts[d].params[t.offset + i] *= 3.0f;
    }
    GenerateOptions opts;
    opts.max_tokens = 30, opts.draft_min = 8, opts.draft_max = 8;
    opts.sampler.temperature = 1, opts.sampler.top_k = 0;
    int differ = 0, kept = 0, drafted = 0;
    for (uint64_t seed = 1; seed <= 20; seed++) {
        std::vector<int> out[3];
        for (int d = 0; d < 3; d++) {
            Rng rng(seed);
            GenerateStats stats;
            out[d] = generate_speculative(model, drafts[d], {5, 6}, opts, &rng, [](int) {}, &stats);
            if (d == 0) kept += stats.kept, drafted += stats.drafted;
        }
        differ += out[1] != out[0];
        differ += out[2] != out[0];
    }
    printf("    20 seeds, drafts padded to %d, %d and %d (%d of %d drafted kept): %d of 40 samples differ\n",
           paddings[0], paddings[1], paddings[2], kept, drafted, differ);
    CHECK(differ == 0);
    CHECK(kept > 0 && kept < drafted);
}

TEST(a_speculation_goes_on_with_a_sequence_across_calls) {
    // a chat's turns: one Speculation, calls that go on with the sequence or with a shorter one (the oldest turns
    // gone, /reset); the model's cache after each way a call ends, and drafts from the draft's cache cut back to
    // the sequence given. The draft is the model itself: every greedy draft is kept unless drafted from stale logits.
    GPT2 model, self;
    checkpoint_load(&model, kTrained);
    gpt2_build(&self, model.cfg);
    self.params = model.params;
    const int ctx = model.cfg.max_seq_len;
    ThreadTuner tuner;
    Speculation spec(model, self, ctx, ctx, &tuner);
    GenerateOptions opts;
    opts.sampler.temperature = 0, opts.draft_min = 1, opts.draft_max = 1, opts.max_tokens = 20;
    const std::vector<int> prompt = {5, 6, 7};
    Rng rng(1);
    std::vector<int> plain = prompt;
    for (int t : generate(model, prompt, opts, &rng, [](int) {}, nullptr)) plain.push_back(t);
    // calls on fresh caches holding plain's first `from` tokens, each taking `n` tokens (or cancelled after them)
    const auto call = [&](int from, int n, bool cancel, GenerateStats* s) {
        InferState st;
        infer_init(&st, model, ctx, ctx);
        std::vector<float> logits(model.cfg.padded_vocab_size);
        infer_forward(&st, model, plain.data(), from, logits.data(), false);
        std::vector<int> seq(plain.begin(), plain.begin() + from);
        int taken = 0;
        GenerateOptions o = opts;
        if (cancel) o.cancelled = [&] { return taken >= n; };  // (emit ends a run that is not cancelled)
        spec.decode(&st, &seq, logits.data(), o, &rng, [&](int) { return ++taken < (cancel ? 2 * n : n); }, s);
        const bool same = std::equal(seq.begin(), seq.end(), plain.begin()) &&
                          (s->stop == GenerateStop::kCancelled) == cancel;
        printf("    from %d tokens, %d more%s: plain's %s; the cache holds %d of %zu; %d of %d drafted kept\n", from,
               n, cancel ? " (cancelled)" : "", same ? "tokens" : "NOT", st.len, seq.size(), s->kept, s->drafted);
        return same && st.len == (int)seq.size() - (cancel ? 0 : 1);
    };
    GenerateStats a, b, c, d;
    CHECK(call(3, 12, false, &a));  // the sequence at first
    CHECK(call(7, 10, false, &b));  // a shorter one that the draft's cache holds whole
    CHECK(call(3, 6, true, &c));    // cancelled: the cache holds every token
    CHECK(call(9, 8, false, &d));
    CHECK(a.drafted > 0 && b.drafted > 0 && d.drafted > 0);
    CHECK(a.kept == a.drafted && b.kept == b.drafted && c.kept == c.drafted && d.kept == d.drafted);
}

TEST(drafting_together_follows_each_sequence) {
    // serve's streams: several sequences drafted in the same passes, each growing between calls by up to 12 tokens
    // (past 9, its cache catches up in two passes), two of them cut back. The draft is the model itself, so its
    // greedy drafts are the model's greedy tokens after the sequence, one-token passes after the prompt's.
    GPT2 model, self;
    checkpoint_load(&model, kTrained);
    gpt2_build(&self, model.cfg);
    self.params = model.params;
    const int V = model.cfg.vocab_size, Vp = model.cfg.padded_vocab_size;
    const std::vector<std::vector<int>> prompts = {{3, 14, 15}, {9, 2, 6, 5, 3}, {8}};
    std::vector<std::vector<int>> seqs = prompts;
    std::vector<std::unique_ptr<DraftSeq>> d;
    for (const auto& p : prompts) d.push_back(std::make_unique<DraftSeq>(model, self, 30, p));
    const auto greedy_after = [&](const std::vector<int>& prompt, const std::vector<int>& seq, int k) {
        InferState st;
        infer_init(&st, model, 30, (int)prompt.size());
        std::vector<float> logits(Vp);
        infer_forward(&st, model, prompt.data(), (int)prompt.size(), logits.data(), false);
        for (size_t t = prompt.size(); t < seq.size(); t++) infer_forward(&st, model, &seq[t], 1, logits.data(), false);
        std::vector<int> out;
        for (int i = 0; i < k; i++) {
            out.push_back(sampler_argmax(logits.data(), V));
            if (i + 1 < k) infer_forward(&st, model, &out.back(), 1, logits.data(), false);
        }
        return out;
    };
    InferScratch scratch;
    std::vector<float> logits;
    SamplerConfig greedy;
    greedy.temperature = 0;
    const SamplerConfig* samplers[3] = {&greedy, &greedy, &greedy};
    Rng rng(1);
    Rng* rngs[3] = {&rng, &rng, &rng};
    const int grow[4][3] = {{1, 12, 0}, {5, 1, 10}, {0, 3, 2}, {11, 0, 1}};  // tokens each sequence gains
    const int ks[4][3] = {{3, 1, 0}, {2, 4, 8}, {1, 0, 3}, {4, 4, 2}};       // and drafts
    int differ = 0, drafted = 0;
    for (int call = 0; call < 4; call++) {
        for (int i = 0; i < 3; i++)
            for (int g = 0; g < grow[call][i]; g++) seqs[i].push_back((31 * (int)seqs[i].size() + 7 * i + call) % V);
        if (call == 2) seqs[0].resize(prompts[0].size() + 2), seqs[0].push_back(77);  // cut back: a new token
        if (call == 3) seqs[1].resize(prompts[1].size() + 4);  // to a prefix the draft's cache holds whole
        DraftSeq* ds[3] = {d[0].get(), d[1].get(), d[2].get()};
        const std::vector<int>* sq[3] = {&seqs[0], &seqs[1], &seqs[2]};
        std::vector<int> out[3];
        draft_together(self, ds, sq, ks[call], samplers, rngs, 3, &scratch, &logits, out);
        for (int i = 0; i < 3; i++) {
            const std::vector<int> want = greedy_after(prompts[i], seqs[i], ks[call][i]);
            differ += out[i] != want, drafted += (int)out[i].size();
        }
    }
    printf("    %d of 12 drafts differ from the model's greedy tokens (%d tokens drafted)\n", differ, drafted);
    CHECK(differ == 0 && drafted == 32);
}
