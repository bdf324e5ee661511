// fuzz_http.cpp: libFuzzer target for serve/http.h's request parser. The input's first byte picks the limits
// (small or the defaults) and a piece size; the rest is a connection's bytes, read as pipelined requests
// until one is refused. The requests and the refusal must be the same fed whole and fed in pieces, each
// request within the limits and its fields what the parser promises (a token method, a target of the forms
// it takes, lowercase token names, values fit to send back), each refusal one of the statuses http.h lists.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "serve/http.h"

namespace {

struct Outcome {
    std::vector<HttpRequest> requests;
    HttpParse state = HttpParse::head;
    int status = 0;
    size_t used = 0;
};

void check_request(const HttpRequest& r, const HttpParser& p) {
    if (r.method.empty() || r.target.empty() || r.target.size() > p.limits.max_target) abort();
    if (r.headers.size() > p.limits.max_headers || r.body.size() > p.limits.max_body) abort();
    if (r.minor != 0 && r.minor != 1) abort();
    if (r.target != "*" && r.path.empty()) abort();
    if (r.path != "*" && r.path[0] != '/') abort();
    for (char c : r.method + r.target)
        if ((unsigned char)c <= 0x20 || (unsigned char)c >= 0x7f) abort();
    for (const HttpHeader& h : r.headers) {
        if (!http_header_ok(h)) abort();
        for (char c : h.name)
            if (c >= 'A' && c <= 'Z') abort();
    }
    const std::string* length = r.header("content-length");
    size_t n = 0;
    for (char c : length ? *length : std::string("0")) {
        if (c < '0' || c > '9') abort();
        n = n * 10 + (size_t)(c - '0');
        if (n > p.limits.max_body) abort();
    }
    if (n != r.body.size()) abort();
    if (r.header("transfer-encoding")) abort();
}

Outcome run(const char* data, size_t size, const HttpLimits& limits, size_t step) {
    Outcome o;
    HttpParser p;
    p.limits = limits;
    size_t at = 0;
    while (at < size) {
        const size_t n = step ? std::min(step, size - at) : size - at;
        const size_t used = p.feed(data + at, n);
        if (used > n || p.head_bytes > limits.max_head) abort();
        at += used;
        if (p.state == HttpParse::done) {
            check_request(p.request, p);
            o.requests.push_back(p.request);
            p.reset();
        } else if (p.state == HttpParse::error) {
            break;
        } else if (used < n) {
            abort();  // waiting for more, yet it left bytes
        }
    }
    o.state = p.state, o.status = p.status, o.used = at;
    if (p.state == HttpParse::error) {
        static const int kStatuses[] = {400, 411, 413, 414, 417, 431, 501, 505};
        bool listed = false;
        for (int s : kStatuses) listed |= s == p.status;
        if (!listed || p.error[0] == 0) abort();
    }
    return o;
}

bool same(const Outcome& a, const Outcome& b) {
    if (a.state != b.state || a.status != b.status || a.used != b.used || a.requests.size() != b.requests.size())
        return false;
    for (size_t i = 0; i < a.requests.size(); i++) {
        const HttpRequest &x = a.requests[i], &y = b.requests[i];
        if (x.method != y.method || x.target != y.target || x.path != y.path || x.query != y.query ||
            x.body != y.body || x.keep_alive != y.keep_alive || x.expect_continue != y.expect_continue ||
            x.headers.size() != y.headers.size())
            return false;
    }
    return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    HttpLimits limits;
    if (data[0] & 0x80) limits.max_head = 256, limits.max_target = 64, limits.max_headers = 4, limits.max_body = 32;
    const size_t step = 1 + (data[0] & 0x0f);
    const char* text = (const char*)data + 1;
    const Outcome whole = run(text, size - 1, limits, 0);
    if (!same(whole, run(text, size - 1, limits, step))) abort();
    return 0;
}
