// gemm_copy.cpp: the operands of a product with a weight that only its copy holds (precision.h's
// copy_gemm_operands): fp32's packing and micro-kernel (tuned/gemm_tile.h), but B's panels are widened from
// the weight's q8_0 blocks or bf16 values, so the fp32 matrix need not be kept (a LoRA base drops it).
#include <algorithm>

#include "precision/half.h"
#include "precision/precision.h"
#include "tuned/gemm_tile.h"

KERNELS_BEGIN

namespace {

using gemm_tile::NR;

// Row r's values [c0, c0 + n) of the copy of a matrix with ld values per row, widened to the fp32 values
// they stand for, exactly: q8_0's d * q (one product, as quantizing left them: precision.cpp), or bf16's.
inline void copy_row(float* out, const WeightCopy& w, int ld, int r, int c0, int n) {
    const size_t at = (size_t)r * ld + c0;
    if (!w.q8) {
        for (int i = 0; i < n; i++) out[i] = bf16_to_float(w.bf16[at + i]);
        return;
    }
    const int8_t* q = w.q8 + at;
    for (int i = 0; i < n;) {
        const size_t block = (at + i) / kQ8Block;
        const float d = fp16_to_float(w.q8_d[block]);
        const int end = std::min(n, (int)((block + 1) * kQ8Block - at));
        for (; i < end; i++) out[i] = d * q[i];
    }
}

// gemm_tile.h's pack_b for a weight W (rows, ldb) held by its copy: op(B) is W^T (trans: the forward, x W^T)
// or W (the backward's dinp = dout W), packed as panels of NR columns, k-major, zero-padded.
void pack_b_copy(uint32_t* words, const void* copy, int ldb, bool trans, int k0, int kc, int j0, int nc) {
    const WeightCopy& w = *static_cast<const WeightCopy*>(copy);
    float* dst = reinterpret_cast<float*>(words);
    float row[GEMM_KC_DEEP > NR ? GEMM_KC_DEEP : NR];
    for (int p = 0; p < nc; p += NR, dst += (size_t)NR * kc) {
        const int cols = std::min(NR, nc - p);
        if (trans) {  // column c of the panel is W's row j0 + p + c, read along k
            for (int c = 0; c < NR; c++) {
                if (c < cols) copy_row(row, w, ldb, j0 + p + c, k0, kc);
                for (int k = 0; k < kc; k++) dst[(size_t)k * NR + c] = c < cols ? row[k] : 0.0f;
            }
        } else {  // row k of the panel is part of W's row k0 + k
            for (int k = 0; k < kc; k++) {
                copy_row(row, w, ldb, k0 + k, j0 + p, cols);
                for (int c = 0; c < NR; c++) dst[(size_t)k * NR + c] = c < cols ? row[c] : 0.0f;
            }
        }
    }
}

}  // namespace

const GemmOperands* copy_gemm_operands() {
    static const GemmOperands ops = [] {
        GemmOperands o = gemm_tile::fp32_operands();
        o.pack_b_copy = pack_b_copy;
        return o;
    }();
    return &ops;
}

KERNELS_END
