// tokenfile.h: llm.c's token file format: a header of 256 int32 (magic 20240520, version 1, token
// count, rest zero) followed by `count` uint16 tokens. Reading validates magic, version, the count against
// the file size and every id against the vocabulary; it does not batch (see dataloader.h).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

const int kTokenFileMagic = 20240520;
const int kTokenFileVersion = 1;
const int kTokenFileHeaderInts = 256;

// Writes atomically; ids must be < 65536 (fatal otherwise, naming the path).
void tokenfile_write(const std::string& path, const std::vector<int>& tokens);
// tokenfile_write's first half: writes and fsyncs a temporary beside `path` and returns its name, for
// file_publish once every output of a command is staged.
std::string tokenfile_stage(const std::string& path, const std::vector<int>& tokens);
// True when `path` is a regular file starting with the token file magic (tokenize may replace it).
bool tokenfile_is_token_file(const std::string& path);
// Validates a file image and copies its tokens to *out; false with the one-line message (naming `where`,
// usually the path) on any defect: short header, magic, version, odd size, count, an id >= vocab_size.
bool tokenfile_parse(const uint8_t* data, size_t n, int vocab_size, const std::string& where,
                     std::vector<uint16_t>* out, std::string* err);
// Reads and validates; any defect is fatal with tokenfile_parse's message (an id >= vocab_size names the
// file and the token's byte offset).
std::vector<uint16_t> tokenfile_read(const std::string& path, int vocab_size);
