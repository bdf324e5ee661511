// dataloader.cpp: see dataloader.h.
#include "io/dataloader.h"

#include "base/util.h"
#include "io/tokenfile.h"

void dataloader_init(DataLoader* dl, const std::string& path, int vocab_size, int B, int T, bool shuffle,
                     uint64_t seed) {
    dl->path = path;
    dl->tokens = tokenfile_read(path, vocab_size);
    dl->B = B;
    dl->T = T;
    size_t need = (size_t)B * T + 1;
    if (dl->tokens.size() < need)
        fatal("too few tokens in %s: expected at least B*T+1 = %zu, got %zu", path.c_str(), need, dl->tokens.size());
    dl->num_windows = (dl->tokens.size() - 1) / T;
    dl->shuffle = shuffle;
    dl->rng = Rng(seed);
    dl->order.clear();
    dl->pos = 0;
    dl->epoch = -1;  // dataloader_next starts epoch 0
    dl->inputs.assign((size_t)B * T, 0);
    dl->targets.assign((size_t)B * T, 0);
}

static void load_windows(DataLoader* dl, const uint32_t* windows) {
    const int B = dl->B, T = dl->T;
    for (int b = 0; b < B; b++) {
        const uint16_t* src = dl->tokens.data() + (size_t)windows[b] * T;
        for (int t = 0; t < T; t++) {
            dl->inputs[(size_t)b * T + t] = src[t];
            dl->targets[(size_t)b * T + t] = src[t + 1];
        }
    }
}

void dataloader_next(DataLoader* dl) {
    const size_t global = (size_t)dl->B * dl->world;  // this step's windows, over all ranks
    if (dl->epoch < 0 || dl->pos + global > dl->order.size()) {
        dl->epoch++;
        dl->order.resize(dl->num_windows);
        for (size_t i = 0; i < dl->num_windows; i++) dl->order[i] = (uint32_t)i;
        if (dl->shuffle)  // Fisher-Yates
            for (size_t i = dl->num_windows - 1; i > 0; i--)
                std::swap(dl->order[i], dl->order[dl->rng.below((uint32_t)i + 1)]);
        dl->pos = 0;
    }
    load_windows(dl, dl->order.data() + dl->pos + (size_t)dl->rank * dl->B);  // this rank's B of them
    dl->pos += global;
}

size_t dataloader_num_batches(const DataLoader& dl) { return dl.num_windows / dl.B; }

void dataloader_batch_at(DataLoader* dl, size_t index) {
    if (index >= dataloader_num_batches(*dl))
        fatal("batch %zu out of range for %s: it holds %zu batches of B=%d, T=%d", index, dl->path.c_str(),
              dataloader_num_batches(*dl), dl->B, dl->T);
    std::vector<uint32_t> windows(dl->B);
    for (int b = 0; b < dl->B; b++) windows[b] = (uint32_t)(index * dl->B + b);
    load_windows(dl, windows.data());
}

DataLoaderState dataloader_state(const DataLoader& dl) {
    DataLoaderState s;
    s.order = dl.order;
    s.epoch = dl.epoch;
    s.pos = dl.pos;
    s.rng = dl.rng.state;
    return s;
}

bool dataloader_state_valid(const DataLoaderState& s, std::string* err) {
    std::vector<bool> seen(s.order.size(), false);
    for (uint32_t w : s.order) {
        if (w >= seen.size() || seen[w]) return *err = "loader.order is not a permutation of the windows", false;
        seen[w] = true;
    }
    if (s.pos > s.order.size()) return *err = "loader.pos past the end of loader.order", false;
    if (s.order.empty() != (s.epoch < 0) || (s.order.empty() && s.pos != 0))
        return *err = "loader.epoch, loader.pos and loader.order disagree", false;
    if (s.rng == 0) return *err = "loader.rng is 0, expected a non-zero state", false;
    return true;
}

void dataloader_restore(DataLoader* dl, const DataLoaderState& s) {
    if (!s.order.empty() && s.order.size() != dl->num_windows)
        fatal("data changed (%s): the saved order has %zu windows, the file %zu", dl->path.c_str(), s.order.size(),
              dl->num_windows);
    dl->order = s.order;
    dl->epoch = s.epoch;
    dl->pos = s.pos;
    dl->rng.state = s.rng;
}
