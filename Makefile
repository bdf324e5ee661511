# gpt2.cpp build. `make` builds ./gpt2; `make test` runs the tests that need no Python; `make test-ref`
# regenerates reference dumps with PyTorch and compares against them, and the tokenizer against tiktoken
# (node; `make node-deps` installs its npm packages). Switches: NO_OMP=1 (no OpenMP),
# SAN=1 (AddressSanitizer + UBSan, objects in build/san), DEBUG=1 (same as SAN=1), MPI=1 (OpenMPI's
# mpicxx: builds ./gpt2-mpi, never ./gpt2, so a later plain `make` still has the one-process binary;
# `mpirun -np N ./gpt2-mpi train ...` trains data-parallel; objects in build/mpi), BIN=path (where the
# binary goes; default ./gpt2, or ./gpt2-mpi with MPI=1). A compiler for *-mingw32 (Windows) makes .exe files,
# linked statically; `make windows` cross-builds them with mingw-w64, `make test-windows` runs them under wine.

CXX      ?= g++
# Flags as packagers pass them: CPPFLAGS, CXXFLAGS and LDFLAGS add to what the build needs and come last,
# so `make CXXFLAGS=-O2` overrides OPT (the default optimisation). ARCH picks the target:
#   native    (the default but for cross compilers) -march=native: the fastest code for the build machine,
#             which it may need;
#   portable  (a cross compiler's default) any CPU of the compiler's architecture (on x86-64: kernels for
#             AVX-512, AVX2+FMA and the x86-64 baseline in one binary, chosen at run time; GPT2_ISA=avx2 or
#             baseline forces a lower one; on aarch64: ARMv8-A with NEON);
#   none      no -march at all (the compiler's own default, or your own in CXXFLAGS);
#   any other value is passed as -march=ARCH (haswell, x86-64-v3, armv8.2-a, ...).
# Objects go to build/ for g++ with ARCH=native, else to build/COMPILER-ARCH/; a change of flags
# rebuilds them (build/.../flags holds the compile line they were built with).
# A cross compiler: its target's CPU or system is not this machine's (-march=native would describe this one).
TARGET   := $(shell $(CXX) -dumpmachine 2>/dev/null)
CROSS    := $(if $(TARGET),$(if $(filter $(shell uname -m)-%,$(TARGET)),$(findstring mingw,$(TARGET)),1),)
ARCH     ?= $(if $(CROSS),portable,native)
OPT      ?= -O3
CPPFLAGS ?=
CXXFLAGS ?=
LDFLAGS  ?=
# What the build needs, kept apart from the packagers' variables: a CPPFLAGS or LDFLAGS given on make's
# command line replaces every assignment to it here, -fopenmp and -DGPT2_MPI included.
NEEDED   := -std=c++17 -Isrc -MMD -MP -Wall -Wextra -Wno-unused-parameter
LDNEEDED :=
comma    := ,
X86_64   := $(if $(filter x86_64-%,$(TARGET)),1,)
# Windows: programs end in .exe and carry their runtime (libstdc++, libgomp, winpthread), so they need no DLLs.
WINDOWS  := $(if $(filter %-mingw32,$(TARGET)),1,)
EXE      := $(if $(WINDOWS),.exe,)
LDNEEDED += $(if $(WINDOWS),-static,)
# Windows aligns the stack to 16 bytes, GCC assumes 32 for AVX spills (GCC bug 54412): the assembler then
# encodes every aligned vector move as an unaligned one, which costs nothing on data that is aligned.
NEEDED   += $(if $(WINDOWS),-Wa$(comma)-muse-unaligned-vector-move,)
# mingw's own printf family, which knows %zu and %lld (the system's msvcrt does not). GCC still checks
# format(printf) functions against msvcrt's, so -Wformat is the native build's job.
NEEDED   += $(if $(WINDOWS),-D__USE_MINGW_ANSI_STDIO=1 -Wno-format,)
BIN      ?= gpt2$(EXE)
ifeq ($(ARCH),native)
MARCH    := -march=native
else ifeq ($(ARCH),portable)
MARCH    := $(if $(X86_64),-march=x86-64 -mtune=generic,)
DISPATCH := $(X86_64)
NEEDED   += $(if $(DISPATCH),-DGPT2_DISPATCH,)
else ifeq ($(ARCH),none)
MARCH    :=
else
MARCH    := -march=$(ARCH)
endif
COMPILER := $(notdir $(firstword $(CXX)))
BUILD    := build$(if $(filter g++-native,$(COMPILER)-$(ARCH)),,/$(COMPILER)-$(ARCH))

