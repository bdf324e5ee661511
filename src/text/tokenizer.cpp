// tokenizer.cpp: see tokenizer.h. Pre-tokenization is a hand-written scanner equivalent to GPT-2's
// pattern (no regex engine); BPE works on token ids with a heap so long pieces stay O(n log n).
// It does not handle special tokens inside text and does not train merges.
#include "text/tokenizer.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>

#include "core/json.h"
#include "platform/util.h"
#include "text/unicode_tables.h"

// ---------------------------------------------------------------------------------------------------
// Character classes and UTF-8

namespace {

// encoder.json is 1 MB, vocab.bpe 456 KB: read whole, but never a file of any size.
const size_t kTokenizerFileMax = (size_t)64 << 20;

enum CharClass : uint8_t { kOther = 0, kLetter = 1, kNumber = 2, kSpace = 3 };

// The BMP is looked up in a flat table; the few classified code points above it by binary search.
struct ClassTable {
    uint8_t bmp[0x10000];
    ClassTable() {
        memset(bmp, kOther, sizeof(bmp));
        fill(kUnicodeLetters, kUnicodeLettersCount, kLetter);
        fill(kUnicodeNumbers, kUnicodeNumbersCount, kNumber);
        fill(kUnicodeSpaces, kUnicodeSpacesCount, kSpace);
    }
    void fill(const UnicodeRange* r, size_t n, CharClass c) {
        for (size_t i = 0; i < n; i++)
            for (uint32_t cp = r[i].lo; cp <= r[i].hi && cp < 0x10000; cp++) bmp[cp] = c;
    }
};

const ClassTable& class_table() {
    static const ClassTable table;
    return table;
}

bool in_ranges(const UnicodeRange* r, size_t n, uint32_t cp) {
    const UnicodeRange* it = std::upper_bound(r, r + n, cp, [](uint32_t x, const UnicodeRange& u) { return x < u.lo; });
    return it != r && cp <= (it - 1)->hi;
}

CharClass class_of(uint32_t cp) {
    if (cp < 0x10000) return (CharClass)class_table().bmp[cp];
    if (in_ranges(kUnicodeLetters, kUnicodeLettersCount, cp)) return kLetter;
    if (in_ranges(kUnicodeNumbers, kUnicodeNumbersCount, cp)) return kNumber;
    if (in_ranges(kUnicodeSpaces, kUnicodeSpacesCount, cp)) return kSpace;
    return kOther;
}

// Allowed range of the byte after a lead byte; the rest of a sequence is 0x80..0xBF. This rejects
// overlong forms, UTF-16 surrogates and code points above U+10FFFF exactly as Python's strict decoder.
bool second_byte_ok(uint8_t lead, uint8_t b) {
    if (lead == 0xE0) return b >= 0xA0 && b <= 0xBF;
    if (lead == 0xED) return b >= 0x80 && b <= 0x9F;
    if (lead == 0xF0) return b >= 0x90 && b <= 0xBF;
    if (lead == 0xF4) return b >= 0x80 && b <= 0x8F;
    return b >= 0x80 && b <= 0xBF;
}

int sequence_length(uint8_t lead) {
    if (lead >= 0xC2 && lead <= 0xDF) return 2;
    if (lead >= 0xE0 && lead <= 0xEF) return 3;
    if (lead >= 0xF0 && lead <= 0xF4) return 4;
    return 0;  // ASCII is handled by callers; 0x80..0xC1 and 0xF5..0xFF never start a sequence
}

// Class and byte length of the character at s[i] (i < n). An invalid byte is a one-byte kOther
// character, matching Python's errors='surrogateescape' (U+DC80..U+DCFF are category Cs).
inline CharClass char_at(const uint8_t* s, size_t n, size_t i, size_t* len) {
    static const uint8_t* ascii = [] {
        static uint8_t t[128];
        for (int c = 0; c < 128; c++) t[c] = class_table().bmp[c];
        return t;
    }();
    uint8_t b = s[i];
    if (b < 0x80) {
        *len = 1;
        return (CharClass)ascii[b];
    }
    int need = sequence_length(b);
    if (need == 0 || i + need > n || !second_byte_ok(b, s[i + 1])) {
        *len = 1;
        return kOther;
    }
    uint32_t cp = b & (need == 2 ? 0x1F : need == 3 ? 0x0F : 0x07);
    cp = (cp << 6) | (s[i + 1] & 0x3F);
    for (int k = 2; k < need; k++) {
        if ((s[i + k] & 0xC0) != 0x80) {
            *len = 1;
            return kOther;
        }
        cp = (cp << 6) | (s[i + k] & 0x3F);
    }
    *len = need;
    return class_of(cp);
}

// End of the run of characters of class `c` starting at i.
inline size_t run_end(const uint8_t* s, size_t n, size_t i, CharClass c) {
    size_t len;
    while (i < n && char_at(s, n, i, &len) == c) i += len;
    return i;
}

// End of the piece starting at i, trying GPT-2's alternatives in order:
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
size_t next_piece(const uint8_t* s, size_t n, size_t i) {
    if (s[i] == '\'' && i + 1 < n) {
        uint8_t a = s[i + 1];
        if (a == 's' || a == 't' || a == 'm' || a == 'd') return i + 2;
        if (i + 2 < n) {
            uint8_t b = s[i + 2];
            if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return i + 3;
        }
    }
    size_t len;
    CharClass c = char_at(s, n, i, &len);
    if (s[i] == ' ' && i + 1 < n) {
        size_t len2;
        CharClass c2 = char_at(s, n, i + 1, &len2);
        if (c2 != kSpace) return run_end(s, n, i + 1, c2);
    }
    if (c != kSpace) return run_end(s, n, i, c);
    // Whitespace: the whole run at the end of the text, or when it is one character long (\s+);
    // otherwise all but its last character, which stays to prefix the next piece (\s+(?!\S)).
    size_t last = i, j = i;
    while (j < n) {
        size_t l;
        if (char_at(s, n, j, &l) != kSpace) break;
        last = j;
        j += l;
    }
    if (j == n || last == i) return j;
    return last;
}

// ---------------------------------------------------------------------------------------------------
// Loading

// GPT-2's files spell each byte as one printable character: bytes that are printable in Latin-1 stand
// for themselves, the other 68 take the code points 256, 257, ... in byte order.
void byte_chars(uint32_t out[256]) {
    int spare = 0;
    for (int b = 0; b < 256; b++) {
        bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
        out[b] = printable ? (uint32_t)b : (uint32_t)(256 + spare++);
    }
}

struct ByteSpelling {
    std::unordered_map<uint32_t, uint8_t> to_byte;
    ByteSpelling() {
        uint32_t chars[256];
        byte_chars(chars);
        for (int b = 0; b < 256; b++) to_byte[chars[b]] = (uint8_t)b;
    }
    // Converts a vocabulary spelling to raw bytes; false if it holds a character outside the map.
    bool decode(const std::string& s, std::string* out) const {
        out->clear();
        const uint8_t* p = (const uint8_t*)s.data();
        size_t n = s.size(), i = 0;
        while (i < n) {
            uint32_t cp;
            size_t len;
            if (p[i] < 0x80) {
                cp = p[i];
                len = 1;
            } else if ((p[i] & 0xE0) == 0xC0 && i + 1 < n && (p[i + 1] & 0xC0) == 0x80) {
                cp = ((p[i] & 0x1F) << 6) | (p[i + 1] & 0x3F);
                len = 2;
            } else {
                return false;  // the map only uses code points below 0x800
            }
            auto it = to_byte.find(cp);
            if (it == to_byte.end()) return false;
            out->push_back((char)it->second);
            i += len;
        }
        return true;
    }
};

std::string printable(const std::string& s) {
    std::string out;
    for (unsigned char c : s.substr(0, 40)) {
        if (c >= 32 && c < 127) out += (char)c;
        else {
            char buf[8];
            snprintf(buf, sizeof(buf), "\\x%02x", c);
            out += buf;
        }
    }
    return s.size() > 40 ? out + "..." : out;
}

// A vocabulary being built: each token's bytes by id, and the id of each spelling's bytes.
struct VocabBuilder {
    Tokenizer* tok;
    std::string where;  // the file, or a GGUF file's key, for messages
    ByteSpelling spelling;
    std::unordered_map<std::string, int> ids_by_bytes;
    std::vector<bool> seen;
    std::vector<int> made_at;  // rank of the merge making each token; -1 if none yet
    int rank = 0;

