# gpt2.cpp build. `make` builds ./gpt2; `make test` runs the tests that need no Python; `make test-ref`
# regenerates reference dumps with PyTorch and compares against them. Switches: NO_OMP=1 (no OpenMP),
# SAN=1 (AddressSanitizer + UBSan, objects in build/san), DEBUG=1 (same as SAN=1), BIN=path (where the
# binary goes; default ./gpt2).

CXX      ?= g++
CXXFLAGS ?= -O3 -march=native
CXXFLAGS += -std=c++17 -Wall -Wextra -Wno-unused-parameter -MMD -MP
LDFLAGS  ?=
BUILD    := build
BIN      ?= gpt2

ifeq ($(DEBUG),1)
SAN := 1
endif
ifeq ($(SAN),1)
CXXFLAGS := -std=c++17 -O1 -g -march=native -fno-omit-frame-pointer -fsanitize=address,undefined \
            -fno-sanitize-recover=undefined -Wall -Wextra -Wno-unused-parameter -MMD -MP
LDFLAGS  += -fsanitize=address,undefined
BUILD    := build/san
endif
ifneq ($(NO_OMP),1)
CXXFLAGS += -fopenmp
LDFLAGS  += -fopenmp
BUILD    := $(BUILD)/omp
endif

SRC       := $(wildcard src/*.cpp)
LIB_OBJ   := $(patsubst src/%.cpp,$(BUILD)/%.o,$(filter-out src/main.cpp,$(SRC)))
TEST_SRC  := $(filter-out tests/bench%.cpp,$(wildcard tests/*.cpp))
TEST_OBJ  := $(patsubst tests/%.cpp,$(BUILD)/tests/%.o,$(TEST_SRC))
BENCH_SRC := $(wildcard tests/bench*.cpp)
BENCH_OBJ := $(patsubst tests/%.cpp,$(BUILD)/tests/%.o,$(BENCH_SRC))

.PHONY: all test test-ref bench data format clean
all: $(BIN)

$(BIN): $(BUILD)/main.o $(LIB_OBJ)
	$(CXX) -o $@ $^ $(LDFLAGS)

$(BUILD)/run_tests: $(TEST_OBJ) $(LIB_OBJ)
	$(CXX) -o $@ $^ $(LDFLAGS)

$(BUILD)/run_bench: $(BENCH_OBJ) $(LIB_OBJ)
	$(CXX) -o $@ $^ $(LDFLAGS)

$(BUILD)/%.o: src/%.cpp
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) -c $< -o $@

$(BUILD)/tests/%.o: tests/%.cpp
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) -Isrc -c $< -o $@

test: $(BIN) $(BUILD)/run_tests
	bash tests/run.sh --unit $(BUILD)/run_tests 'tests/cli_*.sh'

test-ref: gpt2
	bash tests/run.sh 'tests/ref_*.sh'

# The C++ benchmarks, then the same training steps in PyTorch (scripts/bench_torch.py, same thread count)
# and the ratio torch / ours per shape. PYTHON=... picks the interpreter; BENCH_TORCH=0 skips it.
PYTHON      ?= /usr/bin/python3
BENCH_TORCH ?= 1
bench: $(BIN) $(BUILD)/run_bench
	$(BUILD)/run_bench | tee $(BUILD)/bench.out
	@if [ "$(BENCH_TORCH)" = 1 ]; then \
	    threads=$$(sed -n 's/^peak (register-only FMA loop, \([0-9]*\) threads.*/\1/p' $(BUILD)/bench.out); \
	    $(PYTHON) scripts/bench_torch.py --threads $${threads:-2} | tee $(BUILD)/bench_torch.out; \
	    awk '/^124M B=.*ms\/step/ { ours[$$2 " " $$3] = $$4 } \
	         /^torch 124M B=.*ms\/step/ { k = $$3 " " $$4; if (k in ours) \
	             printf "PyTorch / ours %s %s %.2fx (PyTorch %s ms, ours %s ms)\n", $$3, substr($$4, 1, length($$4) - 1), $$5 / ours[k], $$5, ours[k] }' \
	        $(BUILD)/bench.out $(BUILD)/bench_torch.out; \
	fi

data: gpt2
	bash scripts/prepare_data.sh

format:
	clang-format -i src/*.cpp src/*.h tests/*.cpp tests/*.h

clean:
	rm -rf build gpt2

-include $(shell find build -name '*.d' 2>/dev/null)
