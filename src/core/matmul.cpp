// matmul.cpp: the linear layer, out = inp W^T + b, and its backward, on top of gemm (gemm.h).
// Weights are (OC, IC) as in llm.c (HuggingFace's Conv1D stores them transposed; checkpoint.cpp
// converts). See layers.h for shapes.
#include "core/gemm.h"
#include "core/layers.h"
#include "inference/matvec.h"

KERNELS_BEGIN

void matmul_forward(float* out, const float* inp, const Weight& w, const float* bias, int N, int IC, int OC) {
    // one row (decoding): a mat-vec reading each weight once, from the copy its precision reads (matvec.h)
    if (N == 1 && w.q8) return matvec_q8(out, inp, w.q8, w.q8_d, bias, IC, OC);
    if (N == 1 && w.prec == Precision::kFp32) return matvec_fp32(out, inp, w.f32, bias, IC, OC);
    if (N == 1 && w.bf16) return matvec_bf16(out, inp, w.bf16, bias, IC, OC);
    gemm(N, OC, IC, inp, IC, false, w.f32, IC, true, out, OC, false, w.prec, w.bf16);
    if (!bias) return;
#pragma omp parallel for
    for (int i = 0; i < N; i++) {
        float* o = out + (size_t)i * OC;
        for (int j = 0; j < OC; j++) o[j] += bias[j];
    }
}

void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp, const Weight& w,
                     int N, int IC, int OC) {
    gemm(N, IC, OC, dout, OC, false, w.f32, IC, false, dinp, IC, false, w.prec, w.bf16);  // dinp = dout W
    gemm(OC, IC, N, dout, OC, true, inp, IC, false, dweight, IC, true, w.prec);           // dW += dout^T inp
    if (!dbias) return;
    const int chunk = 256;
#pragma omp parallel for
    for (int j0 = 0; j0 < OC; j0 += chunk) {
        int j1 = j0 + chunk < OC ? j0 + chunk : OC;
        for (int i = 0; i < N; i++) {
            const float* d = dout + (size_t)i * OC;
            for (int j = j0; j < j1; j++) dbias[j] += d[j];
        }
    }
}

KERNELS_END
