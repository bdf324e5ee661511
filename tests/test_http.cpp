// test_http.cpp: serve/http.h's request parser. Well-formed requests read field by field; every request of
// the hostile table (smuggling, folding, NUL bytes, bare CR and LF, long lines, many headers, bad versions
// and targets) refused with its status, or read, the same whether its bytes come at once, split at any byte
// or one at a time; pipelined requests read in order. The server over real sockets is test_http_server.cpp's.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "serve/http.h"
#include "test.h"

namespace {

#define RAW(s) std::string(s, sizeof(s) - 1)  // a literal with its NUL bytes

// The small limits of the table: head 1 KiB, target 256 bytes, 8 headers, body 64 bytes.
HttpLimits small_limits() {
    HttpLimits l;
    l.max_head = 1024, l.max_target = 256, l.max_headers = 8, l.max_body = 64;
    return l;
}

struct Parsed {
    HttpParse state = HttpParse::head;
    int status = 0;
    size_t used = 0;
    HttpRequest request;
};

// Feeds text in pieces: the first `split` bytes, then the rest (split 0 or past the end: all at once); with
// step > 0, step bytes at a time. Stops feeding once the request is complete or refused.
Parsed parse_text(const std::string& text, const HttpLimits& limits, size_t split = 0, size_t step = 0) {
    HttpParser p;
    p.limits = limits;
    Parsed r;
    size_t at = 0;
    while (at < text.size() && (p.state == HttpParse::head || p.state == HttpParse::body)) {
        size_t n = text.size() - at;
        if (step > 0) n = std::min(n, step);
        if (split > at && split < text.size()) n = std::min(n, split - at);
        const size_t used = p.feed(text.data() + at, n);
        if (used > n) g_test_failures++, fprintf(stderr, "  feed took %zu of %zu bytes\n", used, n);
        at += used;
        if (used < n) break;  // complete or refused: the rest is not this request's
    }
    r.state = p.state, r.status = p.status, r.used = at, r.request = p.request;
    return r;
}

bool same(const Parsed& a, const Parsed& b) {
    if (a.state != b.state || a.status != b.status || a.used != b.used) return false;
    if (a.state != HttpParse::done) return true;
    const HttpRequest &x = a.request, &y = b.request;
    if (x.method != y.method || x.target != y.target || x.path != y.path || x.query != y.query || x.body != y.body ||
        x.minor != y.minor || x.keep_alive != y.keep_alive || x.headers.size() != y.headers.size())
        return false;
    for (size_t i = 0; i < x.headers.size(); i++)
        if (x.headers[i].name != y.headers[i].name || x.headers[i].value != y.headers[i].value) return false;
    return true;
}

const std::string kGet = "GET / HTTP/1.1\r\nHost: a\r\n\r\n";

}  // namespace

TEST(http_parses_a_request_field_by_field) {
    const std::string text =
        "POST /v1/completions?stream=1&x=2 HTTP/1.1\r\nHost: localhost:8080\r\nContent-Type:  application/json \r\n"
        "X-Empty:\r\nCONTENT-LENGTH: 13\r\n\r\n{\"prompt\":\"a\"}";
    Parsed p = parse_text(text, HttpLimits());
    CHECK(p.state == HttpParse::done);
    CHECK(p.used == text.size() - 1);  // 13 bytes of body: the last byte is the next request's
    const HttpRequest& r = p.request;
    CHECK(r.method == "POST" && r.target == "/v1/completions?stream=1&x=2");
    CHECK(r.path == "/v1/completions" && r.query == "stream=1&x=2");
    CHECK(r.minor == 1 && r.keep_alive && !r.expect_continue);
    CHECK(r.headers.size() == 4);
    CHECK(r.header("content-type") && *r.header("content-type") == "application/json");
    CHECK(r.header("x-empty") && r.header("x-empty")->empty());
    CHECK(r.header("content-length") && *r.header("content-length") == "13");
    CHECK(r.header("Content-Type") == nullptr);  // names are looked up as the parser keeps them: lowercase
    CHECK(r.body == "{\"prompt\":\"a\"");
}

