// dataloader.h: batches of (B, T+1) windows from one token file or a list of shards (llm.c's format).
// Window i of a shard covers its tokens [i*T, i*T + T] (consecutive windows share one
// token, as llm.c's loader reads them); a batch never spans two shards. Training batches follow llm.c's
// shuffle: each epoch a seeded permutation of the shards, and within each shard a permutation of its
// windows (with no shuffle, both in order). llm.c permutes whole batches of B*T contiguous tokens; here
// the unit is one window, as the single-file loader always had it. Evaluation reads each shard's
// consecutive windows from token 0. File validation lives in tokenfile.h; ./gpt2 plugs globs, mapped
// shards and the SIGBUS guard in through the seams below (formats/token_files.h).
// Reference: llm.c llmc/dataloader.h (read, not copied).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/rng.h"
#include "core/tokenfile.h"

// Where a training loader is in its data, as a checkpoint keeps it: the epoch's shard order and the
// current shard in it, that shard's window order and the next position in it, and the RNG that shuffles
// what comes next. Empty orders mean no batch was drawn yet.
struct DataLoaderState {
    std::vector<uint32_t> shard_order;  // shard order of the current epoch
    size_t shard_pos = 0;               // index into shard_order of the current shard
    std::vector<uint32_t> order;        // window order within the current shard, when stored (small shards)
    // A shard of more than kDataLoaderStoredOrder windows keeps no order: window i of its epoch order is
    // dataloader_permute(i, order_windows, order_key), so memory stays flat with shard size. order_key 0
    // is the identity (no shuffle). order_windows is 0 while the order is stored.
    uint64_t order_key = 0;
    size_t order_windows = 0;
    int epoch = -1;
    size_t pos = 0;  // next index into the order
    Rng rng;
};

struct DataLoader {
    std::string spec;  // the --train/--val value the shards came from, for messages
    std::vector<TokenShard> shards;
    int B = 0, T = 0;
    int vocab_size = 0;  // every id a batch takes is checked against it again (the file may change)
    // Data parallelism and accumulation: an optimizer step consumes accum * world * B windows (the global
    // batch) of one shard; micro-batch m of rank r takes the (m * world + r)-th group of B. So every split
    // of one global batch (2 ranks of B=2, 1 rank of B=4, 1 rank of 2 micro-batches of B=2) takes the same
    // windows in every step, and a run can go on under another rank count. 0, 1, 1 for a single process.
    int rank = 0, world = 1, accum = 1;
    int micro = 0;  // the next micro-batch of the current step
    size_t num_windows = 0;  // over all shards
    bool shuffle = false;
    DataLoaderState at;  // where it is in its data
    std::vector<int> inputs, targets;  // (B, T) of the current batch
};

// Shards of up to this many windows keep their order as a list (256 KB at most); larger ones compute it.
const size_t kDataLoaderStoredOrder = 65536;
// A bijection of [0, n) chosen by key (n <= 2^32; key 0: the identity): a 4-round Feistel network on the
// smallest 2^(2h) >= n, applied again until the value falls inside [0, n) (cycle walking).
uint32_t dataloader_permute(uint64_t i, uint64_t n, uint64_t key);
DataLoaderState dataloader_state(const DataLoader& dl);  // between optimizer steps (micro 0)
// Puts dl where s says; s must fit dl's shards (formats/train_state.cpp checks a state read from a file).
void dataloader_restore(DataLoader* dl, const DataLoaderState& s);

// Seam: the files `spec` names (`flag` for messages). The core's default takes spec as one path; ./gpt2's
// takes comma-separated paths and globs (formats/token_files.h).
extern std::vector<std::string> (*dataloader_expand)(const std::string& spec, const char* flag);
// Seam: runs copy(arg), the read of a batch from its shard; false when the shard's memory vanished under
// it. The core's default just calls it; ./gpt2's catches the SIGBUS of a mapped file that shrank.
extern bool (*dataloader_guard)(void (*copy)(void*), void* arg);
// Opens the shards of `spec` (ids checked against vocab_size) and prepares (B, T) batches; fatal naming
// the shard when one holds fewer than accum*world*B*T + 1 tokens.
void dataloader_init(DataLoader* dl, const std::string& spec, const char* flag, int vocab_size, int B, int T,
                     bool shuffle, uint64_t seed);
size_t dataloader_num_tokens(const DataLoader& dl);
// Windows of shard s.
size_t dataloader_shard_windows(const DataLoader& dl, size_t s);
// Next training batch into inputs/targets: this rank's B windows of the current micro-batch. The first
// micro-batch of a step places the step's accum*world*B windows in the current shard (the next shard begins
// when fewer remain, a new epoch after the last shard); the last moves past them.
// A shard that changed under the run (shrunk, caught by dataloader_guard; or an id now out of range)
// is fatal naming it; dataloader_try_next returns false with that message instead, dl having moved on
// (a caller that carries on restores the dataloader_state it took before: cli/train_run.cpp does).
void dataloader_next(DataLoader* dl);
bool dataloader_try_next(DataLoader* dl, std::string* err);
// Batch `index` of consecutive windows, counting each shard's whole batches in turn (for one file: windows
// index*B .. index*B + B - 1). A shard that changed is fatal, as for dataloader_next.
void dataloader_batch_at(DataLoader* dl, size_t index);
// Number of whole batches of consecutive windows, summed over shards.
size_t dataloader_num_batches(const DataLoader& dl);
