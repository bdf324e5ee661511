// lora.cpp: see lora.h.
#include "lora/lora.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "core/gemm.h"
#include "core/rng.h"

void lora_forward(float* out, float* hs, const float* x, const float* A, const float* B, float scale, int N, int in,
                  int out_features, int rank) {
    gemm(N, rank, in, x, in, false, A, in, true, hs, rank, false);  // x A^T
    for (size_t i = 0; i < (size_t)N * rank; i++) hs[i] *= scale;
    gemm(N, out_features, rank, hs, rank, false, B, rank, true, out, out_features, true);  // out += hs B^T
}

void lora_backward(float* dinp, float* dA, float* dB, float* g, const float* dout, const float* hs, const float* x,
                   const float* A, const float* B, float scale, int N, int in, int out_features, int rank) {
    gemm(N, rank, out_features, dout, out_features, false, B, rank, false, g, rank, false);  // dout B
    for (size_t i = 0; i < (size_t)N * rank; i++) g[i] *= scale;
    gemm(out_features, rank, N, dout, out_features, true, hs, rank, false, dB, rank, true);  // dB += dout^T hs
    gemm(rank, in, N, g, rank, true, x, in, false, dA, in, true);                             // dA += g^T x
    gemm(N, in, rank, g, rank, false, A, in, false, dinp, in, true);                          // dinp += g A
}

void lora_forward_ref(float* out, float* hs, const float* x, const float* A, const float* B, float scale, int N,
                      int in, int out_features, int rank) {
    for (int i = 0; i < N; i++) {
        for (int r = 0; r < rank; r++) {
            double h = 0;
            for (int k = 0; k < in; k++) h += (double)x[(size_t)i * in + k] * A[(size_t)r * in + k];
            hs[(size_t)i * rank + r] = (float)(scale * h);
        }
        for (int o = 0; o < out_features; o++) {
            double y = 0;
            for (int r = 0; r < rank; r++) y += (double)hs[(size_t)i * rank + r] * B[(size_t)o * rank + r];
            out[(size_t)i * out_features + o] += (float)y;
        }
    }
}

void lora_backward_ref(float* dinp, float* dA, float* dB, const float* dout, const float* hs, const float* x,
                       const float* A, const float* B, float scale, int N, int in, int out_features, int rank) {
    std::vector<double> g((size_t)N * rank, 0.0);
    for (int i = 0; i < N; i++)
        for (int r = 0; r < rank; r++) {
            for (int o = 0; o < out_features; o++)
                g[(size_t)i * rank + r] += (double)dout[(size_t)i * out_features + o] * B[(size_t)o * rank + r];
            g[(size_t)i * rank + r] *= scale;
        }
    for (int o = 0; o < out_features; o++)
        for (int r = 0; r < rank; r++) {
            double s = 0;
            for (int i = 0; i < N; i++) s += (double)dout[(size_t)i * out_features + o] * hs[(size_t)i * rank + r];
            dB[(size_t)o * rank + r] += (float)s;
        }
    for (int r = 0; r < rank; r++)
        for (int k = 0; k < in; k++) {
            double s = 0;
            for (int i = 0; i < N; i++) s += g[(size_t)i * rank + r] * x[(size_t)i * in + k];
            dA[(size_t)r * in + k] += (float)s;
        }
    for (int i = 0; i < N; i++)
        for (int k = 0; k < in; k++) {
            double s = 0;
            for (int r = 0; r < rank; r++) s += g[(size_t)i * rank + r] * A[(size_t)r * in + k];
            dinp[(size_t)i * in + k] += (float)s;
        }
}

bool lora_dropout_keep(uint64_t key, size_t i, float p) {
    return (float)(splitmix64_mix(key + i) >> 40) * (1.0f / 16777216.0f) >= p;
}

namespace {

// xd (N, in) = x * mask / (1 - p) for the mask of `key`; with x null, xd *= mask / (1 - p) in place.
void apply_dropout(float* xd, const float* x, uint64_t key, float p, int N, int in) {
    const float inv = 1.0f / (1.0f - p);
#pragma omp parallel for schedule(static)
    for (int r = 0; r < N; r++)
        for (int c = 0; c < in; c++) {
            const size_t i = (size_t)r * in + c;
            xd[i] = lora_dropout_keep(key, i, p) ? (x ? x[i] : xd[i]) * inv : 0.0f;
        }
}

}  // namespace

void LoraLinear::forward(float* y, const float* inp, int N) const {
    key = 0;
    if (dropout && dropout->step >= 0 && dropout->p > 0) {
        key = splitmix64_mix(dropout->seed + 0x9E3779B97F4A7C15ull * (uint64_t)(dropout->step + 1)) ^
              splitmix64_mix(((uint64_t)index << 32) + (uint64_t)calls);
        apply_dropout(xd, inp, key, dropout->p, N, in);
        inp = xd;
    }
    lora_forward(y, hs, inp, A, B, scale, N, in, out, rank);
}

