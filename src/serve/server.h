// server.h: `gpt2 serve`'s loop: HTTP (serve/http_server.h) in, the OpenAI API (serve/openai.h) over the
// scheduler's continuous batching (serve/scheduler.h), on one thread. Each round polls the sockets (not waiting
// while a stream decodes), answers what needs no model at once, queues completions, and runs one scheduler step,
// sending each stream's new text as server-sent events or, when its request did not stream, the whole answer once
// every choice has ended. A client that leaves frees its streams at once. A stop signal (SIGINT, SIGTERM, SIGHUP)
// ends the loop: the listener closes, every request under way is told (a stream ends with an error event and
// [DONE], a waiting request gets a 503), those answers have 2 s to go out, and the connections close.
//
// Routes: GET / (the chat page, serve/page.html), GET /health, GET /v1/models, POST /v1/completions, POST
// /v1/chat/completions; another method on them is 405, another path 404. With an API key, the /v1 routes need
// "Authorization: Bearer KEY" (the scheme in any case; 401 without, 400 with two such headers); / and /health do
// not. On loopback, a request whose Host names another machine is 403 (DNS rebinding), and anywhere one from a
// page of another site (its Origin not its Host). A full queue is 503; a malformed JSON body or field 400, naming
// it, in OpenAI's error object.
#pragma once
#include <string>

#include "core/model.h"
#include "text/tokenizer.h"

struct ServeOptions {
    std::string host = "127.0.0.1", api_key, model_name;
    int port = 8080, parallel = 4, max_queue = 64;
    size_t max_body = 1 << 20;                   // bytes of a request body
    int max_connections = 64;                    // open at once
    int idle_ms = 15000, request_ms = 20000, write_ms = 20000;  // HTTP's timeouts (serve/http_server.h)
    int draft_min = 0, draft_max = 0;  // with a draft: tokens a stream drafts a step (serve/scheduler.h)
};

// Serves model (with tok; decoded speculatively with draft, if given) until a stop signal, which it returns;
// fatal when it cannot listen. Prints where it listens, and on stderr how it stopped.
int serve_run(const GPT2& model, Tokenizer* tok, const ServeOptions& o, const GPT2* draft = nullptr);
