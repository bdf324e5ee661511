// http.cpp: the request parser and response pieces of http.h. The head is read a line at a time as the bytes
// come, each line checked when its LF arrives, so a bad request is refused at its first bad line and a slow
// one costs no rescan; the body is counted out by Content-Length. RFC 9112 (message syntax), RFC 9110.
#include "serve/http.h"

#include <cstring>

#include "core/json.h"

namespace {

// tchar of RFC 9110 5.6.2: what a method and a header name are made of.
bool is_tchar(unsigned char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c != 0 && strchr("!#$%&'*+-.^_`|~", c) != nullptr);
}

bool is_token(const std::string& s) {
    if (s.empty()) return false;
    for (unsigned char c : s)
        if (!is_tchar(c)) return false;
    return true;
}

// A field value's bytes: HTAB, SP, visible ASCII and obs-text (0x80-0xFF); no other control byte, no DEL.
bool value_byte_ok(unsigned char c) { return c == '\t' || (c >= 0x20 && c != 0x7f); }

std::string lower(std::string s) {
    for (char& c : s)
        if (c >= 'A' && c <= 'Z') c = (char)(c - 'A' + 'a');
    return s;
}

std::string trim_ows(const std::string& s) {
    size_t a = 0, b = s.size();
    while (a < b && (s[a] == ' ' || s[a] == '\t')) a++;
    while (b > a && (s[b - 1] == ' ' || s[b - 1] == '\t')) b--;
    return s.substr(a, b - a);
}

// The comma-separated elements of a list header ("close, Upgrade"), trimmed and lowercased.
std::vector<std::string> list_items(const std::string& v) {
    std::vector<std::string> items;
    size_t at = 0;
    while (at <= v.size()) {
        size_t comma = v.find(',', at);
        if (comma == std::string::npos) comma = v.size();
        std::string item = lower(trim_ows(v.substr(at, comma - at)));
        if (!item.empty()) items.push_back(item);
        at = comma + 1;
    }
    return items;
}

}  // namespace

const std::string* HttpRequest::header(const char* name) const {
    for (const HttpHeader& h : headers)
        if (h.name == name) return &h.value;
    return nullptr;
}

void HttpParser::reset() {
    state = HttpParse::head;
    status = 0;
    error = "";
    request = HttpRequest();
    head_bytes = 0;
    line_.clear();
    have_request_line_ = false;
    body_left_ = 0;
}

bool HttpParser::fail(int code, const char* why) {
    state = HttpParse::error;
    status = code;
    error = why;
    return false;
}

size_t HttpParser::feed(const char* data, size_t n) {
    size_t used = 0;
    while (used < n && state == HttpParse::head) {
        const char* lf = (const char*)memchr(data + used, '\n', n - used);
        const size_t take = lf ? (size_t)(lf - (data + used)) + 1 : n - used;
        if (head_bytes + take > limits.max_head) {
            used += limits.max_head - head_bytes;
            return fail(have_request_line_ ? 431 : 414,
                        have_request_line_ ? "the request's headers are too long" : "the request line is too long"),
                   used;
        }
        line_.append(data + used, take);
        head_bytes += take;
        used += take;
        if (!lf) break;
        if (line_.size() < 2 || line_[line_.size() - 2] != '\r')
            return fail(400, "a line of the request does not end in CRLF"), used;
        line_.resize(line_.size() - 2);
        const std::string line = std::move(line_);
        line_.clear();
        if (!take_line(line)) return used;
    }
    if (state == HttpParse::body && used < n) {
        const size_t take = n - used < body_left_ ? n - used : body_left_;
        request.body.append(data + used, take);
        body_left_ -= take;
        used += take;
        if (body_left_ == 0) state = HttpParse::done;
    }
    return used;
}

bool HttpParser::take_line(const std::string& line) {
    if (!have_request_line_) {
        if (line.empty()) return true;  // an empty line before the request line is skipped
        have_request_line_ = true;
        return request_line(line);
    }
    if (line.empty()) return end_of_head();
    return header_line(line);
}