void LoraLinear::backward(float* dinp, const float* dout, const float* inp, int N) const {
    if (!dA) return;
    calls++;  // the next micro-batch's forward takes the next mask
    if (!key) return lora_backward(dinp, dA, dB, scratch, dout, hs, inp, A, B, scale, N, in, out, rank);
    apply_dropout(xd, inp, key, dropout->p, N, in);  // the forward's masked input, again
    std::fill(dxd, dxd + (size_t)N * in, 0.0f);
    lora_backward(dxd, dA, dB, scratch, dout, hs, xd, A, B, scale, N, in, out, rank);
    apply_dropout(dxd, nullptr, key, dropout->p, N, in);  // through the mask
#pragma omp parallel for schedule(static)
    for (long i = 0; i < (long)N * in; i++) dinp[i] += dxd[i];
}

void lora_dropout_step(LoraModel* lora, int step) {
    lora->dropout.step = step;
    for (LoraLinear& x : lora->linears) x.calls = 0;
}

namespace {

// in and out features of each LoraTarget for C channels.
void target_shape(int k, int C, int* in, int* out) {
    const int ins[kLoraTargets] = {C, C, C, 4 * C}, outs[kLoraTargets] = {3 * C, C, 4 * C, C};
    *in = ins[k], *out = outs[k];
}

}  // namespace

std::string lora_check(const LoraConfig& cfg, const GPT2Config& base, const char* flag) {
    char text[256];
    for (int k = 0; k < kLoraTargets; k++) {
        if (!cfg.target[k]) continue;
        int in, out;
        target_shape(k, base.channels, &in, &out);
        if (cfg.rank >= 1 && cfg.rank <= std::min(in, out)) continue;
        snprintf(text, sizeof(text), "bad value for %s: expected a rank in [1, %d] (the smaller side of %s, %d x %d), got %d",
                 flag, std::min(in, out), kLoraModules[k], out, in, cfg.rank);
        return text;
    }
    return "";
}

std::string lora_parse_targets(const std::string& list, LoraConfig* cfg) {
    std::fill(cfg->target, cfg->target + kLoraTargets, false);
    cfg->target_modules.clear();
    size_t start = 0;
    while (start <= list.size()) {
        const size_t end = std::min(list.find(',', start), list.size());
        const std::string name = list.substr(start, end - start);
        bool matched = false;
        for (int k = 0; k < kLoraTargets; k++) {
            if (lora_module_matches(kLoraModules[k], name)) cfg->target[k] = matched = true;
        }
        if (!matched)
            return "bad value for --lora-targets: expected PEFT module names of GPT-2's blocks (c_attn, c_proj, c_fc, "
                   "attn.c_proj, mlp.c_proj, ...), got '" + name + "'";
        cfg->target_modules.push_back(name);
        start = end + 1;
    }
    return "";
}

void lora_attach(GPT2* model, LoraModel* lora, int max_rows, bool training) {
    const LoraAdapter& a = lora->adapter;
    const int C = model->cfg.channels, rank = a.cfg.rank;
    const size_t pairs = a.table.size() / 2;
    lora->grads.assign(training ? a.params.size() : 0, 0.0f);
    lora->hs.assign(pairs * max_rows * rank, 0.0f);
    lora->scratch.assign((size_t)max_rows * rank, 0.0f);
    lora->dropout.p = training ? a.cfg.dropout : 0.0f;
    const size_t dropped = lora->dropout.p > 0 ? (size_t)max_rows * 4 * C : 0;  // the widest input: mlp.c_proj's
    lora->xd.assign(dropped, 0.0f);
    lora->dxd.assign(dropped, 0.0f);
    lora->linears.assign(pairs, LoraLinear());
    lora->at.clear();
    for (size_t i = 0; i < pairs; i++) {
        const TensorInfo &ta = a.table[2 * i], &tb = a.table[2 * i + 1];  // A before B (adapter.h)
        LoraLinear& x = lora->linears[i];
        x.A = a.params.data() + ta.offset, x.B = a.params.data() + tb.offset;
        if (training) x.dA = lora->grads.data() + ta.offset, x.dB = lora->grads.data() + tb.offset;
        x.hs = lora->hs.data() + i * max_rows * rank;
        x.scratch = lora->scratch.data();
        x.scale = (float)a.cfg.scale();
        x.rank = rank;
        x.index = (int)i;
        if (lora->dropout.p > 0) x.dropout = &lora->dropout, x.xd = lora->xd.data(), x.dxd = lora->dxd.data();
        target_shape(ta.slot, C, &x.in, &x.out);
        const LayerParams& lp = model->param.layers[ta.layer];
        const float* weights[kLoraTargets] = {lp.qkvw, lp.attprojw, lp.fcw, lp.fcprojw};
        lora->at[weights[ta.slot] - model->params.data()] = &x;
    }
    model->adapter_of = [lora](size_t offset) -> const LinearAdapter* {
        const auto it = lora->at.find(offset);
        return it == lora->at.end() ? nullptr : it->second;
    };
    if (training) gpt2_enable_training(model, true);
}

void lora_zero_grad(LoraModel* lora) { std::fill(lora->grads.begin(), lora->grads.end(), 0.0f); }

ParamSet lora_param_set(LoraModel* lora) {
    LoraAdapter& a = lora->adapter;
    return {&a.table, a.params.data(), lora->grads.data(), a.params.size(), nullptr, nullptr};
}