    VocabBuilder(Tokenizer* t, std::string w, size_t n) : tok(t), where(std::move(w)), seen(n, false) {
        tok->token_bytes.assign(n, std::string());
        tok->vocab_size = (int)n;
    }
    // Token `spelled` is id (in 0..n-1, checked by the caller).
    void add_token(const std::string& spelled, int id) {
        std::string bytes;
        if (seen[id]) fatal("duplicate id %d (%s): expected each id once", id, where.c_str());
        if (!spelling.decode(spelled, &bytes))
            fatal("bad token spelling '%s' (%s): expected GPT-2's byte-to-character map", printable(spelled).c_str(),
                  where.c_str());
        seen[id] = true;
        tok->token_bytes[id] = bytes;
        if (!ids_by_bytes.emplace(bytes, id).second)
            fatal("duplicate token '%s' (%s): expected each token once", printable(spelled).c_str(), where.c_str());
    }
    // After every token: <|endoftext|> is id 50256 (a vocabulary of 50256 tokens or fewer, the first tokens of
    // GPT-2's, may lack it), and every byte has its token.
    void check_tokens() {
        auto eot = ids_by_bytes.find("<|endoftext|>");
        if (eot == ids_by_bytes.end() ? tok->vocab_size > kTokenizerEot : eot->second != kTokenizerEot)
            fatal("bad <|endoftext|> id (%s): expected %d, got %d", where.c_str(), kTokenizerEot,
                  eot == ids_by_bytes.end() ? -1 : eot->second);
        for (int b = 0; b < 256; b++) {
            auto it = ids_by_bytes.find(std::string(1, (char)b));
            if (it == ids_by_bytes.end())
                fatal("missing byte token 0x%02x (%s): expected all 256 single-byte tokens", b, where.c_str());
            tok->byte_ids[b] = it->second;
        }
        made_at.assign(tok->vocab_size, -1);
    }
    // The next merge rule, "left right", the `number`th `unit` of its source (a line, an entry). bpe_piece's
    // heap order equals encoder.py's pass-by-pass order only when every rule uses tokens made by earlier
    // rules and no token is made twice, as BPE training writes them; anything else is rejected here rather
    // than encoded wrongly.
    void add_merge(const std::string& line, const char* unit, int number) {
        const char* w = where.c_str();
        std::string left, right;
        const size_t sp = line.find(' ');
        if (sp == std::string::npos || sp == 0 || sp + 1 == line.size() || line.find(' ', sp + 1) != std::string::npos)
            fatal("malformed merge (%s) at %s %d: expected two tokens separated by one space, got '%s'", w, unit,
                  number, printable(line).c_str());
        if (!spelling.decode(line.substr(0, sp), &left) || !spelling.decode(line.substr(sp + 1), &right))
            fatal("bad token spelling (%s) at %s %d: expected GPT-2's byte-to-character map, got '%s'", w, unit,
                  number, printable(line).c_str());
        auto l = ids_by_bytes.find(left), r = ids_by_bytes.find(right), m = ids_by_bytes.find(left + right);
        if (l == ids_by_bytes.end() || r == ids_by_bytes.end() || m == ids_by_bytes.end())
            fatal("merge not in vocabulary (%s) at %s %d: expected both tokens and their concatenation in the "
                  "vocabulary, got '%s'", w, unit, number, printable(line).c_str());
        auto ready = [&](int id) { return tok->token_bytes[id].size() == 1 || made_at[id] >= 0; };
        if (!ready(l->second) || !ready(r->second))
            fatal("merge out of order (%s) at %s %d: expected its tokens to be made by earlier lines, got '%s'", w,
                  unit, number, printable(line).c_str());
        if (made_at[m->second] >= 0)
            fatal("token made twice (%s) at %s %d: expected one rule per token, got '%s'", w, unit, number,
                  printable(line).c_str());
        const uint64_t key = ((uint64_t)(uint32_t)l->second << 32) | (uint32_t)r->second;
        if (!tok->merges.emplace(key, TokenizerMerge{rank, m->second}).second)
            fatal("duplicate merge (%s) at %s %d: '%s'", w, unit, number, printable(line).c_str());
        made_at[m->second] = rank++;
    }
};

// encoder.json (or vocab.json): a JSON object of spelling -> id.
void load_vocab(Tokenizer* tok, const std::string& path, std::unique_ptr<VocabBuilder>* vb) {
    std::vector<uint8_t> text = file_read(path, kTokenizerFileMax);
    Json root;
    std::string err;
    if (!json_parse((const char*)text.data(), text.size(), &root, &err))
        fatal("malformed JSON (%s): %s", path.c_str(), err.c_str());
    if (root.type != Json::OBJECT || root.members.empty())
        fatal("bad vocabulary (%s): expected a non-empty JSON object of token -> id", path.c_str());
    const size_t n = root.members.size();
    vb->reset(new VocabBuilder(tok, path, n));
    for (const auto& m : root.members) {
        const Json& v = m.second;
        if (v.type != Json::NUMBER || !v.is_integer || v.integer < 0 || (size_t)v.integer >= n)
            fatal("bad id for token '%s' (%s): expected an integer in 0..%zu", printable(m.first).c_str(), path.c_str(),
                  n - 1);
        (*vb)->add_token(m.first, (int)v.integer);
    }
    (*vb)->check_tokens();
}

// vocab.bpe (or merges.txt): one merge per line, after an optional `#version` line.
void load_merges(VocabBuilder* vb, const std::string& path) {
    std::vector<uint8_t> data = file_read(path, kTokenizerFileMax);
    std::string text(data.begin(), data.end());
    vb->where = path;
    size_t pos = 0;
    int line_no = 0;
    while (pos < text.size()) {
        size_t eol = text.find('\n', pos);
        if (eol == std::string::npos) eol = text.size();
        std::string line = text.substr(pos, eol - pos);
        pos = eol + 1;
        line_no++;
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.empty() || (line_no == 1 && line.rfind("#version", 0) == 0)) continue;
        vb->add_merge(line, "line", line_no);
    }
    if (vb->rank == 0) fatal("empty merges file (%s): expected one merge per line", path.c_str());
}

}  // namespace

