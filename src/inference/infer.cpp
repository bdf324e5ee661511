// infer.cpp: see infer.h. Shapes: n new rows, C channels, positions p0..p0+n-1 with p0 = st->len.
#include "inference/infer.h"

#include <cassert>

#include "platform/util.h"
#include "core/layers.h"
#include "inference/kv_attention.h"

namespace {

// One block's activations for n positions, alone: layer 0's entries of layout_acts, packed. Decoding reuses
// them for every layer.
std::vector<TensorInfo> block_table(const GPT2Config& cfg, int n) {
    std::vector<TensorInfo> table;
    size_t offset = 0;
    for (TensorInfo t : layout_acts(cfg, 1, n))
        if (t.layer == 0) t.offset = offset, offset += t.numel(), table.push_back(t);
    return table;
}

}  // namespace

double infer_memory_bytes(const GPT2Config& cfg, int max_len, int max_rows) {
    const double C = cfg.channels;
    const double block = (double)layout_params_size(block_table(cfg, max_rows));
    // cache; embedding, block scratch, final LayerNorm with mean and rstd
    return 4.0 * ((double)cfg.num_layers * (max_len + kv_key_row(max_len)) * C + max_rows * (2.0 * C + 2) + block);
}

void infer_init(InferState* st, const GPT2& model, int max_len, int max_rows) {
    const GPT2Config& cfg = model.cfg;
    assert(max_len >= 1 && max_len <= cfg.max_seq_len && max_rows >= 1 && max_rows <= max_len);
    const size_t C = cfg.channels, rows = (size_t)max_rows;
    st->max_len = max_len;
    st->max_rows = max_rows;
    st->len = 0;
    st->k_row = kv_key_row(max_len);
    st->k.assign((size_t)cfg.num_layers * C * st->k_row, 0.0f);
    st->v.assign((size_t)cfg.num_layers * max_len * C, 0.0f);
    st->x.assign(rows * C, 0.0f);
    st->block.assign(layout_params_size(block_table(cfg, max_rows)), 0.0f);
    st->lnf.assign(rows * C, 0.0f);
    st->mean.assign(rows, 0.0f);
    st->rstd.assign(rows, 0.0f);
    st->la = layout_act_views(cfg, block_table(cfg, max_rows), st->block.data()).layers[0];
}

void infer_forward(InferState* st, const GPT2& model, const int* tokens, int n, float* logits, bool all_logits) {
    const GPT2Config& cfg = model.cfg;
    const int C = cfg.channels, p0 = st->len;
    assert(n >= 1 && p0 + n <= st->max_len && n <= st->max_rows && "generate sizes the cache");
    for (int i = 0; i < n; i++) assert(tokens[i] >= 0 && tokens[i] < cfg.vocab_size);
    const ParamViews& p = model.param;
    encoder_forward(st->x.data(), tokens, p.wte, p.wpe + (size_t)p0 * C, 1, n, C);  // positions p0..
    // one block's scratch serves every layer: each block's output (la.residual3) is the next one's input
    const LayerActs& la = st->la;
    const float* x = st->x.data();
    for (int l = 0; l < cfg.num_layers; l++) {
        float* k = st->k.data() + (size_t)l * C * st->k_row;  // (C, k_row): positions 0..p0-1 filled
        float* v = st->v.data() + (size_t)l * st->max_len * C;
        block_forward(model, l, la, x, 1, n, [&](const LayerActs& a, const GemmOperands* ops) {
            attention_forward_cached(a.atty, a.att_lse, a.qkv, k, st->k_row, v, n, p0, C, cfg.num_heads, ops);
        });
        x = la.residual3;
    }
    const int first = all_logits ? 0 : n - 1, rows = n - first;
    layernorm_forward(st->lnf.data(), st->mean.data(), st->rstd.data(), x + (size_t)first * C, p.lnfw, p.lnfb, rows, C);
    matmul_forward(logits, st->lnf.data(), gpt2_weight(model, p.wte), nullptr, rows, C,
                   cfg.padded_vocab_size);  // lm_head tied to wte
    st->len += n;
}
