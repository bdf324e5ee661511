// tokenfile.h: llm.c's token file format: a header of 256 int32 (magic 20240520, version 1, token
// count, rest zero) followed by `count` uint16 tokens. Reading validates magic, version, the count against
// the file size and every id against the vocabulary; it does not batch (see dataloader.h).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

const int kTokenFileMagic = 20240520;
const int kTokenFileVersion = 1;
const int kTokenFileHeaderInts = 256;

// Writes atomically; ids must be < 65536 (fatal otherwise, naming the path).
void tokenfile_write(const std::string& path, const std::vector<int>& tokens);
// Reads and validates; any id >= vocab_size is fatal, naming the file and the token's byte offset.
std::vector<uint16_t> tokenfile_read(const std::string& path, int vocab_size);
