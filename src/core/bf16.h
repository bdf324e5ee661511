// bf16.h: what core/adamw.cpp and core/optimizer.cpp still use of bf16, for their bf16 moments (which
// leave the core in another change; this file then folds into precision/bf16.h, which includes it).
#pragma once
#include <cstdint>
#include <cstring>

#include "core/isa.h"

inline float bf16_to_float(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float x;
    memcpy(&x, &u, sizeof(x));
    return x;
}

KERNELS_BEGIN
typedef unsigned int vu16 __attribute__((vector_size(64)));
KERNELS_END
