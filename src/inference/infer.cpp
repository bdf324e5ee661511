// infer.cpp: see infer.h. Shapes: n new rows, C channels; infer_forward's at positions p0..p0+n-1 with p0 =
// st->len, infer_decode's one per sequence, each at its own cache's length.
#include "inference/infer.h"

#include <algorithm>
#include <cassert>
#include <map>

#include "platform/util.h"
#include "core/layers.h"
#include "inference/kv_attention.h"
#include "inference/matvec.h"

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

// The final LayerNorm and the lm_head (tied to wte) for `rows` rows of x; `decoding`: each row a sequence's own.
void infer_head(InferScratch* s, const GPT2& model, const float* x, int rows, float* logits, bool decoding) {
    const GPT2Config& cfg = model.cfg;
    const ParamViews& p = model.param;
    layernorm_forward(s->lnf.data(), s->mean.data(), s->rstd.data(), x, p.lnfw, p.lnfb, rows, cfg.channels);
    matmul_forward(logits, s->lnf.data(), gpt2_weight(model, p.wte), nullptr, rows, cfg.channels,
                   cfg.padded_vocab_size, decoding);
}

}  // namespace

double infer_scratch_bytes(const GPT2Config& cfg, int rows) {
    // embedding, block scratch, final LayerNorm with mean and rstd
    return 4.0 * (rows * (2.0 * cfg.channels + 2) + (double)layout_params_size(block_table(cfg, rows)));
}

double infer_memory_bytes(const GPT2Config& cfg, int max_len, int max_rows) {
    const double cache = 4.0 * cfg.num_layers * (max_len + kv_key_row(max_len)) * (double)cfg.channels;
    return cache + infer_scratch_bytes(cfg, max_rows);
}

void infer_scratch_init(InferScratch* s, const GPT2& model, int rows) {
    const GPT2Config& cfg = model.cfg;
    assert(rows >= 1);
    const size_t C = cfg.channels;
    s->rows = rows;
    s->x.assign(rows * C, 0.0f);
    s->block.assign(layout_params_size(block_table(cfg, rows)), 0.0f);
    s->lnf.assign(rows * C, 0.0f);
    s->mean.assign(rows, 0.0f);
    s->rstd.assign(rows, 0.0f);
    s->la = layout_act_views(cfg, block_table(cfg, rows), s->block.data()).layers[0];
}

void infer_init(InferState* st, const GPT2& model, int max_len, int max_rows) {
    const GPT2Config& cfg = model.cfg;
    assert(max_len >= 1 && max_len <= cfg.max_seq_len && max_rows >= 1 && max_rows <= max_len);
    const size_t C = cfg.channels;
    st->max_len = max_len;
    st->max_rows = max_rows;
    st->len = 0;
    st->k_row = kv_key_row(max_len);
    st->k.assign((size_t)cfg.num_layers * C * st->k_row, 0.0f);
    st->v.assign((size_t)cfg.num_layers * max_len * C, 0.0f);
    infer_scratch_init(&st->scratch, model, max_rows);
}

void infer_forward(InferState* st, const GPT2& model, const int* tokens, int n, float* logits, bool all_logits) {
    const GPT2Config& cfg = model.cfg;
    const int C = cfg.channels, p0 = st->len;
    assert(n >= 1 && p0 + n <= st->max_len && n <= st->max_rows && "generate sizes the cache");
    for (int i = 0; i < n; i++) assert(tokens[i] >= 0 && tokens[i] < cfg.vocab_size);
    const ParamViews& p = model.param;
    InferScratch* s = &st->scratch;
    encoder_forward(s->x.data(), tokens, p.wte, p.wpe + (size_t)p0 * C, 1, n, C);  // positions p0..
    // one block's scratch serves every layer: each block's output (la.residual3) is the next one's input
    const LayerActs& la = s->la;
    const float* x = s->x.data();
    for (int l = 0; l < cfg.num_layers; l++) {
        float* k = st->k.data() + (size_t)l * C * st->k_row;  // (C, k_row): positions 0..p0-1 filled
        float* v = st->v.data() + (size_t)l * st->max_len * C;
        block_forward(model, l, la, x, 1, n, [&](const LayerActs& a, const GemmOperands* ops) {
            attention_forward_cached(a.atty, a.att_lse, a.qkv, k, st->k_row, v, n, p0, C, cfg.num_heads, ops);
        });
        x = la.residual3;
    }
    const int first = all_logits ? 0 : n - 1;
    infer_head(s, model, x + (size_t)first * C, n - first, logits, false);
    st->len += n;
}

