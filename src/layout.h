// layout.h: where every tensor lives in the flat parameter buffer and the flat activation buffer.
// One table of sizes lays out each buffer; named views point into it. Gradients and AdamW m/v use the
// parameter layout unchanged. Knows nothing of file formats (see checkpoint.h) or of the math.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "config.h"

// One tensor of a flat buffer: name ("wte", "h.3.qkvw"), offset and shape in floats. Weights are stored
// (out, in) as in llm.c; 1-D tensors have cols == 0.
struct TensorInfo {
    std::string name;
    size_t offset;
    size_t rows, cols;
    bool decay;  // AdamW weight decay applies (the 2-D tensors, as nanoGPT does)
    size_t numel() const { return cols ? rows * cols : rows; }
};

struct LayerParams {
    float *ln1w, *ln1b;          // (C)
    float *qkvw, *qkvb;          // (3C, C), (3C)
    float *attprojw, *attprojb;  // (C, C), (C)
    float *ln2w, *ln2b;          // (C)
    float *fcw, *fcb;            // (4C, C), (4C)
    float *fcprojw, *fcprojb;    // (C, 4C), (C)
};

struct ParamViews {
    float* wte;  // (Vp, C); rows >= V stay zero
    float* wpe;  // (maxT, C)
    std::vector<LayerParams> layers;
    float *lnfw, *lnfb;  // (C)
};

// The table for a config: wte, wpe, then each layer's 12 tensors in LayerParams order, then lnfw, lnfb.
std::vector<TensorInfo> layout_params(const GPT2Config& cfg);
size_t layout_params_size(const std::vector<TensorInfo>& table);
// Views into a buffer laid out by layout_params (parameters, gradients, m or v alike).
ParamViews layout_param_views(const GPT2Config& cfg, float* base);

// Activations of one layer for a (B, T) batch; N = B*T rows.
struct LayerActs {
    float* ln1;                  // (N, C) LayerNorm 1 output
    float *ln1_mean, *ln1_rstd;  // (N) cache for the backward
    float* qkv;                  // (N, 3C)
    float* atty;                 // (N, C) attention output before the projection
    float* att_lse;              // (B, NH, T) log-sum-exp of each query's attention scores
    float* attproj;              // (N, C)
    float* residual2;            // (N, C) = block input + attproj
    float* ln2;                  // (N, C)
    float *ln2_mean, *ln2_rstd;  // (N)
    float* fch;                  // (N, 4C) before GELU
    float* fch_gelu;             // (N, 4C)
    float* fcproj;               // (N, C)
    float* residual3;            // (N, C) = residual2 + fcproj; the block's output
};

struct ActViews {
    float* encoded;  // (N, C) wte[token] + wpe[t]
    std::vector<LayerActs> layers;
    float* lnf;                  // (N, C)
    float *lnf_mean, *lnf_rstd;  // (N)
    float* logits;               // (N, Vp)
    float* probs;                // (N, Vp) softmax over the first V entries; the rest zero
    float* losses;               // (N) per-position cross-entropy
};

std::vector<TensorInfo> layout_acts(const GPT2Config& cfg, int B, int T);
ActViews layout_act_views(const GPT2Config& cfg, int B, int T, float* base);
