// layout.cpp: see layout.h. The tables and the views are built from the same ordered lists, so a
// tensor added to one cannot be missing from the other.
#include "core/layout.h"

#include <cstdio>

namespace {

// Lays tensors out one after the other.
struct TableBuilder {
    std::vector<TensorInfo> table;
    size_t offset = 0;
    TensorInfo& add(const std::string& name, size_t rows, size_t cols) {
        TensorInfo t;
        t.name = name, t.offset = offset, t.rows = rows, t.cols = cols;
        table.push_back(t);
        offset += t.numel();
        return table.back();
    }
    TensorInfo& add_param(const std::string& name, size_t rows, size_t cols, const std::string& hf_name,
                          const std::string& gguf_name, TensorInit init) {
        TensorInfo& t = add(name, rows, cols);
        t.decay = cols > 0, t.hf_name = hf_name, t.gguf_name = gguf_name, t.init = init;
        return t;
    }
};

// One block tensor, in LayerParams order (llm.c's within a block): our name, its view, its shape in
// multiples of C (cols 0: 1-D), HuggingFace's and GGUF's names after "h.L." and "blk.L.", and its init.
struct LayerTensorSpec {
    const char* name;
    float* LayerParams::*view;
    size_t rows_per_c, cols_per_c;
    const char* hf_suffix;
    bool hf_transposed;
    const char* gguf_suffix;
    TensorInit init;
};
const LayerTensorSpec kLayerTensors[] = {
    {"ln1w", &LayerParams::ln1w, 1, 0, "ln_1.weight", false, "attn_norm.weight", TensorInit::kOne},
    {"ln1b", &LayerParams::ln1b, 1, 0, "ln_1.bias", false, "attn_norm.bias", TensorInit::kZero},
    {"qkvw", &LayerParams::qkvw, 3, 1, "attn.c_attn.weight", true, "attn_qkv.weight", TensorInit::kNormal},
    {"qkvb", &LayerParams::qkvb, 3, 0, "attn.c_attn.bias", false, "attn_qkv.bias", TensorInit::kZero},
    {"attprojw", &LayerParams::attprojw, 1, 1, "attn.c_proj.weight", true, "attn_output.weight",
     TensorInit::kResidualNormal},
    {"attprojb", &LayerParams::attprojb, 1, 0, "attn.c_proj.bias", false, "attn_output.bias", TensorInit::kZero},
    {"ln2w", &LayerParams::ln2w, 1, 0, "ln_2.weight", false, "ffn_norm.weight", TensorInit::kOne},
    {"ln2b", &LayerParams::ln2b, 1, 0, "ln_2.bias", false, "ffn_norm.bias", TensorInit::kZero},
    {"fcw", &LayerParams::fcw, 4, 1, "mlp.c_fc.weight", true, "ffn_up.weight", TensorInit::kNormal},
    {"fcb", &LayerParams::fcb, 4, 0, "mlp.c_fc.bias", false, "ffn_up.bias", TensorInit::kZero},
    {"fcprojw", &LayerParams::fcprojw, 1, 4, "mlp.c_proj.weight", true, "ffn_down.weight", TensorInit::kResidualNormal},
    {"fcprojb", &LayerParams::fcprojb, 1, 0, "mlp.c_proj.bias", false, "ffn_down.bias", TensorInit::kZero},
};
static_assert(sizeof(LayerParams) == std::size(kLayerTensors) * sizeof(float*), "a row for every LayerParams view");

// Per-layer activations in LayerActs order: rows are N = B*T unless `is_att`.
struct LayerActShape {
    const char* name;
    float* LayerActs::*view;
    size_t cols_per_c;  // 0: one float per row (mean/rstd)
    bool is_att;        // (B, NH, T)
    bool grad_buffer;   // the gradients' layout has a buffer for it; the rest alias these (layout.h)
};
const LayerActShape kLayerActs[] = {
    {"ln1", &LayerActs::ln1, 1, false, false},
    {"ln1_mean", &LayerActs::ln1_mean, 0, false, false},
    {"ln1_rstd", &LayerActs::ln1_rstd, 0, false, false},
    {"qkv", &LayerActs::qkv, 3, false, false},
    {"atty", &LayerActs::atty, 1, false, true},
    {"att_lse", &LayerActs::att_lse, 0, true, false},
    {"residual2", &LayerActs::residual2, 1, false, false},
    {"ln2", &LayerActs::ln2, 1, false, false},
    {"ln2_mean", &LayerActs::ln2_mean, 0, false, false},
    {"ln2_rstd", &LayerActs::ln2_rstd, 0, false, false},
    {"fch", &LayerActs::fch, 4, false, true},
    {"fch_gelu", &LayerActs::fch_gelu, 4, false, false},
    {"residual3", &LayerActs::residual3, 1, false, true},
};
static_assert(sizeof(LayerActs) == std::size(kLayerActs) * sizeof(float*), "a row for every LayerActs view");

}  // namespace

