// crossentropy.cpp: softmax over the real vocabulary + cross-entropy loss, with the fused backward
// (probs - onehot). The padded columns V..Vp never enter the softmax. See layers.h.
#include <cmath>

#include "layers.h"

float crossentropy_forward(float* losses, float* probs, const float* logits, const int* targets, int N, int V,
                           int Vp) {
    double total = 0;
#pragma omp parallel for reduction(+ : total)
    for (int i = 0; i < N; i++) {
        const float* z = logits + (size_t)i * Vp;
        float* p = probs + (size_t)i * Vp;
        float zmax = z[0];
        for (int v = 1; v < V; v++) zmax = z[v] > zmax ? z[v] : zmax;
        double sum = 0;
        for (int v = 0; v < V; v++) {
            p[v] = expf(z[v] - zmax);
            sum += p[v];
        }
        float inv = (float)(1.0 / sum);
        for (int v = 0; v < V; v++) p[v] *= inv;
        for (int v = V; v < Vp; v++) p[v] = 0;
        if (targets) {
            // -log softmax from the log-sum-exp directly: log(p) would lose digits when p underflows.
            float loss = (float)(std::log(sum) - (double)(z[targets[i]] - zmax));
            losses[i] = loss;
            total += loss;
        }
    }
    return (float)(total / N);
}

void crossentropy_backward(float* dlogits, const float* probs, const int* targets, float dloss, int N, int V,
                           int Vp) {
#pragma omp parallel for
    for (int i = 0; i < N; i++) {
        const float* p = probs + (size_t)i * Vp;
        float* d = dlogits + (size_t)i * Vp;
        for (int v = 0; v < V; v++) d[v] = p[v] * dloss;
        d[targets[i]] -= dloss;
        for (int v = V; v < Vp; v++) d[v] = 0;
    }
}
