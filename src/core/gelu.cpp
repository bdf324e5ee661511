// gelu.cpp: GELU (layers.h) in vectors, beside the scalar tanhf references the tests compare against. The
// vectors use 0.5 (1 + tanh u) = sigmoid(2u) with t = e^{-2|u|} in (0, 1], so neither the sigmoid nor its
// complement 1 - s = t / (1 + t) cancels or overflows.
#include <cmath>

#include "core/layers.h"
#include "core/simd.h"

KERNELS_BEGIN

static const float kGeluScale = 0.7978845608028654f;  // sqrt(2 / pi)

namespace {

// s = sigmoid(2u) and s (1 - s) for u = sqrt(2/pi) (x + 0.044715 x^3).
inline void gelu_parts(vf16 x, vf16* s, vf16* s1ms) {
    vf16 u = kGeluScale * (x + 0.044715f * x * x * x);
    vf16 au = u < 0 ? -u : u;
    vf16 t = vf_exp(-2.0f * au);
    vf16 inv = 1.0f / (1.0f + t);
    vf16 lo = t * inv;  // sigmoid(-2|u|)
    *s = u >= 0 ? inv : lo;
    *s1ms = lo * inv;
}

inline vf16 gelu_vec(vf16 x) {
    vf16 s, s1ms;
    gelu_parts(x, &s, &s1ms);
    return x * s;
}

inline vf16 gelu_grad_vec(vf16 x) {
    vf16 s, s1ms;
    gelu_parts(x, &s, &s1ms);
    // d/dx [x s(2u)] = s + x * 2 s (1 - s) * du/dx
    return s + 2.0f * x * s1ms * kGeluScale * (1.0f + 3.0f * 0.044715f * x * x);
}

}  // namespace

void gelu_forward(float* out, const float* inp, size_t n) {
    const long nv = (long)(n / kVecLen);
#pragma omp parallel for schedule(static)
    for (long i = 0; i < nv; i++) vf_store(out + i * kVecLen, gelu_vec(vf_load(inp + i * kVecLen)));
    int rest = (int)(n - (size_t)nv * kVecLen);
    if (rest) {
        size_t i0 = (size_t)nv * kVecLen;
        vf_store_partial(out + i0, gelu_vec(vf_load_partial(inp + i0, rest)), rest);
    }
}

void gelu_backward(float* dinp, const float* inp, const float* dout, size_t n) {
    const long nv = (long)(n / kVecLen);
#pragma omp parallel for schedule(static)
    for (long i = 0; i < nv; i++)
        vf_store(dinp + i * kVecLen, gelu_grad_vec(vf_load(inp + i * kVecLen)) * vf_load(dout + i * kVecLen));
    int rest = (int)(n - (size_t)nv * kVecLen);
    if (rest) {
        size_t i0 = (size_t)nv * kVecLen;
        vf16 g = gelu_grad_vec(vf_load_partial(inp + i0, rest)) * vf_load_partial(dout + i0, rest);
        vf_store_partial(dinp + i0, g, rest);
    }
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
        float u = kGeluScale * (x + 0.044715f * x * x * x);
        float th = tanhf(u);
        float sech2 = 1.0f - th * th;
        float grad = 0.5f * (1.0f + th) + 0.5f * x * sech2 * kGeluScale * (1.0f + 3.0f * 0.044715f * x * x);
        dinp[i] = grad * dout[i];
    }
}

KERNELS_END
