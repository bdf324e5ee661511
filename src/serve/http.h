// http.h: an incremental HTTP/1.1 request parser (RFC 9112) and the few pieces of a response's head, for
// gpt2 serve. Strict wherever two readers of a lenient parser could see two different messages (request
// smuggling): lines end in CRLF only, no folded headers, no whitespace before a header's colon, one
// Content-Length of digits alone, no request body framed by Transfer-Encoding. Knows no sockets:
// serve/http_server.h reads the bytes, feeds them here and writes the answers.
//
// What the parser rejects, and with which status (its `status` when state is HttpParse::error):
//   400  a malformed request line or header line: a line end that is not CRLF, a control byte (NUL, a bare CR)
//        anywhere in the head, an obs-fold (a line starting with whitespace), a header name that is not a
//        token or has whitespace before its colon; a request target not of origin form ("/p?q"), absolute
//        form ("http://h/p") or "*" (OPTIONS only), or holding a '#'; an HTTP/1.1 request without exactly
//        one Host (HTTP/1.0: at most one); Content-Length repeated, empty or not all digits; Transfer-Encoding
//        beside a Content-Length, or in an HTTP/1.0 request
//   411  Transfer-Encoding: chunked (the body must come with a Content-Length: chunked request bodies are not read)
//   413  Content-Length above limits.max_body (answered before any of the body is read)
//   414  a request target longer than limits.max_target, or a request line still unfinished at limits.max_head
//   417  an Expect other than 100-continue
//   431  a head (request line, headers, line ends) longer than limits.max_head, or more than limits.max_headers
//   501  a Transfer-Encoding other than chunked
//   505  an HTTP version of another major number than 1 ("HTTP/2.0"); HTTP/1.2 and up are read as HTTP/1.1
// Empty lines before a request line are skipped (RFC 9112 2.2) and count toward max_head.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

struct HttpHeader {
    std::string name;   // a token; the parser lowercases it
    std::string value;  // without the whitespace around it; its bytes: HTAB, SP, visible ASCII, 0x80-0xFF
};

struct HttpRequest {
    uint64_t conn = 0;                // the connection it came on (set by HttpServer)
    std::string method;               // as sent, case-sensitive: "GET", "POST", ... (any token)
    std::string target;               // as sent: "/v1/models?x=1", "http://host/v1/models", "*"
    std::string path;                 // the target's path as sent (not %-decoded): "/v1/models"; an absolute
                                      // form's part after the host; "*"
    std::string query;                // what follows the first '?', without it; "" when none
    int minor = 1;                    // HTTP/1.<minor>: 0 or 1
    std::vector<HttpHeader> headers;  // in the order sent, names lowercase
    std::string body;                 // exactly Content-Length bytes ("" without one)
    bool keep_alive = true;           // the connection stays open after the answer (HTTP/1.1 unless
                                      // "Connection: close"; HTTP/1.0 only with "Connection: keep-alive")
    bool expect_continue = false;     // "Expect: 100-continue" in an HTTP/1.1 request
    // The first header of that name (given in lowercase), or nullptr.
    const std::string* header(const char* name) const;
};

struct HttpLimits {
    size_t max_head = 16 << 10;   // request line, headers and their line ends: 431 (414) past it
    size_t max_target = 8 << 10;  // the request target: 414 past it
    size_t max_headers = 100;     // header lines: 431 past it
    size_t max_body = 1 << 20;    // Content-Length: 413 past it
};

enum class HttpParse { head, body, done, error };

// One request at a time: feed bytes until state is done (take `request`, then reset for the next) or error.
// Memory: at most max_head bytes of head and max_body of body.
struct HttpParser {
    HttpLimits limits;
    HttpParse state = HttpParse::head;
    int status = 0;          // error: the status to answer
    const char* error = "";  // error: why, a fixed sentence (never the client's bytes)
    HttpRequest request;     // done: the request; body: its head, the body so far
    size_t head_bytes = 0;   // bytes of this request's head so far (leading empty lines included)

    // Takes bytes of one request from [data, data + n) and returns how many it took: all of them, or fewer
    // once the request is complete (the rest belong to the next) or has failed (nothing more is taken).
    size_t feed(const char* data, size_t n);
    void reset();                                    // ready for the next request, limits kept
    bool started() const { return head_bytes > 0; }  // a byte of this request has arrived

private:
    std::string line_;  // the head's unfinished line
    bool have_request_line_ = false;
    size_t body_left_ = 0;
    bool fail(int status, const char* why);
    bool take_line(const std::string& line);  // one line without its CRLF; false on an error
    bool request_line(const std::string& line);
    bool header_line(const std::string& line);
    bool end_of_head();
};

// The reason phrase of a status ("Not Found"), "Unknown" for one this table lacks.
const char* http_reason(int status);
// A header fit to send: its name a token, its value free of control bytes but HTAB (no CR or LF: nothing in
// it can end the line and start another), neither beginning nor ending in whitespace.
bool http_header_ok(const HttpHeader& h);
// The body of the server's own errors: OpenAI's error object, {"error": {"message": ..., "type": ...,
// "param": null, "code": null}}, type invalid_request_error for 4xx and server_error for 5xx.
std::string http_error_json(int status, const std::string& message);
// An IPv4 address in dotted decimal: four parts of 0..255, no leading zero (as inet_pton reads them).
bool http_host_is_ipv4(const std::string& host);
// "localhost" or an IPv4 address in 127.0.0.0/8: the host a server can be reached on from this machine only.
bool http_host_is_loopback(const std::string& host);
