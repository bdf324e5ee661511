// model.cpp: see model.h. gpt2_backward lists the forward's calls in reverse, to read the two side by side.
#include "core/model.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>

#include "core/rng.h"

void gpt2_build(GPT2* model, const GPT2Config& cfg, bool zeroed) {
    assert(config_check(cfg, "gpt2_build").empty());
    model->cfg = cfg;
    model->param_table = layout_params(cfg);
    model->num_params = layout_params_size(model->param_table);
    if (zeroed) buffer_assign_zero(&model->params, model->num_params);
    else decltype(model->params)().swap(model->params), model->params.resize(model->num_params);
    model->param = layout_param_views(cfg, model->params.data());
    model->grads.clear();
    model->training = false;
    model->acts_table = nullptr, model->layer_begin = nullptr;
    model->B = model->T = 0;
}

void gpt2_enable_training(GPT2* model, bool frozen) {
    if (model->training) return;
    if (frozen) model->grad = ParamViews(), model->grad.layers.resize(model->cfg.num_layers);  // null views
    else if (model->grads.empty()) {  // else laid out by an extension (memory/)
        buffer_assign_zero(&model->grads, model->num_params);
        model->grad = layout_param_views(model->cfg, model->grads.data());
        model->grad_offsets.clear();
        for (const TensorInfo& t : model->param_table) model->grad_offsets.push_back(t.offset);
    }
    model->training = true;
    model->B = model->T = 0;  // the activations gain their gradients at the next forward
}

void gpt2_init_random(GPT2* model, uint64_t seed) {
    const GPT2Config& cfg = model->cfg;
    const float std_resid = 0.02f / sqrtf(2.0f * cfg.num_layers);
    // Chunks of 64K values, each its own stream seeded by (seed, tensor, chunk): the same for any thread count.
    const size_t kChunk = 1 << 16;
    std::vector<std::pair<size_t, size_t>> chunks;  // (tensor, first value)
    for (size_t t = 0; t < model->param_table.size(); t++)
        for (size_t i = 0; i < model->param_table[t].numel(); i += kChunk) chunks.push_back({t, i});
#pragma omp parallel for schedule(dynamic, 4)
    for (long c = 0; c < (long)chunks.size(); c++) {
        const TensorInfo& t = model->param_table[chunks[c].first];
        float* w = model->params.data() + t.offset;
        size_t n = t.numel();
        if (t.name == "wte") n = (size_t)cfg.vocab_size * cfg.channels;  // padded rows stay zero
        const float std = t.init == TensorInit::kResidualNormal ? std_resid : 0.02f;
        Rng rng(seed ^ (chunks[c].first << 40) ^ (chunks[c].second / kChunk * 0x9E3779B97F4A7C15ull));
        for (size_t i = chunks[c].second; i < std::min(n, chunks[c].second + kChunk); i++) {
            if (t.init == TensorInit::kNormal || t.init == TensorInit::kResidualNormal) w[i] = std * rng.normal();
            else w[i] = t.init == TensorInit::kOne ? 1.0f : 0.0f;
        }
    }
}

void gpt2_alloc_acts(GPT2* model, int B, int T) {
    if (B == model->B && T == model->T) return;
    assert(B >= 1 && T >= 1 && T <= model->cfg.max_seq_len && "callers check -B and -T against the context");
    const std::vector<TensorInfo> table = model->training && model->acts_table ? model->acts_table(model->cfg, B, T)
                                                                               : layout_acts(model->cfg, B, T);
    const size_t n = layout_params_size(table);
    // Without training a smaller shape reuses the buffer (overwritten): refilling gigabytes costs more than a forward.
    if (model->training || n > model->acts.size()) {
        std::vector<float>().swap(model->acts);  // both old buffers released before either new one is made
        std::vector<float>().swap(model->dacts);
        buffer_assign_zero(&model->acts, n);
    }
    model->act = layout_act_views(model->cfg, table, model->acts.data());
    if (model->training) {  // a smaller layout: no caches, no logits
        const std::vector<TensorInfo> grads = layout_acts(model->cfg, B, T, true);
        buffer_assign_zero(&model->dacts, layout_params_size(grads));
        model->dact = layout_act_views(model->cfg, grads, model->dacts.data(), true);
    }
    model->B = B, model->T = T;
}

Weight gpt2_weight(const GPT2& model, const float* w) {
    Weight weight = model.copies ? model.copies->weight(w, w - model.params.data()) : Weight(w);
    if (model.adapter_of) weight.adapter = model.adapter_of(w - model.params.data());
    return weight;
}

void gpt2_params_updated(GPT2* model, size_t offset, size_t n) {
    if (model->copies) model->copies->params_updated(model->params.data(), offset, n);
}

