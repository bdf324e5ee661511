// test_serve.cpp: gpt2 serve's model side: the OpenAI requests it reads (each bad field named), the JSON it
// writes, and the scheduler's continuous batching against generate() alone, token for token.
#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "core/json.h"
#include "formats/checkpoint.h"
#include "inference/generate.h"
#include "precision/precision.h"
#include "serve/openai.h"
#include "serve/scheduler.h"
#include "test.h"
#include "text/tokenizer.h"

namespace {

const char* kTrained = "tests/fixtures/trained_tiny";

Json parse(const std::string& text) {
    Json j;
    std::string err;
    if (!json_parse(text.data(), text.size(), &j, &err)) printf("    bad test JSON: %s\n", err.c_str());
    return j;
}

// The message openai_read_request gives for body ("" when it reads).
std::string read(Tokenizer* tok, const std::string& body, bool chat = false, CompletionRequest* out = nullptr) {
    CompletionRequest r;
    const std::string err = openai_read_request(parse(body), chat, tok, 64, 50257, &r);
    if (out) *out = r;
    return err;
}

bool tokenizer_here(Tokenizer* tok) {
    if (!tokenizer_files_present(tokenizer_default_dir())) return false;
    tokenizer_load(tok, tokenizer_default_dir());
    return true;
}

}  // namespace

TEST(openai_requests_name_each_bad_field) {
    Tokenizer tok;
    if (!tokenizer_here(&tok)) SKIP("no tokenizer files in tokenizer_default_dir()");
    const std::pair<const char*, const char*> bad[] = {
        {"[]", "JSON object"},
        {"{}", "'prompt' is required"},
        {R"({"prompt": 5})", "'prompt' must be"},
        {R"({"prompt": []})", "'prompt' must be"},
        {R"({"prompt": [1, -1]})", "'prompt' token ids"},
        {R"({"prompt": [1, 50257]})", "'prompt' token ids"},
        {R"({"prompt": [[1], "a", 3]})", "'prompt' items"},
        {R"({"prompt": "hi", "max_tokens": -1})", "'max_tokens' must be an integer"},
        {R"({"prompt": "hi", "max_tokens": 1.5})", "'max_tokens' must be an integer"},
        {R"({"prompt": "hi", "max_tokens": 100})", "'max_tokens' is 100, but the prompt has"},
        {R"({"prompt": "hi", "max_tokens": 0})", "'max_tokens' must be at least 1"},
        {R"({"prompt": "hi", "temperature": 3})", "'temperature' must be a number in 0..2"},
        {R"({"prompt": "hi", "temperature": "1"})", "'temperature' must be a number"},
        {R"({"prompt": "hi", "top_p": 0})", "'top_p' must be above 0"},
        {R"({"prompt": "hi", "top_k": -2})", "'top_k' must be an integer"},
        {R"({"prompt": "hi", "n": 0})", "'n' must be an integer in 1..16"},
        {R"({"prompt": ["a","b","c","d","e"], "n": 4})", "'n' times the prompts"},
        {R"({"prompt": "hi", "stop": 3})", "'stop' must be a string"},
        {R"({"prompt": "hi", "stop": ["a","b","c","d","e"]})", "'stop' may hold at most 4"},
        {R"({"prompt": "hi", "stop": [""]})", "'stop' strings must be non-empty"},
        {R"({"prompt": "hi", "logprobs": 6})", "'logprobs' must be an integer in 0..5"},
        {R"({"prompt": "hi", "stream": "yes"})", "'stream' must be a boolean"},
        {R"({"prompt": "hi", "stream_options": {"include_usage": true}})", "'stream_options' needs 'stream'"},
        {R"({"prompt": "hi", "presence_penalty": 0.5})", "'presence_penalty' is not supported"},
        {R"({"prompt": "hi", "logit_bias": {"1": 5}})", "'logit_bias' is not supported"},
        {R"({"prompt": "hi", "model": 7})", "'model' must be a string"},
        {R"({"prompt": "hi", "seed": 1e30})", "'seed' must be an integer"},
    };
    for (const auto& [body, want] : bad) {
        const std::string err = read(&tok, body);
        if (err.find(want) == std::string::npos) printf("    %s: got '%s', wanted '%s'\n", body, err.c_str(), want);
        CHECK(err.find(want) != std::string::npos);
    }
    CompletionRequest r;
    CHECK(read(&tok, R"({"prompt": [[1,2],[3]], "n": 2, "stop": "x", "seed": -3, "echo": true, "max_tokens": 0,
                         "logprobs": 2, "top_k": 40, "temperature": 0})", false, &r) == "");
    CHECK(r.prompts.size() == 2 && r.prompts[1] == std::vector<int>{3} && r.n == 2 && r.stop.size() == 1);
    CHECK(r.has_seed && r.seed == (uint64_t)-3 && r.echo && r.max_tokens == 0 && r.logprobs == 2 && r.top_k == 40);
    CHECK(read(&tok, R"({"prompt": ""})", false, &r) == "" && r.prompts[0] == std::vector<int>{kTokenizerEot});
}

