// server.cpp: see server.h.
#include "serve/server.h"

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <ctime>
#include <map>
#include <vector>

#include "core/error.h"
#include "core/json.h"
#include "platform/signals.h"
#include "serve/http.h"
#include "serve/http_server.h"
#include "serve/openai.h"
#include "serve/page.h"
#include "serve/scheduler.h"

namespace {

// A request the scheduler works on: where its answer goes and how.
struct Pending {
    uint64_t conn = 0;
    std::string id;
    int64_t created = 0;
    bool stream = false, chat = false, include_usage = false;
    std::vector<bool> started;  // a chat stream's choices that sent their role
};

struct Server {
    const ServeOptions* opts = nullptr;
    const GPT2* model = nullptr;
    Tokenizer* tok = nullptr;
    HttpServer http;
    Scheduler sched;
    std::map<uint64_t, Pending> pending;  // by job
    std::map<uint64_t, uint64_t> job_of;  // by connection
    uint64_t next_job = 1;
    int64_t started = 0;
};

const std::vector<HttpHeader> kJson = {{"content-type", "application/json"}};
// The chat page: the browser lets it reach this server only (connect-src 'self'), load nothing from elsewhere, and
// be framed by no other site's page (which could make it send the message its URL carries: page.html).
const std::vector<HttpHeader> kPage = {
    {"content-type", "text/html; charset=utf-8"},
    {"content-security-policy",
     "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
     "connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; "
     "frame-ancestors 'none'"},
    {"x-frame-options", "DENY"}};

void error(Server* s, uint64_t conn, int status, const std::string& message, const std::string& param = "") {
    std::vector<HttpHeader> h = kJson;
    if (status == 401) h.push_back({"www-authenticate", "Bearer"});
    s->http.respond(conn, status, h, openai_error(status, message, param));
}

// The bearer token matches the key (in time that does not depend on where they differ): "Bearer", in any case,
// then one or more spaces, then the key (RFC 9110 11.1, 11.6.2). A second Authorization header is refused before
// (route), since which one counts would be a guess another reader of the request could make otherwise.
bool authorized(const Server& s, const HttpRequest& r) {
    if (s.opts->api_key.empty()) return true;
    const std::string* auth = r.header("authorization");
    if (!auth || auth->size() < 7 || (*auth)[6] != ' ') return false;
    for (size_t i = 0; i < 6; i++)
        if (((*auth)[i] | 0x20) != "bearer"[i]) return false;
    size_t at = 6;
    while (at < auth->size() && (*auth)[at] == ' ') at++;
    const std::string& want = s.opts->api_key;
    if (auth->size() - at != want.size()) return false;
    unsigned diff = 0;
    for (size_t i = 0; i < want.size(); i++) diff |= (unsigned char)(*auth)[at + i] ^ (unsigned char)want[i];
    return diff == 0;
}

// host[:port] names this machine's loopback: localhost, 127.x.x.x or [::1], in any case, with digits for a port.
bool loopback_authority(const std::string& a) {
    const size_t close = !a.empty() && a[0] == '[' ? a.find(']') : std::string::npos;
    const size_t colon = a.find(':', close == std::string::npos ? 0 : close);
    if (!a.empty() && a[0] == '[' && close == std::string::npos) return false;
    std::string host = a.substr(0, close != std::string::npos ? close + 1 : colon);
    const std::string port = a.substr(host.size());
    if (!port.empty() && (port[0] != ':' || port.find_first_not_of("0123456789", 1) != std::string::npos)) return false;
    for (char& c : host) c = (char)(c >= 'A' && c <= 'Z' ? c + 32 : c);
    return host == "[::1]" || http_host_is_loopback(host);
}

// On loopback, the host a request names (its Host, and an absolute-form target's) when it is not this machine's,
// else "". A web page of another site whose name it makes resolve to 127.0.0.1 (DNS rebinding) reaches a loopback
// server from the visitor's browser, but with its own name as Host: refusing it keeps loopback local. HTTP/1.0 may
// send no Host.
std::string foreign_host(const Server& s, const HttpRequest& r) {
    if (!http_host_is_loopback(s.opts->host)) return "";
    if (const std::string* host = r.header("host"); host && !loopback_authority(*host)) return *host;
    const size_t scheme = r.target.find("://");
    if (r.target[0] == '/' || r.target == "*" || scheme == std::string::npos) return "";
    const std::string authority = r.target.substr(scheme + 3, r.target.find_first_of("/?", scheme + 3) - scheme - 3);
    return loopback_authority(authority) ? "" : authority;
}

// The field a 400's message names ("'max_tokens' must ..."): OpenAI's error object's param.
std::string param_of(const std::string& message) {
    if (message.empty() || message[0] != '\'') return "";
    const size_t end = message.find('\'', 1);
    return end == std::string::npos ? "" : message.substr(1, end - 1);
}

void completion(Server* s, const HttpRequest& r, bool chat) {
    Json body;
    std::string err;
    if (!json_parse(r.body.data(), r.body.size(), &body, &err)) return error(s, r.conn, 400, "malformed JSON body: " + err);
    CompletionRequest req;
    err = openai_read_request(body, chat, s->tok, s->model->cfg.max_seq_len, s->model->cfg.vocab_size, &req);
    if (!err.empty()) return error(s, r.conn, 400, err, param_of(err));
    if (const int choices = (int)req.prompts.size() * req.n; choices > s->sched.max_queue) {
        const std::string field = req.n > 1 ? "'n'" : "'prompt'";  // a 503 would say "try again" to no end
        return error(s, r.conn, 400,
                     field + " asks for " + std::to_string(choices) + " choices, more than the " +
                         std::to_string(s->sched.max_queue) + " this server queues (--max-queue)",
                     field.substr(1, field.size() - 2));
    }
    const uint64_t job = s->next_job++;
    if (!scheduler_submit(&s->sched, job, req))
        return error(s, r.conn, 503, "the server is busy: " + std::to_string(s->sched.queue.size()) +
                                         " choices wait for a slot already; try again later");
    Pending p;
    char id[48];
    snprintf(id, sizeof(id), "%s-%016" PRIx64, chat ? "chatcmpl" : "cmpl", (uint64_t)s->started * 1000003 + job);
    p.conn = r.conn, p.id = id, p.created = (int64_t)time(nullptr), p.stream = req.stream, p.chat = chat;
    p.include_usage = req.include_usage;
    p.started.assign(req.prompts.size() * req.n, false);
    s->pending[job] = p;
    s->job_of[r.conn] = job;
    if (req.stream)
        s->http.stream_begin(r.conn, 200, {{"content-type", "text/event-stream"}, {"cache-control", "no-cache"}});
}

// A browser's request from a page of another site: its Origin (a scheme, "://" and the host a page came from; or
// "null") not the host this request names, returned; else "". Refused, so that such a page cannot make the server
// work through a visitor's browser with a request a browser sends without asking (a POST of text/plain). This
// server's own page sends its own origin; curl and OpenAI's clients send none.
std::string foreign_origin(const HttpRequest& r) {
    const std::string* origin = r.header("origin");
    if (!origin) return "";
    const std::string* host = r.header("host");
    const size_t scheme = origin->find("://");
    if (!host || scheme == std::string::npos || origin->size() - scheme - 3 != host->size()) return *origin;
    const auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? (char)(c + 32) : c; };
    for (size_t i = 0; i < host->size(); i++)
        if (lower((*origin)[scheme + 3 + i]) != lower((*host)[i])) return *origin;
    return "";
}

