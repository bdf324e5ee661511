// precision.cpp: the model's reduced-precision copies of its weights (see precision.h): bf16 rounding,
// and int8's q8_0 quantization in place.
#include "precision/precision.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <memory>

#include "precision/half.h"
#include "platform/platform.h"
#include "platform/util.h"

namespace {

// Quantizes the matrix t of model->params into c's params8/params8_d and, if all of it fits q8_0, replaces its
// fp32 values by the quantized ones. Returns whether it did.
bool quantize_matrix(GPT2* model, PrecisionCopies* c, const TensorInfo& t) {
    const size_t n = t.numel(), nb = n / kQ8Block, d0 = (t.offset + kQ8Block - 1) / kQ8Block;
    float* w = model->params.data() + t.offset;
    int8_t* q = c->params8.data() + t.offset;
    uint16_t* d = c->params8_d.data() + d0;
    bool ok = true;
#pragma omp parallel for reduction(&& : ok)
    for (size_t b = 0; b < nb; b++) {
        const float* x = w + b * kQ8Block;
        bool finite = true;
        for (int i = 0; i < kQ8Block; i++) finite = finite && std::isfinite(x[i]);
        d[b] = finite ? q8_quantize_block(x, q + b * kQ8Block) : 0;
        ok = ok && finite && std::isfinite(fp16_to_float(d[b]));
    }
    if (!ok) return false;
#pragma omp parallel for
    for (size_t b = 0; b < nb; b++) {
        const float scale = fp16_to_float(d[b]);
        for (int i = 0; i < kQ8Block; i++) w[b * kQ8Block + i] = scale * q[b * kQ8Block + i];
    }
    return true;
}

// Matrices whose rows are whole q8_0 blocks are quantized (GGUF's q8_0 export's rule); with drop_fp32 those of
// the blocks give their fp32 values back (wte's and wpe's rows are read by the embedding too).
bool quantizable(const TensorInfo& t) { return t.cols != 0 && t.cols % kQ8Block == 0; }
bool droppable(const TensorInfo& t) { return quantizable(t) && t.layer >= 0; }

// The copies gpt2_set_precision_tensor adds to: made by its first call, sized for the whole table.
PrecisionCopies* precision_copies(GPT2* model, Precision prec, bool drop_fp32) {
    if (auto* made = dynamic_cast<PrecisionCopies*>(model->copies.get())) {
        assert(made->precision == prec && made->frozen == drop_fp32 && "one precision for every tensor");
        return made;
    }
    auto copies = std::make_unique<PrecisionCopies>();
    PrecisionCopies* c = copies.get();
    c->precision = prec;
    c->frozen = drop_fp32;
    const size_t n = model->params.size();
    if (prec == Precision::kBf16 && !drop_fp32) c->params16.resize(n);
    if (prec == Precision::kBf16 && drop_fp32) {  // params16 spans the block matrices alone, touched one at a time
        size_t lo = n, hi = 0;
        for (const TensorInfo& t : model->param_table)
            if (droppable(t)) lo = std::min(lo, t.offset), hi = std::max(hi, t.offset + t.numel());
        if (lo < hi) c->params16.reserve(hi - lo), c->params16_from = lo;
    }
    if (prec == Precision::kInt8) {
        if (drop_fp32) c->params8.reserve(n);     // touched a matrix at a time, as the fp32 ones are given back
        else buffer_assign_zero(&c->params8, n);  // huge pages: decoding streams it
        c->params8_d.resize(n / kQ8Block + 1);    // a matrix at offset o: from ceil(o / 32)
    }
    model->copies = std::move(copies);
    return c;
}

}  // namespace

