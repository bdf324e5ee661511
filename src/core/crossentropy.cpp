// crossentropy.cpp: softmax, loss and dlogits in one pass per row (layers.h; llm.c's CUDA fused_classifier,
// here one CPU row at a time), beside the scalar libm reference the tests compare against.
#include <algorithm>
#include <cmath>

#include "core/layers.h"
#include "core/simd.h"

KERNELS_BEGIN

float crossentropy_fused(float* logits, float* losses, const int* targets, bool grad, int N, int V, int Vp) {
    const float dloss = 1.0f / N;  // d(mean loss) / d(row loss)
#pragma omp parallel for schedule(static)
    for (int i = 0; i < N; i++) {
        // Three passes over one row (200 KB at GPT-2's vocabulary: in L2): max, exp and sum (the exponentials kept
        // in the row when the gradient follows), then the gradient.
        float* z = logits + (size_t)i * Vp;
        const float zmax = vf_max_of(z, V, 1.0f);
        const float zt = z[targets[i]];  // read before the row is overwritten
        const double sum = grad ? vf_exp_sum<true>(z, V, 1.0f, zmax) : vf_exp_sum<false>(z, V, 1.0f, zmax);
        // -log softmax from the log-sum-exp directly: log(p) would lose digits when p underflows.
        losses[i] = (float)(std::log(sum) - (double)(zt - zmax));
        if (!grad) continue;
        // dlogits = softmax * dloss - onehot * dloss, rounded as a stored softmax would be: fusing changes nothing.
        const float inv = (float)(1.0 / sum);
        for (int v = 0; v < V; v++) z[v] = (z[v] * inv) * dloss;
        z[targets[i]] -= dloss;
        for (int v = V; v < Vp; v++) z[v] = 0;
    }
    double total = 0;  // summed in row order: the mean does not depend on the thread count
    for (int i = 0; i < N; i++) total += losses[i];
    return (float)(total / N);
}

void crossentropy_backward(float* dlogits, float loss_scale, int N, int Vp) {
    if (loss_scale == 1.0f) return;
#pragma omp parallel for schedule(static)
    for (int i = 0; i < N; i++)
        for (int v = 0; v < Vp; v++) dlogits[(size_t)i * Vp + v] *= loss_scale;
}

float crossentropy_fused_ref(float* logits, float* losses, const int* targets, bool grad, int N, int V, int Vp) {
    const float dloss = 1.0f / N;
    double total = 0;
    for (int i = 0; i < N; i++) {
        float* z = logits + (size_t)i * Vp;
        const float zmax = *std::max_element(z, z + V);
        double sum = 0;
        for (int v = 0; v < V; v++) sum += expf(z[v] - zmax);
        losses[i] = (float)(std::log(sum) - (double)(z[targets[i]] - zmax));
        total += losses[i];
        if (!grad) continue;
        const float inv = (float)(1.0 / sum);
        for (int v = 0; v < V; v++) z[v] = (expf(z[v] - zmax) * inv) * dloss;
        z[targets[i]] -= dloss;
        for (int v = V; v < Vp; v++) z[v] = 0;
    }
    return (float)(total / N);
}

KERNELS_END
