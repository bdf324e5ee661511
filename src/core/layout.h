// layout.h: GPT-2's geometry, where every tensor lives in the flat parameter and activation buffers (a table per
// buffer, and views into it), and how the buffers are set up. The parameter table is the one description of the
// tensors everything reads (name, shape, decay, init, HF and GGUF names); gradients, m and v share its layout.
#pragma once
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

struct GPT2Config {
    int max_seq_len = 1024;         // n_positions
    int vocab_size = 50257;         // real tokens
    int padded_vocab_size = 50304;  // vocab_size rounded up to a multiple of 128, for aligned matmuls
    int num_layers = 12, num_heads = 12, channels = 768;
};

// A config with padded_vocab_size filled in (50257 -> 50304). Padded logits never enter softmax, loss or sampling.
GPT2Config config_make(int max_seq_len, int vocab_size, int num_layers, int num_heads, int channels);
// "" when the geometry is consistent, else a one-line error naming `where` (a file or flag) for the caller.
std::string config_check(const GPT2Config& cfg, const char* where);

// How gpt2_init_random fills a parameter: GPT-2's N(0, 0.02), N(0, 0.02 / sqrt(2L)) for the
// projections into the residual stream, or a constant.
enum class TensorInit { kNormal, kResidualNormal, kOne, kZero };

// One tensor of a flat buffer: name ("wte", "h.3.qkvw"), offset and shape in floats. Weights are stored
// (out, in) as in llm.c; 1-D tensors have cols == 0. Parameters also carry what files and init need.
struct TensorInfo {
    std::string name;
    size_t offset = 0, rows = 0, cols = 0;
    bool decay = false;          // AdamW weight decay applies: the 2-D tensors, as nanoGPT does
    std::string hf_name;         // HuggingFace's name without prefix ("h.3.attn.c_attn.weight")
    bool hf_transposed = false;  // HuggingFace's Conv1D stores it (in, out)
    std::string gguf_name;       // llama.cpp's name in a GGUF file ("blk.3.attn_qkv.weight"), stored as ours
    TensorInit init = TensorInit::kZero;
    int layer = -1;  // block index, -1 outside the blocks
    int slot = -1;   // index of a block tensor in LayerParams (of an activation: in LayerActs)
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
    float* residual2;            // (N, C) = block input + atty's projection (computed in place)
    float* ln2;                  // (N, C)
    float *ln2_mean, *ln2_rstd;  // (N)
    float* fch;                  // (N, 4C) before GELU
    float* fch_gelu;             // (N, 4C)
    float* residual3;            // (N, C) = residual2 + fch_gelu's projection; the block's output
};

// The activations of a forward, and (gradients = true) of their gradients: the backward needs one layer's at a
// time, so those hold one layer every layer's views share, and nothing for what has no gradient (the mean/rstd/lse
// caches, logits and losses: null views). gpt2_backward's order lets that layer live in three buffers, 6C a row:
// the residual stream's (residual3; residual2 and encoded alias it, updated in place), an (N, 4C) one for fch, where
// fch_gelu's becomes fch's in place and qkv's comes after (alias), and an (N, C) one for atty (ln1, ln2 and lnf alias
// it: each is read before the next is written).
struct ActViews {
    float* encoded = nullptr;  // (N, C) wte[token] + wpe[t]
    std::vector<LayerActs> layers;
    float* lnf = nullptr;                            // (N, C)
    float *lnf_mean = nullptr, *lnf_rstd = nullptr;  // (N)
    // (layout_head_rows(N), Vp) the logits of the head's last rows (model.h); after gpt2_head with a loss_scale, their
    // d(loss * loss_scale)/dlogits in their place (crossentropy_fused).
    float* logits = nullptr;
    float* losses = nullptr;  // (N) per-position cross-entropy, after a forward with targets
};

// The rows gpt2_head takes at a time: all N up to 1024, else 1024 (the weight's re-reads then cost little).
inline int layout_head_rows(int N) { return N > 1024 ? 1024 : N; }
// The table's entries are "encoded", "h.3.ln1" (layer 3, slot: its place in LayerActs), ..., "lnf", ...
std::vector<TensorInfo> layout_acts(const GPT2Config& cfg, int B, int T, bool gradients = false);
// The views of a table from layout_acts, at its entries' offsets: an extension may move entries (memory/
// gives every layer one copy of some) or leave some out (their views stay null; inference/ keeps one layer).
ActViews layout_act_views(const GPT2Config& cfg, const std::vector<TensorInfo>& table, float* base,
                          bool gradients = false);

// Seam: asks for huge pages (2 MiB, where the system offers them) over [data, data + bytes) and faults
// them in on all threads (./gpt2: platform/util.h's buffer_prefault_huge); null in the core alone.
inline void (*buffer_prefault)(const void* data, size_t bytes) = nullptr;

// v->assign(n, T()), with the old storage freed first and the new one prefaulted (buffer_prefault) before it is
// zeroed: faulting 4 KiB pages one at a time was most of a first training step at 124M (first_step,
// tests/bench_results.md); huge pages keep it near a steady one.
template <typename Vector>
void buffer_assign_zero(Vector* v, size_t n) {
    Vector().swap(*v);
    v->reserve(n);  // allocated, not yet touched
    if (buffer_prefault) buffer_prefault(v->data(), n * sizeof(typename Vector::value_type));
    v->assign(n, typename Vector::value_type());
}

// The parameters' allocator (GPT2::params): std::allocator, but a resize leaves the new values unset, so that a
// load can write each page first (gpt2_build's zeroed): a frozen base that gives a matrix's pages back as soon as
// it is read then never holds them all at once, as it did when they were zeroed first.
template <typename T>
struct UnsetAllocator : std::allocator<T> {
    template <typename U>
    struct rebind {
        using other = UnsetAllocator<U>;
    };
    UnsetAllocator() = default;
    template <typename U>
    UnsetAllocator(const UnsetAllocator<U>&) noexcept {}
    template <typename U>
    void construct(U* p) noexcept {  // with a value (assign, copies), allocator_traits places it itself
        ::new ((void*)p) U;          // default-initialised: a float is left as the page holds it
    }
};