// method SP request-target SP HTTP/d.d, each separator one space.
bool HttpParser::request_line(const std::string& line) {
    const size_t sp1 = line.find(' ');
    const size_t sp2 = sp1 == std::string::npos ? sp1 : line.find(' ', sp1 + 1);
    if (sp2 == std::string::npos) return fail(400, "the request line is not 'method target version'");
    HttpRequest& r = request;
    r.method = line.substr(0, sp1);
    r.target = line.substr(sp1 + 1, sp2 - sp1 - 1);
    const std::string version = line.substr(sp2 + 1);
    if (!is_token(r.method)) return fail(400, "the request's method is not a token");
    if (r.target.size() > limits.max_target) return fail(414, "the request target is too long");
    if (r.target.empty()) return fail(400, "the request line is not 'method target version'");
    for (unsigned char c : r.target)
        if (c <= 0x20 || c >= 0x7f || c == '#') return fail(400, "the request target holds a byte it may not");
    if (version.size() != 8 || version.compare(0, 5, "HTTP/") != 0 || version[5] < '0' || version[5] > '9' ||
        version[6] != '.' || version[7] < '0' || version[7] > '9')
        return fail(400, "the request's HTTP version is malformed");
    if (version[5] != '1') return fail(505, "only HTTP/1.0 and HTTP/1.1 are served");
    r.minor = version[7] == '0' ? 0 : 1;
    r.keep_alive = r.minor == 1;
    std::string path = r.target;
    if (r.target == "*") {
        if (r.method != "OPTIONS") return fail(400, "the target '*' is for OPTIONS only");
    } else if (r.target[0] != '/') {  // absolute form: http://host[:port]/path?query
        const std::string scheme = lower(r.target.substr(0, 8));
        const size_t rest = scheme.compare(0, 7, "http://") == 0 ? 7 : scheme == "https://" ? 8 : 0;
        if (rest == 0) return fail(400, "the request target is not a path or an http URL");
        const size_t slash = r.target.find_first_of("/?", rest);
        if (slash == rest) return fail(400, "the request target's URL has no host");
        path = slash == std::string::npos ? "/"
               : r.target[slash] == '?'   ? "/" + r.target.substr(slash)
                                          : r.target.substr(slash);
    }
    const size_t q = path.find('?');
    r.path = path.substr(0, q);
    r.query = q == std::string::npos ? "" : path.substr(q + 1);
    return true;
}

bool HttpParser::header_line(const std::string& line) {
    if (line[0] == ' ' || line[0] == '\t') return fail(400, "a header line is folded (starts with whitespace)");
    const size_t colon = line.find(':');
    if (colon == std::string::npos) return fail(400, "a header line has no colon");
    HttpHeader h{line.substr(0, colon), trim_ows(line.substr(colon + 1))};
    if (!is_token(h.name)) return fail(400, "a header name is not a token (or has whitespace before its colon)");
    for (unsigned char c : h.value)
        if (!value_byte_ok(c)) return fail(400, "a header value holds a control byte");
    if (request.headers.size() >= limits.max_headers) return fail(431, "the request has too many headers");
    h.name = lower(h.name);
    request.headers.push_back(std::move(h));
    return true;
}

