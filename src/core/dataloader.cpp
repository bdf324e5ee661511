// dataloader.cpp: see dataloader.h.
#include "core/dataloader.h"

#include <algorithm>
#include <cassert>
#include <utility>

#include "core/error.h"

static std::vector<std::string> one_path(const std::string& spec, const char*) { return {spec}; }
std::vector<std::string> (*dataloader_expand)(const std::string& spec, const char* flag) = one_path;

static bool unguarded(void (*copy)(void*), void* arg) {
    copy(arg);
    return true;
}
bool (*dataloader_guard)(void (*copy)(void*), void* arg) = unguarded;

void dataloader_init(DataLoader* dl, const std::string& spec, const char* flag, int vocab_size, int B, int T,
                     bool shuffle, uint64_t seed) {
    dl->spec = spec;
    dl->shards.clear();
    dl->B = B;
    dl->T = T;
    dl->vocab_size = vocab_size;
    dl->num_windows = 0;
    const size_t need = (size_t)dl->accum * dl->world * B * T + 1;
    for (const std::string& path : dataloader_expand(spec, flag)) {
        TokenShard shard;
        tokenfile_open(&shard, path, vocab_size);
        if (shard.num_tokens < need)
            fatal("too few tokens in %s: expected at least %s%sB*T+1 = %zu, got %zu", path.c_str(),
                  dl->accum > 1 ? "grad-accum*" : "", dl->world > 1 ? "world*" : "", need, shard.num_tokens);
        dl->num_windows += (shard.num_tokens - 1) / T;
        dl->shards.push_back(std::move(shard));
    }
    if (dl->shards.size() > UINT32_MAX) fatal("too many shards in %s '%s'", flag, spec.c_str());
    dl->shuffle = shuffle;
    dl->at = DataLoaderState();  // epoch -1: dataloader_next starts epoch 0
    dl->at.rng = Rng(seed);
    dl->micro = 0;
    dl->inputs.assign((size_t)B * T, 0);
    dl->targets.assign((size_t)B * T, 0);
}

size_t dataloader_num_tokens(const DataLoader& dl) {
    size_t n = 0;
    for (const TokenShard& s : dl.shards) n += s.num_tokens;
    return n;
}

size_t dataloader_shard_windows(const DataLoader& dl, size_t s) { return (dl.shards[s].num_tokens - 1) / dl.T; }

namespace {

struct WindowCopy {
    DataLoader* dl;
    const TokenShard* shard;
    const uint32_t* windows;
    int bad_id = -1;  // an id >= vocab_size: the file changed since its check at open
};

void copy_windows(void* arg) {
    WindowCopy* w = static_cast<WindowCopy*>(arg);
    DataLoader* dl = w->dl;
    const int B = dl->B, T = dl->T;
    for (int b = 0; b < B; b++) {
        const uint16_t* src = w->shard->tokens + (size_t)w->windows[b] * T;
        for (int t = 0; t < T; t++) {
            dl->inputs[(size_t)b * T + t] = src[t];
            dl->targets[(size_t)b * T + t] = src[t + 1];
            if (src[t] >= dl->vocab_size || src[t + 1] >= dl->vocab_size)
                w->bad_id = std::max<int>(src[t], src[t + 1]);
        }
    }
}

// Copies B windows of `shard` into the batch. A mapped shard another process truncated faults here (caught
// by the guard), and one rewritten in place may hold ids it did not hold at open.
bool load_windows(DataLoader* dl, const TokenShard& shard, const uint32_t* windows, std::string* err) {
    WindowCopy w{dl, &shard, windows};
    const char* hint = "expected token files to stay unchanged while gpt2 reads them";
    if (!dataloader_guard(copy_windows, &w))
        *err = "token file changed during the run (" + shard.path + "): it is shorter than when it was opened; " + hint;
    else if (w.bad_id >= 0)
        *err = "token file changed during the run (" + shard.path + "): it now holds id " + std::to_string(w.bad_id) +
               ", outside the vocabulary of " + std::to_string(dl->vocab_size) + " it was checked against; " + hint;
    else
        return true;
    return false;
}

}  // namespace

// 0..n-1, in a Fisher-Yates permutation when shuffling. One element draws nothing from the RNG, so a single
// file's window orders are what they were before shards.
static void make_order(std::vector<uint32_t>* order, size_t n, bool shuffle, Rng* rng) {
    order->resize(n);
    for (size_t i = 0; i < n; i++) (*order)[i] = (uint32_t)i;
    if (shuffle)
        for (size_t i = n - 1; i > 0; i--) std::swap((*order)[i], (*order)[rng->below((uint32_t)i + 1)]);
}

