// tokenfile.h: llm.c's token file format: a header of 256 int32 (magic 20240520, version 1, token
// count, rest zero) followed by `count` uint16 tokens, opened and validated (batches: dataloader.h).
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

const int kTokenFileMagic = 20240520;
const int kTokenFileVersion = 1;
const int kTokenFileHeaderInts = 256;
const size_t kTokenFileHeaderBytes = kTokenFileHeaderInts * sizeof(int32_t);

// Validates a file image of n bytes: *count gets its token count, or false with the one-line message
// (naming `where`, usually the path) on any defect: short header, magic, version, odd size, count, an id
// >= vocab_size (with its byte offset). Reads no byte past a short header.
bool tokenfile_check(const uint8_t* data, size_t n, int vocab_size, const std::string& where, size_t* count,
                     std::string* err);

// One opened token file. `image` owns the memory the tokens sit in (the file read whole, or ./gpt2's
// mapping; its header right before `tokens`): copies share it, the last one releases it.
struct TokenShard {
    std::string path;
    const uint16_t* tokens = nullptr;  // (num_tokens,)
    size_t num_tokens = 0;
    std::string fingerprint;  // for resume, set by ./gpt2's opener (formats/token_files.h); empty otherwise
    std::shared_ptr<const void> image;
};
// Seam: opens and validates `path` as tokenfile_check does, fatal on a defect. The core's default reads the
// whole file (tokenfile_read); ./gpt2 maps it (formats/token_files.h).
extern void (*tokenfile_open)(TokenShard* shard, const std::string& path, int vocab_size);
void tokenfile_read(TokenShard* shard, const std::string& path, int vocab_size);
