// layout.cpp: see layout.h. The tables and the views are built from the same ordered lists, so a
// tensor added to one cannot be missing from the other.
#include "layout.h"

#include <cassert>

namespace {

struct TableBuilder {
    std::vector<TensorInfo> table;
    size_t offset = 0;
    void add(const std::string& name, size_t rows, size_t cols, bool decay) {
        table.push_back({name, offset, rows, cols, decay});
        offset += table.back().numel();
    }
};

// Per-layer parameter shapes in LayerParams order.
struct LayerParamShape {
    const char* name;
    size_t rows_per_c, cols_per_c;  // multiples of C; cols 0 means 1-D
    bool decay;
};
const LayerParamShape kLayerParams[] = {
    {"ln1w", 1, 0, false},    {"ln1b", 1, 0, false},      {"qkvw", 3, 1, true},
    {"qkvb", 3, 0, false},    {"attprojw", 1, 1, true},   {"attprojb", 1, 0, false},
    {"ln2w", 1, 0, false},    {"ln2b", 1, 0, false},      {"fcw", 4, 1, true},
    {"fcb", 4, 0, false},     {"fcprojw", 1, 4, true},    {"fcprojb", 1, 0, false},
};
const int kNumLayerParams = sizeof(kLayerParams) / sizeof(kLayerParams[0]);
static_assert(sizeof(LayerParams) == kNumLayerParams * sizeof(float*), "LayerParams and kLayerParams disagree");

}  // namespace

std::vector<TensorInfo> layout_params(const GPT2Config& cfg) {
    const size_t C = cfg.channels;
    TableBuilder tb;
    tb.add("wte", cfg.padded_vocab_size, C, true);
    tb.add("wpe", cfg.max_seq_len, C, true);
    for (int l = 0; l < cfg.num_layers; l++)
        for (const LayerParamShape& s : kLayerParams) {
            size_t rows = s.rows_per_c * C, cols = s.cols_per_c == 0 ? 0 : s.cols_per_c * C;
            tb.add("h." + std::to_string(l) + "." + s.name, rows, cols, s.decay);
        }
    tb.add("lnfw", C, 0, false);
    tb.add("lnfb", C, 0, false);
    return tb.table;
}

size_t layout_params_size(const std::vector<TensorInfo>& table) {
    return table.empty() ? 0 : table.back().offset + table.back().numel();
}

ParamViews layout_param_views(const GPT2Config& cfg, float* base) {
    std::vector<TensorInfo> table = layout_params(cfg);
    ParamViews v;
    size_t i = 0;
    v.wte = base + table[i++].offset;
    v.wpe = base + table[i++].offset;
    v.layers.resize(cfg.num_layers);
    for (int l = 0; l < cfg.num_layers; l++) {
        float** slots = reinterpret_cast<float**>(&v.layers[l]);
        for (int k = 0; k < kNumLayerParams; k++) slots[k] = base + table[i++].offset;
    }
    v.lnfw = base + table[i++].offset;
    v.lnfb = base + table[i++].offset;
    assert(i == table.size());
    return v;
}

namespace {

// Per-layer activation shapes in LayerActs order: rows are N = B*T unless `att`.
struct LayerActShape {
    const char* name;
    size_t cols_per_c;  // 0: one float per row (mean/rstd)
    bool is_att;        // (B, NH, T)
};
const LayerActShape kLayerActs[] = {
    {"ln1", 1, false},     {"ln1_mean", 0, false}, {"ln1_rstd", 0, false}, {"qkv", 3, false},
    {"atty", 1, false},    {"att_lse", 0, true},       {"attproj", 1, false},  {"residual2", 1, false},
    {"ln2", 1, false},     {"ln2_mean", 0, false}, {"ln2_rstd", 0, false}, {"fch", 4, false},
    {"fch_gelu", 4, false}, {"fcproj", 1, false},  {"residual3", 1, false},
};
const int kNumLayerActs = sizeof(kLayerActs) / sizeof(kLayerActs[0]);
static_assert(sizeof(LayerActs) == kNumLayerActs * sizeof(float*), "LayerActs and kLayerActs disagree");

}  // namespace

std::vector<TensorInfo> layout_acts(const GPT2Config& cfg, int B, int T) {
    const size_t C = cfg.channels, N = (size_t)B * T;
    TableBuilder tb;
    tb.add("encoded", N, C, false);
    for (int l = 0; l < cfg.num_layers; l++)
        for (const LayerActShape& s : kLayerActs) {
            std::string name = "h." + std::to_string(l) + "." + s.name;
            if (s.is_att) tb.add(name, (size_t)B * cfg.num_heads * T, 0, false);
            else tb.add(name, N, s.cols_per_c * C, false);
        }
    tb.add("lnf", N, C, false);
    tb.add("lnf_mean", N, 0, false);
    tb.add("lnf_rstd", N, 0, false);
    tb.add("logits", N, cfg.padded_vocab_size, false);
    tb.add("probs", N, cfg.padded_vocab_size, false);
    tb.add("losses", N, 0, false);
    return tb.table;
}

ActViews layout_act_views(const GPT2Config& cfg, int B, int T, float* base) {
    std::vector<TensorInfo> table = layout_acts(cfg, B, T);
    ActViews v;
    size_t i = 0;
    v.encoded = base + table[i++].offset;
    v.layers.resize(cfg.num_layers);
    for (int l = 0; l < cfg.num_layers; l++) {
        float** slots = reinterpret_cast<float**>(&v.layers[l]);
        for (int k = 0; k < kNumLayerActs; k++) slots[k] = base + table[i++].offset;
    }
    v.lnf = base + table[i++].offset;
    v.lnf_mean = base + table[i++].offset;
    v.lnf_rstd = base + table[i++].offset;
    v.logits = base + table[i++].offset;
    v.probs = base + table[i++].offset;
    v.losses = base + table[i++].offset;
    assert(i == table.size());
    return v;
}
