// tokenfile.cpp: see tokenfile.h.
#include "io/tokenfile.h"

#include <cstdarg>
#include <cstdio>
#include <cstring>

#include "base/util.h"

std::string tokenfile_stage(const std::string& path, const std::vector<int>& tokens) {
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
    return file_write_staged(path, {{header, sizeof(header)}, {data.data(), data.size() * sizeof(uint16_t)}});
}

void tokenfile_write(const std::string& path, const std::vector<int>& tokens) {
    file_publish(tokenfile_stage(path, tokens), path);
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

bool tokenfile_parse(const uint8_t* data, size_t n, int vocab_size, const std::string& where,
                     std::vector<uint16_t>* out, std::string* err) {
    const char* w = where.c_str();
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
    std::vector<uint16_t> tokens(payload / 2);
    if (!tokens.empty()) memcpy(tokens.data(), data + header_bytes, payload);
    for (size_t i = 0; i < tokens.size(); i++)
        if ((int)tokens[i] >= vocab_size)
            return tokenfile_fail(err, "token id %d out of range in %s at byte offset %zu: expected < %d", tokens[i], w,
                                  header_bytes + 2 * i, vocab_size);
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
