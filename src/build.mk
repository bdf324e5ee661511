# src/build.mk (included by the Makefile): how the switches become a compile line (COMPILE), a link line
# (LINK), a build directory (BUILD) and a binary (BIN), and which objects make up the library. Variables
# only: the rules are in the Makefile.

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
# Math functions that leave errno alone: nothing here reads it, and sqrt can then be a vector instruction (at
# -O3 with errno, GCC 12 takes square roots one by one: AdamW's update loop ran at several times its memory
# floor with AVX2; tests/bench_results.md).
NO_ERRNO := -fno-math-errno
# What the build needs, kept apart from the packagers' variables: a CPPFLAGS or LDFLAGS given on make's
# command line replaces every assignment to it here, -fopenmp and -DGPT2_MPI included.
NEEDED   := -std=c++17 -Isrc -MMD -MP -Wall -Wextra -Wno-unused-parameter $(NO_ERRNO)
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

# SAN=1 keeps line tables (-g1): the file and line of every frame a sanitizer reports, in about half the
# compile time of -g (tests/bench_results.md). DEBUG=1 adds the full debug information a debugger reads.
ifeq ($(DEBUG),1)
SAN := 1
DEBUG_INFO := -g
endif
ifeq ($(SAN),1)
OPT      := -O1 $(or $(DEBUG_INFO),-g1) -fno-omit-frame-pointer -fsanitize=address,undefined \
            -fno-sanitize-recover=undefined
LDNEEDED += -fsanitize=address,undefined
BUILD    := $(BUILD)/$(if $(DEBUG_INFO),debug,san)
BIN      := $(BUILD)/gpt2
endif
ifeq ($(MPI),1)
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
# The header-only stb (libstb-dev) comes from the build machine's /usr/include/stb; a cross compiler for
# Windows sees it through a link in the build directory (STB_LINK, made by the Makefile's rule), and no
# other header of the build machine.
ifeq ($(WINDOWS),1)
STB_DIR  ?= /usr/include/stb
STB_LINK := $(BUILD)/stb-include/stb
NEEDED   += -isystem $(BUILD)/stb-include
endif
COMPILE  := $(CXX) $(NEEDED) $(MARCH) $(OPT) $(CPPFLAGS) $(CXXFLAGS)
LINK     := $(LDNEEDED) $(LDFLAGS)
LINK_CXX := $(CXX)

# Run-time dispatch (ARCH=portable on x86-64, see src/core/isa.h): the kernels once per instruction set,
# in build/.../isa_NAME/, linked after everything else and the baseline first, so that where the copies
# share an inline function or template the linker keeps the baseline one (the first it sees).
ISAS      := baseline avx2 avx512
ISA_FLAGS_baseline := -march=x86-64 -mtune=generic
ISA_FLAGS_avx2     := -march=x86-64-v3 -mtune=generic
ISA_FLAGS_avx512   := -march=x86-64-v4 -mtune=generic -mprefer-vector-width=512

# What the objects were built with (written to $(BUILD)/flags), and the file naming the build that last
# linked $(BIN) (build/linked/...); the Makefile's rules rewrite either when it differs.
FLAGS_LINE := $(COMPILE) | $(LINK)$(if $(DISPATCH), | $(foreach i,$(ISAS),$(i): $(ISA_FLAGS_$(i))))
FLAGS_FILE := $(BUILD)/flags
BIN_FROM   := build/linked/$(subst /,_,$(BIN))

SRC       := $(wildcard src/*/*.cpp)
LIB_OBJ   := $(patsubst src/%.cpp,$(BUILD)/%.o,$(filter-out src/cli/main.cpp src/core/main.cpp,$(SRC)))
ifeq ($(DISPATCH),1)
KERNEL_SRC := $(addprefix src/core/,adamw.cpp attention.cpp gemm.cpp layers.cpp) \
              $(addprefix src/precision/,gemm_bf16.cpp gemm_copy.cpp gemm_q8.cpp) \
              $(addprefix src/precision/,adamw_bf16_chunk.cpp adamw_8bit_chunk.cpp) \
              $(addprefix src/inference/,matvec.cpp kv_attention.cpp) \
              src/dispatch/fma_peak.cpp src/tuned/gemm_packed.cpp
LIB_OBJ   := $(filter-out $(patsubst src/%.cpp,$(BUILD)/%.o,$(KERNEL_SRC)),$(LIB_OBJ)) \
             $(foreach i,$(ISAS),$(patsubst src/%.cpp,$(BUILD)/isa_$(i)/%.o,$(KERNEL_SRC)))
endif
# MPI=1: only the sources that read GPT2_MPI are compiled apart, by Open MPI's (or MPICH's) mpicxx around CXX
# (the C API alone: OMPI_SKIP_MPICXX), into $(BUILD)/mpi/ with flags of their own, each in its place in the
# link; every other object is the build's without MPI. mpicxx links, into $(OUT): $(BUILD)/mpi for MPI=1,
# else $(BUILD) (run_tests and run_bench go there, and build/linked/ records it).
MAIN_OBJ  := $(BUILD)/cli/main.o
OUT       := $(BUILD)
ifeq ($(MPI),1)
MPI_SRC   := src/cli/main.cpp src/dist/dist.cpp src/formats/train_state.cpp
MPI_CXX   := $(if $(filter mpi%,$(COMPILER)),$(CXX),OMPI_CXX="$(CXX)" MPICH_CXX="$(CXX)" mpicxx)
MPI_COMPILE := $(MPI_CXX) $(NEEDED) -DGPT2_MPI -DOMPI_SKIP_MPICXX $(MARCH) $(OPT) $(CPPFLAGS) $(CXXFLAGS)
MPI_FLAGS_FILE := $(BUILD)/mpi/flags
MAIN_OBJ  := $(BUILD)/mpi/cli/main.o
$(foreach o,$(MPI_SRC:src/%.cpp=%.o),$(eval LIB_OBJ := $(patsubst $(BUILD)/$(o),$(BUILD)/mpi/$(o),$(LIB_OBJ))))
LINK_CXX  := $(MPI_CXX)
OUT       := $(BUILD)/mpi
endif
TEST_SRC  := $(filter-out tests/bench%.cpp,$(wildcard tests/*.cpp))
TEST_OBJ  := $(patsubst tests/%.cpp,$(BUILD)/tests/%.o,$(TEST_SRC))
BENCH_SRC := $(wildcard tests/bench*.cpp)
BENCH_OBJ := $(patsubst tests/%.cpp,$(BUILD)/tests/%.o,$(BENCH_SRC))

# make core: src/core alone into gpt2-core, compiled where nothing else of src/ can be included (its one
# include directory holds a link to src/core alone) and linked with the C++ library and OpenMP only. No
# MPI, no dispatch: the kernels for ARCH's one instruction set.
CORE_BIN     := $(if $(filter ./,$(dir $(BIN))),,$(dir $(BIN)))gpt2-core$(EXE)  # beside $(BIN)
CORE_DIR     := $(BUILD)/core-alone
CORE_OBJ     := $(patsubst src/core/%.cpp,$(CORE_DIR)/%.o,$(wildcard src/core/*.cpp))
CORE_COMPILE := $(CXX) -std=c++17 -I$(CORE_DIR)/include -MMD -MP -Wall -Wextra -Wno-unused-parameter $(NO_ERRNO) \
                $(if $(filter 1,$(NO_OMP)),,$(OMP_CXX)) $(MARCH) $(OPT) $(CPPFLAGS) $(CXXFLAGS)