void tokenizer_from_spellings(Tokenizer* tok, const std::vector<std::string>& tokens,
                              const std::vector<std::string>& merges, const std::string& where) {
    *tok = Tokenizer();
    tok->dir = where;
    if (tokens.empty()) fatal("empty vocabulary (%s): expected GPT-2's tokens", where.c_str());
    VocabBuilder vb(tok, where, tokens.size());
    for (size_t id = 0; id < tokens.size(); id++) vb.add_token(tokens[id], (int)id);
    vb.check_tokens();
    for (size_t i = 0; i < merges.size(); i++) vb.add_merge(merges[i], "merge", (int)i + 1);
    tok->cache.reserve(1 << 16);
}

void tokenizer_spellings(const Tokenizer& tok, int V, std::vector<std::string>* tokens,
                         std::vector<std::string>* merges) {
    tokens->assign(V, std::string());
    merges->clear();
    for (int id = 0; id < V; id++) (*tokens)[id] = tokenizer_spelling(tok.token_bytes[id]);
    for (const auto& m : tokenizer_merge_pairs(tok)) {
        auto it = tok.merges.find(((uint64_t)(uint32_t)m.first << 32) | (uint32_t)m.second);
        if (m.first < V && m.second < V && it->second.merged < V)
            merges->push_back((*tokens)[m.first] + " " + (*tokens)[m.second]);
    }
}

