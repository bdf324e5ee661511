// memory.cpp: see memory.h.
#include "memory/memory.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>
#include <iterator>
#include <map>
#include <string>
#include <utility>

#include "core/layout.h"
#include "core/layers.h"
#include "core/model.h"

namespace {

// The layout of layer_grads' gradients: the parameter layout of the same model with one layer.
GPT2Config one_layer(GPT2Config cfg) {
    cfg.num_layers = 1;
    return cfg;
}

// recompute's activations: layout_acts' table with one copy (layer 0's) for every layer of some entries, which
// the backward refills before each layer, the other entries moved up to close the gaps. kBlocks (recompute_blocks):
// all but residual3, the next block's input. Else ln1, ln2 and fch_gelu, which recompute_layer refills.
template <bool kBlocks>
std::vector<TensorInfo> recompute_acts_table(const GPT2Config& cfg, int B, int T) {
    std::vector<TensorInfo> table = layout_acts(cfg, B, T);
    const char* const kShared[] = {"ln1", "ln2", "fch_gelu"};
    std::map<std::string, size_t> shared;  // a kind's one copy
    size_t offset = 0;
    for (TensorInfo& t : table) {
        const std::string kind = t.name.substr(t.name.rfind('.') + 1);  // "h.3.ln1": "ln1"
        const bool one_copy =
            t.layer >= 0 && (kBlocks ? kind != "residual3"
                                     : std::find(std::begin(kShared), std::end(kShared), kind) != std::end(kShared));
        if (one_copy && t.layer > 0) {
            t.offset = shared.at(kind);
            continue;
        }
        if (one_copy) shared[kind] = offset;
        t.offset = offset;
        offset += t.numel();
    }
    return table;
}

// What recompute's forward did not keep of layer l, by the forward's own kernels: the same values.
void recompute_layer(GPT2* model, int l) {
    const int N = model->B * model->T, C = model->cfg.channels;
    const LayerParams& lp = model->param.layers[l];
    const LayerActs& la = model->act.layers[l];
    const float* x = l == 0 ? model->act.encoded : model->act.layers[l - 1].residual3;  // the block's input
    layernorm_forward(la.ln1, la.ln1_mean, la.ln1_rstd, x, lp.ln1w, lp.ln1b, N, C);
    layernorm_forward(la.ln2, la.ln2_mean, la.ln2_rstd, la.residual2, lp.ln2w, lp.ln2b, N, C);
    gelu_forward(la.fch_gelu, la.fch, (size_t)N * 4 * C);
}

// recompute_blocks: all of block l from its input, by the forward itself (a LoRA adapter's dropout masks
// included: lora.h): the same values.
void recompute_block(GPT2* model, int l) {
    const float* x = l == 0 ? model->act.encoded : model->act.layers[l - 1].residual3;
    block_forward(*model, l, model->act.layers[l], x, model->B, model->T);
}

}  // namespace

double gpt2_params_bytes(const GPT2Config& cfg) {
    return sizeof(float) * (double)layout_params_size(layout_params(cfg));
}

double gpt2_acts_bytes(const GPT2Config& cfg, int B, int T, bool training) {
    const double n = (double)layout_params_size(layout_acts(cfg, B, T));
    return sizeof(float) * (n + (training ? (double)layout_params_size(layout_acts(cfg, B, T, true)) : 0.0));
}

void memory_enable_training(GPT2* model, TrainingMemory mem, bool frozen) {
    assert(!(frozen && mem.layer_grads) && "a frozen base has no layer gradients to update in the backward");
    if (model->training) return;
    if (mem.recompute_blocks) model->acts_table = recompute_acts_table<true>, model->layer_begin = recompute_block;
    else if (mem.recompute) model->acts_table = recompute_acts_table<false>, model->layer_begin = recompute_layer;
    if (mem.layer_grads) {  // every layer's views, and every layer tensor's offset, are the one layer's
        const std::vector<TensorInfo> one = layout_params(one_layer(model->cfg));
        buffer_assign_zero(&model->grads, layout_params_size(one));
        model->grad = layout_param_views(one_layer(model->cfg), model->grads.data());
        model->grad.layers.assign(model->cfg.num_layers, model->grad.layers[0]);
        model->grad_offsets.clear();
        for (const TensorInfo& t : model->param_table)
            for (const TensorInfo& u : one)
                if (t.layer >= 0 ? u.slot == t.slot : u.name == t.name) model->grad_offsets.push_back(u.offset);
        assert(model->grad_offsets.size() == model->param_table.size());
    }
    gpt2_enable_training(model, frozen);
}

