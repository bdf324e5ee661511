// sampler.cpp: see sampler.h. Work is in double: the kept set is small after top-k, and the
// renormalised probabilities then sum to 1 within rounding.
#include "inference/sampler.h"

#include <algorithm>
#include <cmath>

int sampler_argmax(const float* logits, int V) {
    int best = 0;
    for (int v = 1; v < V; v++)
        if (logits[v] > logits[best]) best = v;
    return best;
}

std::vector<std::pair<int, double>> sampler_distribution(const float* logits, int V, const SamplerConfig& cfg) {
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
    double max_logit = items[0].second, sum = 0;
    for (auto& it : items) sum += (it.second = std::exp(it.second - max_logit));
    for (auto& it : items) it.second /= sum;
    // top-p keeps the smallest prefix whose probability reaches p (at least one token)
    if (cfg.top_p < 1.0f) {
        double cum = 0;
        size_t n = 0;
        while (n < items.size() && cum < cfg.top_p) cum += items[n++].second;
        items.resize(std::max<size_t>(n, 1));
        double kept = 0;
        for (auto& it : items) kept += it.second;
        for (auto& it : items) it.second /= kept;
    }
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