ifeq ($(DEBUG),1)
SAN := 1
endif
ifeq ($(SAN),1)
OPT      := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined
LDNEEDED += -fsanitize=address,undefined
BUILD    := $(BUILD)/san
BIN      := $(BUILD)/gpt2
endif
ifeq ($(MPI),1)
CXX      := mpicxx
NEEDED   += -DGPT2_MPI -DOMPI_SKIP_MPICXX  # the C API only
BUILD    := $(BUILD)/mpi
ifeq ($(origin BIN),file)  # not given by the user: gpt2-mpi beside gpt2 (build/san/gpt2-mpi with SAN=1)
BIN      := $(BIN)-mpi
endif
endif
# OpenMP: -fopenmp for g++ and for clang with libomp-dev. Apple's clang takes OpenMP only through the
# preprocessor, with Homebrew's libomp (brew install libomp); untested here.
ifeq ($(shell uname -s),Darwin)
LIBOMP   ?= $(shell brew --prefix libomp 2>/dev/null)
OMP_CXX  ?= -Xpreprocessor -fopenmp -I$(LIBOMP)/include
OMP_LD   ?= -L$(LIBOMP)/lib -lomp
else
OMP_CXX  ?= -fopenmp
OMP_LD   ?= -fopenmp
endif
ifneq ($(NO_OMP),1)
NEEDED   += $(OMP_CXX)
LDNEEDED += $(OMP_LD)
BUILD    := $(BUILD)/omp
endif
# The header-only stb (libstb-dev) comes from the build machine's /usr/include/stb; a cross compiler sees
# it through a link in the build directory, and no other header of the build machine.
ifeq ($(WINDOWS),1)
STB_DIR  ?= /usr/include/stb
NEEDED   += -isystem $(BUILD)/stb-include
$(shell mkdir -p $(BUILD)/stb-include && ln -sfn $(STB_DIR) $(BUILD)/stb-include/stb)
endif
COMPILE  := $(CXX) $(NEEDED) $(MARCH) $(OPT) $(CPPFLAGS) $(CXXFLAGS)
LINK     := $(LDNEEDED) $(LDFLAGS)

# Run-time dispatch (ARCH=portable on x86-64, see src/kernels/isa.h): the kernels once per instruction set,
# in build/.../isa_NAME/, linked after everything else and the baseline first, so that where the copies
# share an inline function or template the linker keeps the baseline one (the first it sees).
ISAS      := baseline avx2 avx512
ISA_FLAGS_baseline := -march=x86-64 -mtune=generic
ISA_FLAGS_avx2     := -march=x86-64-v3 -mtune=generic
ISA_FLAGS_avx512   := -march=x86-64-v4 -mtune=generic -mprefer-vector-width=512