TEST(openai_chat_requests_use_the_training_template) {
    Tokenizer tok;
    if (!tokenizer_here(&tok)) SKIP("no tokenizer files in tokenizer_default_dir()");
    const std::pair<const char*, const char*> bad[] = {
        {R"({})", "'messages' is required"},
        {R"({"messages": []})", "'messages': expected \"messages\" to be a non-empty array"},
        {R"({"messages": [{"role": "user"}]})", "'messages': expected a field \"content\""},
        {R"({"messages": [{"role": "robot", "content": "x"}]})", "'messages': expected the role"},
        {R"({"messages": [{"role": "user", "content": "x"}, {"role": "assistant", "content": "y"}]})",
         "expected the last message to be the user's"},
        {R"({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]})", "text only"},
        {R"({"messages": [{"role": "user", "content": "x"}], "top_logprobs": 2})", "'top_logprobs' needs"},
    };
    for (const auto& [body, want] : bad) {
        const std::string err = read(&tok, body, true);
        if (err.find(want) == std::string::npos) printf("    %s: got '%s', wanted '%s'\n", body, err.c_str(), want);
        CHECK(err.find(want) != std::string::npos);
    }
    CompletionRequest r;
    CHECK(read(&tok, R"({"messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "Q"},
        {"role": "assistant", "content": "A"}, {"role": "user", "content": [{"type": "text", "text": "R"}]}]})",
               true, &r) == "");
    std::vector<int> want = {kTokenizerEot};
    for (const char* s : {"System: S\n", "User: Q\n", "Assistant:", " A\n", "User: R\n", "Assistant:"})
        for (int id : tokenizer_encode(&tok, s)) want.push_back(id);
    CHECK(r.prompts.size() == 1 && r.prompts[0] == want);
    CHECK(r.max_tokens == 64 - (int)want.size());  // a chat's default: the rest of the context
}

