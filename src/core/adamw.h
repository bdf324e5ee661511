// adamw.h: the elementwise passes of the optimizer (core/optimizer.h), one chunk of parameters at a time
// on the calling thread (the optimizer splits the parameters across threads): the AdamW update of a chunk,
// and the sum of squares of a chunk of gradients for the global norm. Here so that they are compiled for
// the kernels' instruction set (core/isa.h) like every other hot loop.
#pragma once
#include <cstddef>
#include <cstdint>

#include "core/isa.h"

// One AdamW step's constants: gradients are multiplied by grad_scale as they are read (clipping folded
// in); step_size = lr / (1 - beta1^t), bc2_sqrt = sqrt(1 - beta2^t), decay = 1 - lr * weight_decay (or 1).
// round_key seeds the stochastic rounding of bf16 moments (adamw_round_key of the step).
struct AdamWStep {
    float beta1, beta2, eps, step_size, bc2_sqrt, decay, grad_scale;
    uint32_t round_key;
};

// The key of step `step`'s stochastic rounding.
inline uint32_t adamw_round_key(int step) { return (uint32_t)step * 0x9E3779B9u + 0x7F4A7C15u; }

KERNELS_BEGIN

// For i < n: m = b1 m + (1 - b1) g', v = b2 v + (1 - b2) g'^2, w = w decay - step_size m / (sqrt(v) /
// bc2_sqrt + eps), with g' = g grad_scale; in 16-float vectors.
void adamw_chunk(float* w, const float* g, float* m, float* v, size_t n, const AdamWStep& s);
// The same update with m and v in bf16: read widened to fp32, written back rounded stochastically, with
// random bits from a hash of (s.round_key, index + i), index being the first element's parameter index.
void adamw_chunk_bf16(float* w, const float* g, uint16_t* m, uint16_t* v, size_t n, const AdamWStep& s,
                      size_t index);
// The sum of x[i]^2 for i < n, each square and the sum in double, in 16 double lanes then in order: the
// same result for the same chunk whatever the thread.
double sum_squares(const float* x, size_t n);

KERNELS_END
