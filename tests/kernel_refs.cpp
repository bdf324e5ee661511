// kernel_refs.cpp: see kernel_refs.h.
#include "kernel_refs.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <vector>

namespace {
const float kGeluScale = 0.7978845608028654f;  // sqrt(2 / pi)
}

void gelu_forward_ref(float* out, const float* inp, size_t n) {
    for (size_t i = 0; i < n; i++) {
        float x = inp[i];
        out[i] = 0.5f * x * (1.0f + tanhf(kGeluScale * (x + 0.044715f * x * x * x)));
    }
}

void gelu_backward_ref(float* dinp, const float* inp, const float* dout, size_t n) {
    for (size_t i = 0; i < n; i++) {
        float x = inp[i];
        float th = tanhf(kGeluScale * (x + 0.044715f * x * x * x));
        float sech2 = 1.0f - th * th;
        float grad = 0.5f * (1.0f + th) + 0.5f * x * sech2 * kGeluScale * (1.0f + 3.0f * 0.044715f * x * x);
        dinp[i] = grad * dout[i];
    }
}

void crossentropy_fused_ref(float* logits, float* losses, const int* targets, int N, int V, int Vp, float dloss,
                            float scale) {
    for (int i = 0; i < N; i++) {
        float* z = logits + (size_t)i * Vp;
        if (targets[i] < 0) losses[i] = 0;  // not scored (layers.h): loss 0 and a zero row
        if (targets[i] < 0 && dloss > 0) std::fill(z, z + Vp, 0.0f);
        if (targets[i] < 0) continue;
        const float zmax = *std::max_element(z, z + V);
        double sum = 0;
        for (int v = 0; v < V; v++) sum += expf(z[v] - zmax);
        losses[i] = (float)(std::log(sum) - (double)(z[targets[i]] - zmax));
        if (dloss <= 0) continue;
        const float inv = (float)(1.0 / sum);
        for (int v = 0; v < V; v++) z[v] = (expf(z[v] - zmax) * inv) * dloss;
        z[targets[i]] -= dloss;
        for (int v = 0; v < V; v++) z[v] *= scale;
        for (int v = V; v < Vp; v++) z[v] = 0;
    }
}

void attention_forward_ref(float* out, float* lse, const float* qkv, int B, int T, int C, int NH) {
    const int HS = C / NH;
    const float scale = 1.0f / sqrtf((float)HS);
    const size_t row = 3 * (size_t)C;
    std::vector<float> a(T);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++)
            for (int t = 0; t < T; t++) {
                const float* q = qkv + ((size_t)b * T + t) * row + h * HS;
                float amax = -INFINITY;
                for (int t2 = 0; t2 <= t; t2++) {
                    const float* k = qkv + ((size_t)b * T + t2) * row + C + h * HS;
                    a[t2] = std::inner_product(q, q + HS, k, 0.0f) * scale;
                    amax = std::max(amax, a[t2]);
                }
                double sum = 0;
                for (int t2 = 0; t2 <= t; t2++) sum += expf(a[t2] - amax);
                float l = amax + (float)std::log(sum);
                lse[((size_t)b * NH + h) * T + t] = l;
                float* o = out + ((size_t)b * T + t) * C + h * HS;
                for (int i = 0; i < HS; i++) o[i] = 0;
                for (int t2 = 0; t2 <= t; t2++) {
                    const float* v = qkv + ((size_t)b * T + t2) * row + 2 * C + h * HS;
                    float p = expf(a[t2] - l);
                    for (int i = 0; i < HS; i++) o[i] += p * v[i];
                }
            }
}

void attention_backward_ref(float* dqkv, const float* dout, const float* qkv, const float* lse, int B, int T, int C,
                            int NH) {
    const int HS = C / NH;
    const float scale = 1.0f / sqrtf((float)HS);
    const size_t row = 3 * (size_t)C;
    for (int i = 0; i < B * T; i++) memset(dqkv + i * row, 0, sizeof(float) * row);
    std::vector<float> p(T), dscore(T);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++)
            for (int t = 0; t < T; t++) {
                const float* d = dout + ((size_t)b * T + t) * C + h * HS;
                const float* q = qkv + ((size_t)b * T + t) * row + h * HS;
                float* dq = dqkv + ((size_t)b * T + t) * row + h * HS;
                float dot = 0;
                for (int t2 = 0; t2 <= t; t2++) {
                    const float* k = qkv + ((size_t)b * T + t2) * row + C + h * HS;
                    const float* v = qkv + ((size_t)b * T + t2) * row + 2 * C + h * HS;
                    float* dv = dqkv + ((size_t)b * T + t2) * row + 2 * C + h * HS;
                    p[t2] = expf(std::inner_product(q, q + HS, k, 0.0f) * scale - lse[((size_t)b * NH + h) * T + t]);
                    dscore[t2] = std::inner_product(d, d + HS, v, 0.0f);
                    for (int i = 0; i < HS; i++) dv[i] += p[t2] * d[i];
                    dot += p[t2] * dscore[t2];
                }
                for (int t2 = 0; t2 <= t; t2++) {
                    float ds = p[t2] * (dscore[t2] - dot) * scale;
                    const float* k = qkv + ((size_t)b * T + t2) * row + C + h * HS;
                    float* dk = dqkv + ((size_t)b * T + t2) * row + C + h * HS;
                    for (int i = 0; i < HS; i++) {
                        dq[i] += ds * k[i];
                        dk[i] += ds * q[i];
                    }
                }
            }
}