TEST(http_keep_alive_follows_version_and_connection) {
    struct Case {
        std::string text;
        bool keep;
    } cases[] = {
        {"GET / HTTP/1.1\r\nHost: a\r\n\r\n", true},
        {"GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n", false},
        {"GET / HTTP/1.1\r\nHost: a\r\nConnection: Upgrade, CLOSE\r\n\r\n", false},
        {"GET / HTTP/1.1\r\nHost: a\r\nConnection: keep-alive\r\n\r\n", true},
        {"GET / HTTP/1.0\r\n\r\n", false},
        {"GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", true},
        {"GET / HTTP/1.0\r\nConnection: keep-alive, close\r\n\r\n", false},
        {"GET / HTTP/1.2\r\nHost: a\r\n\r\n", true},  // a later 1.x is read as 1.1
    };
    for (const Case& c : cases) {
        Parsed p = parse_text(c.text, HttpLimits());
        CHECK(p.state == HttpParse::done && p.request.keep_alive == c.keep);
        if (p.request.keep_alive != c.keep) fprintf(stderr, "  case: %s\n", c.text.c_str());
    }
}

TEST(http_reads_absolute_and_asterisk_targets) {
    Parsed p = parse_text("GET http://example.com:8080/v1/models?a=b HTTP/1.1\r\nHost: x\r\n\r\n", HttpLimits());
    CHECK(p.state == HttpParse::done && p.request.path == "/v1/models" && p.request.query == "a=b");
    p = parse_text("GET HTTPS://example.com HTTP/1.1\r\nHost: x\r\n\r\n", HttpLimits());
    CHECK(p.state == HttpParse::done && p.request.path == "/" && p.request.query.empty());
    p = parse_text("GET http://example.com?q HTTP/1.1\r\nHost: x\r\n\r\n", HttpLimits());
    CHECK(p.state == HttpParse::done && p.request.path == "/" && p.request.query == "q");
    p = parse_text("OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n", HttpLimits());
    CHECK(p.state == HttpParse::done && p.request.path == "*");
}

TEST(http_pipelined_requests_are_read_in_order) {
    const std::string text =
        "GET /1 HTTP/1.1\r\nHost: a\r\n\r\nPOST /2 HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\n"
        "abcGET /3 HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n";
    for (size_t step : {(size_t)0, (size_t)1, (size_t)7}) {
        HttpParser p;
        std::vector<HttpRequest> got;
        size_t at = 0;
        for (int guard = 0; at < text.size() && guard < 10000; guard++) {
            const size_t n = step ? std::min(step, text.size() - at) : text.size() - at;
            at += p.feed(text.data() + at, n);
            if (p.state == HttpParse::done) got.push_back(p.request), p.reset();
            CHECK(p.state != HttpParse::error);
        }
        CHECK(got.size() == 3);
        if (got.size() != 3) continue;
        CHECK(got[0].path == "/1" && got[1].path == "/2" && got[2].path == "/3");
        CHECK(got[1].body == "abc" && got[0].keep_alive && !got[2].keep_alive);
    }
}

TEST(http_expect_100_continue_is_flagged_before_the_body) {
    HttpParser p;
    const std::string head = "POST / HTTP/1.1\r\nHost: a\r\nExpect: 100-Continue\r\nContent-Length: 2\r\n\r\n";
    CHECK(p.feed(head.data(), head.size()) == head.size());
    CHECK(p.state == HttpParse::body && p.request.expect_continue && p.request.body.empty());
    CHECK(p.feed("hi", 2) == 2 && p.state == HttpParse::done && p.request.body == "hi");
    Parsed old = parse_text("POST / HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\nx", HttpLimits());
    CHECK(old.state == HttpParse::done && !old.request.expect_continue);  // HTTP/1.0 clients cannot mean it
}

