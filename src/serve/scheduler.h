// scheduler.h: continuous batching for `gpt2 serve`. Each choice of a request is a stream with its own KV
// cache; up to `parallel` streams decode together, one pass over the weights per step for all of them
// (inference/infer.h's infer_decode_runs), and a queued choice takes a free slot at the next step (one a step): its
// prompt is prefilled alone (as generate prefills it), its first token sampled from that pass. A stream's tokens are
// those `generate` would give for the same prompt and sampling: the same prefill, decoding's numbers per row
// equal to one sequence's, the sampler with its own Rng. It ends at <|endoftext|>, a stop string (the text
// before it is kept) or max_tokens. Knows no sockets: step() returns what each stream produced.
// With a draft (serve --draft), each stream drafts up to k tokens a step (its own k, inference/speculative.h's
// DraftCosts), the draft's passes taking every drafting stream's row together, and the step's one pass checks
// each stream's last token and drafts: greedy streams give plain decoding's tokens, sampled ones the same
// distribution by the accept rule (not the same draws). A sampled stream's k follows its own history alone, so
// that a seed repeats whatever decodes beside it; a greedy stream's also weighs the pass it shares.
#pragma once
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/model.h"
#include "core/rng.h"
#include "inference/infer.h"
#include "inference/speculative.h"
#include "serve/openai.h"
#include "text/tokenizer.h"

// What one step produced for one choice: its new text (and the logprobs of its new tokens, when asked), and
// finish_reason once it ended ("stop", "length"; "error" with `error` when the logits were not finite).
struct StreamEvent {
    uint64_t job = 0;
    int index = 0;
    std::string text, finish_reason, error;
    Choice logprobs;  // the tokens of this event, when the request asked for logprobs
    bool first = false;  // the choice's first event
};

// A request in the scheduler: its choices as they grow, and its token counts.
struct Job {
    CompletionRequest req;
    std::vector<Choice> choices;
    Usage usage;
    int queued = 0, running = 0, finished = 0;  // choices
    bool failed = false;
    std::string error;
};

struct Stream;

struct Scheduler {
    const GPT2* model = nullptr;
    const Tokenizer* tok = nullptr;
    int parallel = 1, max_queue = 0;   // streams decoding together; choices waiting at most
    std::map<uint64_t, Job> jobs;
    std::deque<std::pair<uint64_t, int>> queue;  // (job, choice) waiting for a slot
    std::vector<std::unique_ptr<Stream>> slots;  // null: free
    InferScratch decode;                         // one decoding pass's activations, for every slot's rows
    std::vector<float> logits;                   // that pass's, a row each
    uint64_t seed_counter = 0;                   // seeds for requests without one
    const GPT2* draft = nullptr;                 // speculative decoding's draft, or none
    int draft_min = 0, draft_max = 0;            // tokens a stream drafts a step
    InferScratch drafting;                       // the draft's passes' activations (a stream's rows each)
    std::vector<float> draft_logits;             // and their logits (a stream's last row each)
    Scheduler();
    ~Scheduler();
};

// Sets up `parallel` slots for model (bound by the caller to what memory allows); max_queue choices may wait.
void scheduler_init(Scheduler* s, const GPT2& model, const Tokenizer& tok, int parallel, int max_queue);
// Decodes speculatively with draft (the model's vocabulary, asserted), draft_min..draft_max tokens a stream a step
// (within 0..kDraftMax, asserted) where its request leaves room; answers count the drafted tokens kept and not.
void scheduler_set_draft(Scheduler* s, const GPT2& draft, int draft_min, int draft_max);
// Bytes a draft adds for each stream of up to `len` positions and a prompt of `rows`, and for the whole scheduler.
double scheduler_draft_stream_bytes(const GPT2Config& draft, int len, int rows);
double scheduler_draft_bytes(const GPT2Config& model, const GPT2Config& draft, int parallel);
// Adds a request's choices to the queue; false (nothing added) when they do not fit in it (a 503).
bool scheduler_submit(Scheduler* s, uint64_t job, const CompletionRequest& r);
// Drops a job (its client left): its streams' slots are free at once and nothing more is said of it.
void scheduler_cancel(Scheduler* s, uint64_t job);
bool scheduler_busy(const Scheduler& s);  // a choice queued or decoding
// One step: one token for every stream, then the first queued choice into a free slot (prefilled, its first token
// sampled: one prompt a step). Appends what each produced to *events; a job whose choices all ended is done
// (scheduler_take gives its result).
void scheduler_step(Scheduler* s, std::vector<StreamEvent>* events);
bool scheduler_done(const Scheduler& s, uint64_t job);
// Removes a done job, returning it (choices, usage, failure).
Job scheduler_take(Scheduler* s, uint64_t job);
// Bytes one stream of `len` positions and a prompt of `rows` takes (its cache and prefill scratch).
double scheduler_stream_bytes(const GPT2Config& cfg, int len, int rows);