namespace {

// ---------------------------------------------------------------------------------------------------
// BPE

// Applies merges to the piece's bytes, lowest rank first and, among equal ranks, leftmost first. This is
// encoder.py's "merge every occurrence of the best pair, left to right, then look again" because a merge
// can only create pairs of higher rank (load_merges checks the rule order that guarantees it). Symbols
// form a linked list over byte positions; heap entries are (rank << 32 | left position), skipped when
// stale.
void bpe_piece(Tokenizer* tok, const uint8_t* p, size_t n, std::vector<int>* out) {
    std::vector<int>& ids = tok->scratch_ids;
    std::vector<int>& next = tok->scratch_next;
    std::vector<int>& prev = tok->scratch_prev;
    std::vector<uint64_t>& heap = tok->scratch_heap;
    ids.resize(n);
    next.resize(n);
    prev.resize(n);
    heap.clear();
    for (size_t i = 0; i < n; i++) {
        ids[i] = tok->byte_ids[p[i]];
        next[i] = i + 1 < n ? (int)i + 1 : -1;
        prev[i] = (int)i - 1;
    }
    auto rank_of = [&](int a, int b, int* merged) {
        auto it = tok->merges.find(((uint64_t)(uint32_t)a << 32) | (uint32_t)b);
        if (it == tok->merges.end()) return -1;
        *merged = it->second.merged;
        return it->second.rank;
    };
    auto push_pair = [&](int i) {
        int merged;
        if (i < 0 || next[i] < 0) return;
        int r = rank_of(ids[i], ids[next[i]], &merged);
        if (r < 0) return;
        heap.push_back(((uint64_t)r << 32) | (uint32_t)i);
        std::push_heap(heap.begin(), heap.end(), std::greater<uint64_t>());
    };
    for (size_t i = 0; i + 1 < n; i++) push_pair((int)i);
    while (!heap.empty()) {
        std::pop_heap(heap.begin(), heap.end(), std::greater<uint64_t>());
        uint64_t top = heap.back();
        heap.pop_back();
        int r = (int)(top >> 32), i = (int)(uint32_t)top, merged = -1;
        if (ids[i] < 0 || next[i] < 0 || rank_of(ids[i], ids[next[i]], &merged) != r) continue;  // stale
        int j = next[i];
        ids[i] = merged;
        ids[j] = -1;
        next[i] = next[j];
        if (next[j] >= 0) prev[next[j]] = i;
        push_pair(prev[i]);
        push_pair(i);
    }
    for (int i = 0; i >= 0; i = next[i]) out->push_back(ids[i]);
}

const size_t kCacheMaxPieceBytes = 256;  // longer pieces are rare and would bloat the cache

void encode_piece(Tokenizer* tok, const uint8_t* p, size_t n, std::vector<int>* out) {
    if (n == 1) {
        out->push_back(tok->byte_ids[p[0]]);
        return;
    }
    if (n > kCacheMaxPieceBytes) {
        bpe_piece(tok, p, n, out);
        return;
    }
    std::string key((const char*)p, n);
    auto it = tok->cache.find(key);
    if (it != tok->cache.end()) {
        out->insert(out->end(), it->second.begin(), it->second.end());
        return;
    }
    size_t start = out->size();
    bpe_piece(tok, p, n, out);
    if (tok->cache.size() >= tok->cache_max_entries) tok->cache.clear();
    tok->cache.emplace(std::move(key), std::vector<int>(out->begin() + start, out->end()));
}

// Length of a trailing UTF-8 sequence that is incomplete but could still be completed; 0 if none.
size_t incomplete_tail(const std::string& s) {
    size_t n = s.size();
    for (size_t back = 1; back <= 3 && back <= n; back++) {
        uint8_t b = (uint8_t)s[n - back];
        if ((b & 0xC0) == 0x80) continue;  // continuation byte: keep looking for the lead
        size_t need = (size_t)sequence_length(b);
        if (need == 0 || back >= need) return 0;
        if (back >= 2 && !second_byte_ok(b, (uint8_t)s[n - back + 1])) return 0;
        return back;
    }
    return 0;
}

}  // namespace

