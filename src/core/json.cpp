// json.cpp: recursive-descent JSON reader, see json.h.
#include "core/json.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unordered_set>

namespace {

struct Parser {
    const char *p, *end, *begin;  // the next character, the text's end and its start
    std::string err;

    // Keeps the first error, with the line it is on; false, for `return fail(...)`.
    bool fail(const std::string& what) {
        if (err.empty()) err = "line " + std::to_string(1 + std::count(begin, std::min(p, end), '\n')) + ": " + what;
        return false;
    }
    void skip_ws() { while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) p++; }
    // Skips whitespace, then takes c if it comes next.
    bool eat(char c) {
        skip_ws();
        if (p == end || *p != c) return false;
        p++;
        return true;
    }
    bool at_digit() const { return p < end && *p >= '0' && *p <= '9'; }
    bool digits(const char* what) {  // one or more; fail(what) if there is none
        if (!at_digit()) return fail(what);
        while (at_digit()) p++;
        return true;
    }
    bool literal(const char* word) {
        const size_t n = strlen(word);
        if ((size_t)(end - p) < n || memcmp(p, word, n) != 0) return fail("invalid literal");
        p += n;
        return true;
    }
    // Code point cp as UTF-8: a lead byte saying how many continuation bytes follow, 6 bits in each.
    static void put_utf8(std::string& s, uint32_t cp) {
        static const uint8_t kLead[] = {0x00, 0xC0, 0xE0, 0xF0};
        const int more = cp < 0x80 ? 0 : cp < 0x800 ? 1 : cp < 0x10000 ? 2 : 3;
        s += (char)(kLead[more] | cp >> (6 * more));
        for (int i = more - 1; i >= 0; i--) s += (char)(0x80 | ((cp >> (6 * i)) & 0x3F));
    }
    bool hex4(uint32_t* out) {
        if (end - p < 4) return fail("truncated \\u escape");
        const std::string hex(p, 4);
        if (hex.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos)
            return fail("bad hex digit in \\u escape");
        *out = (uint32_t)strtoul(hex.c_str(), nullptr, 16);
        p += 4;
        return true;
    }
    // \u escapes: a UTF-16 unit, or a high and low surrogate pair for a code point past U+FFFF.
    bool unicode_escape(std::string* out) {
        uint32_t cp = 0, lo = 0;
        if (!hex4(&cp)) return false;
        if (cp >= 0xDC00 && cp < 0xE000) return fail("lone low surrogate");
        if (cp >= 0xD800 && cp < 0xDC00) {
            if (end - p < 2 || p[0] != '\\' || p[1] != 'u') return fail("lone high surrogate");
            p += 2;
            if (!hex4(&lo)) return false;
            if (lo < 0xDC00 || lo >= 0xE000) return fail("bad low surrogate");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        }
        put_utf8(*out, cp);
        return true;
    }
    bool string(std::string* out) {
        // The one-letter escapes, and the character each stands for at the same index.
        static const char kEscapes[] = "\"\\/bfnrt", kMeanings[] = "\"\\/\b\f\n\r\t";
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
            const char e = *p++;
            if (const char* known = e ? strchr(kEscapes, e) : nullptr) *out += kMeanings[known - kEscapes];
            else if (e != 'u') return fail("unknown escape");
            else if (!unicode_escape(out)) return false;
        }
    }
    bool number(Json* out) {
        const char* start = p;
        if (p < end && *p == '-') p++;
        if (p < end && *p == '0') p++;  // no leading zeros: "01" ends after its 0
        else if (!digits("expected digit")) return false;
        const char* integral_end = p;
        if (p < end && *p == '.') {
            p++;
            if (!digits("expected digit after '.'")) return false;
        }
        if (p < end && (*p == 'e' || *p == 'E')) {
            p++;
            if (p < end && (*p == '+' || *p == '-')) p++;
            if (!digits("expected exponent digits")) return false;
        }
        std::string text(start, p);
        out->type = Json::NUMBER, out->number = strtod(text.c_str(), nullptr);
        if (!std::isfinite(out->number)) return fail("number out of range");
        errno = 0;
        const long long v = strtoll(text.c_str(), nullptr, 10);
        out->is_integer = p == integral_end && errno == 0;  // no fraction, no exponent, and int64 holds it
        out->integer = out->is_integer ? v : 0;
        return true;
    }
    // An array or object from its opening bracket at p: items, each read by item(), separated by commas, up to close.
    template <typename Item>
    bool list(char close, Item item) {
        p++;
        if (eat(close)) return true;
        do {
            if (!item()) return false;
        } while (eat(','));
        return eat(close) || fail(close == '}' ? "expected ',' or '}'" : "expected ',' or ']'");
    }
    bool value(Json* out, int depth) {
        if (depth > 64) return fail("nesting too deep");
        skip_ws();
        if (p >= end) return fail("unexpected end of input");
        const char c = *p;
        if (c == '{') {
            out->type = Json::OBJECT;
            std::unordered_set<std::string> keys;  // duplicates are rejected: readers disagree on which wins
            return list('}', [&] {
                auto& [key, member] = out->members.emplace_back();
                skip_ws();
                if (!string(&key)) return false;
                if (!keys.insert(key).second) return fail("duplicate key \"" + key.substr(0, 64) + "\"");
                if (!eat(':')) return fail("expected ':'");
                return value(&member, depth + 1);
            });
        }
        if (c == '[') {
            out->type = Json::ARRAY;
            return list(']', [&] { return value(&out->items.emplace_back(), depth + 1); });
        }
        if (c == '"') {
            out->type = Json::STRING;
            return string(&out->str);
        }
        if (c == 't' || c == 'f') {
            out->type = Json::BOOL, out->boolean = c == 't';
            return literal(out->boolean ? "true" : "false");
        }
        if (c == 'n') return literal("null");
        if (c == '-' || (c >= '0' && c <= '9')) return number(out);
        return fail(not_a_value());
    }
    // Why the text at p cannot start a value, in the words a person would use for it.
    std::string not_a_value() const {
        const unsigned char c = (unsigned char)*p;
        if (end - p >= 3 && !memcmp(p, "\xEF\xBB\xBF", 3))
            return "a UTF-8 byte order mark; expected JSON without one (save the file as UTF-8 without BOM)";
        if (end - p >= 3 && (!strncmp(p, "NaN", 3) || !strncmp(p, "Inf", 3)))
            return "NaN or Infinity, which JSON does not have; expected a JSON value";
        if (c >= 0x20 && c < 0x7F)
            return std::string("'") + (char)c + "' where a JSON value (object, array, string, number, true, false or " +
                   "null) was expected: plain text?";
        char buf[80];
        snprintf(buf, sizeof(buf), "byte 0x%02x: binary or non-JSON data; expected a JSON value", c);
        return buf;
    }
};

}  // namespace

const Json* Json::find(const std::string& key) const {
    auto it = std::find_if(members.begin(), members.end(), [&](const auto& m) { return m.first == key; });
    return type != OBJECT || it == members.end() ? nullptr : &it->second;
}

bool json_parse(const char* text, size_t n, Json* out, std::string* err) {
    Parser ps{text, text + n, text, {}};
    *out = Json();
    bool ok = ps.value(out, 0);
    ps.skip_ws();
    if (ok && ps.p != ps.end) ok = ps.fail("trailing characters after JSON value");
    if (!ok && err) *err = ps.err;
    return ok;
}

std::string json_escape(const std::string& s) {
    // These five characters are written as a backslash and the letter at the same index; other controls as \u00XX.
    static const char kSpecial[] = "\"\\\n\t\r", kLetters[] = "\"\\ntr";
    std::string out = "\"";
    for (unsigned char c : s) {
        char buf[8];
        if (const char* special = c ? strchr(kSpecial, c) : nullptr)
            snprintf(buf, sizeof(buf), "\\%c", kLetters[special - kSpecial]);
        else snprintf(buf, sizeof(buf), c < 0x20 ? "\\u%04x" : "%c", c);
        out += buf;
    }
    return out + "\"";
}
