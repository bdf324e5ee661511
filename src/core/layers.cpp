// layers.cpp: the kernel pairs of layers.h in the order a block runs them, all but attention's (attention.cpp).
#include "core/layers.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/gemm.h"
#include "core/simd.h"

KERNELS_BEGIN

void encoder_forward(float* out, const int* tokens, const float* wte, const float* wpe, int B, int T, int C) {
#pragma omp parallel for
    for (int i = 0; i < B * T; i++) {
        const float* te = wte + (size_t)tokens[i] * C;
        const float* pe = wpe + (size_t)(i % T) * C;
        float* o = out + (size_t)i * C;
        for (int c = 0; c < C; c++) o[c] = te[c] + pe[c];
    }
}

void encoder_backward(float* dwte, float* dwpe, const float* dout, const int* tokens, int B, int T, int C) {
    // A repeated token's rows of dwte collide, so threads split channels (the sums' order then ignores threads).
    const int chunk = 64;
#pragma omp parallel for
    for (int c0 = 0; c0 < C; c0 += chunk) {
        int c1 = c0 + chunk < C ? c0 + chunk : C;
        for (int i = 0; i < B * T; i++) {
            const float* d = dout + (size_t)i * C;
            float* te = dwte + (size_t)tokens[i] * C;
            float* pe = dwpe + (size_t)(i % T) * C;
            for (int c = c0; c < c1; c++) {
                te[c] += d[c];
                pe[c] += d[c];
            }
        }
    }
}

// LayerNorm, statistics and centring in double: in fp32 rows of large mean would lose digits against PyTorch.
void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight, const float* bias,
                       int N, int C) {
    const double eps = 1e-5;
    parallel_if((size_t)N * C >= kThreadsFrom, [&] {
#pragma omp for
        for (int i = 0; i < N; i++) {
            const float* x = inp + (size_t)i * C;
            double sum = 0, var = 0;
            for (int c = 0; c < C; c++) sum += x[c];
            const double m = sum / C;
            for (int c = 0; c < C; c++) var += (x[c] - m) * (x[c] - m);
            var /= C;  // population variance, as nn.LayerNorm
            double s = 1.0 / std::sqrt(var + eps);
            float* o = out + (size_t)i * C;
            for (int c = 0; c < C; c++) o[c] = (float)((x[c] - m) * s) * weight[c] + bias[c];
            mean[i] = (float)m;
            rstd[i] = (float)s;
        }
    });
}

void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                        const float* weight, const float* mean, const float* rstd, int N, int C) {
    // dinp = rstd * (g - mean(g) - xhat * mean(g * xhat)) with g = dout * weight, row by row.
#pragma omp parallel for
    for (int i = 0; i < N; i++) {
        const float* x = inp + (size_t)i * C;
        const float* d = dout + (size_t)i * C;
        float m = mean[i], s = rstd[i];
        float g_mean = 0, gx_mean = 0;
        for (int c = 0; c < C; c++) {
            float xhat = (x[c] - m) * s;
            float g = d[c] * weight[c];
            g_mean += g;
            gx_mean += g * xhat;
        }
        g_mean /= C;
        gx_mean /= C;
        float* di = dinp + (size_t)i * C;
        for (int c = 0; c < C; c++) {
            float xhat = (x[c] - m) * s;
            di[c] += s * (d[c] * weight[c] - g_mean - xhat * gx_mean);
        }
    }
    if (!dweight) return;
    // dweight and dbias sum over rows; threads split channels so no two write the same element.
    const int chunk = 64;
#pragma omp parallel for
    for (int c0 = 0; c0 < C; c0 += chunk) {
        int c1 = c0 + chunk < C ? c0 + chunk : C;
        for (int i = 0; i < N; i++) {
            const float* x = inp + (size_t)i * C;
            const float* d = dout + (size_t)i * C;
            float m = mean[i], s = rstd[i];
            for (int c = c0; c < c1; c++) {
                dweight[c] += d[c] * (x[c] - m) * s;
                dbias[c] += d[c];
            }
        }
    }
}

// Decoding's rows where no seam takes them (gpt2-core): each row's dot product with W's row j in 32 lanes (lane l:
// channels i + l), the lanes l and 16 + l added, those 16 sums added in l order, then the channels past the last 32.
// inference/matvec.cpp's matvec_fp32 sums in this order too, several rows and outputs at a time.
static void matvec_fp32(float* out, const float* X, const float* W, const float* b, int N, int IC, int OC) {
    constexpr int kVecs = 32 / kLanes;
    parallel_if((size_t)N * IC * OC >= kThreadsFrom, [&] {
#pragma omp for schedule(static)
        for (int j = 0; j < OC; j++)
            for (int r = 0; r < N; r++) {
                const float *w = W + (size_t)j * IC, *x = X + (size_t)r * IC;
                vn acc[kVecs] = {};
                int i = 0;
                for (; i + 32 <= IC; i += 32)
                    for (int v = 0; v < kVecs; v++) acc[v] += vn_load(w + i + v * kLanes) * vn_load(x + i + v * kLanes);
                float lanes[32], sum = 0;
                memcpy(lanes, acc, sizeof lanes);
                for (int l = 0; l < 16; l++) sum += lanes[l] + lanes[16 + l];
                for (; i < IC; i++) sum = madd(sum, w[i], x[i]);
                out[(size_t)r * OC + j] = b ? sum + b[j] : sum;
            }
    });
}

