// crossentropy.cpp: the classifier's softmax + cross-entropy, fused with its backward: a training forward
// turns each row of logits into its own gradient in place, so no (N, Vp) probabilities are ever stored
// (the idea of llm.c's CUDA fused_classifier, written here for one CPU row at a time). The padded
// columns V..Vp never enter the softmax. See layers.h. The fast kernel uses the vector exp of simd.h and
// sums each row in double lanes; crossentropy_fused_ref is the scalar libm version the tests compare
// against.
#include <cmath>
#include <vector>

#include "core/layers.h"
#include "core/simd.h"

KERNELS_BEGIN

namespace {

float row_max(const float* z, int V) {
    vf16 m = vf_set(-INFINITY);
    int v = 0;
    for (; v + kVecLen <= V; v += kVecLen) m = vf_max(m, vf_load(z + v));
    float zmax = vf_reduce_max(m);
    for (; v < V; v++) zmax = z[v] > zmax ? z[v] : zmax;
    return zmax;
}

// Sum of e^(z - zmax) over one row, double accumulation in a fixed lane order. kStore: the exponentials
// overwrite z (the gradient pass scales them next); otherwise z is only read.
template <bool kStore>
double row_exp_sum(float* z, float zmax, int V) {
    const vf16 vmax = vf_set(zmax);
    vd8 acc0{}, acc1{};
    int v = 0;
    for (; v + kVecLen <= V; v += kVecLen) {
        vf16 e = vf_exp(vf_load(z + v) - vmax);
        if (kStore) vf_store(z + v, e);
        vf_accumulate_double(&acc0, &acc1, e);
    }
    double sum = vd_reduce_add(acc0, acc1);
    if (v < V) {
        int rest = V - v;
        vf16 e = vf_exp(vf_load_partial(z + v, rest) - vmax);
        if (kStore) vf_store_partial(z + v, e, rest);
        for (int i = 0; i < rest; i++) sum += e[i];
    }
    return sum;
}

// The per-row losses summed in row order, so the mean does not depend on the thread count.
float mean_of(float* losses, const std::vector<float>& row_loss) {
    double total = 0;
    for (size_t i = 0; i < row_loss.size(); i++) {
        losses[i] = row_loss[i];
        total += row_loss[i];
    }
    return (float)(total / row_loss.size());
}

}  // namespace

float crossentropy_fused(float* logits, float* losses, const int* targets, bool grad, int N, int V, int Vp) {
    std::vector<float> row_loss(N);
    const float dloss = 1.0f / N;  // d(mean loss) / d(row loss)
#pragma omp parallel for schedule(static)
    for (int i = 0; i < N; i++) {
        // Three passes over one row (200 KB at GPT-2's vocabulary, so it stays in L2): max, exp and sum,
        // then the gradient.
        float* z = logits + (size_t)i * Vp;
        const float zmax = row_max(z, V);
        const float zt = z[targets[i]];  // read before the row is overwritten
        const double sum = grad ? row_exp_sum<true>(z, zmax, V) : row_exp_sum<false>(z, zmax, V);
        // -log softmax from the log-sum-exp directly: log(p) would lose digits when p underflows.
        row_loss[i] = (float)(std::log(sum) - (double)(zt - zmax));
        if (!grad) continue;
        // dlogits = softmax * dloss - onehot * dloss, rounded as softmax then the product (as a stored
        // softmax would be), so the gradient does not change with the fusion.
        const vf16 inv = vf_set((float)(1.0 / sum)), vdloss = vf_set(dloss);
        int v = 0;
        for (; v + kVecLen <= V; v += kVecLen) vf_store(z + v, (vf_load(z + v) * inv) * vdloss);
        for (; v < V; v++) z[v] = (z[v] * inv[0]) * dloss;
        z[targets[i]] -= dloss;
        for (v = V; v < Vp; v++) z[v] = 0;
    }
    return mean_of(losses, row_loss);
}

void crossentropy_backward(float* dlogits, float loss_scale, int N, int Vp) {
    if (loss_scale == 1.0f) return;
    const vf16 s = vf_set(loss_scale);
#pragma omp parallel for schedule(static)
    for (int i = 0; i < N; i++) {
        float* d = dlogits + (size_t)i * Vp;
        int v = 0;
        for (; v + kVecLen <= Vp; v += kVecLen) vf_store(d + v, vf_load(d + v) * s);
        for (; v < Vp; v++) d[v] *= loss_scale;
    }
}

float crossentropy_fused_ref(float* logits, float* losses, const int* targets, bool grad, int N, int V, int Vp) {
    const float dloss = 1.0f / N;
    double total = 0;
    for (int i = 0; i < N; i++) {
        float* z = logits + (size_t)i * Vp;
        float zmax = z[0];
        for (int v = 1; v < V; v++) zmax = z[v] > zmax ? z[v] : zmax;
        double sum = 0;
        for (int v = 0; v < V; v++) sum += expf(z[v] - zmax);
        const float loss = (float)(std::log(sum) - (double)(z[targets[i]] - zmax));
        losses[i] = loss;
        total += loss;
        if (!grad) continue;
        const float inv = (float)(1.0 / sum);
        for (int v = 0; v < V; v++) z[v] = (expf(z[v] - zmax) * inv) * dloss;
        z[targets[i]] -= dloss;
        for (int v = V; v < Vp; v++) z[v] = 0;
    }
    return (float)(total / N);
}

KERNELS_END
