// precision.cpp: the model's reduced-precision copies of its weights (see precision.h): bf16 rounding,
// and int8's q8_0 quantization in place.
#include "precision/precision.h"

#include <algorithm>
#include <cassert>
#include <cmath>

#include "precision/half.h"
#include "platform/util.h"

namespace {

// Quantizes the matrix t of model->params into params8/params8_d and, if all of it fits q8_0, replaces its
// fp32 values by the quantized ones. Returns whether it did.
bool quantize_matrix(GPT2* model, const TensorInfo& t) {
    const size_t n = t.numel(), nb = n / kQ8Block, d0 = (t.offset + kQ8Block - 1) / kQ8Block;
    float* w = model->params.data() + t.offset;
    int8_t* q = model->params8.data() + t.offset;
    uint16_t* d = model->params8_d.data() + d0;
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
    model->precision = prec;
    std::vector<int8_t>().swap(model->params8);
    std::vector<uint16_t>().swap(model->params8_d);
    model->q8_offsets.clear();
    if (prec != Precision::kBf16) std::vector<uint16_t>().swap(model->params16);
    if (prec == Precision::kBf16) {
        model->params16.resize(model->params.size());
        bf16_round_array(model->params16.data(), model->params.data(), model->params.size());
    }
    if (prec != Precision::kInt8) return 0;
    buffer_assign_zero(&model->params8, model->params.size());  // huge pages: decoding streams it
    model->params8_d.resize(model->params.size() / kQ8Block + 1);  // a matrix at offset o: from ceil(o / 32)
    for (const TensorInfo& t : model->param_table)
        if (t.cols != 0 && t.cols % kQ8Block == 0 && quantize_matrix(model, t)) model->q8_offsets.push_back(t.offset);
    std::sort(model->q8_offsets.begin(), model->q8_offsets.end());
    return (int)model->q8_offsets.size();
}