TEST(http_response_pieces) {
    CHECK(strcmp(http_reason(404), "Not Found") == 0 && strcmp(http_reason(299), "Unknown") == 0);
    CHECK(http_header_ok({"Content-Type", "text/event-stream"}));
    CHECK(http_header_ok({"X-Empty", ""}));
    CHECK(!http_header_ok({"X-Evil", "a\r\nSet-Cookie: b"}));
    CHECK(!http_header_ok({"X-Evil", "a\nb"}));
    CHECK(!http_header_ok({"X-Evil", RAW("a\0b")}));
    CHECK(!http_header_ok({"X-Evil", " padded"}));
    CHECK(!http_header_ok({"Bad Name", "v"}));
    CHECK(!http_header_ok({"Bad:Name", "v"}));
    CHECK(!http_header_ok({"", "v"}));
    CHECK(http_error_json(404, "no \"such\" path\n") ==
          "{\"error\":{\"message\":\"no \\\"such\\\" path\\n\",\"type\":\"invalid_request_error\",\"param\":null,"
          "\"code\":null}}");
    CHECK(http_error_json(503, "busy").find("\"server_error\"") != std::string::npos);
    for (const char* host : {"localhost", "127.0.0.1", "127.255.1.2"}) CHECK(http_host_is_loopback(host));
    for (const char* host : {"0.0.0.0", "127.0.0", "127.0.0.1.", "127.0.0.256", "128.0.0.1", "127.0.0.1a", "localhost.",
                             "::1", "", "127..0.1", "1270.0.0.1"})
        CHECK(!http_host_is_loopback(host));
    for (const char* host : {"0.0.0.0", "10.1.2.3", "255.255.255.255", "127.0.0.1"}) CHECK(http_host_is_ipv4(host));
    for (const char* host :
         {"127.1", "127.01.0.1", "1.2.3.4.5", "1.2.3.256", "0.0.0.0 ", "::1", "", "a.b.c.d", "1..2.3"})
        CHECK(!http_host_is_ipv4(host));
}