void route(Server* s, const HttpRequest& r) {
    struct Route {
        const char* path;
        const char* method;
    };
    static const Route routes[] = {{"/", "GET"}, {"/health", "GET"}, {"/v1/models", "GET"},
                                   {"/v1/completions", "POST"}, {"/v1/chat/completions", "POST"}};
    if (const std::string host = foreign_host(*s, r); !host.empty())
        return error(s, r.conn, 403,
                     "the request names the host '" + host.substr(0, 64) +
                         "', but this server listens on loopback and answers localhost and 127.x.x.x only (a page "
                         "of another site could reach it through the browser by DNS rebinding)");
    if (const std::string origin = foreign_origin(r); !origin.empty())
        return error(s, r.conn, 403,
                     "the request comes from a page of another site (Origin: " + origin.substr(0, 64) +
                         "): this server answers its own page, and clients that are not browsers");
    const Route* found = nullptr;
    for (const Route& x : routes)
        if (r.path == x.path) found = &x;
    if (!found) return error(s, r.conn, 404, "no route " + r.path + ": expected /, /health, /v1/models, "
                                                                    "/v1/completions or /v1/chat/completions");
    const bool head = r.method == "HEAD" && std::string(found->method) == "GET";
    if (r.method != found->method && !head) {
        std::vector<HttpHeader> h = kJson;
        h.push_back({"allow", head || std::string(found->method) == "GET" ? "GET, HEAD" : found->method});
        s->http.respond(r.conn, 405, h,
                        openai_error(405, r.path + " takes " + found->method + ", got " + r.method.substr(0, 32)));
        return;
    }
    if (r.path == "/") return (void)s->http.respond(r.conn, 200, kPage, kServePage);
    if (r.path == "/health") return (void)s->http.respond(r.conn, 200, kJson, "{\"status\":\"ok\"}");
    int keys = 0;
    for (const HttpHeader& h : r.headers) keys += h.name == "authorization";
    if (keys > 1)
        return error(s, r.conn, 400,
                     "the request has " + std::to_string(keys) + " Authorization headers: expected one");
    if (!authorized(*s, r)) return error(s, r.conn, 401, "missing or wrong API key: expected Authorization: Bearer KEY");
    if (r.path == "/v1/models") return (void)s->http.respond(r.conn, 200, kJson, openai_models(s->opts->model_name, s->started));
    completion(s, r, r.path == "/v1/chat/completions");
}

