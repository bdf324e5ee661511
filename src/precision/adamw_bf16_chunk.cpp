// adamw_bf16_chunk.cpp: adamw_chunk_bf16 (adamw_bf16.h), core/adamw.cpp's update with the moments in
// bf16, compiled for each instruction set as the core's kernels are.
#include "precision/adamw_bf16.h"

#include "precision/bf16.h"

KERNELS_BEGIN

// A plain loop the compiler vectorizes, as core/adamw.cpp's adamw_chunk, with the same expressions. Each moment
// is rounded to bf16 by adding 16 random bits below bf16's last one and truncating: rounded up with the
// probability of its distance from the bf16 below (the moments are finite: a non-finite gradient norm stops a
// run before the update).
void adamw_chunk_bf16(float* w, const float* g, uint16_t* m, uint16_t* v, size_t n, const AdamWStep& step,
                      size_t index) {
    const AdamWStep s = step;  // a local copy: no store below can alias it, so its constants stay in registers
    const uint32_t key = adamw_round_key(s.t);
    for (size_t i = 0; i < n; i++) {
        float gs = g[i] * s.grad_scale;
        float mi = s.beta1 * bf16_to_float(m[i]) + (1.0f - s.beta1) * gs;
        float vi = s.beta2 * bf16_to_float(v[i]) + (1.0f - s.beta2) * gs * gs;
        float denom = __builtin_sqrtf(vi) / s.bc2_sqrt + s.eps;
        w[i] = w[i] * s.decay - s.step_size * mi / denom;
        const uint32_t r = index_hash(key, (uint32_t)(index + i));
        m[i] = (uint16_t)((float_bits(mi) + (r & 0xFFFFu)) >> 16);
        v[i] = (uint16_t)((float_bits(vi) + (r >> 16)) >> 16);
    }
}

KERNELS_END