# The compile line each build directory was made with: objects depend on it, so new flags rebuild them;
# and the build directory that last linked $(BIN), so switching builds relinks it. A dry run (make -n)
# writes neither.
FLAGS_FILE := $(BUILD)/flags
BIN_FROM   := build/linked/$(subst /,_,$(BIN))
ifeq ($(findstring n,$(firstword -$(MAKEFLAGS))),)
FLAGS_LINE := $(COMPILE) | $(LINK)$(if $(DISPATCH), | $(foreach i,$(ISAS),$(i): $(ISA_FLAGS_$(i))))
ifneq ($(file <$(FLAGS_FILE)),$(FLAGS_LINE))
$(shell mkdir -p $(BUILD))
$(file >$(FLAGS_FILE),$(FLAGS_LINE))
endif
ifneq ($(file <$(BIN_FROM)),$(BUILD))
$(shell mkdir -p build/linked)
$(file >$(BIN_FROM),$(BUILD))
endif
endif

SRC       := $(wildcard src/*/*.cpp)
LIB_OBJ   := $(patsubst src/%.cpp,$(BUILD)/%.o,$(filter-out src/cli/main.cpp,$(SRC)))
ifeq ($(DISPATCH),1)
KERNEL_SRC := $(filter-out src/kernels/dispatch.cpp,$(wildcard src/kernels/*.cpp))
LIB_OBJ   := $(filter-out $(patsubst src/%.cpp,$(BUILD)/%.o,$(KERNEL_SRC)),$(LIB_OBJ)) \
             $(foreach i,$(ISAS),$(patsubst src/%.cpp,$(BUILD)/isa_$(i)/%.o,$(KERNEL_SRC)))
endif
TEST_SRC  := $(filter-out tests/bench%.cpp,$(wildcard tests/*.cpp))
TEST_OBJ  := $(patsubst tests/%.cpp,$(BUILD)/tests/%.o,$(TEST_SRC))
BENCH_SRC := $(wildcard tests/bench*.cpp)
BENCH_OBJ := $(patsubst tests/%.cpp,$(BUILD)/tests/%.o,$(BENCH_SRC))

.PHONY: all test test-ref test-mpi test-portable test-arm64 test-clang windows test-windows check bench bench-full portable-bench data format clean node-deps
all: $(BIN)

# Written when the Makefile is read; this rule only lets a dry run go on without them.
$(FLAGS_FILE) $(BIN_FROM): ;

$(BIN): $(BUILD)/cli/main.o $(LIB_OBJ) $(BIN_FROM)
	$(CXX) -o $@ $(filter %.o,$^) $(LINK)

$(BUILD)/run_tests$(EXE): $(TEST_OBJ) $(LIB_OBJ)
	$(CXX) -o $@ $^ $(LINK)

$(BUILD)/run_bench$(EXE): $(BENCH_OBJ) $(LIB_OBJ)
	$(CXX) -o $@ $^ $(LINK)

$(BUILD)/%.o: src/%.cpp $(FLAGS_FILE)
	@mkdir -p $(dir $@)
	$(COMPILE) -c $< -o $@

$(BUILD)/tests/%.o: tests/%.cpp $(FLAGS_FILE)
	@mkdir -p $(dir $@)
	$(COMPILE) -c $< -o $@

define ISA_RULE
$(BUILD)/isa_$(1)/%.o: src/%.cpp $(FLAGS_FILE)
	@mkdir -p $$(dir $$@)
	$(COMPILE) $(ISA_FLAGS_$(1)) -DGPT2_ISA=isa_$(1) -c $$< -o $$@
endef
$(foreach i,$(ISAS),$(eval $(call ISA_RULE,$(i))))

test: $(BIN) $(BUILD)/run_tests $(BUILD)/run_bench  # run_bench: cli_build.sh checks its driver
	GPT2=./$(BIN) RUN_BENCH=$(BUILD)/run_bench bash tests/run.sh --unit $(BUILD)/run_tests 'tests/cli_*.sh'

test-ref: $(BIN)
	GPT2=./$(BIN) bash tests/run.sh 'tests/ref_*.sh'

# The npm packages of tests/node (tiktoken, the test oracle; Unicode data for the table generator), pinned by
# its package-lock.json and installed by `npm ci` when the lock file changes. Needs node, npm and the npm
# registry; test-ref uses them but does not install them (.ci/run does). The build never needs node.
node-deps: tests/node/node_modules/.package-lock.json
tests/node/node_modules/.package-lock.json: tests/node/package.json tests/node/package-lock.json
	cd tests/node && npm ci --omit=optional --no-audit --no-fund  # no CUDA, Vulkan or ARM builds of llama.cpp

# Benchmarks (not tests): build/.../run_bench, whose cases tests/bench_main.cpp lists (`run_bench --list`).
# `make bench` runs the headline cases (peak, first step, 124M step fp32 and bf16 at B=4 T=64, decode, the
# same in PyTorch and the ratios; 2.5 minutes on this 2-core machine), `make bench-full` every case,
# `make bench CASES="peak decode_fp32"` the named ones. Each figure is printed as it is measured.
# PYTHON=... picks the PyTorch cases' interpreter; BENCH_TORCH=0 skips them.
PYTHON      ?= /usr/bin/python3
BENCH_TORCH ?= 1
BENCH_ENV   := PYTHON='$(PYTHON)' BENCH_TORCH='$(BENCH_TORCH)'
# The cases dispatch_fp32_b4t64 and isa_paths run the dispatching build's run_bench (x86-64 only), which
# bench and bench-full build first.
PORTABLE_DIR := build/$(COMPILER)-portable/omp
PORTABLE_BENCH := $(if $(X86_64),$(PORTABLE_DIR)/run_bench,)
BENCH_ENV   += PORTABLE_BENCH='$(PORTABLE_BENCH)'

# Data-parallel training under mpirun with the MPI=1 build (tests/mpi.sh; needs openmpi-bin, libopenmpi-dev).
test-mpi:
	$(MAKE) -s MPI=1
	GPT2_MPI=./gpt2-mpi bash tests/run.sh 'tests/mpi.sh tests/mpi_net.sh'

# The run-time dispatching build (ARCH=portable) and its kernel sets, natively and under qemu-x86_64
# (tests/portable.sh). Builds it beside the others (PORTABLE_DIR, above), never as ./gpt2.
test-portable: $(BIN)
	$(MAKE) -s ARCH=portable SAN= DEBUG= MPI= NO_OMP= BIN=$(PORTABLE_DIR)/gpt2 $(PORTABLE_DIR)/gpt2 $(PORTABLE_DIR)/run_tests
	GPT2=./$(BIN) GPT2_PORTABLE=$(PORTABLE_DIR)/gpt2 PORTABLE_TESTS=$(PORTABLE_DIR)/run_tests bash tests/run.sh tests/portable.sh

# Clang with libomp-dev (macOS's compiler, on Linux): the whole of make test, built in a directory of its own.
CLANG_CXX := clang++
test-clang:  # the 124M memory runs (minutes, the same code) only in make test
	MEMORY_124M=0 $(MAKE) -s CXX=$(CLANG_CXX) SAN= DEBUG= MPI= NO_OMP= BIN=build/$(CLANG_CXX)-$(ARCH)/omp/gpt2 test

# ARM64: Debian's cross compiler builds gpt2 and the unit tests for aarch64 (ARCH=portable: ARMv8-A with
# NEON), and tests/arm64.sh runs them under qemu-aarch64 beside the native build.
ARM64_CXX := aarch64-linux-gnu-g++
ARM64_DIR := build/$(ARM64_CXX)-portable/omp
test-arm64: $(BIN)
	$(MAKE) -s CXX=$(ARM64_CXX) ARCH=portable SAN= DEBUG= MPI= NO_OMP= BIN=$(ARM64_DIR)/gpt2 $(ARM64_DIR)/gpt2 $(ARM64_DIR)/run_tests
	GPT2=./$(BIN) GPT2_ARM64=$(ARM64_DIR)/gpt2 ARM64_TESTS=$(ARM64_DIR)/run_tests bash tests/run.sh tests/arm64.sh

# Windows, cross-built with mingw-w64 (Debian: g++-mingw-w64-x86-64) as one ARCH=portable build, and its
# unit tests and a tiny train, resume and generate under wine (tests/windows.sh; Debian: wine, wine64).
WIN_CXX := x86_64-w64-mingw32-g++
WIN_DIR := build/$(WIN_CXX)-portable/omp
windows:
	$(MAKE) -s CXX=$(WIN_CXX) ARCH=portable SAN= DEBUG= MPI= NO_OMP= BIN=$(WIN_DIR)/gpt2.exe $(WIN_DIR)/gpt2.exe $(WIN_DIR)/run_tests.exe
test-windows: $(BIN) windows
	GPT2=./$(BIN) GPT2_WIN=$(WIN_DIR)/gpt2.exe WIN_TESTS=$(WIN_DIR)/run_tests.exe bash tests/run.sh tests/windows.sh

check:
	bash tests/check.sh

bench: $(BUILD)/run_bench portable-bench
	$(BENCH_ENV) $(BUILD)/run_bench $(CASES)

bench-full: $(BUILD)/run_bench portable-bench
	$(BENCH_ENV) $(BUILD)/run_bench --all

portable-bench:
	$(if $(PORTABLE_BENCH),$(MAKE) -s ARCH=portable SAN= DEBUG= MPI= NO_OMP= $(PORTABLE_BENCH),)

data: gpt2
	bash scripts/prepare_data.sh

format:
	clang-format -i src/*/*.cpp src/*/*.h tests/*.cpp tests/*.h tests/fuzz/*.cpp

clean:
	rm -rf build gpt2 gpt2-mpi

# ---- fuzzing: clang's libFuzzer (Debian packages clang and libclang-rt-14-dev). `make fuzz` replays
# tests/fuzz/regressions/<target>/, then fuzzes each target for FUZZ_SECONDS (CI: FUZZ_SECONDS=20).
# Library objects get coverage instrumentation (fuzzer-no-link); only the targets link libFuzzer's main.
FUZZ_CXX     ?= clang++
FUZZ_SECONDS ?= 60
FUZZ_BUILD   := build/fuzz
FUZZ_FLAGS   := -std=c++17 -g -O1 -fno-omit-frame-pointer -fsanitize=address,undefined \
                -fno-sanitize-recover=undefined -Wall -Wextra -Wno-unused-parameter -MMD -MP -Isrc
FUZZ_TARGETS := safetensors json tokenfile tokenizer llmc train_state gguf
# Every library source but the command line and the dispatcher (the fuzz build has one kernel set), so a
# new source file cannot be left out.
FUZZ_LIB_OBJ := $(patsubst src/%.cpp,$(FUZZ_BUILD)/%.o,$(filter-out src/cli/% src/kernels/dispatch.cpp,$(SRC)))
FUZZ_BINS    := $(patsubst %,$(FUZZ_BUILD)/fuzz_%,$(FUZZ_TARGETS))

.PHONY: fuzz fuzz-build
fuzz: fuzz-build
	bash tests/fuzz/run.sh $(FUZZ_BUILD) $(FUZZ_SECONDS) $(FUZZ_TARGETS)

fuzz-build: $(FUZZ_LIB_OBJ) $(FUZZ_BINS)  # objects named here so make keeps them (not intermediate)

$(FUZZ_BUILD)/%.o: src/%.cpp
	@mkdir -p $(dir $@)
	$(FUZZ_CXX) $(FUZZ_FLAGS) -fsanitize=fuzzer-no-link -c $< -o $@

$(FUZZ_BUILD)/fuzz_%: tests/fuzz/fuzz_%.cpp $(FUZZ_LIB_OBJ)
	$(FUZZ_CXX) $(FUZZ_FLAGS) -fsanitize=fuzzer $< $(FUZZ_LIB_OBJ) -o $@

-include $(shell find build -name '*.d' 2>/dev/null)
