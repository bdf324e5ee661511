// tokenfile.cpp: see tokenfile.h.
#include "core/tokenfile.h"

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <utility>

#include "platform/hash.h"
#include "platform/platform.h"
#include "platform/output_files.h"
#include "platform/util.h"

const OutputKind kTokenFileKind = {"a token file", tokenfile_is_token_file};

void tokenfile_write(const std::string& path, const std::vector<int>& tokens) {
    int32_t header[kTokenFileHeaderInts] = {0};
    header[0] = kTokenFileMagic;
    header[1] = kTokenFileVersion;
    header[2] = (int32_t)tokens.size();
    std::vector<uint16_t> data(tokens.size());
    for (size_t i = 0; i < tokens.size(); i++) {
        if (tokens[i] < 0 || tokens[i] > 65535)
            fatal("token %d at index %zu does not fit uint16 (%s)", tokens[i], i, path.c_str());
        data[i] = (uint16_t)tokens[i];
    }
    output_write(path, "token file", kTokenFileKind,
                 {{header, sizeof(header)}, {data.data(), data.size() * sizeof(uint16_t)}});
}

bool tokenfile_is_token_file(const std::string& path) {
    const std::vector<uint8_t> head = file_head_bytes(path, 4);
    int32_t magic = 0;
    if (head.size() == 4) memcpy(&magic, head.data(), 4);
    return magic == kTokenFileMagic;
}

// Formats like printf into *err and returns false, so each check below is one line.
__attribute__((format(printf, 2, 3))) static bool tokenfile_fail(std::string* err, const char* fmt, ...) {
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int len = vsnprintf(nullptr, 0, fmt, ap);
    va_end(ap);
    err->assign(len > 0 ? (size_t)len : 0, '\0');
    if (len > 0) vsnprintf(&(*err)[0], (size_t)len + 1, fmt, ap2);
    va_end(ap2);
    return false;
}

// The header checks of tokenfile_parse; *count gets the token count.
static bool check_header(const uint8_t* data, size_t n, const char* w, size_t* count, std::string* err) {
    const size_t header_bytes = kTokenFileHeaderInts * sizeof(int32_t);
    if (n < header_bytes)
        return tokenfile_fail(err, "token file too short (%s): expected a %zu-byte header, got %zu bytes", w,
                              header_bytes, n);
    int32_t header[3];
    memcpy(header, data, sizeof(header));
    if (header[0] != kTokenFileMagic)
        return tokenfile_fail(err, "bad magic in token file (%s) at offset 0: expected %d, got %d", w, kTokenFileMagic,
                              header[0]);
    if (header[1] != kTokenFileVersion)
        return tokenfile_fail(err, "unsupported token file version (%s) at offset 4: expected %d, got %d", w,
                              kTokenFileVersion, header[1]);
    size_t payload = n - header_bytes;
    if (payload % 2 != 0)
        return tokenfile_fail(
            err, "odd byte count in token file (%s): %zu bytes after the header, expected uint16 tokens", w, payload);
    if (header[2] < 0 || (size_t)header[2] != payload / 2)
        return tokenfile_fail(err,
                              "token count mismatch in token file (%s) at offset 8: header says %d, file holds %zu", w,
                              header[2], payload / 2);
    *count = payload / 2;
    return true;
}

static bool check_ids(const uint16_t* tokens, size_t n, int vocab_size, const char* w, std::string* err) {
    uint16_t max = 0;  // one branch-free pass; the position is looked up only on failure
    for (size_t i = 0; i < n; i++) max = tokens[i] > max ? tokens[i] : max;
    if ((int)max < vocab_size) return true;
    for (size_t i = 0; i < n; i++)
        if ((int)tokens[i] >= vocab_size)
            return tokenfile_fail(err, "token id %d out of range in %s at byte offset %zu: expected < %d", tokens[i], w,
                                  kTokenFileHeaderInts * sizeof(int32_t) + 2 * i, vocab_size);
    return true;
}