void gpt2_set_precision_tensor(GPT2* model, const TensorInfo& t, Precision prec, bool drop_fp32) {
    if (prec == Precision::kFp32) return;
    PrecisionCopies* c = precision_copies(model, prec, drop_fp32);
    float* x = model->params.data() + t.offset;
    auto give_back = [&](WeightCopy* copy) {  // with drop_fp32, once its copy is made
        if (!drop_fp32 || !droppable(t)) return;
        c->fp32_given_back += os_memory_discard(x, t.numel() * sizeof(float));
        copy->fp32_dropped = true;
    };
    if (prec == Precision::kBf16 && !drop_fp32) {
        bf16_round_array(c->params16.data() + t.offset, x, t.numel());
        c->at[t.offset].bf16 = c->params16.data() + t.offset;
    } else if (prec == Precision::kBf16 && !droppable(t)) {  // a frozen base's other tensors: rounded in place
#pragma omp parallel for
        for (size_t i = 0; i < t.numel(); i++) x[i] = bf16_rounded(x[i]);
    } else if (prec == Precision::kBf16) {  // its block matrices: rounded into params16
        const size_t from = t.offset - c->params16_from;
        c->params16.resize(std::max(c->params16.size(), from + t.numel()));
        bf16_round_array(c->params16.data() + from, x, t.numel());
        c->at[t.offset].bf16 = c->params16.data() + from;
        give_back(&c->at[t.offset]);
        c->kept++;
    } else {  // int8: params8 spans every tensor, the quantized ones' blocks at their offsets
        c->params8.resize(std::max(c->params8.size(), t.offset + t.numel()));
        if (!quantizable(t) || !quantize_matrix(model, c, t)) return;
        WeightCopy& q = c->at[t.offset];
        q.q8 = c->params8.data() + t.offset;
        q.q8_d = c->params8_d.data() + (t.offset + kQ8Block - 1) / kQ8Block;
        give_back(&q);
        c->kept++;
    }
}

int gpt2_set_precision(GPT2* model, Precision prec, bool drop_fp32) {
    assert(prec != Precision::kBf16 || drop_fp32 || bf16_supported());
    model->copies.reset();
    for (const TensorInfo& t : model->param_table) gpt2_set_precision_tensor(model, t, prec, drop_fp32);
    const PrecisionCopies* c = gpt2_precision_copies(*model);
    return c ? c->kept : 0;
}

void gpt2_round_inputs_q8(GPT2* model) {
    auto* c = dynamic_cast<PrecisionCopies*>(model->copies.get());
    assert(c && c->precision == Precision::kInt8);
    for (auto& [offset, copy] : c->at) copy.q8_inputs = copy.q8 != nullptr;
}

const PrecisionCopies* gpt2_precision_copies(const GPT2& model) {
    return dynamic_cast<const PrecisionCopies*>(model.copies.get());
}

Precision gpt2_precision(const GPT2& model) {
    const PrecisionCopies* c = gpt2_precision_copies(model);
    return c ? c->precision : Precision::kFp32;
}

double gpt2_base_bytes(const GPT2Config& cfg, Precision prec) {
    double all = 0, dropped = 0;
    for (const TensorInfo& t : layout_params(cfg)) {
        all += t.numel();
        if (droppable(t)) dropped += t.numel();
    }
    if (prec == Precision::kFp32) return sizeof(float) * all;
    if (prec == Precision::kBf16) return sizeof(float) * (all - dropped) + sizeof(uint16_t) * dropped;
    return sizeof(float) * (all - dropped) + all * (1.0 + 2.0 / kQ8Block);
}

// A weight whose fp32 values were given back: its products read its copy (the same numbers).
Weight PrecisionCopies::weight(const float* w, size_t offset) const {
    auto it = at.find(offset);
    if (it == at.end()) return Weight(w, operands());
    const WeightCopy& copy = it->second;
    if (copy.q8_inputs) return Weight(copy.fp32_dropped ? nullptr : w, q8_gemm_operands(), &copy);
    if (copy.fp32_dropped) return Weight(nullptr, copy_gemm_operands(), &copy);
    return Weight(w, operands(), &copy);
}

// An int8 model's products, and a frozen base's, are fp32 on its quantized or rounded weights.
const GemmOperands* PrecisionCopies::operands() const {
    return precision == Precision::kBf16 && !frozen ? bf16_gemm_operands() : nullptr;
}

void PrecisionCopies::params_updated(const float* params, size_t offset, size_t n) {
    assert(params8.empty() && !frozen && "int8 models and frozen bases are not trained");
    if (!params16.empty()) bf16_round_serial(params16.data() + offset, params + offset, n);
}