void forget(Server* s, uint64_t job) {
    const auto it = s->pending.find(job);
    if (it == s->pending.end()) return;
    s->job_of.erase(it->second.conn);
    s->pending.erase(it);
}

// The client of job left (or could not keep up): its streams stop at once.
void drop(Server* s, uint64_t job) {
    scheduler_cancel(&s->sched, job);
    forget(s, job);
}

void send_event(Server* s, const StreamEvent& e) {
    auto it = s->pending.find(e.job);
    if (it == s->pending.end() || !it->second.stream) return;
    Pending& p = it->second;
    const Job& job = s->sched.jobs[e.job];
    std::string data;
    if (!e.error.empty()) data += "data: " + openai_error(500, e.error) + "\n\n";
    const bool first = p.chat && !p.started[e.index];
    p.started[e.index] = true;
    const Choice* lp = job.req.logprobs >= 0 ? &e.logprobs : nullptr;
    if (e.error.empty() && (!e.text.empty() || !e.finish_reason.empty() || first || lp))
        data += "data: " + openai_chunk(job.req, p.id, s->opts->model_name, p.created, e.index, e.text,
                                        e.finish_reason, first, lp) + "\n\n";
    if (!s->http.stream_write(p.conn, data)) drop(s, e.job);
}

// A job whose choices all ended: the last of its stream, or its whole answer.
void finish_job(Server* s, uint64_t job_id) {
    const Pending p = s->pending[job_id];
    Job job = scheduler_take(&s->sched, job_id);
    forget(s, job_id);
    if (p.stream) {
        std::string tail;
        if (p.include_usage)
            tail += "data: " + openai_usage_chunk(job.req, p.id, s->opts->model_name, p.created, job.usage) + "\n\n";
        tail += "data: [DONE]\n\n";
        if (s->http.stream_write(p.conn, tail)) s->http.stream_end(p.conn);
    } else if (job.failed) {
        error(s, p.conn, 500, job.error);
    } else {
        s->http.respond(p.conn, 200, kJson,
                        openai_response(job.req, p.id, s->opts->model_name, p.created, job.choices, job.usage));
    }
}