std::vector<TensorInfo> layout_params(const GPT2Config& cfg) {
    const size_t C = cfg.channels;
    TableBuilder tb;
    tb.add_param("wte", cfg.padded_vocab_size, C, "wte.weight", "token_embd.weight", TensorInit::kNormal);
    tb.add_param("wpe", cfg.max_seq_len, C, "wpe.weight", "position_embd.weight", TensorInit::kNormal);
    for (int l = 0; l < cfg.num_layers; l++)
        for (int k = 0; k < (int)std::size(kLayerTensors); k++) {
            const LayerTensorSpec& s = kLayerTensors[k];
            const std::string h = "h." + std::to_string(l) + ".", blk = "blk." + std::to_string(l) + ".";
            TensorInfo& t = tb.add_param(h + s.name, s.rows_per_c * C, s.cols_per_c * C, h + s.hf_suffix,
                                         blk + s.gguf_suffix, s.init);
            t.hf_transposed = s.hf_transposed, t.layer = l, t.slot = k;
        }
    tb.add_param("lnfw", C, 0, "ln_f.weight", "output_norm.weight", TensorInit::kOne);
    tb.add_param("lnfb", C, 0, "ln_f.bias", "output_norm.bias", TensorInit::kZero);
    return tb.table;
}

size_t layout_params_size(const std::vector<TensorInfo>& table) {
    return table.empty() ? 0 : table.back().offset + table.back().numel();
}

ParamViews layout_param_views(const GPT2Config& cfg, float* base) {
    ParamViews v;
    v.layers.resize(cfg.num_layers);
    for (const TensorInfo& t : layout_params(cfg)) {
        float* at = base + t.offset;
        if (t.layer >= 0) v.layers[t.layer].*kLayerTensors[t.slot].view = at;
        else if (t.name == "wte") v.wte = at;
        else if (t.name == "wpe") v.wpe = at;
        else if (t.name == "lnfw") v.lnfw = at;
        else v.lnfb = at;
    }
    return v;
}

std::vector<TensorInfo> layout_acts(const GPT2Config& cfg, int B, int T, bool gradients) {
    const size_t C = cfg.channels, N = (size_t)B * T;
    TableBuilder tb;
    if (!gradients) tb.add("encoded", N, C);
    for (int l = 0; l < (gradients ? 1 : cfg.num_layers); l++)  // gradients: one layer, shared by all
        for (size_t k = 0; k < std::size(kLayerActs); k++) {
            const LayerActShape& s = kLayerActs[k];
            if (gradients && !s.grad_buffer) continue;
            const size_t rows = s.is_att ? (size_t)B * cfg.num_heads * T : N;
            TensorInfo& t = tb.add("h." + std::to_string(l) + "." + s.name, rows, s.cols_per_c * C);
            t.layer = l, t.slot = (int)k;
        }
    if (gradients) return tb.table;
    tb.add("lnf", N, C);
    tb.add("lnf_mean", N, 0);
    tb.add("lnf_rstd", N, 0);
    tb.add("logits", layout_head_rows((int)N), cfg.padded_vocab_size);
    tb.add("losses", N, 0);
    return tb.table;
}

ActViews layout_act_views(const GPT2Config& cfg, const std::vector<TensorInfo>& table, float* base, bool gradients) {
    ActViews v;
    v.layers.resize(cfg.num_layers);  // null views, but those of the table's entries
    for (const TensorInfo& t : table) {
        float* at = base + t.offset;
        if (t.layer >= 0) v.layers[t.layer].*kLayerActs[t.slot].view = at;
        else if (t.name == "encoded") v.encoded = at;
        else if (t.name == "lnf") v.lnf = at;
        else if (t.name == "lnf_mean") v.lnf_mean = at;
        else if (t.name == "lnf_rstd") v.lnf_rstd = at;
        else if (t.name == "logits") v.logits = at;
        else v.losses = at;
    }
    if (gradients) {  // layer 0's for all, in three buffers (layout.h)
        LayerActs& d = v.layers[0];
        d.residual2 = d.residual3;
        d.fch_gelu = d.qkv = d.fch;
        d.ln1 = d.ln2 = d.atty;
        v.layers.assign(cfg.num_layers, d);
        v.encoded = d.residual3, v.lnf = d.atty;
    }
    return v;
}

GPT2Config config_make(int max_seq_len, int vocab_size, int num_layers, int num_heads, int channels) {
    const int padded_vocab_size = (vocab_size + 127) / 128 * 128;
    return GPT2Config{max_seq_len, vocab_size, padded_vocab_size, num_layers, num_heads, channels};
}

std::string config_check(const GPT2Config& cfg, const char* where) {
    char err[256] = "";
    if (cfg.num_layers < 1 || cfg.num_layers > 1000)
        snprintf(err, sizeof(err), "bad layer count (%s): expected 1..1000, got %d", where, cfg.num_layers);
    else if (cfg.channels < 1 || cfg.channels > 65536)
        snprintf(err, sizeof(err), "bad channel count (%s): expected 1..65536, got %d", where, cfg.channels);
    else if (cfg.num_heads < 1 || cfg.channels % cfg.num_heads != 0)
        snprintf(err, sizeof(err), "bad head count (%s): expected a divisor of channels %d, got %d", where,
                 cfg.channels, cfg.num_heads);
    else if (cfg.max_seq_len < 1 || cfg.max_seq_len > 1 << 20)
        snprintf(err, sizeof(err), "bad context length (%s): expected 1..1048576, got %d", where, cfg.max_seq_len);
    else if (cfg.vocab_size < 1 || cfg.vocab_size > 1 << 24)
        snprintf(err, sizeof(err), "bad vocabulary size (%s): expected 1..16777216, got %d", where, cfg.vocab_size);
    else if (cfg.padded_vocab_size < cfg.vocab_size)
        snprintf(err, sizeof(err), "bad padded vocabulary (%s): expected >= %d, got %d", where, cfg.vocab_size,
                 cfg.padded_vocab_size);
    return err;
}
