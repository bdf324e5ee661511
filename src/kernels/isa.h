// isa.h: one kernel source, several instruction sets. In the build with run-time dispatch (ARCH=portable on
// x86-64) the Makefile compiles every kernel source once per instruction set, each with its -march and
// -DGPT2_ISA=<namespace>. KERNELS_BEGIN and KERNELS_END put all that a kernel source and the kernel
// headers define into that namespace, so the copies do not collide at link time, and no inline function
// compiled for AVX-512 can be chosen by the linker for a caller on a CPU without it. dispatch.cpp then
// defines the global kernel functions the rest of the program calls, each calling the copy for this CPU.
// Without GPT2_ISA (every other build) the macros are empty and the kernels are the global functions.
// Types the callers share (Precision, Weight) stay outside the namespace.
#pragma once

#ifdef GPT2_ISA
#define KERNELS_BEGIN namespace GPT2_ISA {
#define KERNELS_END }
#else
#define KERNELS_BEGIN
#define KERNELS_END
#endif

// The kernels this process runs: "avx512", "avx2" or "baseline" in a dispatching build (the best this CPU
// runs, or a lower one forced by the environment variable GPT2_ISA), else the one set the build's -march
// chose ("generic vectors" off x86). The first call makes the choice; fatal, naming GPT2_ISA, if it
// asks for a set this CPU cannot run, one that does not exist, or any in a build without dispatch.
const char* kernels_isa();
// How that set was chosen: "chosen at run time", "forced by GPT2_ISA" or "fixed at build time".
const char* kernels_isa_how();