void block_forward(const GPT2& model, int l, const LayerActs& la, const float* x, int B, int T,
                   const BlockAttention& attention) {
    const int N = B * T, C = model.cfg.channels, NH = model.cfg.num_heads;
    const LayerParams& lp = model.param.layers[l];
    const GemmOperands* ops = model.copies ? model.copies->operands() : nullptr;  // attention's products
    auto linear = [&](float* out, const float* inp, const float* w, const float* b, int IC, int OC) {
        const Weight weight = gpt2_weight(model, w);
        matmul_forward(out, inp, weight, b, N, IC, OC, T == 1);  // T == 1: B sequences' rows, decoding's
        if (weight.adapter) weight.adapter->forward(out, inp, N);
    };
    // x = x + attn(ln_1(x))
    layernorm_forward(la.ln1, la.ln1_mean, la.ln1_rstd, x, lp.ln1w, lp.ln1b, N, C);
    linear(la.qkv, la.ln1, lp.qkvw, lp.qkvb, C, 3 * C);
    if (attention) attention(la, ops);
    else attention_forward(la.atty, la.att_lse, la.qkv, B, T, C, NH, ops);
    linear(la.residual2, la.atty, lp.attprojw, lp.attprojb, C, C);
    residual_forward(la.residual2, x, la.residual2, (size_t)N * C);  // in place: the backward needs no projection
    // x = x + mlp(ln_2(x))
    layernorm_forward(la.ln2, la.ln2_mean, la.ln2_rstd, la.residual2, lp.ln2w, lp.ln2b, N, C);
    linear(la.fch, la.ln2, lp.fcw, lp.fcb, C, 4 * C);
    gelu_forward(la.fch_gelu, la.fch, (size_t)N * 4 * C);
    linear(la.residual3, la.fch_gelu, lp.fcprojw, lp.fcprojb, 4 * C, C);
    residual_forward(la.residual3, la.residual2, la.residual3, (size_t)N * C);
}

float gpt2_forward(GPT2* model, const int* inputs, const int* targets, int B, int T, float loss_scale) {
    const GPT2Config& cfg = model->cfg;
    const int N = B * T, C = cfg.channels, V = cfg.vocab_size;
    gpt2_alloc_acts(model, B, T);
    for (int i = 0; i < N; i++)  // the loaders check every id against the vocabulary
        assert(inputs[i] >= 0 && inputs[i] < V && (!targets || (targets[i] >= -1 && targets[i] < V)));
    model->inputs.assign(inputs, inputs + N);
    model->targets.assign(targets, targets ? targets + N : targets);
    const ParamViews& p = model->param;
    const ActViews& a = model->act;

    encoder_forward(a.encoded, inputs, p.wte, p.wpe, B, T, C);
    const float* x = a.encoded;  // (N, C) the residual stream
    for (int l = 0; l < cfg.num_layers; l++) {
        block_forward(*model, l, a.layers[l], x, B, T);
        x = a.layers[l].residual3;
    }
    layernorm_forward(a.lnf, a.lnf_mean, a.lnf_rstd, x, p.lnfw, p.lnfb, N, C);
    return gpt2_head(model, loss_scale);
}

float gpt2_head(GPT2* model, float loss_scale) {
    const int N = model->B * model->T, C = model->cfg.channels;
    const int V = model->cfg.vocab_size, Vp = model->cfg.padded_vocab_size;
    const int* targets = model->targets.empty() ? nullptr : model->targets.data();
    const bool grad = targets && loss_scale >= 0;
    assert((!grad || model->training) && "a loss_scale needs gpt2_enable_training");
    assert(!(grad && model->head_grads) && "a head's gradients go to a backward before the next head's");
    const long scored = targets ? std::count_if(targets, targets + N, [](int t) { return t >= 0; }) : 0;
    const float dloss = grad / (float)std::max(1L, scored);  // d(mean loss)/d(row loss), or 0: no gradient
    const ActViews& a = model->act;
    const Weight wte = gpt2_weight(*model, model->param.wte);  // lm_head tied to wte
    // Each block is a matmul of its own: its logits take the blocking gemm_kc gives its rows, which can differ from
    // one matmul's over all N in the last bits (a deep pass needs 84 rows at GPT-2's vocabulary).
    for (int r = 0, rows = layout_head_rows(N); r < N; r += rows) {
        const int n = std::min(rows, N - r);
        const float* x = a.lnf + (size_t)r * C;
        float* dx = grad ? model->dact.lnf + (size_t)r * C : nullptr;
        matmul_forward(a.logits, x, wte, nullptr, n, C, Vp);
        if (targets) crossentropy_fused(a.logits, a.losses + r, targets + r, n, V, Vp, dloss, loss_scale);
        if (grad) matmul_backward(dx, model->grad.wte, nullptr, a.logits, x, wte, n, C, Vp, !model->grads_unset || r);
        model->head_last_row = r;
    }
    model->head_grads = grad;
    double total = 0;  // summed in row order: the mean does not depend on the thread count
    for (int i = 0; targets && i < N; i++) total += a.losses[i];
    return (float)(total / std::max(1L, scored));
}