void matmul_forward(float* out, const float* inp, const Weight& w, const float* bias, int N, int IC, int OC,
                    bool rows) {
    // decoding's rows: mat-vecs reading each weight once for all N, from its copy if it has one (layers.h)
    rows = rows || N == 1;
    if (rows && matmul_rows && (w.copy || !w.ops)) return matmul_rows(out, inp, w, bias, N, IC, OC);
    if (rows && !w.ops) return matvec_fp32(out, inp, w.f32, bias, N, IC, OC);
    gemm(N, OC, IC, inp, IC, false, w.f32, IC, true, out, OC, false, w.ops, w.copy);
    if (!bias) return;
#pragma omp parallel for
    for (int i = 0; i < N; i++) {
        float* o = out + (size_t)i * OC;
        for (int j = 0; j < OC; j++) o[j] += bias[j];
    }
}

void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp, const Weight& w,
                     int N, int IC, int OC, bool add) {
    gemm(N, IC, OC, dout, OC, false, w.f32, IC, false, dinp, IC, false, w.ops, w.copy);  // dinp = dout W
    if (w.adapter) w.adapter->backward(dinp, dout, inp, N);
    if (dweight) gemm(OC, IC, N, dout, OC, true, inp, IC, false, dweight, IC, add, w.ops);  // dW (+)= dout^T inp
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

// GELU in vectors (beside tanhf references) through 0.5 (1 + tanh u) = sigmoid(2u), t = e^{-2|u|} in (0, 1]:
// neither the sigmoid nor its complement 1 - s = t / (1 + t) cancels or overflows.
static const float kGeluScale = 0.7978845608028654f;  // sqrt(2 / pi)

// GELU(x) = x sigmoid(2u) or (kGrad) its derivative, force-inlined: a call passes vectors through memory (slower).
template <bool kGrad>
static inline __attribute__((always_inline)) vn gelu_vec(vn x) {
    vn u = kGeluScale * (x + 0.044715f * x * x * x);
    vn au = u < 0 ? -u : u;
    vn t = vn_exp(-2.0f * au);
    vn inv = 1.0f / (1.0f + t);
    vn lo = t * inv;  // sigmoid(-2|u|)
    vn s = u >= 0 ? inv : lo;
    if (!kGrad) return x * s;
    // d/dx [x s(2u)] = s + x * 2 s (1 - s) * du/dx
    vn s1ms = lo * inv;  // s (1 - s)
    return s + 2.0f * x * s1ms * kGeluScale * (1.0f + 3.0f * 0.044715f * x * x);
}

void gelu_forward(float* out, const float* inp, size_t n) {
    const long nv = (long)(n / kLanes);
    parallel_if(n >= kThreadsFrom, [&] {
#pragma omp for schedule(static)
        for (long i = 0; i < nv; i++) vn_store(out + i * kLanes, gelu_vec<false>(vn_load(inp + i * kLanes)));
    });
    const size_t i0 = (size_t)nv * kLanes;
    const int rest = (int)(n - i0);
    if (rest) vf_store_partial(out + i0, gelu_vec<false>(vf_load_partial<vn>(inp + i0, rest)), rest);
}

void gelu_backward(float* dinp, const float* inp, const float* dout, size_t n) {
    const long nv = (long)(n / kLanes);
#pragma omp parallel for schedule(static)
    for (long i = 0; i < nv; i++)
        vn_store(dinp + i * kLanes, gelu_vec<true>(vn_load(inp + i * kLanes)) * vn_load(dout + i * kLanes));
    const size_t i0 = (size_t)nv * kLanes;
    const int rest = (int)(n - i0);
    if (rest)
        vf_store_partial(dinp + i0,
                         gelu_vec<true>(vf_load_partial<vn>(inp + i0, rest)) * vf_load_partial<vn>(dout + i0, rest),
                         rest);
}

void residual_forward(float* out, const float* a, const float* b, size_t n) {
    parallel_if(n >= kThreadsFrom, [&] {
#pragma omp for
        for (size_t i = 0; i < n; i++) out[i] = a[i] + b[i];
    });
}

// The classifier: softmax, loss and dlogits per row (llm.c's CUDA fused_classifier), beside a scalar reference.
void crossentropy_fused(float* logits, float* losses, const int* targets, int N, int V, int Vp, float dloss,
                        float scale) {
#pragma omp parallel for schedule(static)
    for (int i = 0; i < N; i++) {
        // Three passes over one row (200 KB at GPT-2's vocabulary, in L2): max, exp and sum (kept), gradient.
        float* z = logits + (size_t)i * Vp;
        if (targets[i] < 0) losses[i] = 0;  // not scored (layers.h): loss 0 and a zero row
        if (targets[i] < 0 && dloss > 0) std::fill(z, z + Vp, 0.0f);
        if (targets[i] < 0) continue;
        const float zmax = vf_max_of(z, V, 1.0f);
        const float zt = z[targets[i]];  // read before the row is overwritten
        const double sum = dloss > 0 ? vf_exp_sum<true>(z, V, 1.0f, zmax) : vf_exp_sum<false>(z, V, 1.0f, zmax);
        // -log softmax from the log-sum-exp directly: log(p) would lose digits when p underflows.
        losses[i] = (float)(std::log(sum) - (double)(zt - zmax));
        if (dloss <= 0) continue;
        // dlogits = (softmax * dloss - onehot * dloss) * scale, rounded as a stored softmax would be.
        const float inv = (float)(1.0 / sum);
        for (int v = 0; v < V; v++) z[v] = (z[v] * inv) * dloss;
        z[targets[i]] -= dloss;
        for (int v = 0; v < V && scale != 1.0f; v++) z[v] *= scale;
        for (int v = V; v < Vp; v++) z[v] = 0;
    }
}

KERNELS_END
