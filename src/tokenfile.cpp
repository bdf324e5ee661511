// tokenfile.cpp: see tokenfile.h.
#include "tokenfile.h"

#include <cstring>

#include "util.h"

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
    file_write_atomic(path, {{header, sizeof(header)}, {data.data(), data.size() * sizeof(uint16_t)}});
}

std::vector<uint16_t> tokenfile_read(const std::string& path, int vocab_size) {
    std::vector<uint8_t> bytes = file_read(path);
    const size_t header_bytes = kTokenFileHeaderInts * sizeof(int32_t);
    if (bytes.size() < header_bytes)
        fatal("token file too short (%s): expected a %zu-byte header, got %zu bytes", path.c_str(),
              header_bytes, bytes.size());
    int32_t header[3];
    memcpy(header, bytes.data(), sizeof(header));
    if (header[0] != kTokenFileMagic)
        fatal("bad magic in token file (%s) at offset 0: expected %d, got %d", path.c_str(), kTokenFileMagic,
              header[0]);
    if (header[1] != kTokenFileVersion)
        fatal("unsupported token file version (%s) at offset 4: expected %d, got %d", path.c_str(),
              kTokenFileVersion, header[1]);
    size_t payload = bytes.size() - header_bytes;
    if (payload % 2 != 0)
        fatal("odd byte count in token file (%s): %zu bytes after the header, expected uint16 tokens",
              path.c_str(), payload);
    if (header[2] < 0 || (size_t)header[2] != payload / 2)
        fatal("token count mismatch in token file (%s) at offset 8: header says %d, file holds %zu",
              path.c_str(), header[2], payload / 2);
    std::vector<uint16_t> tokens(payload / 2);
    if (!tokens.empty()) memcpy(tokens.data(), bytes.data() + header_bytes, payload);
    for (size_t i = 0; i < tokens.size(); i++)
        if ((int)tokens[i] >= vocab_size)
            fatal("token id %d out of range in %s at byte offset %zu: expected < %d", tokens[i], path.c_str(),
                  header_bytes + 2 * i, vocab_size);
    return tokens;
}
