// dataloader.h: batches of (B, T+1) windows from a token file. Window i covers tokens
// [i*T, i*T + T] (consecutive windows share one token, as llm.c's loader reads them). Training batches
// visit the windows in an order shuffled per epoch with a seeded RNG; evaluation reads consecutive
// windows from token 0. File validation lives in tokenfile.h.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "base/rng.h"

struct DataLoader {
    std::string path;
    std::vector<uint16_t> tokens;
    int B = 0, T = 0;
    int rank = 0, world = 1;  // data parallel: a step takes world * B windows, this rank the rank-th B of them
    size_t num_windows = 0;
    bool shuffle = false;
    Rng rng;
    std::vector<uint32_t> order;  // window order of the current epoch
    size_t pos = 0;               // next index into order
    int epoch = 0;
    std::vector<int> inputs, targets;  // (B, T) of the current batch
};

// Where a training loader is in its data, as a checkpoint keeps it: the epoch's window order, the next
// position in it, and the RNG that shuffles the next epoch. An empty order means no batch was drawn yet.
struct DataLoaderState {
    std::vector<uint32_t> order;
    int epoch = -1;
    size_t pos = 0;
    uint64_t rng = 0;
};
DataLoaderState dataloader_state(const DataLoader& dl);
// Consistent on its own: order a permutation of 0..n-1, pos inside it, epoch -1 exactly when the order is
// empty, a non-zero RNG state. false with a message otherwise.
bool dataloader_state_valid(const DataLoaderState& s, std::string* err);
// Puts dl where s says; fatal if s orders a different number of windows than dl's data has.
void dataloader_restore(DataLoader* dl, const DataLoaderState& s);

// Loads `path` (ids checked against vocab_size) and prepares (B, T) batches; fatal naming the file when
// it holds fewer than B*T + 1 tokens.
void dataloader_init(DataLoader* dl, const std::string& path, int vocab_size, int B, int T, bool shuffle,
                     uint64_t seed);
// Next training batch into inputs/targets: this rank's B windows of the step's world * B (a new shuffled
// epoch begins when fewer than world * B windows remain).
void dataloader_next(DataLoader* dl);
// Batch `index` of consecutive windows from token 0 (windows index*B .. index*B + B - 1).
void dataloader_batch_at(DataLoader* dl, size_t index);
// Number of whole batches of consecutive windows.
size_t dataloader_num_batches(const DataLoader& dl);
