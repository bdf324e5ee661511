// matmul.cpp: the linear layer, out = inp W^T + b, and its backward, on top of gemm (gemm.h).
// Weights are (OC, IC) as in llm.c (HuggingFace's Conv1D stores them transposed; checkpoint.cpp
// converts). See layers.h for shapes.
#include <cassert>
#include <vector>

#include "kernels/gemm.h"
#include "kernels/layers.h"
#include "kernels/simd.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

KERNELS_BEGIN

// out (OC) = W (OC, IC) x (IC) + b for one row: every weight is read once, so it is a memory-bound dot
// product per output (decoding's case), not a packed gemm.
static void matvec_forward(float* out, const float* x, const float* W, const float* b, int IC, int OC) {
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

#if defined(__x86_64__)
// The bf16 matrix-vector product: x is rounded to bf16 once; each output row's weights are streamed as
// bf16 (half fp32's bytes: decoding is bound by them) into vdpbf16ps, four accumulators deep.
__attribute__((target("avx512f,avx512bf16"))) static void matvec_bf16_avx512(float* out, const uint16_t* x16,
                                                                             const uint16_t* W16, const float* b,
                                                                             int IC, int OC) {
#pragma omp parallel for schedule(static)
    for (int j = 0; j < OC; j++) {
        const uint16_t* w = W16 + (size_t)j * IC;
        __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
        int i = 0;
        for (; i + 128 <= IC; i += 128)
            for (int u = 0; u < 4; u++)
                acc[u] = _mm512_dpbf16_ps(acc[u], (__m512bh)_mm512_loadu_si512(w + i + 32 * u),
                                          (__m512bh)_mm512_loadu_si512(x16 + i + 32 * u));
        for (; i + 32 <= IC; i += 32)
            acc[0] =
                _mm512_dpbf16_ps(acc[0], (__m512bh)_mm512_loadu_si512(w + i), (__m512bh)_mm512_loadu_si512(x16 + i));
        float lanes[16], sum = 0;  // (GCC 12's _mm512_reduce_add_ps trips a false uninitialised warning)
        _mm512_storeu_ps(lanes, _mm512_add_ps(_mm512_add_ps(acc[0], acc[1]), _mm512_add_ps(acc[2], acc[3])));
        for (int l = 0; l < 16; l++) sum += lanes[l];
        for (; i < IC; i++) sum += bf16_to_float(w[i]) * bf16_to_float(x16[i]);
        out[j] = b ? sum + b[j] : sum;
    }
}
#endif

void matvec_bf16(float* out, const float* x, const uint16_t* W16, const float* b, int IC, int OC) {
    assert(bf16_supported());
    static thread_local std::vector<uint16_t> x16;  // decoding calls this ~50 times a token: no allocation each
    x16.resize(IC);
    for (int i = 0; i < IC; i++) x16[i] = bf16_round(x[i]);
#if defined(__x86_64__)
    matvec_bf16_avx512(out, x16.data(), W16, b, IC, OC);
#endif
}

void matvec_bf16_ref(float* out, const float* x, const uint16_t* W16, const float* b, int IC, int OC) {
    for (int j = 0; j < OC; j++) {
        double sum = 0;
        for (int i = 0; i < IC; i++) sum += (double)bf16_to_float(W16[(size_t)j * IC + i]) * bf16_rounded(x[i]);
        out[j] = b ? (float)sum + b[j] : (float)sum;
    }
}

void matmul_forward(float* out, const float* inp, const Weight& w, const float* bias, int N, int IC, int OC) {
    if (N == 1 && w.prec == Precision::kFp32) return matvec_forward(out, inp, w.f32, bias, IC, OC);
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
