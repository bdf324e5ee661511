// isa.h: one kernel source, several instruction sets. In the build with run-time dispatch (ARCH=portable on
// x86-64) the Makefile compiles every kernel source once per instruction set, each with its -march and
// -DGPT2_ISA=<namespace>. KERNELS_BEGIN and KERNELS_END put all that a kernel source and the kernel
// headers define into that namespace, so the copies do not collide at link time, and no inline function
// compiled for AVX-512 can be chosen by the linker for a caller on a CPU without it. platform/dispatch.cpp
// then defines the global kernel functions the rest of the program calls, each calling the copy for this CPU.
// Without GPT2_ISA (every other build) the macros are empty and the kernels are the global functions.
// Types the callers share (Weight, and tuned/gemm_tile.h's GemmOperands) stay outside the namespace.
#pragma once

#ifdef GPT2_ISA
#define KERNELS_BEGIN namespace GPT2_ISA {
#define KERNELS_END }
#else
#define KERNELS_BEGIN
#define KERNELS_END
#endif

