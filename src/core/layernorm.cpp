// layernorm.cpp: LayerNorm (layers.h). Statistics and centring in double (nil next to the matmuls): in fp32, rows
// whose mean is large next to their spread would lose digits against PyTorch's.
#include <cmath>

#include "core/layers.h"

KERNELS_BEGIN

void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight, const float* bias,
                       int N, int C) {
    const double eps = 1e-5;
#pragma omp parallel for
    for (int i = 0; i < N; i++) {
        const float* x = inp + (size_t)i * C;
        double sum = 0;
        for (int c = 0; c < C; c++) sum += x[c];
        double m = sum / C;
        double var = 0;
        for (int c = 0; c < C; c++) var += (x[c] - m) * (x[c] - m);
        var /= C;  // population variance, as nn.LayerNorm
        double s = 1.0 / std::sqrt(var + eps);
        float* o = out + (size_t)i * C;
        for (int c = 0; c < C; c++) o[c] = (float)((x[c] - m) * s) * weight[c] + bias[c];
        mean[i] = (float)m;
        rstd[i] = (float)s;
    }
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

KERNELS_END
