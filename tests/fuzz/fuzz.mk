# tests/fuzz/fuzz.mk (included by the Makefile): fuzzing with clang's libFuzzer (Debian packages clang and
# libclang-rt-14-dev). `make fuzz` replays tests/fuzz/regressions/<target>/, then fuzzes each target for
# FUZZ_SECONDS (CI: FUZZ_SECONDS=10). Library objects get coverage instrumentation (fuzzer-no-link); only
# the targets link libFuzzer's main.
FUZZ_CXX     ?= clang++
FUZZ_SECONDS ?= 60
FUZZ_BUILD   := build/fuzz
FUZZ_FLAGS   := -std=c++17 -g1 -O1 -fno-omit-frame-pointer -fsanitize=address,undefined \
                -fno-sanitize-recover=undefined -Wall -Wextra -Wno-unused-parameter -MMD -MP -Isrc
FUZZ_TARGETS := safetensors json tokenfile tokenizer llmc train_state gguf http openai
# Every library source but the command line, gpt2-core's main and the dispatcher (the fuzz build has one kernel
# set), so a new source file cannot be left out.
FUZZ_LIB_OBJ := $(patsubst src/%.cpp,$(FUZZ_BUILD)/%.o,$(filter-out src/cli/% src/core/main.cpp src/dispatch/dispatch.cpp,$(SRC)))
FUZZ_BINS    := $(patsubst %,$(FUZZ_BUILD)/fuzz_%,$(FUZZ_TARGETS))

.PHONY: fuzz fuzz-build
fuzz: fuzz-build
	bash tests/fuzz/run.sh $(FUZZ_BUILD) $(FUZZ_SECONDS) $(FUZZ_TARGETS)

fuzz-build: $(FUZZ_LIB_OBJ) $(FUZZ_BINS)  # objects named here so make keeps them (not intermediate)

# serve's chat page is generated into the main build's gen/ (the Makefile's rule), included from there.
$(FUZZ_BUILD)/serve/page.o: $(BUILD)/gen/serve_page.inc
$(FUZZ_BUILD)/serve/page.o: FUZZ_FLAGS += -I$(BUILD)/gen

$(FUZZ_BUILD)/%.o: src/%.cpp
	@mkdir -p $(dir $@)
	$(FUZZ_CXX) $(FUZZ_FLAGS) -fsanitize=fuzzer-no-link -c $< -o $@

$(FUZZ_BUILD)/fuzz_%: tests/fuzz/fuzz_%.cpp $(FUZZ_LIB_OBJ)
	$(FUZZ_CXX) $(FUZZ_FLAGS) -fsanitize=fuzzer $< $(FUZZ_LIB_OBJ) -o $@

