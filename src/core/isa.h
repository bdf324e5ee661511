// isa.h: one kernel source, several instruction sets. The build with run-time dispatch (ARCH=portable on x86-64)
// compiles each kernel source once per set, with its -march and -DGPT2_ISA=<namespace>: these macros put what
// kernel sources and headers define in that namespace, so the copies neither collide at link time nor share an
// inline function across sets; platform/dispatch.cpp defines the global functions, each calling this CPU's copy.
// Elsewhere the macros are empty. Shared types (Weight, tuned/gemm_tile.h's GemmOperands) stay outside.
#pragma once

#ifdef GPT2_ISA
#define KERNELS_BEGIN namespace GPT2_ISA {
#define KERNELS_END }
#else
#define KERNELS_BEGIN
#define KERNELS_END
#endif

