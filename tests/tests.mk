# tests/tests.mk (included by the Makefile): the test stages tests/check.sh runs after `make test` (which is
# in the Makefile), in its order. Each other build builds beside the others, never as ./gpt2, and drops the
# outer make's switches (PLAIN), so `make test-portable SAN=1` still builds the plain portable build.
.PHONY: test-ref node-deps test-mpi test-portable test-arm64 windows test-windows test-clang test-bench \
        build-noomp-test build-portable build-arm64 build-clang
PLAIN := SAN= DEBUG= MPI= NO_OMP=

# Against PyTorch, tiktoken and llama.cpp (tests/ref_*.sh; needs Python with torch, and node-deps).
test-ref: $(BIN)
	GPT2=./$(BIN) bash tests/run.sh 'tests/ref_*.sh'
# The build without OpenMP that tests/ref_model.sh runs compare with: at -O1 (the check is that it builds and
# computes, not its speed), in a directory of its own, so a later `make NO_OMP=1` at -O3 recompiles nothing.
build-noomp-test:
	$(MAKE) -s $(PLAIN) NO_OMP=1 BUILD=build/noomp-test BIN=build/noomp-test/gpt2 CXXFLAGS=-O1 build/noomp-test/gpt2

# The npm packages of tests/node (tiktoken, the test oracle; Unicode data for the table generator), pinned by
# its package-lock.json and installed by `npm ci` when the lock file changes. Needs node, npm and the npm
# registry; test-ref uses them but does not install them (.ci/run does). The build never needs node.
# --omit=optional: no CUDA, Vulkan or ARM builds of llama.cpp. --ignore-scripts: no package needs an install
# script here, and node-llama-cpp's crashes on a Node older than its 20 (Debian 12 has 18), where the suites
# skip its cases (tests/lib.sh, llama_oracle_unusable) and run the rest.
node-deps: tests/node/node_modules/.package-lock.json
tests/node/node_modules/.package-lock.json: tests/node/package.json tests/node/package-lock.json
	cd tests/node && npm ci --omit=optional --ignore-scripts --no-audit --no-fund

# Data-parallel training under mpirun with the MPI=1 build (tests/mpi.sh; needs openmpi-bin, libopenmpi-dev).
test-mpi:
	$(MAKE) -s MPI=1
	GPT2_MPI=./gpt2-mpi bash tests/run.sh 'tests/mpi.sh tests/mpi_net.sh'

# The run-time dispatching build (ARCH=portable) and its kernel sets, natively and under qemu-x86_64
# (tests/portable.sh). make bench runs this build's run_bench too (tests/bench.mk).
PORTABLE_DIR := build/$(COMPILER)-portable/omp
build-portable:
	$(MAKE) -s ARCH=portable $(PLAIN) BIN=$(PORTABLE_DIR)/gpt2 $(PORTABLE_DIR)/gpt2 $(PORTABLE_DIR)/run_tests
test-portable: $(BIN) build-portable
	GPT2=./$(BIN) GPT2_PORTABLE=$(PORTABLE_DIR)/gpt2 PORTABLE_TESTS=$(PORTABLE_DIR)/run_tests bash tests/run.sh tests/portable.sh

# ARM64: Debian's cross compiler builds gpt2 and the unit tests for aarch64 (ARCH=portable: ARMv8-A with
# NEON), and tests/arm64.sh runs them under qemu-aarch64 beside the native build.
ARM64_CXX := aarch64-linux-gnu-g++
ARM64_DIR := build/$(ARM64_CXX)-portable/omp
build-arm64:
	$(MAKE) -s CXX=$(ARM64_CXX) ARCH=portable $(PLAIN) BIN=$(ARM64_DIR)/gpt2 $(ARM64_DIR)/gpt2 $(ARM64_DIR)/run_tests
test-arm64: $(BIN) build-arm64
	GPT2=./$(BIN) GPT2_ARM64=$(ARM64_DIR)/gpt2 ARM64_TESTS=$(ARM64_DIR)/run_tests bash tests/run.sh tests/arm64.sh

# Windows, cross-built with mingw-w64 (Debian: g++-mingw-w64-x86-64) as one ARCH=portable build, and its
# unit tests and a tiny train, resume and generate under wine (tests/windows.sh; Debian: wine, wine64).
WIN_CXX := x86_64-w64-mingw32-g++
WIN_DIR := build/$(WIN_CXX)-portable/omp
windows:
	$(MAKE) -s CXX=$(WIN_CXX) ARCH=portable $(PLAIN) BIN=$(WIN_DIR)/gpt2.exe $(WIN_DIR)/gpt2.exe $(WIN_DIR)/run_tests.exe
test-windows: $(BIN) windows
	GPT2=./$(BIN) GPT2_WIN=$(WIN_DIR)/gpt2.exe WIN_TESTS=$(WIN_DIR)/run_tests.exe bash tests/run.sh tests/windows.sh

# Clang with libomp-dev (macOS's compiler, on Linux), built in a directory of its own: the unit tests and the
# suites whose results depend on how the compiler built the arithmetic and the formats (numbers against the
# fixtures, exact resume, generation, GGUF). The rest of make test checks what the same source does with files,
# flags and signals; make test and make test SAN=1 run it (a full make test under clang cost CI 10 minutes).
CLANG_CXX := clang++
CLANG_SUITES := tests/cli_model.sh tests/cli_checkpoint.sh tests/cli_generate.sh tests/cli_gguf.sh
CLANG_ARGS := -s CXX=$(CLANG_CXX) $(PLAIN) BIN=build/$(CLANG_CXX)-$(ARCH)/omp/gpt2 CLI_SUITES='$(CLANG_SUITES)'
build-clang:  # $(MAKE) written out in the recipe: make hands its jobs (-j) only to a recipe that names it
	$(MAKE) $(CLANG_ARGS) test-build
test-clang:
	$(MAKE) $(CLANG_ARGS) test

# The benchmarks' driver, run_bench (tests/bench_driver.sh): it runs the cases named and no others, each figure
# reaches its file as it is measured, and tests/README.md names every case. Here, not in make test, so that
# make test builds no benchmark.
test-bench: $(OUT)/run_bench
	RUN_BENCH=$(OUT)/run_bench bash tests/run.sh tests/bench_driver.sh