bool tokenfile_parse(const uint8_t* data, size_t n, int vocab_size, const std::string& where,
                     std::vector<uint16_t>* out, std::string* err) {
    size_t count = 0;
    if (!check_header(data, n, where.c_str(), &count, err)) return false;
    std::vector<uint16_t> tokens(count);
    if (count) memcpy(tokens.data(), data + kTokenFileHeaderInts * sizeof(int32_t), count * 2);
    if (!check_ids(tokens.data(), count, vocab_size, where.c_str(), err)) return false;
    *out = std::move(tokens);
    return true;
}

std::vector<uint16_t> tokenfile_read(const std::string& path, int vocab_size) {
    std::vector<uint8_t> bytes = file_read(path);
    std::vector<uint16_t> tokens;
    std::string err;
    if (!tokenfile_parse(bytes.data(), bytes.size(), vocab_size, path, &tokens, &err)) fatal("%s", err.c_str());
    return tokens;
}

TokenShard::TokenShard(TokenShard&& o) noexcept { *this = std::move(o); }

TokenShard& TokenShard::operator=(TokenShard&& o) noexcept {
    if (this != &o) {
        if (map) os_unmap(map, map_bytes);
        path = std::move(o.path), fingerprint = std::move(o.fingerprint), tokens = o.tokens, num_tokens = o.num_tokens, map = o.map, map_bytes = o.map_bytes;
        o.tokens = nullptr, o.num_tokens = 0, o.map = nullptr, o.map_bytes = 0;
    }
    return *this;
}

TokenShard::~TokenShard() {
    if (map) os_unmap(map, map_bytes);
}

void tokenfile_map(TokenShard* shard, const std::string& path, int vocab_size) {
    const char* w = path.c_str();
    int fd = os_open_read(path);  // non-blocking: opening a FIFO must not hang
    if (fd < 0) fatal("cannot open %s: %s", w, strerror(errno));
    input_note_fd(fd);
    FileInfo st;
    if (!os_fstat(fd, &st) || st.kind != FileKind::regular) {
        os_close(fd);
        fatal("not a regular file (%s): expected a token file", w);
    }
    const size_t n = (size_t)st.size;
    const size_t header_bytes = kTokenFileHeaderInts * sizeof(int32_t);
    if (n < header_bytes) {  // also keeps an empty file away from mmap
        os_close(fd);
        fatal("token file too short (%s): expected a %zu-byte header, got %zu bytes", w, header_bytes, n);
    }
    void* map = os_map_read(fd, n);
    os_close(fd);  // the mapping keeps the file
    if (!map) fatal("cannot map %s: %s", w, strerror(errno));
    TokenShard s;
    s.path = path, s.map = map, s.map_bytes = n;
    std::string err;
    size_t count = 0;
    if (!check_header(static_cast<const uint8_t*>(map), n, w, &count, &err)) fatal("%s", err.c_str());
    s.tokens = reinterpret_cast<const uint16_t*>(static_cast<const uint8_t*>(map) + header_bytes);
    s.num_tokens = count;
    os_map_sequential(map, n);
    if (!check_ids(s.tokens, count, vocab_size, w, &err)) fatal("%s", err.c_str());
    s.fingerprint = tokenfile_fingerprint(s);
    // The pass above faulted every page in; drop them from this process (they stay in the page cache) and
    // let batches fault in just the windows they read.
    os_map_release(map, n);
    *shard = std::move(s);
}

std::string tokenfile_fingerprint(const TokenShard& shard) {
    const size_t edge = (size_t)1 << 19;  // tokens in 1 MiB
    const uint64_t count = shard.num_tokens;
    uint64_t h = fnv1a(&count, sizeof(count));
    h = fnv1a(shard.map, kTokenFileHeaderInts * sizeof(int32_t), h);
    if (shard.num_tokens <= 2 * edge) {
        h = fnv1a(shard.tokens, shard.num_tokens * 2, h);
    } else {
        h = fnv1a(shard.tokens, edge * 2, h);
        h = fnv1a(shard.tokens + shard.num_tokens - edge, edge * 2, h);
    }
    return hash_hex(h);
}