void gpt2_zero_grad(GPT2* model) {
    model->head_grads = false;
    if (model->grads.empty()) return;  // a frozen base's
    const ParamViews& g = model->grad;
    auto overwritten = [&](const float* t) {
        for (const LayerParams& l : g.layers)
            if (t == l.qkvw || t == l.attprojw || t == l.fcw || t == l.fcprojw) return true;
        return t == g.wte;
    };
    for (size_t i = 0; i < model->param_table.size(); i++) {  // 0.7% of them: one thread (memory/ aliases some)
        float* t = model->grads.data() + model->grad_offsets[i];
        if (!overwritten(t)) memset(t, 0, sizeof(float) * model->param_table[i].numel());
    }
    model->grads_unset = true;
}

void gpt2_backward(GPT2* model, const std::function<void(int layer)>& layer_done) {
    assert(model->training && model->head_grads && "gpt2_backward continues from gpt2_head's, with a loss_scale");
    const GPT2Config& cfg = model->cfg;
    const int B = model->B, T = model->T, N = B * T, C = cfg.channels, NH = cfg.num_heads;
    const ParamViews &p = model->param, &g = model->grad;
    const ActViews &a = model->act, &da = model->dact;
    // Each activation gradient has one writer (layers.h) but the residual stream's, one buffer every block adds its
    // LayerNorms' into in place (layout.h), the final LayerNorm's first.
    const int last = cfg.num_layers - 1;
    float* dres = da.layers[last].residual3;
    memset(dres, 0, sizeof(float) * N * C);
    assert((layer_done || model->grads.empty() || model->grads.size() == model->num_params) &&
           "one layer's gradients shared by all (memory/): layer_done consumes and clears each layer's");
    const GemmOperands* ops = model->copies ? model->copies->operands() : nullptr;
    auto w = [&](const float* weight) { return gpt2_weight(*model, weight); };
    const bool add = !model->grads_unset;  // onto the matrices' gradients, or over them
    layernorm_backward(dres, g.lnfw, g.lnfb, da.lnf, a.layers[last].residual3, p.lnfw, a.lnf_mean, a.lnf_rstd, N, C);
    for (int l = last; l >= 0; l--) {
        const LayerParams &lp = p.layers[l], &lg = g.layers[l];
        const LayerActs &la = a.layers[l], &lda = da.layers[l];
        const float* x = l == 0 ? a.encoded : a.layers[l - 1].residual3;  // this block's input
        if (model->layer_begin) model->layer_begin(model, l);  // memory/: what the forward did not keep
        // x = x + mlp(ln_2(x)), backwards: the projection's output gradient is dres, as is x's
        matmul_backward(lda.fch_gelu, lg.fcprojw, lg.fcprojb, dres, la.fch_gelu, w(lp.fcprojw), N, 4 * C, C, add);
        gelu_backward(lda.fch, la.fch, lda.fch_gelu, (size_t)N * 4 * C);  // in place
        matmul_backward(lda.ln2, lg.fcw, lg.fcb, lda.fch, la.ln2, w(lp.fcw), N, C, 4 * C, add);
        layernorm_backward(dres, lg.ln2w, lg.ln2b, lda.ln2, la.residual2, lp.ln2w, la.ln2_mean, la.ln2_rstd, N, C);
        // x = x + attn(ln_1(x)), backwards
        matmul_backward(lda.atty, lg.attprojw, lg.attprojb, dres, la.atty, w(lp.attprojw), N, C, C, add);
        attention_backward(lda.qkv, lda.atty, la.qkv, la.att_lse, B, T, C, NH, ops);
        matmul_backward(lda.ln1, lg.qkvw, lg.qkvb, lda.qkv, la.ln1, w(lp.qkvw), N, C, 3 * C, add);
        layernorm_backward(dres, lg.ln1w, lg.ln1b, lda.ln1, x, lp.ln1w, la.ln1_mean, la.ln1_rstd, N, C);
        if (layer_done) layer_done(l);
    }
    if (g.wte) encoder_backward(g.wte, g.wpe, da.encoded, model->inputs.data(), B, T, C);
    model->head_grads = model->grads_unset = false;
}