// ---------------------------------------------------------------------------------------------------
// Public API

void tokenizer_load_for_model(Tokenizer* tok, const std::string& dir, int model_vocab, const std::string& hint) {
    tokenizer_load(tok, dir.empty() ? tokenizer_default_dir() : dir);
    tokenizer_check_vocab(*tok, model_vocab, hint);
}

void tokenizer_check_vocab(const Tokenizer& tok, int model_vocab, const std::string& hint) {
    if (tok.vocab_size == model_vocab) return;
    const char* fmt = "tokenizer and model disagree (%s): tokenizer has %d tokens, model %d";
    if (hint.empty()) fatal(fmt, tok.dir.c_str(), tok.vocab_size, model_vocab);
    fatal_hint(hint, fmt, tok.dir.c_str(), tok.vocab_size, model_vocab);
}

std::string tokenizer_spelling(const std::string& bytes) {
    uint32_t chars[256];
    byte_chars(chars);
    std::string out;
    for (unsigned char b : bytes) {
        const uint32_t cp = chars[b];  // below 0x800: one or two UTF-8 bytes
        if (cp < 0x80) {
            out += (char)cp;
        } else {
            out += (char)(0xC0 | (cp >> 6));
            out += (char)(0x80 | (cp & 0x3F));
        }
    }
    return out;
}

std::vector<std::pair<int, int>> tokenizer_merge_pairs(const Tokenizer& tok) {
    std::vector<std::pair<int, int>> pairs(tok.merges.size());
    for (const auto& m : tok.merges) pairs[m.second.rank] = {(int)(m.first >> 32), (int)(uint32_t)m.first};
    return pairs;
}

bool tokenizer_files_present(const std::string& dir) {
    return (file_exists(path_join(dir, "encoder.json")) && file_exists(path_join(dir, "vocab.bpe"))) ||
           (file_exists(path_join(dir, "vocab.json")) && file_exists(path_join(dir, "merges.txt")));
}

