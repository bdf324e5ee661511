// isa.h: one kernel source, several instruction sets. In the build with run-time dispatch (ARCH=portable on
// x86-64) the Makefile compiles every kernel source once per instruction set, each with its -march and
// -DGPT2_ISA=<namespace>. KERNELS_BEGIN and KERNELS_END put all that a kernel source and the kernel
// headers define into that namespace, so the copies do not collide at link time, and no inline function
// compiled for AVX-512 can be chosen by the linker for a caller on a CPU without it. dispatch.cpp then
// defines the global kernel functions the rest of the program calls, each calling the copy for this CPU.
// Without GPT2_ISA (every other build) the macros are empty and the kernels are the global functions.
// Types the callers share (Weight, GemmOperands) stay outside the namespace.
#pragma once
#include <string>

#ifdef GPT2_ISA
#define KERNELS_BEGIN namespace GPT2_ISA {
#define KERNELS_END }
#else
#define KERNELS_BEGIN
#define KERNELS_END
#endif

// The kernels this process runs: "avx512", "avx2" or "baseline" in a dispatching build (the best this CPU
// runs, or a lower one forced by the environment variable GPT2_ISA), else the one set the build's -march
// chose ("generic vectors" off x86). The first call (or the first kernel's) makes the choice.
const char* kernels_isa();
// How that set was chosen: "chosen at run time", "forced by GPT2_ISA" or "fixed at build time".
const char* kernels_isa_how();
// What is wrong with GPT2_ISA, as one error line without its "error: ": it asks for a set this CPU cannot
// run, one that does not exist, or any set in a build without dispatch. "" when it is unset or fine. The
// kernels print nothing: the program reports this before its first kernel call (cli/main.cpp), and a
// dispatching kernel called with a bad GPT2_ISA asserts.
std::string kernels_isa_error();