void step(Server* s) {
    std::vector<StreamEvent> events;
    scheduler_step(&s->sched, &events);
    for (const StreamEvent& e : events) send_event(s, e);
    std::vector<uint64_t> done;
    for (const auto& [job, p] : s->pending)
        if (scheduler_done(s->sched, job)) done.push_back(job);
    for (uint64_t job : done) finish_job(s, job);
}

// A stop signal: no new connection; every request under way answered (a stream ends with an error event and
// [DONE], a request waiting for its whole answer gets a 503, and so does one that arrives now on an open
// connection); then at most kDrainMs for those answers to reach the clients that read them, and every connection
// closed. A second signal ends the process at once (platform/signals.h). Returns the requests answered so.
size_t stop_serving(Server* s, int sig) {
    const int64_t kDrainMs = 2000;
    s->http.stop_listening();
    const std::string why = std::string("the server is stopping (") + stop_signal_name(sig) + ")";
    size_t told = 0;
    while (!s->pending.empty()) {
        const uint64_t job = s->pending.begin()->first;
        const Pending p = s->pending.begin()->second;
        drop(s, job);
        if (!p.stream) error(s, p.conn, 503, why);
        else if (s->http.stream_write(p.conn, "data: " + openai_error(503, why) + "\n\ndata: [DONE]\n\n"))
            s->http.stream_end(p.conn);
        told++;
    }
    std::vector<HttpRequest> requests;
    std::vector<HttpClosed> closed;
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(kDrainMs);
    while (s->http.output_queued() > 0 && std::chrono::steady_clock::now() < until) {
        s->http.poll(50, &requests, &closed);
        for (const HttpRequest& r : requests) error(s, r.conn, 503, why), told++;
    }
    s->http.close();
    return told;
}

}  // namespace

int serve_run(const GPT2& model, Tokenizer* tok, const ServeOptions& o, const GPT2* draft) {
    Server s;
    s.opts = &o, s.model = &model, s.tok = tok, s.started = (int64_t)time(nullptr);
    HttpServerLimits limits;
    limits.request.max_body = o.max_body;
    limits.max_connections = o.max_connections;
    limits.idle_timeout_ms = o.idle_ms, limits.request_timeout_ms = o.request_ms, limits.write_timeout_ms = o.write_ms;
    limits.error_body = [](int status, const std::string& message) { return openai_error(status, message); };
    if (const std::string err = s.http.open(o.host, o.port, limits); !err.empty()) fatal("%s (serve)", err.c_str());
    scheduler_init(&s.sched, model, *tok, o.parallel, o.max_queue);
    if (draft) scheduler_set_draft(&s.sched, *draft, o.draft_min, o.draft_max);
    printf("serving %s on http://%s:%d (%d streams at once): the chat page at /, the OpenAI API at /v1\n",
           o.model_name.c_str(), o.host.c_str(), s.http.port(), o.parallel);
    fflush(stdout);
    stop_catch(true);
    std::vector<HttpRequest> requests;
    std::vector<HttpClosed> closed;
    while (!stop_requested()) {
        s.http.poll(scheduler_busy(s.sched) ? 0 : 200, &requests, &closed);
        for (const HttpClosed& c : closed)
            if (s.job_of.count(c.conn)) drop(&s, s.job_of[c.conn]);
        for (const HttpRequest& r : requests) route(&s, r);
        if (scheduler_busy(s.sched)) step(&s);
    }
    const int sig = stop_requested();
    const size_t told = stop_serving(&s, sig);
    fprintf(stderr, "stopped by %s: %zu request%s under way told so, every connection closed\n", stop_signal_name(sig),
            told, told == 1 ? "" : "s");
    return sig;
}
