// attention.cpp: causal multi-head self-attention, forward and backward, scalar loops over one
// (batch, head) at a time. The (T, T) probabilities are cached for the backward; the scores before the
// softmax are not kept (the softmax backward needs only the probabilities). See layers.h.
#include <cmath>
#include <cstring>
#include <vector>

#include "layers.h"

void attention_forward(float* out, float* att, const float* qkv, int B, int T, int C, int NH) {
    const int HS = C / NH;
    const float scale = 1.0f / sqrtf((float)HS);
    const size_t row = 3 * (size_t)C;
#pragma omp parallel for collapse(3)
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++)
            for (int t = 0; t < T; t++) {
                const float* q = qkv + ((size_t)b * T + t) * row + h * HS;
                float* a = att + (((size_t)b * NH + h) * T + t) * T;
                float amax = -INFINITY;
                for (int t2 = 0; t2 <= t; t2++) {
                    const float* k = qkv + ((size_t)b * T + t2) * row + C + h * HS;
                    float s = 0;
                    for (int i = 0; i < HS; i++) s += q[i] * k[i];
                    s *= scale;
                    a[t2] = s;
                    amax = s > amax ? s : amax;
                }
                float sum = 0;
                for (int t2 = 0; t2 <= t; t2++) {
                    a[t2] = expf(a[t2] - amax);
                    sum += a[t2];
                }
                float inv = 1.0f / sum;
                for (int t2 = 0; t2 <= t; t2++) a[t2] *= inv;
                float* o = out + ((size_t)b * T + t) * C + h * HS;
                for (int i = 0; i < HS; i++) o[i] = 0;
                for (int t2 = 0; t2 <= t; t2++) {
                    const float* v = qkv + ((size_t)b * T + t2) * row + 2 * C + h * HS;
                    for (int i = 0; i < HS; i++) o[i] += a[t2] * v[i];
                }
            }
}

void attention_backward(float* dqkv, const float* dout, const float* qkv, const float* att, int B, int T, int C,
                        int NH) {
    const int HS = C / NH;
    const float scale = 1.0f / sqrtf((float)HS);
    const size_t row = 3 * (size_t)C;
    // Keys and values of position t2 receive gradient from every later query, so one (batch, head) is
    // one thread's work: no two threads write the same element of dqkv.
#pragma omp parallel
    {
        std::vector<float> dscore(T);
#pragma omp for collapse(2)
        for (int b = 0; b < B; b++)
            for (int h = 0; h < NH; h++) {
                for (int t = 0; t < T; t++)  // this (batch, head)'s slice of dqkv starts from zero
                    for (int part = 0; part < 3; part++)
                        memset(dqkv + ((size_t)b * T + t) * row + part * C + h * HS, 0, sizeof(float) * HS);
                for (int t = 0; t < T; t++) {
                    const float* a = att + (((size_t)b * NH + h) * T + t) * T;
                    const float* d = dout + ((size_t)b * T + t) * C + h * HS;
                    const float* q = qkv + ((size_t)b * T + t) * row + h * HS;
                    float* dq = dqkv + ((size_t)b * T + t) * row + h * HS;
                    // through out = att @ v
                    float dot = 0;
                    for (int t2 = 0; t2 <= t; t2++) {
                        const float* v = qkv + ((size_t)b * T + t2) * row + 2 * C + h * HS;
                        float* dv = dqkv + ((size_t)b * T + t2) * row + 2 * C + h * HS;
                        float da = 0;
                        for (int i = 0; i < HS; i++) {
                            da += d[i] * v[i];
                            dv[i] += a[t2] * d[i];
                        }
                        dscore[t2] = da;
                        dot += a[t2] * da;
                    }
                    // through the softmax, then the scaled q.k
                    for (int t2 = 0; t2 <= t; t2++) {
                        float ds = a[t2] * (dscore[t2] - dot) * scale;
                        const float* k = qkv + ((size_t)b * T + t2) * row + C + h * HS;
                        float* dk = dqkv + ((size_t)b * T + t2) * row + C + h * HS;
                        for (int i = 0; i < HS; i++) {
                            dq[i] += ds * k[i];
                            dk[i] += ds * q[i];
                        }
                    }
                }
            }
    }
}
