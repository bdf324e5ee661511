// openai.h: the OpenAI API's request and response bodies, as `gpt2 serve` speaks them: /v1/completions and
// /v1/chat/completions requests read and checked field by field (a bad one is named in a 400), and the JSON of
// completions, chat completions, their streamed chunks, /v1/models and the error object. Knows no sockets and
// no model: the scheduler (serve/scheduler.h) runs what a request asks.
//
// Completions take `prompt` as a string, an array of strings, an array of token ids or an array of such arrays;
// `max_tokens` (default 16, as OpenAI's), `temperature` (default 1; 0 is greedy), `top_p`, `top_k` (llama.cpp's
// and vLLM's extension; default 0: off), `seed`, `stop` (a string or up to 4), `n` (choices per prompt, up to 16),
// `echo`, `logprobs` (0..5: the sampled token's log-probability and that many most likely; a token that is not
// UTF-8 on its own is written bytes:\xe2\x80 there, as OpenAI writes it), `stream` (server-sent
// events ending in `data: [DONE]`, `stream_options.include_usage`), and `user`, `model`, `presence_penalty` and
// `frequency_penalty` (0 only), which are read and ignored as llama-server does. Chat completions take `messages`
// (system first, then user and assistant turns, ending with the user's) in the template `tokenize --instructions`
// trains on (text/instructions.h), `max_tokens` or `max_completion_tokens` (default: the rest of the context).
// A server decoding with a draft adds `completion_tokens_details` to usage: `accepted_prediction_tokens` and
// `rejected_prediction_tokens` count the drafted tokens kept and not (the fields of OpenAI's predicted outputs);
// drafts left unchecked when a choice ended before them count as not kept. A greedy answer's tokens are plain
// decoding's whatever is drafted; its counts may vary with what else the server decodes.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/json.h"
#include "text/tokenizer.h"

// One request, checked: every prompt within the context and the vocabulary, max_tokens within the context left.
struct CompletionRequest {
    bool chat = false;
    std::vector<std::vector<int>> prompts;  // token ids; a chat has one
    int max_tokens = 16;
    float temperature = 1, top_p = 1;
    int top_k = 0;
    bool has_seed = false;
    uint64_t seed = 0;
    std::vector<std::string> stop;
    int n = 1;
    bool echo = false;
    int logprobs = -1;  // -1: none; else the sampled token's log-probability and this many alternatives
    bool stream = false, include_usage = false;
};

// Reads body (an /v1/completions request, or /v1/chat/completions' with chat) for a model of context ctx and
// vocabulary V; "" or the 400's message, naming the field ("'max_tokens' must be an integer in 1..1024, got
// -1"). tok encodes text prompts and chat messages.
std::string openai_read_request(const Json& body, bool chat, Tokenizer* tok, int ctx, int V, CompletionRequest* r);

// One finished choice of a response.
struct Choice {
    std::string text;           // the generated text (with the prompt's before it for echo)
    std::string finish_reason;  // "stop" (<|endoftext|> or a stop string), "length"
    // logprobs: each token's text, its log-probability and its alternatives (token text, log-probability)
    std::vector<std::string> tokens;
    std::vector<double> token_logprobs;  // NaN for the first prompt token (no context to predict it)
    std::vector<std::vector<std::pair<std::string, double>>> top_logprobs;
    std::vector<int> text_offset;
};

struct Usage {
    int prompt_tokens = 0, completion_tokens = 0;
    bool drafts = false;  // decoded with a draft: completion_tokens_details counts its tokens kept and not
    int accepted = 0, rejected = 0;
};

// The whole response of a request that did not stream: "text_completion" or "chat.completion".
std::string openai_response(const CompletionRequest& r, const std::string& id, const std::string& model,
                            int64_t created, const std::vector<Choice>& choices, const Usage& usage);
// One streamed chunk's data (without "data: "): text for choice `index`, with finish_reason when it ends ("":
// not yet); a chat's first chunk for a choice carries the role (first). logprobs of the chunk's tokens when
// asked (completions).
std::string openai_chunk(const CompletionRequest& r, const std::string& id, const std::string& model, int64_t created,
                         int index, const std::string& text, const std::string& finish_reason, bool first,
                         const Choice* logprobs);
// The last chunk of a stream with stream_options.include_usage: no choices, the usage.
std::string openai_usage_chunk(const CompletionRequest& r, const std::string& id, const std::string& model,
                               int64_t created, const Usage& usage);
std::string openai_models(const std::string& model, int64_t created);
// OpenAI's error object: {"error": {"message", "type", "param", "code"}}; type from the status
// (invalid_request_error, authentication_error, permission_error, not_found_error, server_error, ...).
std::string openai_error(int status, const std::string& message, const std::string& param = "");
// s as a JSON string: quoted and escaped, bytes that are not UTF-8 replaced by U+FFFD (a token may end inside a
// character; the scheduler holds such bytes back until the next token completes them).
std::string json_string(const std::string& s);