TEST(json_strings_are_valid_utf8_whatever_the_bytes) {
    CHECK(json_string("a\"b\\c\n\t\x01") == "\"a\\\"b\\\\c\\n\\t\\u0001\"");
    CHECK(json_string("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80") == "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"");
    // a character cut by a token boundary, a lone continuation byte, an overlong form, a surrogate
    CHECK(json_string("x\xe2\x82") == "\"x\\ufffd\\ufffd\"");
    CHECK(json_string("\x80y") == "\"\\ufffdy\"");
    CHECK(json_string("\xc0\xaf") == "\"\\ufffd\\ufffd\"");
    CHECK(json_string("\xed\xa0\x80") == "\"\\ufffd\\ufffd\\ufffd\"");
    Json j;
    std::string err;
    const std::string all = json_string(std::string("\x00\xff\xfe", 3));
    CHECK(json_parse(all.data(), all.size(), &j, &err) && j.str == std::string("\0\xef\xbf\xbd\xef\xbf\xbd", 7));
}

namespace {

// The tokenizer and the trained fixture; false without the tokenizer files.
bool tokenizer_and_trained(Tokenizer* tok, GPT2* model) {
    if (!tokenizer_here(tok)) return false;
    checkpoint_load(model, kTrained);
    return true;
}

// Runs the scheduler until every job is done; the choices' texts by job.
std::map<uint64_t, Job> run_all(Scheduler* s, int max_steps = 10000) {
    std::map<uint64_t, Job> out;
    std::vector<StreamEvent> events;
    for (int i = 0; i < max_steps && scheduler_busy(*s); i++) {
        scheduler_step(s, &events);
        std::vector<uint64_t> done;
        for (const auto& [id, job] : s->jobs)
            if (scheduler_done(*s, id)) done.push_back(id);
        for (uint64_t id : done) out[id] = scheduler_take(s, id);
    }
    return out;
}

std::string generated_text(const GPT2& model, const Tokenizer& tok, const std::vector<int>& prompt, int max_tokens) {
    GenerateOptions o;
    o.max_tokens = max_tokens, o.sampler.temperature = 0, o.stop_token = kTokenizerEot;
    Rng rng(1);
    std::vector<int> ids = generate(model, prompt, o, &rng, [](int) {}, nullptr);
    if (!ids.empty() && ids.back() == kTokenizerEot) ids.pop_back();
    return tokenizer_decode(tok, ids);
}

// Request p's tokens: more for later ones, within the context.
int max_tokens(const GPT2& model, const std::vector<int>& prompt, int p) {
    return std::min(6 + 5 * p, model.cfg.max_seq_len - (int)prompt.size());
}

}  // namespace

TEST(scheduler_streams_equal_generate_alone_token_for_token) {
    Tokenizer tok;
    if (!tokenizer_here(&tok)) SKIP("no tokenizer files in tokenizer_default_dir()");
    for (const Precision precision : {Precision::kFp32, Precision::kInt8, Precision::kBf16}) {
        if (precision == Precision::kBf16 && !bf16_supported()) continue;  // the others still count
        GPT2 model;
        checkpoint_load(&model, kTrained);
        if (precision != Precision::kFp32) gpt2_set_precision(&model, precision);
        Scheduler s;
        scheduler_init(&s, model, tok, 3, 64);  // 5 requests, 3 slots: two join as others end
        std::vector<std::vector<int>> prompts;
        for (int p = 0; p < 5; p++) {
            prompts.push_back({});
            for (int t = 0; t <= 3 * p; t++) prompts.back().push_back((t * 37 + 11 * p + 5) % model.cfg.vocab_size);
            CompletionRequest r;
            r.prompts = {prompts.back()}, r.temperature = 0, r.max_tokens = max_tokens(model, prompts.back(), p);
            CHECK(scheduler_submit(&s, p + 1, r));
        }
        std::map<uint64_t, Job> jobs = run_all(&s);
        CHECK(jobs.size() == 5 && !scheduler_busy(s));
        for (int p = 0; p < 5; p++) {
            const std::string want = generated_text(model, tok, prompts[p], max_tokens(model, prompts[p], p));
            const Choice& c = jobs[p + 1].choices[0];
            if (c.text != want) printf("    prompt %d: '%s' != generate's '%s'\n", p, c.text.c_str(), want.c_str());
            CHECK(c.text == want);
            CHECK(jobs[p + 1].usage.prompt_tokens == (int)prompts[p].size());
        }
    }
}

TEST(scheduler_prefills_one_prompt_a_step_while_the_others_decode) {
    Tokenizer tok;
    GPT2 model;
    if (!tokenizer_and_trained(&tok, &model)) SKIP("no tokenizer files in tokenizer_default_dir()");
    Scheduler s;
    scheduler_init(&s, model, tok, 4, 8);
    CompletionRequest r;
    r.prompts = {{464, 290, 318}}, r.temperature = 0, r.max_tokens = 8;
    for (uint64_t job = 1; job <= 3; job++) CHECK(scheduler_submit(&s, job, r));
    // step k: the k streams already admitted get a token each, and the k + 1-th prompt its prefill and first
    // token; the first stream's first token goes out at step 1, not after all three prefills
    for (int step = 1; step <= 3; step++) {
        std::vector<StreamEvent> events;
        scheduler_step(&s, &events);
        int firsts = 0, running = 0;
        for (const StreamEvent& e : events) firsts += e.first;
        for (const auto& slot : s.slots) running += slot != nullptr;
        if (firsts != 1 || running != step) printf("    step %d: %d first tokens, %d streams\n", step, firsts, running);
        CHECK(firsts == 1 && running == step);
    }
    const std::map<uint64_t, Job> jobs = run_all(&s);
    CHECK(jobs.size() == 3);
    for (const auto& [id, job] : jobs) CHECK(job.choices[0].text == jobs.begin()->second.choices[0].text);
}

TEST(scheduler_stops_at_a_stop_string_and_frees_a_cancelled_slot) {
    Tokenizer tok;
    GPT2 model;
    if (!tokenizer_and_trained(&tok, &model)) SKIP("no tokenizer files in tokenizer_default_dir()");
    const std::vector<int> prompt = {464, 290, 318};
    const std::string full = generated_text(model, tok, prompt, 12);
    CHECK(full.size() > 6);
    Scheduler s;
    scheduler_init(&s, model, tok, 1, 8);
    CompletionRequest r;
    r.prompts = {prompt}, r.temperature = 0, r.max_tokens = 12, r.stop = {full.substr(3, 3)};
    CHECK(scheduler_submit(&s, 1, r));
    std::map<uint64_t, Job> jobs = run_all(&s);
    const Choice& c = jobs[1].choices[0];
    CHECK(c.finish_reason == "stop" && c.text == full.substr(0, full.find(full.substr(3, 3))));
    // a cancelled job's slot takes the next one at the next step
    r.stop.clear(), r.max_tokens = 20;
    CHECK(scheduler_submit(&s, 2, r) && scheduler_submit(&s, 3, r));
    std::vector<StreamEvent> events;
    scheduler_step(&s, &events);
    scheduler_cancel(&s, 2);
    CHECK(s.jobs.count(2) == 0 && !s.slots[0]);
    jobs = run_all(&s);
    CHECK(jobs.size() == 1 && jobs.count(3) && jobs[3].choices[0].finish_reason.size() > 0);
}

namespace {

// Each request in its own job (1, 2, ...) through a scheduler of `parallel` slots, with draft (if given) drafting
// draft_min..8 tokens a step.
std::map<uint64_t, Job> run_requests(const GPT2& model, const Tokenizer& tok, const GPT2* draft, int draft_min,
                                     int parallel, const std::vector<CompletionRequest>& requests) {
    Scheduler s;
    scheduler_init(&s, model, tok, parallel, 64);
    if (draft) scheduler_set_draft(&s, *draft, draft_min, kDraftMax);
    for (size_t i = 0; i < requests.size(); i++) CHECK(scheduler_submit(&s, i + 1, requests[i]));
    std::map<uint64_t, Job> jobs = run_all(&s);
    CHECK(jobs.size() == requests.size() && !scheduler_busy(s));
    return jobs;
}

// The same answer: text, finish_reason, logprobs (bit for bit) and token counts.
bool same_answer(const Job& a, const Job& b) {
    if (a.choices.size() != b.choices.size() || a.usage.completion_tokens != b.usage.completion_tokens) return false;
    for (size_t i = 0; i < a.choices.size(); i++) {
        const Choice &x = a.choices[i], &y = b.choices[i];
        if (x.text != y.text || x.finish_reason != y.finish_reason || x.tokens != y.tokens ||
            x.top_logprobs != y.top_logprobs || x.text_offset != y.text_offset ||
            x.token_logprobs.size() != y.token_logprobs.size())
            return false;
        for (size_t t = 0; t < x.token_logprobs.size(); t++)
            if (!(x.token_logprobs[t] == y.token_logprobs[t] || (std::isnan(x.token_logprobs[t]) &&
                                                                  std::isnan(y.token_logprobs[t]))))
                return false;
    }
    return true;
}

// A draft of the model's weights: the model itself, or its int8 copy as `serve --draft int8` makes it; or one of
// the same shape that agrees with nothing, or such a one of a context of 12 (the longer prompts and answers
// outgrow it).
void make_draft(const GPT2& model, const std::string& kind, GPT2* draft) {
    GPT2Config cfg = model.cfg;
    if (kind == "short") cfg.max_seq_len = 12;
    gpt2_build(draft, cfg);
    if (kind == "random" || kind == "short") return gpt2_init_random(draft, 9);
    draft->params = model.params;
    if (kind == "int8") gpt2_set_precision(draft, Precision::kInt8, true), gpt2_round_inputs_q8(draft);
}

}  // namespace

TEST(scheduler_with_a_draft_gives_plain_decodings_answers) {
    Tokenizer tok;
    GPT2 model;
    if (!tokenizer_and_trained(&tok, &model)) SKIP("no tokenizer files in tokenizer_default_dir()");
    // 6 greedy requests in 3 slots, of different lengths; one asks for logprobs, one echoes its prompt, one stops
    // at a string
    std::vector<CompletionRequest> rs(6);
    for (int p = 0; p < 6; p++) {
        rs[p].prompts = {{}};
        for (int t = 0; t <= 2 * p; t++) rs[p].prompts[0].push_back((t * 37 + 11 * p + 5) % model.cfg.vocab_size);
        rs[p].temperature = 0, rs[p].max_tokens = max_tokens(model, rs[p].prompts[0], p);
    }
    rs[1].logprobs = 3, rs[2].echo = true, rs[2].logprobs = 2;
    const std::string text = generated_text(model, tok, rs[3].prompts[0], rs[3].max_tokens);
    rs[3].stop = {text.substr(text.size() / 2, 3)};
    const std::map<uint64_t, Job> plain = run_requests(model, tok, nullptr, 0, 3, rs);
    CHECK(plain.at(4).choices[0].finish_reason == "stop");
    for (const char* kind : {"self", "int8", "random", "short"})
        for (int draft_min : {0, 3}) {
            GPT2 draft;
            make_draft(model, kind, &draft);
            const std::map<uint64_t, Job> got = run_requests(model, tok, &draft, draft_min, 3, rs);
            int differ = 0, accepted = 0, rejected = 0;
            for (const auto& [id, job] : got) {
                differ += !same_answer(job, plain.at(id));
                CHECK(job.usage.drafts);
                accepted += job.usage.accepted, rejected += job.usage.rejected;
            }
            printf("    draft %-6s, at least %d a step: %d of 6 answers differ from plain decoding's; %d of %d drafted "
                   "kept\n", kind, draft_min, differ, accepted, accepted + rejected);
            CHECK(differ == 0 && accepted + rejected > 0);
            if (std::string(kind) == "self") CHECK(rejected == 0);
        }
}

TEST(scheduler_samples_through_a_draft_alike_whatever_decodes_beside) {
    Tokenizer tok;
    GPT2 model;
    if (!tokenizer_and_trained(&tok, &model)) SKIP("no tokenizer files in tokenizer_default_dir()");
    CompletionRequest sampled;
    // (hot enough that the draws matter: another seed gives another text)
    sampled.prompts = {{5, 6, 7}}, sampled.temperature = 2, sampled.top_k = 0, sampled.max_tokens = 25;
    sampled.has_seed = true, sampled.seed = 7;
    std::vector<CompletionRequest> others(3, sampled);
    for (int i = 0; i < 3; i++) others[i].prompts = {{9 + i, 2}}, others[i].seed = 100 + i;
    others.insert(others.begin() + 1, sampled);  // second of four, three beside it
    for (const char* kind : {"self", "int8"}) {
        GPT2 draft;
        make_draft(model, kind, &draft);
        // (the model drafting for itself costs a pass a draft: it drafts only when made to)
        const int draft_min = std::string(kind) == "self" ? 2 : 0;
        const Job alone = run_requests(model, tok, &draft, draft_min, 1, {sampled}).at(1);
        const Job beside = run_requests(model, tok, &draft, draft_min, 3, others).at(2);
        printf("    draft %s: '%s' alone, '%s' beside three others; %d of %d drafted kept\n", kind,
               alone.choices[0].text.c_str(), beside.choices[0].text.c_str(), alone.usage.accepted,
               alone.usage.accepted + alone.usage.rejected);
        CompletionRequest reseeded = sampled;
        reseeded.seed = 8;
        const Job other = run_requests(model, tok, &draft, draft_min, 1, {reseeded}).at(1);
        CHECK(same_answer(alone, beside) && alone.usage.accepted > 0);
        CHECK(other.choices[0].text != alone.choices[0].text);
        // the model drafting for itself: each drafted token's distribution is the model's, so every one is kept
        if (std::string(kind) == "self") CHECK(alone.usage.rejected == 0 && beside.usage.rejected == 0);
    }
}
