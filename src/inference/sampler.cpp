// sampler.cpp: see sampler.h. Work is in double: the kept set is small after top-k, and the
// renormalised probabilities then sum to 1 within rounding.
#include "inference/sampler.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>

// A logit as an integer of the same order (-0 and +0, which compare equal, both 0), so that maxima over logits
// are integer maxima, which vectorize (a float max or compare loop stays scalar). In integers alone: a compiler
// allowed to ignore the sign of zero (-ffast-math in CXXFLAGS) keeps it.
static inline int32_t order_key(float x) {
    int32_t bits;
    memcpy(&bits, &x, 4);
    return bits >= 0 ? bits : -(bits & 0x7FFFFFFF);
}

// The vocabulary is read in chunks: each chunk's largest key in one vectorized pass, and the chunk itself only
// when that can matter: the scalar argmax over GPT-2's 50,257 logits was a visible share of an int8 token
// (tests/bench_results.md).
static const int kChunk = 64;

static int32_t chunk_max(const float* logits, int n) {
    int32_t m = INT32_MIN;
    for (int v = 0; v < n; v++) m = std::max(m, order_key(logits[v]));
    return m;
}

int sampler_argmax(const float* logits, int V) {
    int32_t top = INT32_MIN;
    int best = 0;
    for (int c0 = 0; c0 < V; c0 += kChunk) {  // the first chunk holding the largest, then its first such logit
        const int32_t m = chunk_max(logits + c0, std::min(kChunk, V - c0));
        if (m > top) top = m, best = c0;
    }
    while (order_key(logits[best]) != top) best++;
    return best;
}

// The order_key of the k-th largest of the first V logits, repeats counted (0 < k < V): the k largest so far in
// a min-heap, which a chunk enters only where its largest passes the heap's least.
static int32_t kth_largest(const float* logits, int V, int k) {
    std::vector<int32_t> heap(k);
    for (int v = 0; v < k; v++) heap[v] = order_key(logits[v]);
    std::make_heap(heap.begin(), heap.end(), std::greater<int32_t>());
    for (int c0 = k; c0 < V; c0 += kChunk) {
        const int n = std::min(kChunk, V - c0);
        if (chunk_max(logits + c0, n) <= heap.front()) continue;
        for (int v = c0; v < c0 + n; v++) {
            const int32_t key = order_key(logits[v]);
            if (key <= heap.front()) continue;
            std::pop_heap(heap.begin(), heap.end(), std::greater<int32_t>());
            heap.back() = key;
            std::push_heap(heap.begin(), heap.end(), std::greater<int32_t>());
        }
    }
    return heap.front();
}

// items sorted by falling probability from their scaled logits: softmax, then top-p.
static void softmax_top_p(std::vector<std::pair<int, double>>* items, float top_p) {
    std::vector<std::pair<int, double>>& it = *items;
    double max_logit = it[0].second, sum = 0;
    for (auto& x : it) sum += (x.second = std::exp(x.second - max_logit));
    for (auto& x : it) x.second /= sum;
    // top-p keeps the smallest prefix whose probability reaches p (at least one token)
    if (top_p < 1.0f) {
        double cum = 0;
        size_t n = 0;
        while (n < it.size() && cum < top_p) cum += it[n++].second;
        it.resize(std::max<size_t>(n, 1));
        double kept = 0;
        for (auto& x : it) kept += x.second;
        for (auto& x : it) x.second /= kept;
    }
}

std::vector<std::pair<int, double>> sampler_distribution(const float* logits, int V, const SamplerConfig& cfg) {
    // top-k keeps every logit >= the k-th largest, ties included, as HuggingFace's TopKLogitsWarper does. It
    // chooses on the logits: dividing by the temperature keeps their order and their ties.
    const bool top_k = cfg.top_k > 0 && cfg.top_k < V;
    const int32_t least = top_k ? kth_largest(logits, V, cfg.top_k) : INT32_MIN;
    // The kept tokens in rising order, each with its logit's order falling (a key that sorts first for the
    // largest logit), then sorted stably by that key in four passes of a byte each (least significant first):
    // by falling logit, then rising token (far faster than a comparison sort: tests/bench_results.md).
    std::vector<std::pair<uint32_t, int>> kept, next;
    for (int c0 = 0; c0 < V; c0 += kChunk) {
        const int n = std::min(kChunk, V - c0);
        if (top_k && chunk_max(logits + c0, n) < least) continue;
        for (int v = c0; v < c0 + n; v++)
            if (order_key(logits[v]) >= least) kept.push_back({~((uint32_t)order_key(logits[v]) ^ 0x80000000u), v});
    }
    next.resize(kept.size());
    for (int shift = 0; shift < 32; shift += 8) {
        size_t at[257] = {};
        for (const auto& k : kept) at[(k.first >> shift & 0xFF) + 1]++;
        for (int b = 0; b < 256; b++) at[b + 1] += at[b];
        for (const auto& k : kept) next[at[k.first >> shift & 0xFF]++] = k;
        kept.swap(next);
    }
    std::vector<std::pair<int, double>> items(kept.size());
    for (size_t i = 0; i < kept.size(); i++) {
        const int v = kept[i].second;
        items[i] = {v, (double)logits[v] / cfg.temperature};
    }
    softmax_top_p(&items, cfg.top_p);
    return items;
}

// The plain form of sampler_distribution, for the tests: every logit a pair, top-k by nth_element.
std::vector<std::pair<int, double>> sampler_distribution_ref(const float* logits, int V, const SamplerConfig& cfg) {
    std::vector<std::pair<int, double>> items(V);
    for (int v = 0; v < V; v++) items[v] = {v, (double)logits[v] / cfg.temperature};
    auto by_logit = [](const std::pair<int, double>& a, const std::pair<int, double>& b) {
        return a.second != b.second ? a.second > b.second : a.first < b.first;
    };
    // top-k keeps every logit >= the k-th largest, ties included, as HuggingFace's TopKLogitsWarper does
    size_t keep = items.size();
    if (cfg.top_k > 0 && cfg.top_k < V) {
        std::nth_element(items.begin(), items.begin() + (cfg.top_k - 1), items.end(), by_logit);
        double kth = items[cfg.top_k - 1].second;
        keep = std::partition(items.begin(), items.end(),
                              [kth](const std::pair<int, double>& x) { return x.second >= kth; }) -
               items.begin();
    }
    items.resize(keep);
    std::sort(items.begin(), items.end(), by_logit);
    softmax_top_p(&items, cfg.top_p);
    return items;
}

int sampler_sample(const float* logits, int V, const SamplerConfig& cfg, Rng* rng) {
    if (cfg.temperature <= 0) return sampler_argmax(logits, V);
    std::vector<std::pair<int, double>> dist = sampler_distribution(logits, V, cfg);
    double u = rng->uniform(), cum = 0;
    for (const auto& it : dist) {
        cum += it.second;
        if (u < cum) return it.first;
    }
    return dist.back().first;  // u within rounding of 1
}