double memory_grads_bytes(const GPT2Config& cfg, TrainingMemory mem) {
    return mem.layer_grads ? sizeof(float) * (double)layout_params_size(layout_params(one_layer(cfg)))
                           : gpt2_params_bytes(cfg);
}

double memory_acts_bytes(const GPT2Config& cfg, int B, int T, TrainingMemory mem) {
    const auto table = mem.recompute_blocks ? recompute_acts_table<true> : recompute_acts_table<false>;
    const double kept = mem.recompute || mem.recompute_blocks
                            ? sizeof(float) * (double)layout_params_size(table(cfg, B, T))
                            : gpt2_acts_bytes(cfg, B, T, false);
    return kept + gpt2_acts_bytes(cfg, B, T, true) - gpt2_acts_bytes(cfg, B, T, false);
}

void memory_clear_layer_grads(GPT2* model) {
    size_t begin = SIZE_MAX, end = 0;  // the shared layer's span in grads
    for (size_t i = 0; i < model->param_table.size(); i++)
        if (model->param_table[i].layer >= 0)
            begin = std::min(begin, model->grad_offsets[i]),
            end = std::max(end, model->grad_offsets[i] + model->param_table[i].numel());
    memset(model->grads.data() + begin, 0, sizeof(float) * (end - begin));
}

float adamw_step_in_backward(AdamW* opt, GPT2* model, const AdamWConfig& cfg, float lr, float grad_clip) {
    const std::vector<TensorInfo>& table = model->param_table;
    std::vector<std::pair<size_t, size_t>> layers(model->cfg.num_layers, {SIZE_MAX, 0});  // tensors [first, last)
    for (size_t i = 0; i < table.size(); i++)
        if (table[i].layer >= 0) {
            auto& [first, last] = layers[table[i].layer];
            first = std::min(first, i), last = i + 1;
        }
    std::vector<double> sumsq(table.size());
    const ParamSet params = gpt2_param_set(*model);
    auto measure_layer = [&](int l) { optimizer_grad_sumsq(params, layers[l].first, layers[l].second, sumsq.data()); };
    auto measure_rest = [&] {  // wte, wpe, ln_f: final once the backward returns
        for (size_t i = 0; i < table.size(); i++)
            if (table[i].layer < 0) optimizer_grad_sumsq(params, i, i + 1, sumsq.data());
    };
    const bool clip = grad_clip > 0;
    float norm = 0;
    if (clip) {
        gpt2_backward(model, [&](int l) {
            measure_layer(l);
            memory_clear_layer_grads(model);
        });
        measure_rest();
        norm = optimizer_norm_of(sumsq);
        if (!std::isfinite(norm)) return norm;
        gpt2_zero_grad(model);
        gpt2_head(model, 1.0f);
    }
    const AdamWStep k = adamw_begin(opt, cfg, lr, optimizer_clip_factor(norm, grad_clip));
    gpt2_backward(model, [&](int l) {
        if (!clip) measure_layer(l);
        adamw_apply(opt, params, k, lr, cfg.weight_decay, layers[l].first, layers[l].second);
        memory_clear_layer_grads(model);
    });
    if (!clip) measure_rest();
    for (size_t i = 0; i < table.size(); i++)
        if (table[i].layer < 0) adamw_apply(opt, params, k, lr, cfg.weight_decay, i, i + 1);
    return clip ? norm : optimizer_norm_of(sumsq);
}
