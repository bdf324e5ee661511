// fuzz_train_state.cpp: libFuzzer target for the train state reader. Parses the bytes as a safetensors
// image and, when that validates, as train_state.safetensors; an accepted state must be self-consistent
// (permutations for the loader's shard and window orders, positions inside them, moments of one size and
// 8-bit moments' steps one per 64, history steps in range), so that restoring it can never index out of bounds.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "formats/train_state.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    SafeTensors st;
    std::string err;
    if (!safetensors_parse(&st, std::vector<uint8_t>(data, data + size), &err)) return 0;
    TrainState ts;
    if (!train_state_parse(st, &ts, &err)) {
        if (err.empty()) abort();  // a rejection always says why
        return 0;
    }
    const DataLoaderState& dl = ts.loader;
    std::vector<bool> seen(dl.order.size(), false);
    for (uint32_t w : dl.order) {
        if (w >= dl.order.size() || seen[w]) abort();
        seen[w] = true;
    }
    std::vector<bool> seen_shard(dl.shard_order.size(), false);
    for (uint32_t s : dl.shard_order) {
        if (s >= dl.shard_order.size() || seen_shard[s]) abort();
        seen_shard[s] = true;
    }
    if (!dl.shard_order.empty() && (dl.shard_pos >= dl.shard_order.size() || dl.shard_order.size() != ts.data_shards))
        abort();
    if (dl.pos > dl.order.size() || ts.m.numel() != ts.v.numel() || dl.rng.state == 0 || ts.step < 0) abort();
    const size_t n = ts.m.numel();  // 8-bit moments (U8): one step per 64 of them, for m and for v
    if (ts.m.dtype == "U8" && (n % 64 || ts.m_step.numel() * 64 != n || ts.v_step.numel() * 64 != n)) abort();
    for (const auto& p : ts.history.train)
        if (p.first < 1 || p.first > ts.step) abort();
    return 0;
}
