// tokenfile.h: llm.c's token file format: a header of 256 int32 (magic 20240520, version 1, token
// count, rest zero) followed by `count` uint16 tokens. Reading (into memory, or mapped for shards bigger
// than memory) validates magic, version, the count against the file size and every id against the
// vocabulary; it does not batch (see dataloader.h).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

const int kTokenFileMagic = 20240520;
const int kTokenFileVersion = 1;
const int kTokenFileHeaderInts = 256;

// Writes atomically, replacing only a token file; ids must be < 65536 (fatal otherwise, naming the path).
void tokenfile_write(const std::string& path, const std::vector<int>& tokens);
// True when `path` is a regular file starting with the token file magic (tokenize may replace it).
bool tokenfile_is_token_file(const std::string& path);
struct OutputKind;
extern const OutputKind kTokenFileKind;  // output_files.h: what token file outputs may replace
// Validates a file image and copies its tokens to *out; false with the one-line message (naming `where`,
// usually the path) on any defect: short header, magic, version, odd size, count, an id >= vocab_size.
bool tokenfile_parse(const uint8_t* data, size_t n, int vocab_size, const std::string& where,
                     std::vector<uint16_t>* out, std::string* err);
// Reads and validates; any defect is fatal with tokenfile_parse's message (an id >= vocab_size names the
// file and the token's byte offset).
std::vector<uint16_t> tokenfile_read(const std::string& path, int vocab_size);

// A token file mapped read-only (MAP_PRIVATE): the tokens are read through the page cache and never
// copied whole, so a shard costs address space and reclaimable file pages, not anonymous memory.
// Move-only: the mapping is released once, by the owner.
struct TokenShard {
    std::string path;
    const uint16_t* tokens = nullptr;  // (num_tokens,) inside the mapping
    size_t num_tokens = 0;
    std::string fingerprint;  // tokenfile_fingerprint at open, while the pages were read anyway
    TokenShard() = default;
    TokenShard(TokenShard&& o) noexcept;
    TokenShard& operator=(TokenShard&& o) noexcept;
    TokenShard(const TokenShard&) = delete;
    TokenShard& operator=(const TokenShard&) = delete;
    ~TokenShard();
    void* map = nullptr;  // the whole file, header included
    size_t map_bytes = 0;
};
// Maps `path` and validates it as tokenfile_parse does, every id included (one sequential pass over the
// file at open, then the pages are dropped from this process: a bad id is reported before training rather
// than hours into it). Any defect is fatal with tokenfile_parse's message naming the file.
void tokenfile_map(TokenShard* shard, const std::string& path, int vocab_size);
// A cheap fingerprint of a shard for resume (16 hex digits): FNV-1a (platform/hash.h) over the token count, the header and
// the first and last MiB of tokens (all tokens when there are at most 2 MiB of them). It catches a shard
// added, removed, reordered, grown, shrunk or rewritten at either end; it misses an edit of the same length
// confined to the middle of a shard bigger than 2 MiB.
std::string tokenfile_fingerprint(const TokenShard& shard);
