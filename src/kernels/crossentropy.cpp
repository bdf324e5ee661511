// crossentropy.cpp: softmax over the real vocabulary + cross-entropy loss, with the fused backward
// (probs - onehot). The padded columns V..Vp never enter the softmax. See layers.h. The fast forward
// uses the vector exp of simd.h and sums each row in double lanes; crossentropy_forward_ref is the
// scalar libm version the tests compare against.
#include <cmath>
#include <vector>

#include "kernels/layers.h"
#include "kernels/simd.h"

namespace {

// Sum of e^(z - zmax) over one row, storing the exponentials in p; double accumulation in a fixed
// lane order.
double row_exp_sum(float* p, const float* z, float zmax, int V) {
    const vf16 vmax = vf_set(zmax);
    vd8 acc0{}, acc1{};
    int v = 0;
    for (; v + kVecLen <= V; v += kVecLen) {
        vf16 e = vf_exp(vf_load(z + v) - vmax);
        vf_store(p + v, e);
        vf_accumulate_double(&acc0, &acc1, e);
    }
    double sum = vd_reduce_add(acc0, acc1);
    if (v < V) {
        int rest = V - v;
        vf16 e = vf_exp(vf_load_partial(z + v, rest) - vmax);
        vf_store_partial(p + v, e, rest);
        for (int i = 0; i < rest; i++) sum += e[i];
    }
    return sum;
}

float row_max(const float* z, int V) {
    vf16 m = vf_set(-INFINITY);
    int v = 0;
    for (; v + kVecLen <= V; v += kVecLen) m = vf_max(m, vf_load(z + v));
    float zmax = vf_reduce_max(m);
    for (; v < V; v++) zmax = z[v] > zmax ? z[v] : zmax;
    return zmax;
}

}  // namespace

float crossentropy_forward(float* losses, float* probs, const float* logits, const int* targets, int N, int V, int Vp) {
    // Per-row losses first, then one sum in row order: the mean does not depend on the thread count.
    std::vector<float> row_loss(targets ? N : 0);
#pragma omp parallel for schedule(static)
    for (int i = 0; i < N; i++) {
        const float* z = logits + (size_t)i * Vp;
        float* p = probs + (size_t)i * Vp;
        float zmax = row_max(z, V);
        double sum = row_exp_sum(p, z, zmax, V);
        const vf16 inv = vf_set((float)(1.0 / sum));
        int v = 0;
        for (; v + kVecLen <= V; v += kVecLen) vf_store(p + v, vf_load(p + v) * inv);
        for (; v < V; v++) p[v] *= inv[0];
        for (v = V; v < Vp; v++) p[v] = 0;
        // -log softmax from the log-sum-exp directly: log(p) would lose digits when p underflows.
        if (targets) row_loss[i] = (float)(std::log(sum) - (double)(z[targets[i]] - zmax));
    }
    if (!targets) return 0.0f;
    double total = 0;
    for (int i = 0; i < N; i++) {
        losses[i] = row_loss[i];
        total += row_loss[i];
    }
    return (float)(total / N);
}

void crossentropy_backward(float* dlogits, const float* probs, const int* targets, float dloss, int N, int V, int Vp) {
#pragma omp parallel for schedule(static)
    for (int i = 0; i < N; i++) {
        const float* p = probs + (size_t)i * Vp;
        float* d = dlogits + (size_t)i * Vp;
        for (int v = 0; v < V; v++) d[v] = p[v] * dloss;
        d[targets[i]] -= dloss;
        for (int v = V; v < Vp; v++) d[v] = 0;
    }
}

float crossentropy_forward_ref(float* losses, float* probs, const float* logits, const int* targets, int N, int V,
                               int Vp) {
    double total = 0;
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
            float loss = (float)(std::log(sum) - (double)(z[targets[i]] - zmax));
            losses[i] = loss;
            total += loss;
        }
    }
    return (float)(total / N);
}
