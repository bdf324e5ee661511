// isa.h: ARCH=portable (x86-64) compiles each kernel source once per instruction set, with its -march and
// -DGPT2_ISA=<namespace>: these macros put each copy in that namespace (no clash at link time, no inline function
// shared across sets; types such as Weight stay outside), and dispatch/dispatch.cpp calls this CPU's copy.
#pragma once

#ifdef GPT2_ISA
#define KERNELS_BEGIN namespace GPT2_ISA {
#define KERNELS_END }
#else
#define KERNELS_BEGIN
#define KERNELS_END
#endif
