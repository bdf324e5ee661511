// encoder.cpp: token + position embedding, forward and backward (layers.h).
#include "core/layers.h"

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

KERNELS_END