uint32_t dataloader_permute(uint64_t i, uint64_t n, uint64_t key) {
    if (key == 0) return (uint32_t)i;
    int h = 1;
    while ((1ull << (2 * h)) < n) h++;
    const uint64_t mask = (1ull << h) - 1;
    uint64_t x = i;
    do {  // at most 4 passes on average: n > 2^(2h) / 4
        uint64_t l = x >> h, r = x & mask;
        for (uint64_t round = 0; round < 4; round++) {
            uint64_t z = r + key + round * 0x9E3779B97F4A7C15ull;  // splitmix64's finalizer as round function
            z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
            z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
            const uint64_t next_l = r;
            r = l ^ ((z ^ (z >> 31)) & mask);
            l = next_l;
        }
        x = (l << h) | r;
    } while (x >= n);
    return (uint32_t)x;
}

// The current shard's window order: its length, and entry i.
static size_t order_size(const DataLoader& dl) { return dl.at.order_windows ? dl.at.order_windows : dl.at.order.size(); }
static uint32_t order_at(const DataLoader& dl, size_t i) {
    return dl.at.order_windows ? dataloader_permute(i, dl.at.order_windows, dl.at.order_key) : dl.at.order[i];
}

void dataloader_next(DataLoader* dl) {
    std::string err;
    if (!dataloader_try_next(dl, &err)) fatal("%s", err.c_str());
}

bool dataloader_try_next(DataLoader* dl, std::string* err) {
    const size_t step = (size_t)dl->accum * dl->world * dl->B;
    if (dl->micro == 0 && (dl->at.epoch < 0 || dl->at.pos + step > order_size(*dl))) {
        // every shard holds >= step windows (dataloader_init), so one move always lands on a usable shard
        if (dl->at.epoch < 0 || dl->at.shard_pos + 1 >= dl->at.shard_order.size()) {
            dl->at.epoch++;
            make_order(&dl->at.shard_order, dl->shards.size(), dl->shuffle, &dl->at.rng);
            dl->at.shard_pos = 0;
        } else {
            dl->at.shard_pos++;
        }
        const size_t n = dataloader_shard_windows(*dl, dl->at.shard_order[dl->at.shard_pos]);
        if (n <= kDataLoaderStoredOrder) {
            make_order(&dl->at.order, n, dl->shuffle, &dl->at.rng);
            dl->at.order_key = 0, dl->at.order_windows = 0;
        } else {  // computed: two draws make the key (never 0 when shuffling)
            std::vector<uint32_t>().swap(dl->at.order);
            dl->at.order_key = dl->shuffle ? ((uint64_t)dl->at.rng.next_u32() << 32 | dl->at.rng.next_u32()) | 1 : 0;
            dl->at.order_windows = n;
        }
        dl->at.pos = 0;
    }
    std::vector<uint32_t> windows(dl->B);
    const size_t group = (size_t)dl->micro * dl->world + dl->rank;
    for (int b = 0; b < dl->B; b++) windows[b] = order_at(*dl, dl->at.pos + group * dl->B + b);
    if (!load_windows(dl, dl->shards[dl->at.shard_order[dl->at.shard_pos]], windows.data(), err)) return false;
    if (++dl->micro == dl->accum) dl->at.pos += step, dl->micro = 0;
    return true;
}

size_t dataloader_num_batches(const DataLoader& dl) {
    size_t n = 0;
    for (size_t s = 0; s < dl.shards.size(); s++) n += dataloader_shard_windows(dl, s) / dl.B;
    return n;
}

void dataloader_batch_at(DataLoader* dl, size_t index) {
    if (index >= dataloader_num_batches(*dl))
        fatal("batch %zu out of range for %s: it holds %zu batches of B=%d, T=%d", index, dl->spec.c_str(),
              dataloader_num_batches(*dl), dl->B, dl->T);
    size_t s = 0;
    for (; index >= dataloader_shard_windows(*dl, s) / dl->B; s++) index -= dataloader_shard_windows(*dl, s) / dl->B;
    std::vector<uint32_t> windows(dl->B);
    for (int b = 0; b < dl->B; b++) windows[b] = (uint32_t)(index * dl->B + b);
    std::string err;
    if (!load_windows(dl, dl->shards[s], windows.data(), &err)) fatal("%s", err.c_str());
}

DataLoaderState dataloader_state(const DataLoader& dl) {
    assert(dl.micro == 0 && "taken between steps");
    return dl.at;
}

void dataloader_restore(DataLoader* dl, const DataLoaderState& s) {
    dl->at = s;
    dl->micro = 0;  // states are taken between steps
}
