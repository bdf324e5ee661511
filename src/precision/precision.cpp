// precision.cpp: the model's reduced-precision copies of its weights (see precision.h): bf16 rounding,
// and int8's q8_0 quantization in place.
#include "precision/precision.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <memory>

#include "precision/half.h"
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

}  // namespace

int gpt2_set_precision(GPT2* model, Precision prec) {
    assert(prec != Precision::kBf16 || bf16_supported());
    model->copies.reset();
    if (prec == Precision::kFp32) return 0;
    auto copies = std::make_unique<PrecisionCopies>();
    PrecisionCopies* c = copies.get();
    c->precision = prec;
    if (prec == Precision::kBf16) {
        c->params16.resize(model->params.size());
        bf16_round_array(c->params16.data(), model->params.data(), model->params.size());
        for (const TensorInfo& t : model->param_table) c->at[t.offset].bf16 = c->params16.data() + t.offset;
    }
    int quantized = 0;
    if (prec == Precision::kInt8) {
        buffer_assign_zero(&c->params8, model->params.size());  // huge pages: decoding streams it
        c->params8_d.resize(model->params.size() / kQ8Block + 1);  // a matrix at offset o: from ceil(o / 32)
        for (const TensorInfo& t : model->param_table)
            if (t.cols != 0 && t.cols % kQ8Block == 0 && quantize_matrix(model, c, t)) {
                WeightCopy& q = c->at[t.offset];
                q.q8 = c->params8.data() + t.offset;
                q.q8_d = c->params8_d.data() + (t.offset + kQ8Block - 1) / kQ8Block;
                quantized++;
            }
    }
    model->copies = std::move(copies);
    return quantized;
}

const PrecisionCopies* gpt2_precision_copies(const GPT2& model) {
    return dynamic_cast<const PrecisionCopies*>(model.copies.get());
}

Precision gpt2_precision(const GPT2& model) {
    const PrecisionCopies* c = gpt2_precision_copies(model);
    return c ? c->precision : Precision::kFp32;
}

Weight PrecisionCopies::weight(const float* w, size_t offset) const {
    auto it = at.find(offset);
    return Weight(w, operands(), it == at.end() ? nullptr : &it->second);
}

// An int8 model's products are fp32 on its quantized weights.
const GemmOperands* PrecisionCopies::operands() const {
    return precision == Precision::kBf16 ? bf16_gemm_operands() : nullptr;
}

void PrecisionCopies::params_updated(const float* params, size_t offset, size_t n) {
    assert(params8.empty() && "int8 models are for inference");
    if (!params16.empty()) bf16_round_serial(params16.data() + offset, params + offset, n);
}
