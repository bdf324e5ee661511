// adamw.h: the optimizer's elementwise passes over one chunk on the calling thread: the AdamW update, and
// the gradients' sum of squares for the global norm. Here so that they are compiled for the kernels'
// instruction set (core/isa.h) like every other hot loop.
#pragma once
#include <cstddef>

#include "core/isa.h"

// One AdamW step's constants: step_size = lr / (1 - beta1^t), bc2_sqrt = sqrt(1 - beta2^t), decay =
// 1 - lr * weight_decay (or 1); t is the step, counted from 1.
struct AdamWStep {
    float beta1, beta2, eps, step_size, bc2_sqrt, decay, grad_scale;
    int t;
};

KERNELS_BEGIN

// For i < n: m = b1 m + (1 - b1) g', v = b2 v + (1 - b2) g'^2, w = w decay - step_size m / (sqrt(v) /
// bc2_sqrt + eps), with g' = g grad_scale; in 16-float vectors.
void adamw_chunk(float* w, const float* g, float* m, float* v, size_t n, const AdamWStep& s);
// The sum of x[i]^2 for i < n, each square and the sum in double, in 16 double lanes then in order: the
// same result for the same chunk whatever the thread.
double sum_squares(const float* x, size_t n);

KERNELS_END
