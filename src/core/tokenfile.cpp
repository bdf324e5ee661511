// tokenfile.cpp: see tokenfile.h.
#include "core/tokenfile.h"

#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <utility>

#include "core/error.h"

// Formats like printf into *err and returns false, so each check below is one line.
__attribute__((format(printf, 2, 3))) static bool tokenfile_fail(std::string* err, const char* fmt, ...) {
    char message[4096];  // as long as fatal's whole line
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof(message), fmt, ap);
    va_end(ap);
    *err = message;
    return false;
}

bool tokenfile_check(const uint8_t* data, size_t n, int vocab_size, const std::string& where, size_t* count,
                     std::string* err) {
    const char* w = where.c_str();
    if (n < kTokenFileHeaderBytes)
        return tokenfile_fail(err, "token file too short (%s): expected a %zu-byte header, got %zu bytes", w,
                              kTokenFileHeaderBytes, n);
    int32_t header[3];
    memcpy(header, data, sizeof(header));
    if (header[0] != kTokenFileMagic)
        return tokenfile_fail(err, "bad magic in token file (%s) at offset 0: expected %d, got %d", w, kTokenFileMagic,
                              header[0]);
    if (header[1] != kTokenFileVersion)
        return tokenfile_fail(err, "unsupported token file version (%s) at offset 4: expected %d, got %d", w,
                              kTokenFileVersion, header[1]);
    size_t payload = n - kTokenFileHeaderBytes;
    if (payload % 2 != 0)
        return tokenfile_fail(
            err, "odd byte count in token file (%s): %zu bytes after the header, expected uint16 tokens", w, payload);
    if (header[2] < 0 || (size_t)header[2] != payload / 2)
        return tokenfile_fail(err,
                              "token count mismatch in token file (%s) at offset 8: header says %d, file holds %zu", w,
                              header[2], payload / 2);
    *count = payload / 2;
    const uint16_t* tokens = reinterpret_cast<const uint16_t*>(data + kTokenFileHeaderBytes);
    const size_t n_tokens = *count;
    uint16_t max = 0;  // one branch-free pass; the position is looked up only on failure
    for (size_t i = 0; i < n_tokens; i++) max = tokens[i] > max ? tokens[i] : max;
    if ((int)max < vocab_size) return true;
    for (size_t i = 0; i < n_tokens; i++)
        if ((int)tokens[i] >= vocab_size)
            return tokenfile_fail(err, "token id %d out of range in %s at byte offset %zu: expected < %d", tokens[i], w,
                                  kTokenFileHeaderBytes + 2 * i, vocab_size);
    return true;
}

void tokenfile_read(TokenShard* shard, const std::string& path, int vocab_size) {
    auto bytes = std::make_shared<std::vector<uint8_t>>(read_whole_file(path, SIZE_MAX));
    std::string err;
    size_t count = 0;
    if (!tokenfile_check(bytes->data(), bytes->size(), vocab_size, path, &count, &err)) fatal("%s", err.c_str());
    shard->path = path;
    shard->tokens = reinterpret_cast<const uint16_t*>(bytes->data() + kTokenFileHeaderBytes);
    shard->num_tokens = count;
    shard->image = std::move(bytes);
}

void (*tokenfile_open)(TokenShard* shard, const std::string& path, int vocab_size) = tokenfile_read;
