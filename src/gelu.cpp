// gelu.cpp: GELU, tanh approximation (as GPT-2 and nanoGPT use), forward and backward. See layers.h.
#include <cmath>

#include "layers.h"

static const float kGeluScale = 0.7978845608028654f;  // sqrt(2 / pi)

void gelu_forward(float* out, const float* inp, size_t n) {
#pragma omp parallel for
    for (size_t i = 0; i < n; i++) {
        float x = inp[i];
        out[i] = 0.5f * x * (1.0f + tanhf(kGeluScale * (x + 0.044715f * x * x * x)));
    }
}

void gelu_backward(float* dinp, const float* inp, const float* dout, size_t n) {
#pragma omp parallel for
    for (size_t i = 0; i < n; i++) {
        float x = inp[i];
        float u = kGeluScale * (x + 0.044715f * x * x * x);
        float th = tanhf(u);
        float sech2 = 1.0f - th * th;
        float grad = 0.5f * (1.0f + th) + 0.5f * x * sech2 * kGeluScale * (1.0f + 3.0f * 0.044715f * x * x);
        dinp[i] += grad * dout[i];
    }
}