namespace {

// Row i: tokens[i] at position pos[i] of seqs[i] (whose cache gets it); logits for every row, or with `lasts`
// only for rows lasts[0..nl), row j of logits being row lasts[j]'s.
void decode_rows(InferScratch* s, InferState* const* seqs, const int* pos, const GPT2& model, const int* tokens,
                 int n, float* logits, const int* lasts = nullptr, int nl = 0) {
    const GPT2Config& cfg = model.cfg;
    const int C = cfg.channels;
    assert(n >= 1 && n <= s->rows && "infer_scratch_init sizes the scratch");
    for (int i = 0; i < n; i++) assert(pos[i] < seqs[i]->max_len && tokens[i] >= 0 && tokens[i] < cfg.vocab_size);
    const ParamViews& p = model.param;
    for (int i = 0; i < n; i++)  // row i at its position
        encoder_forward(&s->x[(size_t)i * C], &tokens[i], p.wte, p.wpe + (size_t)pos[i] * C, 1, 1, C);
    // n rows of one position each (B = n, T = 1): block_forward runs each row's products as that row alone, and
    // each row attends over its own cache (layer l's of each), the rows' new keys and values written first
    std::vector<float*> k(n), v(n);
    std::vector<size_t> k_row(n);
    for (int i = 0; i < n; i++) k_row[i] = seqs[i]->k_row;
    const LayerActs& la = s->la;
    const float* x = s->x.data();
    for (int l = 0; l < cfg.num_layers; l++) {
        for (int i = 0; i < n; i++) {
            k[i] = seqs[i]->k.data() + (size_t)l * C * seqs[i]->k_row;
            v[i] = seqs[i]->v.data() + (size_t)l * seqs[i]->max_len * C;
        }
        block_forward(model, l, la, x, n, 1, [&](const LayerActs& a, const GemmOperands*) {
            attention_forward_cached_rows(a.atty, a.att_lse, a.qkv, k.data(), k_row.data(), v.data(), pos, n, C,
                                          cfg.num_heads);
        });
        x = la.residual3;
    }
    if (!lasts) return infer_head(s, model, x, n, logits, true);
    for (int j = 0; j < nl; j++)  // (the embedding's rows are free after the first block)
        std::copy_n(x + (size_t)lasts[j] * C, C, s->x.data() + (size_t)j * C);
    infer_head(s, model, s->x.data(), nl, logits, true);
}

}  // namespace

void infer_decode(InferScratch* s, InferState* const* seqs, const GPT2& model, const int* tokens, int n,
                  float* logits) {
    const std::vector<int> ones(n, 1);
    infer_decode_runs(s, seqs, ones.data(), n, model, tokens, logits, true);
}

void infer_verify(InferScratch* s, InferState* st, const GPT2& model, const int* tokens, int n, float* logits) {
    infer_decode_runs(s, &st, &n, 1, model, tokens, logits, true);
}

void infer_decode_runs(InferScratch* s, InferState* const* seqs, const int* counts, int n, const GPT2& model,
                       const int* tokens, float* logits, bool all_logits) {
    std::vector<InferState*> row_seq;
    std::vector<int> pos, lasts;
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < i; j++) assert(seqs[j] != seqs[i] && "one run per sequence");
        assert(counts[i] >= 1 && seqs[i]->len + counts[i] <= seqs[i]->max_len && "the caller keeps room");
        for (int r = 0; r < counts[i]; r++) row_seq.push_back(seqs[i]), pos.push_back(seqs[i]->len + r);
        lasts.push_back((int)pos.size() - 1);
    }
    decode_rows(s, row_seq.data(), pos.data(), model, tokens, (int)pos.size(), logits,
                all_logits ? nullptr : lasts.data(), n);
    for (int i = 0; i < n; i++) seqs[i]->len += counts[i];
}

namespace {

// The (IC, OC) of each tensor whose q8 copy rounds its inputs, by offset: the tensors infer_keep_q8_tiles lays
// out, none where matvec_q8_tiles has no path.
std::map<size_t, std::pair<int, int>> q8_tiled_shapes(const GPT2& model) {
    std::map<size_t, std::pair<int, int>> shapes;
    const PrecisionCopies* c = gpt2_precision_copies(model);
    if (!c || !matvec_q8_tiles(nullptr, nullptr, nullptr, kQ8Block, 0)) return shapes;  // OC 0: asks only
    for (const TensorInfo& t : model.param_table) {
        const auto at = c->at.find(t.offset);
        if (at != c->at.end() && at->second.q8 && at->second.q8_inputs)
            shapes[t.offset] = {(int)t.cols, (int)t.rows};
    }
    return shapes;
}

// Words the tiles of those tensors take.
size_t q8_tiles_words(const std::map<size_t, std::pair<int, int>>& shapes) {
    size_t words = 0;
    for (const auto& [offset, shape] : shapes) words += matvec_q8_tiles_words(shape.first, shape.second);
    return words;
}

}  // namespace

double infer_q8_tiles_bytes(const GPT2& model) { return 4.0 * (double)q8_tiles_words(q8_tiled_shapes(model)); }

void infer_keep_q8_tiles_if_room(GPT2* model, double beside) {
    const double tiles = infer_q8_tiles_bytes(*model), avail = (double)memory_available();
    if (tiles > 0 && (avail == 0 || tiles + beside <= avail)) infer_keep_q8_tiles(model);
}

void infer_keep_q8_tiles(GPT2* model) {
    const std::map<size_t, std::pair<int, int>> shapes = q8_tiled_shapes(*model);
    auto* c = dynamic_cast<PrecisionCopies*>(model->copies.get());
    if (shapes.empty() || !c->params8_tiles.empty()) return;
    buffer_assign_zero(&c->params8_tiles, q8_tiles_words(shapes));  // huge pages, as params8
    size_t at = 0;
    for (const auto& [offset, shape] : shapes) {
        WeightCopy& w = c->at[offset];
        matvec_q8_tiles(c->params8_tiles.data() + at, w.q8, w.q8_d, shape.first, shape.second);
        w.q8_tiles = c->params8_tiles.data() + at;
        at += matvec_q8_tiles_words(shape.first, shape.second);
    }
}