std::string tokenizer_default_dir() {
    const char* root = getenv("GPT2_DATA_DIR");
    if (root && root[0]) return path_join(root, "gpt2");
    return "data/gpt2";
}

void tokenizer_load(Tokenizer* tok, const std::string& dir) {
    const char* hint = "set GPT2_DATA_DIR to the directory holding gpt2/, pass --tokenizer DIR, or run `make data`";
    if (!dir_exists(dir))
        fatal_hint(hint,
                   "tokenizer directory not found (%s): expected encoder.json + vocab.bpe or "
                   "vocab.json + merges.txt",
                   dir.c_str());
    std::string vocab_path, merges_path;
    if (file_exists(path_join(dir, "encoder.json"))) {
        vocab_path = path_join(dir, "encoder.json");
        merges_path = path_join(dir, "vocab.bpe");
    } else if (file_exists(path_join(dir, "vocab.json"))) {
        vocab_path = path_join(dir, "vocab.json");
        merges_path = path_join(dir, "merges.txt");
    } else {
        fatal_hint(hint,
                   "tokenizer files not found (%s): expected encoder.json + vocab.bpe or vocab.json + "
                   "merges.txt",
                   dir.c_str());
    }
    if (!file_exists(merges_path))
        fatal_hint(hint, "tokenizer merges not found (%s): expected it beside %s", merges_path.c_str(),
                   vocab_path.c_str());
    *tok = Tokenizer();
    tok->dir = dir;
    std::unique_ptr<VocabBuilder> vb;
    load_vocab(tok, vocab_path, &vb);
    load_merges(vb.get(), merges_path);
    tok->cache.reserve(1 << 16);
}

std::vector<int> tokenizer_encode(Tokenizer* tok, const std::string& text) {
    const uint8_t* s = (const uint8_t*)text.data();
    size_t n = text.size(), i = 0;
    std::vector<int> out;
    out.reserve(n / 4 + 16);
    while (i < n) {
        size_t end = next_piece(s, n, i);
        encode_piece(tok, s + i, end - i, &out);
        i = end;
    }
    return out;
}

size_t tokenizer_cut_before(const char* text, size_t n, size_t lo, size_t hi) {
    const uint8_t* s = (const uint8_t*)text;
    if (n == 0) return 0;
    if (hi >= n) hi = n - 1;
    for (size_t p = hi; p > lo; p--) {
        uint8_t b = s[p];
        if (b != ' ' && b != '\n' && b != '\t' && b != '\r' && b != '\v' && b != '\f') continue;
        uint8_t a = s[p - 1];
        if (a >= 0x21 && a <= 0x7E) return p;  // printable ASCII is never whitespace
        // A multi-byte character ending at p: its lead byte starts a character wherever parsing began,
        // because only 0x80..0xBF continue one.
        for (size_t k = 2; k <= 4 && k <= p - lo; k++) {
            size_t len;
            if ((s[p - k] & 0xC0) == 0x80) continue;
            if (char_at(s, n, p - k, &len) != kSpace && len == k) return p;
            break;
        }
    }
    return 0;
}

std::vector<std::string> tokenizer_pretokenize(const std::string& text) {
    const uint8_t* s = (const uint8_t*)text.data();
    std::vector<std::string> pieces;
    for (size_t i = 0, n = text.size(); i < n;) {
        size_t end = next_piece(s, n, i);
        pieces.push_back(text.substr(i, end - i));
        i = end;
    }
    return pieces;
}

std::string tokenizer_decode(const Tokenizer& tok, const std::vector<int>& ids) {
    std::string out;
    for (size_t i = 0; i < ids.size(); i++) {
        if (ids[i] < 0 || ids[i] >= tok.vocab_size)
            fatal("token id %d out of range (tokenizer_decode, position %zu): expected 0..%d", ids[i], i,
                  tok.vocab_size - 1);
        out += tok.token_bytes[ids[i]];
    }
    return out;
}

std::string TokenDecoder::push(int id) {
    if (id < 0 || id >= tok->vocab_size)
        fatal("token id %d out of range (TokenDecoder): expected 0..%d", id, tok->vocab_size - 1);
    pending += tok->token_bytes[id];
    size_t hold = incomplete_tail(pending);
    std::string out = pending.substr(0, pending.size() - hold);
    pending.erase(0, pending.size() - hold);
    return out;
}

std::string TokenDecoder::flush() {
    std::string out;
    out.swap(pending);
    return out;
}
