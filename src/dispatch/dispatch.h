// dispatch.h: the instruction set whose kernels this process runs (core/isa.h), as `gpt2 --version`
// says it and cli/main.cpp checks GPT2_ISA; and the benchmarks' peak, a kernel of fma_peak.cpp.
#pragma once
#include <string>

#include "core/isa.h"

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

KERNELS_BEGIN

// The benchmarks' peak: a register-only loop of independent a * x + b on vectors of one register's width
// (an FMA where the instruction set has one), iters times over 12 accumulators, touching no memory. Returns
// the FLOPs done, and in *sink a value that depends on every result, so that the loop is not removed.
double fma_peak_loop(long iters, float* sink);

KERNELS_END
