// matmul.cpp: the linear layer (layers.h) on gemm (gemm.h); W is (OC, IC) as llm.c's (hf.cpp transposes Conv1D's).
#include "core/gemm.h"
#include "core/layers.h"
#include "core/simd.h"

KERNELS_BEGIN

// Two accumulators per row, so one row's sums do not wait on each other.
static void matvec_fp32(float* out, const float* x, const float* W, const float* b, int IC, int OC) {
#pragma omp parallel for schedule(static)
    for (int j = 0; j < OC; j++) {
        const float* w = W + (size_t)j * IC;
        vf16 acc0 = vf16{}, acc1 = vf16{};
        int i = 0;
        for (; i + 32 <= IC; i += 32) {
            acc0 += vf_load(w + i) * vf_load(x + i);
            acc1 += vf_load(w + i + 16) * vf_load(x + i + 16);
        }
        vf16 acc = acc0 + acc1;
        float sum = 0;
        for (int l = 0; l < kVecLen; l++) sum += acc[l];
        for (; i < IC; i++) sum += w[i] * x[i];
        out[j] = b ? sum + b[j] : sum;
    }
}

void matmul_forward(float* out, const float* inp, const Weight& w, const float* bias, int N, int IC, int OC) {
    // one row (decoding): a mat-vec reading each weight once, from its copy if it has one (layers.h)
    if (N == 1 && w.copy && matmul_row_of_copy) return matmul_row_of_copy(out, inp, w, bias, IC, OC);
    if (N == 1 && !w.ops) return matvec_fp32(out, inp, w.f32, bias, IC, OC);
    gemm(N, OC, IC, inp, IC, false, w.f32, IC, true, out, OC, false, w.ops, w.copy);
    if (!bias) return;
#pragma omp parallel for
    for (int i = 0; i < N; i++) {
        float* o = out + (size_t)i * OC;
        for (int j = 0; j < OC; j++) o[j] += bias[j];
    }
}

void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp, const Weight& w,
                     int N, int IC, int OC) {
    gemm(N, IC, OC, dout, OC, false, w.f32, IC, false, dinp, IC, false, w.ops, w.copy);  // dinp = dout W
    gemm(OC, IC, N, dout, OC, true, inp, IC, false, dweight, IC, true, w.ops);          // dW += dout^T inp
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
