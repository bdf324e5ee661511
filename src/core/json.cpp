// json.cpp: recursive-descent JSON reader, see json.h.
#include "core/json.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <unordered_set>

namespace {

const int kMaxDepth = 64;

struct Parser {
    const char* p;
    const char* end;
    const char* begin;
    std::string err;

    bool fail(const char* what) {
        if (err.empty()) {
            int line = 1;
            for (const char* q = begin; q < p && q < end; q++) line += *q == '\n';
            err = "line " + std::to_string(line) + ": " + what;
        }
        return false;
    }
    void skip_ws() {
        while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) p++;
    }
    bool literal(const char* word) {
        const char* q = p;
        for (; *word; word++, q++)
            if (q >= end || *q != *word) return fail("invalid literal");
        p = q;
        return true;
    }
    static void put_utf8(std::string& s, uint32_t cp) {
        if (cp < 0x80) {
            s += (char)cp;
        } else if (cp < 0x800) {
            s += (char)(0xC0 | (cp >> 6));
            s += (char)(0x80 | (cp & 0x3F));
        } else if (cp < 0x10000) {
            s += (char)(0xE0 | (cp >> 12));
            s += (char)(0x80 | ((cp >> 6) & 0x3F));
            s += (char)(0x80 | (cp & 0x3F));
        } else {
            s += (char)(0xF0 | (cp >> 18));
            s += (char)(0x80 | ((cp >> 12) & 0x3F));
            s += (char)(0x80 | ((cp >> 6) & 0x3F));
            s += (char)(0x80 | (cp & 0x3F));
        }
    }
    bool hex4(uint32_t* out) {
        if (end - p < 4) return fail("truncated \\u escape");
        uint32_t v = 0;
        for (int i = 0; i < 4; i++, p++) {
            char c = *p;
            v <<= 4;
            if (c >= '0' && c <= '9') v |= (uint32_t)(c - '0');
            else if (c >= 'a' && c <= 'f') v |= (uint32_t)(c - 'a' + 10);
            else if (c >= 'A' && c <= 'F') v |= (uint32_t)(c - 'A' + 10);
            else return fail("bad hex digit in \\u escape");
        }
        *out = v;
        return true;
    }
    bool string(std::string* out) {
        if (p >= end || *p != '"') return fail("expected string");
        p++;
        out->clear();
        while (true) {
            if (p >= end) return fail("unterminated string");
            unsigned char c = (unsigned char)*p++;
            if (c == '"') return true;
            if (c < 0x20) return fail("control character in string");
            if (c != '\\') {
                *out += (char)c;
                continue;
            }
            if (p >= end) return fail("unterminated escape");
            char e = *p++;
            switch (e) {
                case '"': *out += '"'; break;
                case '\\': *out += '\\'; break;
                case '/': *out += '/'; break;
                case 'b': *out += '\b'; break;
                case 'f': *out += '\f'; break;
                case 'n': *out += '\n'; break;
                case 'r': *out += '\r'; break;
                case 't': *out += '\t'; break;
                case 'u': {
                    uint32_t cp = 0;
                    if (!hex4(&cp)) return false;
                    if (cp >= 0xD800 && cp < 0xDC00) {
                        uint32_t lo = 0;
                        if (end - p < 2 || p[0] != '\\' || p[1] != 'u') return fail("lone high surrogate");
                        p += 2;
                        if (!hex4(&lo)) return false;
                        if (lo < 0xDC00 || lo >= 0xE000) return fail("bad low surrogate");
                        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    } else if (cp >= 0xDC00 && cp < 0xE000) {
                        return fail("lone low surrogate");
                    }
                    put_utf8(*out, cp);
                    break;
                }
                default: return fail("unknown escape");
            }
        }
    }
    bool number(Json* out) {
        const char* start = p;
        bool integral = true;
        if (p < end && *p == '-') p++;
        if (p >= end || !(*p >= '0' && *p <= '9')) return fail("expected digit");
        if (*p == '0') p++;
        else
            while (p < end && *p >= '0' && *p <= '9') p++;
        if (p < end && *p == '.') {
            integral = false;
            p++;
            if (p >= end || !(*p >= '0' && *p <= '9')) return fail("expected digit after '.'");
            while (p < end && *p >= '0' && *p <= '9') p++;
        }
        if (p < end && (*p == 'e' || *p == 'E')) {
            integral = false;
            p++;
            if (p < end && (*p == '+' || *p == '-')) p++;
            if (p >= end || !(*p >= '0' && *p <= '9')) return fail("expected exponent digits");
            while (p < end && *p >= '0' && *p <= '9') p++;
        }
        std::string text(start, p);
        out->type = Json::NUMBER;
        out->number = strtod(text.c_str(), nullptr);
        if (!std::isfinite(out->number)) return fail("number out of range");
        if (integral) {
            errno = 0;
            long long v = strtoll(text.c_str(), nullptr, 10);
            if (errno == 0) {
                out->is_integer = true;
                out->integer = v;
            }
        }
        return true;
    }
    bool value(Json* out, int depth) {
        if (depth > kMaxDepth) return fail("nesting too deep");
        skip_ws();
        if (p >= end) return fail("unexpected end of input");
        char c = *p;
        if (c == '{') {
            p++;
            out->type = Json::OBJECT;
            skip_ws();
            if (p < end && *p == '}') {
                p++;
                return true;
            }
            std::unordered_set<std::string> keys;  // duplicates are rejected: readers disagree on which wins
            while (true) {
                skip_ws();
                std::pair<std::string, Json> member;
                if (!string(&member.first)) return false;
                if (!keys.insert(member.first).second)
                    return fail(("duplicate key \"" + member.first.substr(0, 64) + "\"").c_str());
                skip_ws();
                if (p >= end || *p != ':') return fail("expected ':'");
                p++;
                if (!value(&member.second, depth + 1)) return false;
                out->members.push_back(std::move(member));
                skip_ws();
                if (p < end && *p == ',') {
                    p++;
                    continue;
                }
                if (p < end && *p == '}') {
                    p++;
                    return true;
                }
                return fail("expected ',' or '}'");
            }
        }
        if (c == '[') {
            p++;
            out->type = Json::ARRAY;
            skip_ws();
            if (p < end && *p == ']') {
                p++;
                return true;
            }
            while (true) {
                out->items.emplace_back();
                if (!value(&out->items.back(), depth + 1)) return false;
                skip_ws();
                if (p < end && *p == ',') {
                    p++;
                    continue;
                }
                if (p < end && *p == ']') {
                    p++;
                    return true;
                }
                return fail("expected ',' or ']'");
            }
        }
        if (c == '"') {
            out->type = Json::STRING;
            return string(&out->str);
        }
        if (c == 't') {
            out->type = Json::BOOL;
            out->boolean = true;
            return literal("true");
        }
        if (c == 'f') {
            out->type = Json::BOOL;
            return literal("false");
        }
        if (c == 'n') return literal("null");
        if (c == '-' || (c >= '0' && c <= '9')) return number(out);
        return fail(not_a_value().c_str());
    }
    // Why the text at p cannot start a value, in the words a person would use for it.
    std::string not_a_value() const {
        const unsigned char c = (unsigned char)*p;
        if (end - p >= 3 && c == 0xEF && (unsigned char)p[1] == 0xBB && (unsigned char)p[2] == 0xBF)
            return "a UTF-8 byte order mark; expected JSON without one (save the file as UTF-8 without BOM)";
        if (end - p >= 3 && (!strncmp(p, "NaN", 3) || !strncmp(p, "Inf", 3)))
            return "NaN or Infinity, which JSON does not have; expected a JSON value";
        char buf[160];
        if (c < 0x20 || c >= 0x7F)
            snprintf(buf, sizeof(buf), "byte 0x%02x: binary or non-JSON data; expected a JSON value", c);
        else
            snprintf(buf, sizeof(buf),
                     "'%c' where a JSON value (object, array, string, number, true, false or null) was expected: "
                     "plain text?",
                     c);
        return buf;
    }
};

}  // namespace

