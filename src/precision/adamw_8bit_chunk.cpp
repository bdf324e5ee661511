// adamw_8bit_chunk.cpp: adamw_chunk_8bit (adamw_8bit.h), core/adamw.cpp's update with the moments in 8 bits,
// compiled for each instruction set as the core's kernels are.
#include <algorithm>
#include <cmath>

#include "precision/adamw_8bit.h"

KERNELS_BEGIN

// A block at a time: its moments read and updated in fp32 with adamw_chunk's expressions (so a first step's
// weights are fp32's bit for bit), then its new steps from the largest |m| and v, then its codes. Plain
// loops the compiler vectorizes (the moments are finite: a non-finite gradient norm stops a run before the
// update).
void adamw_chunk_8bit(float* w, const float* g, uint8_t* m, uint8_t* v, float* m_step, float* v_step, size_t n,
                      const AdamWStep& step, size_t index) {
    const AdamWStep s = step;  // a local copy: no store below can alias it, so its constants stay in registers
    const uint32_t key = adamw_round_key(s.t);
    constexpr size_t B = AdamW8bit::kBlock;
    for (size_t b = 0; b < n; b += B) {
        float mb[B], vb[B];
        uint32_t m_max = 0, v_max = 0;  // the largest |m| and v as bits: a non-negative float's order is its bits'
        const float dm = m_step[b / B], dv = v_step[b / B];
        for (size_t i = 0; i < B; i++) {
            const size_t j = b + i;
            float gs = g[j] * s.grad_scale;
            float mi = s.beta1 * (m_code_value(m[j]) * dm) + (1.0f - s.beta1) * gs;
            float vi = s.beta2 * (v_code_value(v[j]) * dv) + (1.0f - s.beta2) * gs * gs;
            float denom = __builtin_sqrtf(vi) / s.bc2_sqrt + s.eps;
            w[j] = w[j] * s.decay - s.step_size * mi / denom;
            mb[i] = mi, vb[i] = vi;
            m_max = std::max(m_max, float_bits(mi) & 0x7FFFFFFFu), v_max = std::max(v_max, float_bits(vi));
        }
        float largest_m, largest_v;
        memcpy(&largest_m, &m_max, sizeof(float));
        memcpy(&largest_v, &v_max, sizeof(float));
        float im, iv;
        m_step[b / B] = block_step(largest_m, &im), v_step[b / B] = block_step(largest_v, &iv);
        for (size_t i = 0; i < B; i++) {
            const uint32_t r = index_hash(key, (uint32_t)(index + b + i));
            m[b + i] = m_code(mb[i] * im, r & 0xFFFFu);
            v[b + i] = v_code(vb[i] * iv, r >> 16);
        }
    }
}

KERNELS_END