// The framing (Content-Length, Transfer-Encoding), Host, Expect and Connection, once the head is whole.
bool HttpParser::end_of_head() {
    HttpRequest& r = request;
    int hosts = 0, lengths = 0;
    bool te = false, close = false, keep = false;
    const std::string* length = nullptr;
    std::string codings;
    for (const HttpHeader& h : r.headers) {
        if (h.name == "host") hosts++;
        if (h.name == "content-length") lengths++, length = &h.value;
        if (h.name == "transfer-encoding") te = true, codings += (codings.empty() ? "" : ",") + h.value;
        if (h.name == "expect") {
            if (lower(h.value) != "100-continue") return fail(417, "the only Expect served is 100-continue");
            r.expect_continue = r.minor == 1;  // HTTP/1.0 clients cannot mean it (RFC 9110 10.1.1)
        }
        if (h.name == "connection")
            for (const std::string& item : list_items(h.value)) close |= item == "close", keep |= item == "keep-alive";
    }
    if (hosts > 1 || (r.minor == 1 && hosts == 0)) return fail(400, "an HTTP/1.1 request needs one Host header");
    if (te) {
        if (r.minor == 0 || lengths > 0)
            return fail(400, "Transfer-Encoding is not allowed with Content-Length or in HTTP/1.0");
        const std::vector<std::string> items = list_items(codings);
        if (items.size() == 1 && items[0] == "chunked")
            return fail(411, "a request body needs a Content-Length (chunked bodies are not read)");
        return fail(501, "no transfer coding of requests is served");
    }
    if (lengths > 1) return fail(400, "the request has more than one Content-Length");
    size_t body = 0;
    if (length) {
        if (length->empty()) return fail(400, "the Content-Length is not a number");
        for (unsigned char c : *length) {
            if (c < '0' || c > '9') return fail(400, "the Content-Length is not a number");
            if (body > limits.max_body) continue;  // no overflow: the answer is 413 whatever follows
            body = body * 10 + (c - '0');
        }
        if (body > limits.max_body) return fail(413, "the request body is too large");
    }
    r.keep_alive = !close && (r.minor == 1 || keep);
    body_left_ = body;
    state = body > 0 ? HttpParse::body : HttpParse::done;
    return true;
}

const char* http_reason(int status) {
    switch (status) {
        case 100: return "Continue";
        case 200: return "OK";
        case 201: return "Created";
        case 204: return "No Content";
        case 304: return "Not Modified";
        case 400: return "Bad Request";
        case 401: return "Unauthorized";
        case 403: return "Forbidden";
        case 404: return "Not Found";
        case 405: return "Method Not Allowed";
        case 408: return "Request Timeout";
        case 411: return "Length Required";
        case 413: return "Content Too Large";
        case 414: return "URI Too Long";
        case 415: return "Unsupported Media Type";
        case 417: return "Expectation Failed";
        case 422: return "Unprocessable Content";
        case 429: return "Too Many Requests";
        case 431: return "Request Header Fields Too Large";
        case 500: return "Internal Server Error";
        case 501: return "Not Implemented";
        case 503: return "Service Unavailable";
        case 505: return "HTTP Version Not Supported";
        default: return "Unknown";
    }
}

bool http_header_ok(const HttpHeader& h) {
    if (!is_token(h.name)) return false;
    for (unsigned char c : h.value)
        if (!value_byte_ok(c)) return false;
    return h.value.empty() || (trim_ows(h.value).size() == h.value.size());
}

std::string http_error_json(int status, const std::string& message) {
    return "{\"error\":{\"message\":" + json_escape(message) + ",\"type\":\"" +
           (status >= 500 ? "server_error" : "invalid_request_error") + "\",\"param\":null,\"code\":null}}";
}

bool http_host_is_ipv4(const std::string& host) {
    int parts = 1, digits = 0, value = 0;
    for (size_t i = 0; i < host.size(); i++) {
        const char c = host[i];
        if (c == '.' && digits > 0) {
            parts++, digits = 0, value = 0;
        } else if (c >= '0' && c <= '9' && digits < 3 && !(digits == 1 && value == 0)) {
            value = value * 10 + (c - '0'), digits++;
            if (value > 255) return false;
        } else {
            return false;
        }
    }
    return parts == 4 && digits > 0;
}

bool http_host_is_loopback(const std::string& host) {
    return host == "localhost" || (host.compare(0, 4, "127.") == 0 && http_host_is_ipv4(host));
}
