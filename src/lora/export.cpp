// export.cpp: see export.h. llama.cpp's side: src/llama-adapter.cpp (keys, names, shape checks) and
// llama-graph.cpp build_lora_mm (y = W x + scale B (A x), scale = alpha / rank with rank = lora_b's ne[0]).
#include "lora/export.h"

#include <cmath>

#include "core/error.h"
#include "formats/gguf.h"

namespace {

// The base's weight a target adapts: its row in the parameter table (slot: its place in LayerParams).
const TensorInfo& base_weight(const std::vector<TensorInfo>& params, int layer, int target) {
    static const int kSlot[kLoraTargets] = {2, 4, 8, 10};  // qkvw, attprojw, fcw, fcprojw
    for (const TensorInfo& t : params)
        if (t.layer == layer && t.slot == kSlot[target]) return t;
    fatal("no weight for layer %d target %d", layer, target);  // unreachable: the table has every layer's
}

}  // namespace

void lora_save_gguf(const LoraAdapter& a, const std::string& path, const char* flag) {
    const float alpha = (float)(a.cfg.scale() * a.cfg.rank);  // llama.cpp's alpha / rank = PEFT's scale
    if (alpha == 0)
        fatal(
            "unsupported adapter for GGUF (%s): lora_alpha is 0, expected a non-zero alpha (llama.cpp reads alpha 0 "
            "as scale 1)",
            path.c_str());
    GgufKeys kv;
    kv.str("general.architecture", "gpt2");
    kv.str("general.type", "adapter");
    kv.mark_ours();
    kv.str("adapter.type", "lora");
    kv.f32("adapter.lora.alpha", alpha);
    const std::vector<TensorInfo> params = layout_params(a.base);
    std::vector<GgufOutTensor> tensors;
    for (const TensorInfo& t : a.table) {
        const bool is_b = t.name.find(".lora_B.") != std::string::npos;
        const TensorInfo& w = base_weight(params, t.layer, t.slot);
        for (size_t i = 0; i < t.numel(); i++)
            if (!std::isfinite(a.params[t.offset + i]))
                fatal("non-finite adapter weight (%s): %s[%zu] is %g; not saving non-finite weights", path.c_str(),
                      t.name.c_str(), i, a.params[t.offset + i]);
        tensors.push_back({w.gguf_name + (is_b ? ".lora_b" : ".lora_a"),
                           {t.cols, t.rows},
                           GgufType::kF32,
                           a.params.data() + t.offset});
    }
    gguf_write(path, flag, kGgufAdapterKind, kv, tensors);
}

void lora_merge(GPT2* model, const LoraAdapter& a) {
    const double s = a.cfg.scale();
    const size_t r = (size_t)a.cfg.rank;
    for (size_t i = 0; i + 1 < a.table.size(); i += 2) {  // A then B of each target (lora_layout's order)
        const TensorInfo &ta = a.table[i], &tb = a.table[i + 1];
        const TensorInfo& w = base_weight(model->param_table, ta.layer, ta.slot);
        const float *A = a.params.data() + ta.offset, *B = a.params.data() + tb.offset;  // (r, in), (out, r)
        float* W = model->params.data() + w.offset;                                      // (out, in)
        const size_t out = w.rows, in = w.cols;
#pragma omp parallel for
        for (size_t o = 0; o < out; o++)
            for (size_t c = 0; c < in; c++) {
                double sum = 0;
                for (size_t k = 0; k < r; k++) sum += (double)B[o * r + k] * A[k * in + c];
                W[o * in + c] = (float)(W[o * in + c] + s * sum);
            }
    }
}
