// http_server.cpp: HttpServer (http_server.h) over the platform layer's sockets and os_poll. Each connection
// moves through phases: reading (a request coming in), handling (the caller has it), streaming (its answer
// going out as the caller writes it), closing (a last answer flushing), lingering (our side shut, the client's
// last bytes read and dropped for a moment so that closing does not reset the answer away), dead (its
// descriptor closed; removed, and reported when a request was pending, at the next poll). Time is
// std::chrono::steady_clock's, in milliseconds.
#include "serve/http_server.h"

#include <cassert>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstring>
#include <ctime>

#include "platform/platform.h"

namespace {

enum class Phase { reading, handling, streaming, closing, lingering, dead };

const int64_t kNever = INT64_MAX;
const int64_t kLingerMs = 2000;      // how long a closed connection's late bytes are read and dropped
const int64_t kAcceptPauseMs = 100;  // out of descriptors: how long until accept is tried again
const int kAcceptsPerRound = 256;    // so a flood of connections cannot starve those already open
const int kReadsPerRound = 4;        // reads of one connection per round, for the same reason
const size_t kReadChunk = 16 << 10;
const char* const kBusy = "the server has too many connections open; try again later";

int64_t now_ms() {
    using namespace std::chrono;
    return duration_cast<milliseconds>(steady_clock::now().time_since_epoch()).count();
}

// The Date header's value (RFC 9110 5.6.7), written without the C library's locale.
std::string http_date() {
    static const char* days[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
    static const char* months[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    const std::time_t t = std::time(nullptr);
    const std::tm* g = std::gmtime(&t);
    if (!g) return "Thu, 01 Jan 1970 00:00:00 GMT";
    char buf[40];
    snprintf(buf, sizeof(buf), "%s, %02d %s %04d %02d:%02d:%02d GMT", days[g->tm_wday % 7], g->tm_mday,
             months[g->tm_mon % 12], g->tm_year + 1900, g->tm_hour, g->tm_min, g->tm_sec);
    return buf;
}

bool framing_header(const std::string& name) {
    std::string n = name;
    for (char& ch : n)
        if (ch >= 'A' && ch <= 'Z') ch = (char)(ch - 'A' + 'a');
    return n == "content-length" || n == "transfer-encoding" || n == "connection" || n == "date";
}

}  // namespace

struct HttpConn {
    uint64_t id = 0;
    int fd = -1;
    Phase phase = Phase::reading;
    bool extra = false;  // answered 503 past max_connections, or lingering: outside the cap
    HttpParser parser;
    std::string in;   // bytes read and not yet parsed: a pipelined request behind a pending one
    std::string out;  // bytes queued; the first out_at of them are sent
    size_t out_at = 0;
    bool first = true;  // no request of it delivered yet: the request timer runs from the accept
    bool keep_alive = false, head_only = false, chunked = false, continue_sent = false, eof = false;
    int minor = 1;
    int64_t mark = 0;      // reading: when this wait began (accept, the last answer sent, a first byte)
    int64_t progress = 0;  // when output last moved, or began to wait
    int64_t linger_until = 0;
    const char* reason = "";  // dead: why
    bool report = false;      // dead with a request pending: the next poll reports it

    bool alive() const { return phase != Phase::dead; }
    bool pending() const { return phase == Phase::handling || phase == Phase::streaming; }
    size_t queued() const { return out.size() - out_at; }
};

HttpServer::HttpServer() = default;
HttpServer::~HttpServer() { close(); }

std::string HttpServer::open(const std::string& host, int port, const HttpServerLimits& limits) {
    if (listen_fd_ >= 0) return "the server is already listening";
    assert(limits.max_connections > 0 && limits.idle_timeout_ms > 0 && limits.request_timeout_ms > 0 &&
           limits.write_timeout_ms > 0 && limits.max_output > 0 && limits.request.max_head > 0);
    limits_ = limits;
    const std::string where = host + ":" + std::to_string(port);
    listen_fd_ = os_tcp_listen(host, port, 128);
    if (listen_fd_ < 0) {
        const std::string why = errno == ENOSYS   ? "this build has no sockets (Windows builds do not serve)"
                                : errno == EINVAL ? "expected host localhost or an IPv4 address and port 0..65535"
                                                  : strerror(errno);
        return "cannot listen on " + where + ": " + why;
    }
    port_ = os_tcp_port(listen_fd_);
    return "";
}

int HttpServer::port() const { return port_; }

size_t HttpServer::connections() const {
    size_t n = 0;
    for (const auto& kv : conns_) n += kv.second->alive();
    return n;
}

size_t HttpServer::output_queued() const {
    size_t n = 0;
    for (const auto& kv : conns_) n += kv.second->queued();
    return n;
}

// Connections that count against max_connections: open, not answered 503, not lingering.
size_t HttpServer::counted() const {
    size_t n = 0;
    for (const auto& kv : conns_) n += kv.second->alive() && !kv.second->extra;
    return n;
}

void HttpServer::stop_listening() {
    if (listen_fd_ >= 0) os_socket_close(listen_fd_);
    listen_fd_ = -1;
}

void HttpServer::close(std::vector<HttpClosed>* closed) {
    stop_listening();
    for (auto& kv : conns_) {
        HttpConn& c = *kv.second;
        if (c.alive()) drop(c, "stopped");
        if (c.report && closed) closed->push_back({c.id, c.reason});
    }
    conns_.clear();
}

// Ends c at once; reported at the next poll when a request was pending. With output still queued, or `reset`
// (the client is gone or too slow), the socket is reset, so the system does not go on sending what it holds.
void HttpServer::drop(HttpConn& c, const char* reason, bool reset) {
    if (!c.alive()) return;
    if (reset || c.queued() > 0) os_socket_abort(c.fd);
    else os_socket_close(c.fd);
    c.fd = -1;
    c.report = c.pending();
    c.reason = reason;
    c.phase = Phase::dead;
    c.in.clear(), c.out.clear(), c.out_at = 0;
    c.parser.reset();
}

HttpConn* HttpServer::pending(uint64_t conn) {
    auto it = conns_.find(conn);
    return it != conns_.end() && it->second->pending() ? it->second.get() : nullptr;
}

void HttpServer::poll(int timeout_ms, std::vector<HttpRequest>* requests, std::vector<HttpClosed>* closed) {
    requests->clear();
    closed->clear();
    int64_t now = now_ms();
    for (auto& kv : conns_) parse(*kv.second, now, requests);  // requests pipelined behind answered ones
    std::vector<OsPollFd> fds;
    std::vector<HttpConn*> of;  // the connection of each entry after the listener's
    const bool listening = listen_fd_ >= 0 && now >= accept_paused_until_;
    if (listening) fds.push_back({listen_fd_, kOsPollIn, 0});
    int64_t wake = timeout_ms < 0 ? kNever : now + timeout_ms;
    if (listen_fd_ >= 0 && !listening) wake = std::min(wake, accept_paused_until_);
    for (auto& kv : conns_) {
        HttpConn& c = *kv.second;
        wake = std::min(wake, deadline(c));
        if (!c.alive()) continue;
        const bool room = c.in.size() < limits_.request.max_head || (c.phase == Phase::reading && !c.queued());
        const short events =
            (short)(c.eof ? 0 : (room ? kOsPollIn : 0) | kOsPollHup) | (short)(c.queued() ? kOsPollOut : 0);
        fds.push_back({c.fd, events, 0});
        of.push_back(&c);
    }
    if (!requests->empty()) wake = now;
    const int64_t wait = wake == kNever ? -1 : std::max<int64_t>(0, std::min<int64_t>(wake - now, INT_MAX));
    if (os_poll(fds.data(), fds.size(), (int)wait) < 0) fds.clear();  // EBADF and the like: the timers still run
    now = now_ms();
    const size_t first = listening ? 1 : 0;
    for (size_t i = first; i < fds.size(); i++)
        if (fds[i].revents) serve_events(*of[i - first], fds[i].revents, now);
    if (listening && !fds.empty() && fds[0].revents) accept_all(now);
    for (auto& kv : conns_) {
        parse(*kv.second, now, requests);
        expire(*kv.second, now);
    }
    for (auto it = conns_.begin(); it != conns_.end();) {
        if (it->second->alive()) {
            ++it;
            continue;
        }
        if (it->second->report) closed->push_back({it->first, it->second->reason});
        it = conns_.erase(it);
    }
}

void HttpServer::accept_all(int64_t now) {
    for (int i = 0; i < kAcceptsPerRound; i++) {
        const int fd = os_tcp_accept(listen_fd_);
        if (fd < 0) {
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
                accept_paused_until_ = now + kAcceptPauseMs;
            if (errno != ECONNABORTED && errno != EPROTO && errno != EINTR) return;
            continue;
        }
        if (counted() >= (size_t)limits_.max_connections) {
            reject(fd, now);
            continue;
        }
        auto c = std::make_unique<HttpConn>();
        c->id = next_id_++;
        c->fd = fd;
        c->parser.limits = limits_.request;
        c->mark = c->progress = now;
        HttpConn& conn = *c;
        conns_[conn.id] = std::move(c);
        read_input(conn, now);  // a client that sent its request with the connection is answered a round sooner
    }
}

// A connection past max_connections: a 503, then closed once the client has it, while the connections outside
// the cap are within another max_connections; past that, the 503 is written (a new socket's buffer takes it)
// and the connection closed at once.
void HttpServer::reject(int fd, int64_t now) {
    size_t extra = 0;
    for (const auto& kv : conns_) extra += kv.second->alive() && kv.second->extra;
    if (extra >= (size_t)limits_.max_connections) {
        const std::string busy = error_answer(503, kBusy);
        os_send(fd, busy.data(), busy.size());
        os_tcp_shutdown_write(fd);
        os_socket_close(fd);
        return;
    }
    auto c = std::make_unique<HttpConn>();
    c->id = next_id_++;
    c->fd = fd;
    c->extra = true;
    c->mark = c->progress = now;
    HttpConn& conn = *c;
    conns_[conn.id] = std::move(c);
    answer_error(conn, 503, kBusy, now);
}

void HttpServer::serve_events(HttpConn& c, short revents, int64_t now) {
    if (!c.alive()) return;
    if (revents & (kOsPollIn | kOsPollErr | kOsPollHup)) read_input(c, now);
    if (c.alive() && (revents & kOsPollOut)) flush(c, now);
    // the client's end, seen though its bytes could not be read (a full pipeline behind a pending request)
    if (c.alive() && (revents & kOsPollHup) && !c.eof) {
        if (c.phase == Phase::closing) c.eof = true;
        else drop(c, "closed by the client");
    }
    // an error or hang-up that reading did not end (no room to read, or after the client's end)
    if (c.alive() && (revents & kOsPollErr)) drop(c, "reset by the client");
}

// Reads what the socket has, up to kReadsPerRound reads: into `in` while a request may be in it, dropped once
// the connection is closing. The client's end of its side (a read of 0) ends the connection but while closing.
void HttpServer::read_input(HttpConn& c, int64_t) {
    char buf[kReadChunk];
    const bool keep = c.phase == Phase::reading || c.pending();
    for (int i = 0; i < kReadsPerRound && c.alive() && !c.eof; i++) {
        size_t room = sizeof(buf);
        const size_t cap = limits_.request.max_head;  // what may wait unparsed behind an answer not yet out
        if (keep && (c.phase != Phase::reading || c.queued())) room = std::min(room, cap - std::min(cap, c.in.size()));
        if (room == 0) return;
        const long got = os_recv(c.fd, buf, room);
        if (got > 0) {
            if (keep) c.in.append(buf, (size_t)got);
            if ((size_t)got < room) return;
        } else if (got == 0) {
            if (c.phase == Phase::closing) c.eof = true;  // its answer still goes out: the client may be reading
            else drop(c, "closed by the client");
        } else if (errno != EAGAIN) {
            drop(c, "reset by the client");
        } else {
            return;
        }
    }
}

// Feeds what a reading connection has read to its parser: a request done is handed over (the connection is
// then handling it), a request refused is answered with the parser's status. Not while an answer before it is
// still queued: a client that sends requests and reads no answer holds one answer here, not all of them.
void HttpServer::parse(HttpConn& c, int64_t now, std::vector<HttpRequest>* requests) {
    if (c.phase != Phase::reading || c.in.empty() || c.queued() > 0) return;
    const bool started = c.parser.started();
    c.in.erase(0, c.parser.feed(c.in.data(), c.in.size()));
    if (!started && c.parser.started() && !c.first) c.mark = now;  // idle ends: the request timer starts
    HttpParser& p = c.parser;
    if (p.state == HttpParse::error) {
        answer_error(c, p.status, p.error, now);
    } else if (p.state == HttpParse::body && p.request.expect_continue && !c.continue_sent && p.request.body.empty()) {
        c.continue_sent = true;
        queue(c, "HTTP/1.1 100 Continue\r\n\r\n", now);
        flush(c, now);
    } else if (p.state == HttpParse::done) {
        HttpRequest r = std::move(p.request);
        r.conn = c.id;
        c.keep_alive = r.keep_alive;
        c.head_only = r.method == "HEAD";
        c.minor = r.minor;
        c.first = c.continue_sent = false;
        c.phase = Phase::handling;
        p.reset();
        requests->push_back(std::move(r));
    }
}

void HttpServer::queue(HttpConn& c, const std::string& bytes, int64_t now) {
    if (c.queued() == 0) {
        c.out.clear(), c.out_at = 0;
        c.progress = now;  // the write timer starts with the first byte waiting
    }
    c.out += bytes;
}

// Sends what is queued until the socket takes no more; once all is sent, a closing connection shuts its side
// and lingers, and a reading one with no request begun starts its idle time.
void HttpServer::flush(HttpConn& c, int64_t now) {
    while (c.alive() && c.queued() > 0) {
        const long sent = os_send(c.fd, c.out.data() + c.out_at, c.queued());
        if (sent < 0 && errno == EAGAIN) break;
        if (sent <= 0) return drop(c, "reset by the client");
        c.out_at += (size_t)sent;
        c.progress = now = now_ms();
    }
    if (!c.alive()) return;
    if (c.queued() > 0) {
        if (c.out_at > (64 << 10) && c.out_at * 2 > c.out.size()) c.out.erase(0, c.out_at), c.out_at = 0;
        return;
    }
    c.out.clear(), c.out_at = 0;
    if (c.phase == Phase::reading && !c.parser.started() && !c.first) c.mark = now;
    if (c.phase != Phase::closing) return;
    size_t extra = 0;
    for (const auto& kv : conns_) extra += kv.second->alive() && kv.second->extra;
    if (c.eof || !os_tcp_shutdown_write(c.fd) || (!c.extra && extra >= (size_t)limits_.max_connections))
        return drop(c, "closed");
    c.phase = Phase::lingering;
    c.extra = true;
    c.linger_until = now + kLingerMs;
}

// When c must be looked at again: its request, idle, write or linger time ends.
int64_t HttpServer::deadline(const HttpConn& c) const {
    if (!c.alive()) return 0;
    int64_t at = kNever;
    if (c.queued() > 0) at = c.progress + limits_.write_timeout_ms;
    if (c.phase == Phase::lingering) at = std::min(at, c.linger_until);
    if (c.phase == Phase::reading) {
        if (c.first || c.parser.started()) at = std::min(at, c.mark + limits_.request_timeout_ms);
        else if (c.queued() == 0) at = std::min(at, c.mark + limits_.idle_timeout_ms);
    }
    return at;
}

void HttpServer::expire(HttpConn& c, int64_t now) {
    if (!c.alive() || now < deadline(c)) return;
    if (c.queued() > 0 && now >= c.progress + limits_.write_timeout_ms) return drop(c, "too slow to read its answer");
    if (c.phase == Phase::reading && c.parser.started())
        return answer_error(c, 408, "the request did not arrive in time", now);
    drop(c, c.phase == Phase::lingering ? "closed" : "idle");
}

// The whole of one of the server's own answers, which close the connection.
std::string HttpServer::error_answer(int status, const char* message) const {
    const std::string body =
        limits_.error_body ? limits_.error_body(status, message) : http_error_json(status, message);
    return "HTTP/1.1 " + std::to_string(status) + " " + http_reason(status) +
           "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
           "\r\nConnection: close\r\nDate: " + http_date() + "\r\n\r\n" + body;
}

void HttpServer::answer_error(HttpConn& c, int status, const char* message, int64_t now) {
    c.keep_alive = false;
    c.phase = Phase::closing;
    c.in.clear();
    queue(c, error_answer(status, message), now);
    flush(c, now);
}

// Queues the head of an answer to c's pending request, or answers 500 and returns false when the caller's
// status or headers cannot be sent. length: the body's bytes, or SIZE_MAX for a stream.
bool HttpServer::answer_head(HttpConn& c, int status, const std::vector<HttpHeader>& headers, bool stream,
                             size_t length) {
    const int64_t now = now_ms();
    bool ok = status >= 200 && status <= 599 && !(stream && (status == 204 || status == 304)) &&
              !((status == 204 || status == 304) && length > 0);
    for (const HttpHeader& h : headers) ok = ok && http_header_ok(h) && !framing_header(h.name);
    if (!ok) {
        answer_error(c, 500, "the server built an answer it may not send", now);
        return false;
    }
    std::string head = "HTTP/1.1 " + std::to_string(status) + " " + http_reason(status) + "\r\n";
    for (const HttpHeader& h : headers) head += h.name + ": " + h.value + "\r\n";
    c.chunked = stream && c.minor == 1;
    if (stream && !c.chunked) c.keep_alive = false;  // HTTP/1.0: the body ends when the connection does
    if (c.chunked) head += "Transfer-Encoding: chunked\r\n";
    if (!stream && status != 204 && status != 304) head += "Content-Length: " + std::to_string(length) + "\r\n";
    if (!c.keep_alive) head += "Connection: close\r\n";
    if (c.keep_alive && c.minor == 0) head += "Connection: keep-alive\r\n";
    head += "Date: " + http_date() + "\r\n\r\n";
    queue(c, head, now);
    return true;
}

// c's request is answered: it reads the next (keep-alive) or closes once its output is out.
void HttpServer::answered(HttpConn& c, int64_t now) {
    c.phase = c.keep_alive ? Phase::reading : Phase::closing;
    c.mark = now;
    flush(c, now);
}

bool HttpServer::respond(uint64_t conn, int status, const std::vector<HttpHeader>& headers, const std::string& body) {
    HttpConn* c = pending(conn);
    if (!c || c->phase != Phase::handling || !answer_head(*c, status, headers, false, body.size())) return false;
    const int64_t now = now_ms();
    if (!c->head_only) queue(*c, body, now);
    answered(*c, now);
    return true;
}

bool HttpServer::stream_begin(uint64_t conn, int status, const std::vector<HttpHeader>& headers) {
    HttpConn* c = pending(conn);
    if (!c || c->phase != Phase::handling || !answer_head(*c, status, headers, true, SIZE_MAX)) return false;
    c->phase = Phase::streaming;
    flush(*c, now_ms());
    return c->alive();
}

bool HttpServer::stream_write(uint64_t conn, const std::string& bytes) {
    HttpConn* c = pending(conn);
    if (!c || c->phase != Phase::streaming) return false;
    if (bytes.empty() || c->head_only) return true;
    char size[24];
    snprintf(size, sizeof(size), "%zx\r\n", bytes.size());
    const size_t framing = c->chunked ? strlen(size) + 2 : 0;
    if (c->queued() + bytes.size() + framing > limits_.max_output) {
        drop(*c, "its output queue is full", true);
        return false;
    }
    const int64_t now = now_ms();
    if (c->chunked) queue(*c, size, now);
    queue(*c, bytes, now);
    if (c->chunked) queue(*c, "\r\n", now);
    flush(*c, now);
    return c->alive();
}

bool HttpServer::stream_end(uint64_t conn) {
    HttpConn* c = pending(conn);
    if (!c || c->phase != Phase::streaming) return false;
    const int64_t now = now_ms();
    if (c->chunked && !c->head_only) queue(*c, "0\r\n\r\n", now);
    answered(*c, now);
    return true;
}
