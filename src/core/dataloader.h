// dataloader.h: llm.c's token file (256 int32 of header: magic 20240520, version 1, token count, rest zero; then
// `count` uint16 tokens), validated, and batches of (B, T+1) windows from it: window i covers tokens [i*T, i*T + T]
// (neighbours share one, as in llm.c). Each epoch takes the windows in a new seeded permutation (llm.c permutes
// whole batches). The core reads one file; through the seams below ./gpt2 reads shards, a batch never spanning
// two (formats/token_files.h). Reference: llm.c llmc/dataloader.h (read, not copied).
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/rng.h"

const int kTokenFileMagic = 20240520;
const int kTokenFileVersion = 1;
const int kTokenFileHeaderInts = 256;
const size_t kTokenFileHeaderBytes = kTokenFileHeaderInts * sizeof(int32_t);

// Validates a file image of n bytes: *count gets its token count, or false with a one-line message naming
// `where` (the path) on any defect, an id >= vocab_size with its byte offset. Reads no byte past a short header,
// nor past the header at all when header_only (then n is the size of the file whose header data holds).
bool tokenfile_check(const uint8_t* data, size_t n, int vocab_size, const std::string& where, size_t* count,
                     std::string* err, bool header_only = false);

// One opened token file, its header right before `tokens`. `image` owns their memory (the file read whole, or
// ./gpt2's mapping), shared by copies.
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

struct DataLoader {
    std::string spec;  // the --train/--val value the file came from, for messages
    std::vector<TokenShard> shards;
    int B = 0, T = 0, vocab_size = 0;
    // A step takes its global batch (accum * world * B windows) from one shard, micro-batch m of rank r the
    // (m * world + r)-th group of B: every split of it takes the same windows, so a run can change rank count.
    int rank = 0, world = 1, accum = 1;
    bool shuffle = false;
    // Where it is in its data (formats/train_state.h keeps it in a checkpoint):
    int epoch = -1;                     // -1: no batch drawn yet
    std::vector<uint32_t> shard_order;  // the shards of this epoch, in order
    size_t shard_pos = 0;               // the current shard's index in shard_order
    std::vector<uint32_t> order;        // the current shard's window order, when stored (small shards)
    // A shard of more than kDataLoaderStoredOrder windows keeps no order (256 KB at most, flat with shard size):
    // entry i is dataloader_permute(i, order_windows, order_key); order_windows is 0 while it is stored.
    uint64_t order_key = 0;
    size_t order_windows = 0;
    size_t pos = 0;  // next index into the order
    Rng rng;         // what shuffles the orders still to come
    int micro = 0;   // the next micro-batch of the current step
    std::vector<int> inputs, targets;  // (B, T) of the current batch
};

const size_t kDataLoaderStoredOrder = 65536;
// A bijection of [0, n) chosen by key (n <= 2^32; key 0: the identity): a 4-round Feistel network on the
// smallest 2^(2h) >= n, applied again until the value falls inside [0, n) (cycle walking).
uint32_t dataloader_permute(uint64_t i, uint64_t n, uint64_t key);
// 0..n-1 into *order, in a Fisher-Yates permutation drawn from rng when shuffling.
void dataloader_order(std::vector<uint32_t>* order, size_t n, bool shuffle, Rng* rng);

// Seams, the core's defaults here and ./gpt2's in formats/token_files.h: the files `spec` names (one path); the
// move to the next shard in shard_order, a new epoch after the last; the read of the B windows windows[] names
// into inputs and targets, false with *err when the shard changed under the run (dataloader_copy: never).
extern std::vector<std::string> (*dataloader_expand)(const std::string& spec, const char* flag);
extern void (*dataloader_next_shard)(DataLoader* dl);
extern bool (*dataloader_read)(DataLoader* dl, const TokenShard& shard, const uint32_t* windows, std::string* err);
bool dataloader_copy(DataLoader* dl, const TokenShard& shard, const uint32_t* windows, std::string* err);

// Opens the files of `spec` (ids checked against vocab_size) and prepares (B, T) batches from the start
// (rank, world and accum set first); fatal naming a file of fewer than accum*world*B*T + 1 tokens.
void dataloader_init(DataLoader* dl, const std::string& spec, const char* flag, int vocab_size, int B, int T,
                     bool shuffle, uint64_t seed);
size_t dataloader_shard_windows(const DataLoader& dl, size_t s);
// This rank's B windows of the current micro-batch into inputs/targets (a step's first moves to the next shard
// when too few remain); false with dataloader_read's message, dl moved on (train/step.cpp restores it).
bool dataloader_try_next(DataLoader* dl, std::string* err);
