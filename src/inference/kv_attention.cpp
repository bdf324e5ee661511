// kv_attention.cpp: see kv_attention.h. Each (head, block of new rows) is one attend_block (core/attention.cpp)
// over the cached keys and values.
#include "inference/kv_attention.h"

#include <algorithm>
#include <cmath>

#include "core/layers.h"

KERNELS_BEGIN

void attention_forward_cached(float* out, float* lse, const float* qkv, const float* kcache, const float* vcache, int n,
                              int p0, int C, int NH, const GemmOperands* ops) {
    const int HS = C / NH, nblocks = (n + kQBlock - 1) / kQBlock;
    const float scale = 1.0f / sqrtf((float)HS);
    const size_t row = 3 * (size_t)C;
#pragma omp parallel for collapse(2) schedule(static)
    for (int h = 0; h < NH; h++)
        for (int blk = 0; blk < nblocks; blk++) {
            const int i0 = blk * kQBlock, rows = std::min(kQBlock, n - i0);
            attend_block(out + (size_t)i0 * C + h * HS, C, lse + (size_t)h * n + i0, qkv + (size_t)i0 * row + h * HS,
                         row, kcache + h * HS, vcache + h * HS, C, p0 + i0, rows, HS, scale, ops);
        }
}

KERNELS_END