const Json* Json::find(const std::string& key) const {
    if (type != OBJECT) return nullptr;
    for (const auto& m : members)
        if (m.first == key) return &m.second;
    return nullptr;
}

bool json_parse(const char* text, size_t n, Json* out, std::string* err) {
    Parser ps{text, text + n, text, {}};
    *out = Json();
    bool ok = ps.value(out, 0);
    if (ok) {
        ps.skip_ws();
        if (ps.p != ps.end) ok = ps.fail("trailing characters after JSON value");
    }
    if (!ok && err) *err = ps.err;
    return ok;
}

std::string json_escape(const std::string& s) {
    std::string out = "\"";
    for (unsigned char c : s) {
        if (c == '"') out += "\\\"";
        else if (c == '\\') out += "\\\\";
        else if (c == '\n') out += "\\n";
        else if (c == '\t') out += "\\t";
        else if (c == '\r') out += "\\r";
        else if (c < 0x20) {
            char buf[8];
            snprintf(buf, sizeof(buf), "\\u%04x", c);
            out += buf;
        } else out += (char)c;
    }
    return out + "\"";
}

const char* json_type_name(Json::Type type) {
    switch (type) {
        case Json::NUL: return "null";
        case Json::BOOL: return "a boolean";
        case Json::NUMBER: return "a number";
        case Json::STRING: return "a string";
        case Json::ARRAY: return "an array";
        case Json::OBJECT: return "an object";
    }
    return "?";
}
