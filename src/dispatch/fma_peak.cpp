// fma_peak.cpp: fma_peak_loop (dispatch.h), the benchmarks' peak, compiled for each instruction set as the
// kernels are, so that it runs the one they run.
#include "dispatch/dispatch.h"

KERNELS_BEGIN

double fma_peak_loop(long iters, float* sink) {
    // Vectors of one register's width: GCC keeps an array of wider vectors in memory.
#if defined(__AVX512F__)
    typedef float reg __attribute__((vector_size(64)));
    const int kAcc = 12;  // of 32 zmm registers
#elif defined(__AVX__)
    typedef float reg __attribute__((vector_size(32)));
    const int kAcc = 12;  // of 16 ymm registers
#else
    typedef float reg __attribute__((vector_size(16)));
    const int kAcc = 12;  // of 16 xmm registers (or 32 of 16 bytes elsewhere)
#endif
    reg acc[kAcc];
    const reg a = reg{} + 1.0000001f, b = reg{} + 0.9999999f;
    for (int i = 0; i < kAcc; i++) acc[i] = reg{} + (float)i;
    for (long it = 0; it < iters; it++)
        for (int i = 0; i < kAcc; i++) acc[i] = acc[i] * a + b;
    *sink = 0;
    for (int i = 0; i < kAcc; i++) *sink += acc[i][0];
    return 2.0 * (sizeof(reg) / sizeof(float)) * kAcc * (double)iters;
}

KERNELS_END
