// http_server.h: the connections of gpt2 serve, on one thread: a non-blocking listener, each connection's
// bytes read into serve/http.h's parser, completed requests handed to the caller one at a time per connection
// (a pipelined request waits until the one before it is answered, so answers go out in order), and answers
// queued and written as the client takes them. Every resource a client can make it hold is bounded: the
// connections, the bytes of a request, the output queued, and the time each of those may take. No thread,
// no print, no exit: poll() does one round and returns; the caller (the OpenAI endpoints and the scheduler)
// decides what each request gets.
//
// A connection id names one connection for its whole life and is never reused. A request is *pending* from
// the poll() that returns it until respond(), or stream_begin() and then stream_end(), answers it; only a
// pending request can be answered. A connection dropped while it has a pending request (the client closed or
// reset it, even half-closed it, or it was too slow) is reported in `closed` by the next poll(), exactly once:
// free its stream's slot then. (Off Linux, a client that leaves after pipelining more than max_head bytes
// behind a pending request is seen to leave only when that request is answered: Linux alone tells a peer's end
// before its bytes are read.)
//
// The server's own answers, each closing the connection: the parser's errors (serve/http.h: 400, 411, 413,
// 414, 417, 431, 501, 505), 408 when a request's bytes do not all arrive within request_timeout_ms, 503 to a
// connection past max_connections, 500 for an answer whose status or headers the caller got wrong; their
// bodies are error_body's (OpenAI's error object by default). A connection idle past idle_timeout_ms, or
// silent past request_timeout_ms from its accept, is closed without a word.
//
// The caller's loop, one thread:
//     server.poll(busy ? 0 : 100, &requests, &closed);  // short: a stop signal may land on another thread
//     for each c in closed:    cancel c.conn's work; its slot is free now
//     for each r in requests:  respond(r.conn, ...), or stream_begin(r.conn, ...) and start its work
//     one step of the work:    stream_write(conn, "data: ...\n\n") per stream; stream_end(conn) when one ends
//     on stop_requested():     close(&closed) (or stop_listening(), then poll until connections() is 0)
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "serve/http.h"

struct HttpServerLimits {
    HttpLimits request;              // one request: head 16 KiB, target 8 KiB, 100 headers, body 1 MiB
    int max_connections = 64;        // open connections; the next is answered 503 and closed
    int idle_timeout_ms = 15000;     // a kept-alive connection with no request begun is closed
    int request_timeout_ms = 20000;  // a request's bytes, from its first (a new connection's: from the accept),
                                     // all arrive within this, else 408 and close (slow drips: slowloris)
    int write_timeout_ms = 20000;    // output waits and the client takes none of it this long: dropped
    size_t max_output = 1 << 20;     // bytes a stream may have queued: a stream_write past it drops the client
    // The JSON body of the server's own errors; nullptr: http_error_json.
    std::string (*error_body)(int status, const std::string& message) = nullptr;
};

// A connection that ended with a request pending, and why: "closed by the client", "reset by the client",
// "too slow to read its answer", "its output queue is full", "stopped" (close()).
struct HttpClosed {
    uint64_t conn;
    const char* reason;
};

struct HttpConn;

struct HttpServer {
    HttpServer();
    ~HttpServer();  // close()
    HttpServer(const HttpServer&) = delete;
    HttpServer& operator=(const HttpServer&) = delete;

    // Listens on host ("localhost" or an IPv4 dotted quad) and port (0: any free one; port() tells which).
    // "" on success, else one line: "cannot listen on 127.0.0.1:80: Permission denied".
    std::string open(const std::string& host, int port, const HttpServerLimits& limits);
    int port() const;  // the port listened on, 0 before open()
    // One round: waits up to timeout_ms (less when a timer of a connection ends sooner; 0 when a request is
    // ready) for the sockets, accepts, reads, parses, writes what is queued and applies the timeouts. Replaces
    // *requests with the requests completed (each with its connection id, pending now) and *closed with the
    // connections dropped while a request of theirs was pending.
    void poll(int timeout_ms, std::vector<HttpRequest>* requests, std::vector<HttpClosed>* closed);

    // A whole answer to a pending request: the status (200..599) and the caller's headers, then the server's
    // Content-Length, Connection and Date, then the body (not for HEAD, 204 or 304). The caller's headers must
    // pass http_header_ok and not be one of those three or Transfer-Encoding. False, with nothing sent, when the
    // request is not pending (answered, or its connection gone: see `closed`); false, with a 500 sent instead,
    // when the status or a header is wrong.
    bool respond(uint64_t conn, int status, const std::vector<HttpHeader>& headers, const std::string& body);
    // Begins a streamed answer (server-sent events): the status and headers as respond()'s; the body follows as
    // stream_write() gives it, in chunks (HTTP/1.0: until the connection closes). False as respond()'s.
    bool stream_begin(uint64_t conn, int status, const std::vector<HttpHeader>& headers);
    // Queues bytes of a begun stream and writes what the socket takes now; never blocks. False when the client
    // is gone, or would have more than max_output bytes queued (too slow): the connection is dropped (reset, so
    // the system sends no more of it either) and the next poll() reports it in `closed`. An empty write sends
    // nothing.
    bool stream_write(uint64_t conn, const std::string& bytes);
    // Ends a begun stream (the last chunk); the request is answered. False when not streaming.
    bool stream_end(uint64_t conn);

    void stop_listening();  // no more connections (those open go on): the first step of a clean stop
    // Closes the listener and every connection at once; pending requests are reported by close()'s `closed`.
    void close(std::vector<HttpClosed>* closed = nullptr);
    size_t connections() const;    // open connections, those being closed included
    size_t output_queued() const;  // bytes of answers waiting in this process for their clients, all connections

private:
    HttpServerLimits limits_;
    int listen_fd_ = -1, port_ = 0;
    uint64_t next_id_ = 1;
    int64_t accept_paused_until_ = 0;  // out of descriptors: accept again after this (ms)
    std::map<uint64_t, std::unique_ptr<HttpConn>> conns_;
    void accept_all(int64_t now);
    void reject(int fd, int64_t now);
    void serve_events(HttpConn& c, short revents, int64_t now);
    void read_input(HttpConn& c, int64_t now);
    void parse(HttpConn& c, int64_t now, std::vector<HttpRequest>* requests);
    void flush(HttpConn& c, int64_t now);
    void expire(HttpConn& c, int64_t now);
    int64_t deadline(const HttpConn& c) const;
    void queue(HttpConn& c, const std::string& bytes, int64_t now);
    std::string error_answer(int status, const char* message) const;
    void answer_error(HttpConn& c, int status, const char* message, int64_t now);
    bool answer_head(HttpConn& c, int status, const std::vector<HttpHeader>& headers, bool stream, size_t length);
    void answered(HttpConn& c, int64_t now);
    void drop(HttpConn& c, const char* reason, bool reset = false);
    HttpConn* pending(uint64_t conn);
    size_t counted() const;
};