// ---- the hostile table: each request and what the parser must make of it (0: read whole, -1: waits for
// more, else the status it refuses with), under small_limits().
namespace {

struct Hostile {
    const char* name;
    std::string text;
    int expect;
};

std::string repeat(const std::string& s, size_t n) {
    std::string out;
    for (size_t i = 0; i < n; i++) out += s;
    return out;
}

std::string with_headers(const std::string& headers, const std::string& body = "") {
    return "POST / HTTP/1.1\r\nHost: a\r\n" + headers + "\r\n" + body;
}

std::vector<Hostile> smuggling_cases() {
    return {
        {"CL then TE", with_headers("Content-Length: 5\r\nTransfer-Encoding: chunked\r\n", "0\r\n\r\n"), 400},
        {"TE then CL", with_headers("Transfer-Encoding: chunked\r\nContent-Length: 5\r\n", "0\r\n\r\n"), 400},
        {"two equal CLs", with_headers("Content-Length: 3\r\nContent-Length: 3\r\n", "abc"), 400},
        {"two different CLs", with_headers("Content-Length: 3\r\nContent-Length: 30\r\n", "abc"), 400},
        {"CLs differing in case", with_headers("Content-Length: 3\r\ncontent-length: 3\r\n", "abc"), 400},
        {"CL as a list", with_headers("Content-Length: 3, 3\r\n", "abc"), 400},
        {"CL negative", with_headers("Content-Length: -1\r\n"), 400},
        {"CL with a plus", with_headers("Content-Length: +3\r\n", "abc"), 400},
        {"CL in hex", with_headers("Content-Length: 0x3\r\n", "abc"), 400},
        {"CL with a space inside", with_headers("Content-Length: 1 2\r\n"), 400},
        {"CL empty", with_headers("Content-Length:\r\n"), 400},
        {"CL a float", with_headers("Content-Length: 3.0\r\n", "abc"), 400},
        {"CL huge", with_headers("Content-Length: 99999999999999999999999999999999\r\n"), 413},
        {"CL 2^64 wraps to 0", with_headers("Content-Length: 18446744073709551616\r\n"), 413},
        {"CL 2^64+3 wraps to 3", with_headers("Content-Length: 18446744073709551619\r\n", "abc"), 413},
        {"CL past max_body", with_headers("Content-Length: 65\r\n"), 413},
        {"CL at max_body", with_headers("Content-Length: 64\r\n", std::string(64, 'x')), 0},
        {"CL with leading zeros", with_headers("Content-Length: 0003\r\n", "abc"), 0},
        {"CL with tab around", with_headers("Content-Length:\t3\t\r\n", "abc"), 0},
        {"CL 0", with_headers("Content-Length: 0\r\n"), 0},
        {"CL with a NUL after", with_headers(RAW("Content-Length: 3\0\r\n"), "abc"), 400},
        {"CL with a space before the colon", with_headers("Content-Length : 3\r\n", "abc"), 400},
        {"CL folded onto the next line", with_headers("Content-Length:\r\n 3\r\n", "abc"), 400},
        {"CL unicode digits", with_headers("Content-Length: \xd9\xa3\r\n"), 400},
        {"TE chunked alone", with_headers("Transfer-Encoding: chunked\r\n", "0\r\n\r\n"), 411},
        {"TE Chunked in capitals", with_headers("Transfer-Encoding: CHUNKED\r\n", "0\r\n\r\n"), 411},
        {"TE gzip, chunked", with_headers("Transfer-Encoding: gzip, chunked\r\n"), 501},
        {"TE chunked twice", with_headers("Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n"), 501},
        {"TE identity", with_headers("Transfer-Encoding: identity\r\n"), 501},
        {"TE empty", with_headers("Transfer-Encoding:\r\n"), 501},
        {"TE with a vertical tab",
         with_headers("Transfer-Encoding: \x0b"
                      "chunked\r\n"),
         400},
        {"TE with a space before the colon", with_headers("Transfer-Encoding : chunked\r\n"), 400},
        {"TE folded", with_headers("Transfer-Encoding:\r\n chunked\r\n"), 400},
        {"TE in HTTP/1.0", "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400},
        {"TE with an underscore is another header", with_headers("Transfer_Encoding: chunked\r\n"), 0},
        {"a request inside the body stays body",
         with_headers("Content-Length: 32\r\n", "GET /admin HTTP/1.1\r\nHost: a\r\n\r\n"), 0},
        {"a body shorter than its CL waits", with_headers("Content-Length: 10\r\n", "abc"), -1},
    };
}

std::vector<Hostile> line_cases() {
    return {
        {"NUL in the method", RAW("G\0T / HTTP/1.1\r\nHost: a\r\n\r\n"), 400},
        {"NUL in the target", RAW("GET /\0 HTTP/1.1\r\nHost: a\r\n\r\n"), 400},
        {"NUL in the version", RAW("GET / HTTP/1.1\0\r\nHost: a\r\n\r\n"), 400},
        {"NUL in a header name", RAW("GET / HTTP/1.1\r\nHo\0st: a\r\n\r\n"), 400},
        {"NUL in a header value", RAW("GET / HTTP/1.1\r\nHost: a\0b\r\n\r\n"), 400},
        {"a NUL line", RAW("\0\r\n"), 400},
        {"a request line ending in bare LF", "GET / HTTP/1.1\nHost: a\r\n\r\n", 400},
        {"a header ending in bare LF", "GET / HTTP/1.1\r\nHost: a\n\r\n", 400},
        {"a head ending in bare LF", "GET / HTTP/1.1\r\nHost: a\r\n\n", 400},
        {"LF line ends throughout", "GET / HTTP/1.1\nHost: a\n\n", 400},
        {"a bare CR inside a value", "GET / HTTP/1.1\r\nHost: a\rb\r\n\r\n", 400},
        {"a bare CR as a line end", "GET / HTTP/1.1\r\nHost: a\rX: b\r\n\r\n", 400},
        {"CR CR LF", "GET / HTTP/1.1\r\nHost: a\r\r\n\r\n", 400},
        {"LF CR", "GET / HTTP/1.1\r\nHost: a\n\r\n", 400},
        {"a bare CR inside the request line", "GET /\r HTTP/1.1\r\nHost: a\r\n\r\n", 400},
        {"an empty line of a bare CR first", "\r\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n", 400},
        {"empty lines before the request line", "\r\n\r\n" + kGet, 0},
        {"lowercase http", "GET / http/1.1\r\nHost: a\r\n\r\n", 400},
        {"a space after the version", "GET / HTTP/1.1 \r\nHost: a\r\n\r\n", 400},
        {"two spaces after the method", "GET  / HTTP/1.1\r\nHost: a\r\n\r\n", 400},
        {"tabs between the parts", "GET\t/\tHTTP/1.1\r\nHost: a\r\n\r\n", 400},
        {"no version", "GET /\r\nHost: a\r\n\r\n", 400},
        {"HTTP/0.9's line alone", "GET /\r\n\r\n", 400},
        {"a word after the version", "GET / HTTP/1.1 extra\r\nHost: a\r\n\r\n", 400},
        {"HTTP/2.0", "GET / HTTP/2.0\r\nHost: a\r\n\r\n", 505},
        {"HTTP/3.0", "GET / HTTP/3.0\r\nHost: a\r\n\r\n", 505},
        {"HTTP/0.9 written out", "GET / HTTP/0.9\r\nHost: a\r\n\r\n", 505},
        {"HTTP/1.9 read as 1.1", "GET / HTTP/1.9\r\nHost: a\r\n\r\n", 0},
        {"HTTP/1.10", "GET / HTTP/1.10\r\nHost: a\r\n\r\n", 400},
        {"HTTP/11.1", "GET / HTTP/11.1\r\nHost: a\r\n\r\n", 400},
        {"HTTP/1", "GET / HTTP/1\r\nHost: a\r\n\r\n", 400},
        {"HTTP/a.b", "GET / HTTP/a.b\r\nHost: a\r\n\r\n", 400},
        {"PRI of HTTP/2's preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 505},
        {"a method that is not a token", "G(T / HTTP/1.1\r\nHost: a\r\n\r\n", 400},
        {"no method", " / HTTP/1.1\r\nHost: a\r\n\r\n", 400},
        {"a lowercase method is a method", "get / HTTP/1.1\r\nHost: a\r\n\r\n", 0},
        {"a method of 200 letters", std::string(200, 'A') + " / HTTP/1.1\r\nHost: a\r\n\r\n", 0},
        {"a target without a slash", "GET v1/models HTTP/1.1\r\nHost: a\r\n\r\n", 400},
        {"a target with a fragment", "GET /a#b HTTP/1.1\r\nHost: a\r\n\r\n", 400},
        {"a target with DEL", "GET /\x7f HTTP/1.1\r\nHost: a\r\n\r\n", 400},
        {"a target with a UTF-8 byte", "GET /\xc3\xa9 HTTP/1.1\r\nHost: a\r\n\r\n", 400},
        {"a target with %-escapes", "GET /a%20b%00 HTTP/1.1\r\nHost: a\r\n\r\n", 0},
        {"a target of max_target", "GET /" + std::string(255, 'a') + " HTTP/1.1\r\nHost: a\r\n\r\n", 0},
        {"a target past max_target", "GET /" + std::string(256, 'a') + " HTTP/1.1\r\nHost: a\r\n\r\n", 414},
        {"a request line unfinished at max_head", "GET /" + std::string(1100, 'a'), 414},
        {"empty lines filling max_head", repeat("\r\n", 600), 414},
        {"* for GET", "GET * HTTP/1.1\r\nHost: a\r\n\r\n", 400},
        {"* for OPTIONS", "OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n", 0},
        {"an absolute URL", "GET http://a/b HTTP/1.1\r\nHost: a\r\n\r\n", 0},
        {"an absolute URL without a host", "GET http:///b HTTP/1.1\r\nHost: a\r\n\r\n", 400},
        {"another scheme", "GET ftp://a/b HTTP/1.1\r\nHost: a\r\n\r\n", 400},
        {"CONNECT's authority form", "CONNECT a:443 HTTP/1.1\r\nHost: a:443\r\n\r\n", 400},
        {"a head that never ends waits", "GET / HTTP/1.1\r\nHost: a\r\n", -1},
    };
}

std::vector<Hostile> header_cases() {
    std::string eight, nine;
    for (int i = 0; i < 7; i++) eight += "X-" + std::to_string(i) + ": v\r\n";
    nine = eight + "X-7: v\r\n";
    return {
        {"no Host in HTTP/1.1", "GET / HTTP/1.1\r\n\r\n", 400},
        {"two Hosts", "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400},
        {"two Hosts differing in case", "GET / HTTP/1.1\r\nHost: a\r\nhOST: a\r\n\r\n", 400},
        {"no Host in HTTP/1.0", "GET / HTTP/1.0\r\n\r\n", 0},
        {"two Hosts in HTTP/1.0", "GET / HTTP/1.0\r\nHost: a\r\nHost: b\r\n\r\n", 400},
        {"an empty Host", "GET / HTTP/1.1\r\nHost:\r\n\r\n", 0},
        {"a folded header", "GET / HTTP/1.1\r\nHost: a\r\nX: a\r\n b\r\n\r\n", 400},
        {"a folded header with a tab", "GET / HTTP/1.1\r\nHost: a\r\nX: a\r\n\tb\r\n\r\n", 400},
        {"whitespace before the first header", "GET / HTTP/1.1\r\n Host: a\r\n\r\n", 400},
        {"an empty header name", "GET / HTTP/1.1\r\nHost: a\r\n: v\r\n\r\n", 400},
        {"a header line without a colon", "GET / HTTP/1.1\r\nHost: a\r\nNoColon\r\n\r\n", 400},
        {"a space inside a header name", "GET / HTTP/1.1\r\nHost: a\r\nX Y: v\r\n\r\n", 400},
        {"a tab before the colon", "GET / HTTP/1.1\r\nHost\t: a\r\n\r\n", 400},
        {"a non-ASCII header name", "GET / HTTP/1.1\r\nHost: a\r\nX\xc3\xa9: v\r\n\r\n", 400},
        {"a header name with a slash", "GET / HTTP/1.1\r\nHost: a\r\nX/Y: v\r\n\r\n", 400},
        {"obs-text in a value", "GET / HTTP/1.1\r\nHost: a\r\nX: caf\xc3\xa9 \xff\r\n\r\n", 0},
        {"DEL in a value", "GET / HTTP/1.1\r\nHost: a\r\nX: a\x7f\r\n\r\n", 400},
        {"ESC in a value", "GET / HTTP/1.1\r\nHost: a\r\nX: \x1b[31m\r\n\r\n", 400},
        {"a form feed in a value", "GET / HTTP/1.1\r\nHost: a\r\nX: a\x0c\r\n\r\n", 400},
        {"an empty value", "GET / HTTP/1.1\r\nHost: a\r\nX:\r\n\r\n", 0},
        {"a colon inside the value", "GET / HTTP/1.1\r\nHost: a:80\r\nX: a:b:c\r\n\r\n", 0},
        {"max_headers headers", "GET / HTTP/1.1\r\nHost: a\r\n" + eight + "\r\n", 0},
        {"one header past max_headers", "GET / HTTP/1.1\r\nHost: a\r\n" + nine + "\r\n", 431},
        {"a head past max_head", "GET / HTTP/1.1\r\nHost: a\r\nX: " + std::string(1000, 'v') + "\r\n\r\n", 431},
        {"one header line past max_head", "GET / HTTP/1.1\r\nHost: a\r\nX: " + std::string(2000, 'v'), 431},
        {"a header name past max_head", "GET / HTTP/1.1\r\nHost: a\r\n" + std::string(2000, 'X'), 431},
        {"Expect: 100-continue", with_headers("Expect: 100-continue\r\nContent-Length: 1\r\n", "x"), 0},
        {"Expect of another kind", with_headers("Expect: 200-ok\r\nContent-Length: 1\r\n", "x"), 417},
        {"Expect empty", with_headers("Expect:\r\n"), 417},
        {"Connection: close, as a list", "GET / HTTP/1.1\r\nHost: a\r\nConnection: ,,close,,\r\n\r\n", 0},
        {"Upgrade: h2c is not followed", "GET / HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n", 0},
        {"a CRLF-laden value is two headers", "GET / HTTP/1.1\r\nHost: a\r\nX: a\r\nSet-Cookie: b\r\n\r\n", 0},
        {"a GET with a body", "GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\nhi", 0},
        {"binary garbage", RAW("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n"), 400},
        {"a TLS hello waits (the request timer ends it)", RAW("\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03"), -1},
    };
}

}  // namespace

TEST(http_hostile_requests_get_their_status_however_split) {
    std::vector<Hostile> all = smuggling_cases(), more = line_cases(), headers = header_cases();
    all.insert(all.end(), more.begin(), more.end());
    all.insert(all.end(), headers.begin(), headers.end());
    const HttpLimits limits = small_limits();
    int cases = 0;
    for (const Hostile& h : all) {
        cases++;
        const Parsed whole = parse_text(h.text, limits);
        const int got = whole.state == HttpParse::done ? 0 : whole.state == HttpParse::error ? whole.status : -1;
        if (got != h.expect) {
            g_test_failures++;
            fprintf(stderr, "  %s: expected %d, got %d\n", h.name, h.expect, got);
            continue;
        }
        bool split_ok = true;
        for (size_t k = 1; k < h.text.size() && split_ok; k++) split_ok = same(whole, parse_text(h.text, limits, k));
        const bool bytes_ok = same(whole, parse_text(h.text, limits, 0, 1));
        if (!split_ok || !bytes_ok) {
            g_test_failures++;
            fprintf(stderr, "  %s: split %s, byte by byte %s\n", h.name, split_ok ? "same" : "DIFFERS",
                    bytes_ok ? "same" : "DIFFERS");
        }
    }
    CHECK(cases >= 120);
    if (cases < 120) fprintf(stderr, "  %d cases\n", cases);
}
