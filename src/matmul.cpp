// matmul.cpp: the linear layer, out = inp W^T + b, and its backward, on top of gemm (gemm.h).
// Weights are (OC, IC) as in llm.c (HuggingFace's Conv1D stores them transposed; checkpoint.cpp
// converts). See layers.h for shapes.
#include "gemm.h"
#include "layers.h"

void matmul_forward(float* out, const float* inp, const float* weight, const float* bias, int N, int IC, int OC) {
    gemm(N, OC, IC, inp, IC, false, weight, IC, true, out, OC, false);
    if (!bias) return;
#pragma omp parallel for
    for (int i = 0; i < N; i++) {
        float* o = out + (size_t)i * OC;
        for (int j = 0; j < OC; j++) o[j] += bias[j];
    }
}

void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                     const float* weight, int N, int IC, int OC) {
    gemm(N, IC, OC, dout, OC, false, weight, IC, false, dinp, IC, false);    // dinp = dout W
    gemm(OC, IC, N, dout, OC, true, inp, IC, false, dweight, IC, true);      // dW += dout^T inp
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
