# gpt2.cpp's build: `make` builds ./gpt2 for this machine. Switches, each building in a directory of its own
# under build/ (so switching back recompiles nothing): ARCH=portable|none|CPU (default native; portable for a
# cross compiler), NO_OMP=1 (no OpenMP), SAN=1 (AddressSanitizer + UBSan: build/.../san/gpt2), DEBUG=1 (the
# same with full debug information: build/.../debug/gpt2), MPI=1 (./gpt2-mpi, for mpirun: its own objects of
# the three sources that read GPT2_MPI, the others shared), CXX=clang++ or a cross compiler, BIN=path (where
# the binary goes), and CXXFLAGS, CPPFLAGS, LDFLAGS (added after the build's own). src/build.mk turns them into
# compile lines; the other test stages are in tests/tests.mk, the benchmarks in tests/bench.mk, fuzzing in
# tests/fuzz/fuzz.mk.
include src/build.mk

.PHONY: all core test test-build check data bench clean format FORCE
all: $(BIN)                            # ./gpt2 (./gpt2-mpi with MPI=1)
core: $(CORE_BIN)                      # ./gpt2-core: src/core alone, the fp32 trainer (src/README.md)
# make test CLI_SUITES='tests/cli_model.sh' runs the unit tests and the suites named (gpt2-core is built for
# tests/cli_core.sh alone).
CLI_SUITES := tests/cli_*.sh
# test-build: the binaries make test runs, built and not run (tests/check.sh builds each stage's ahead).
test-build: $(BIN) $(OUT)/run_tests $(if $(filter tests/cli_*.sh tests/cli_core.sh,$(CLI_SUITES)),$(CORE_BIN))
test: test-build
	GPT2=./$(BIN) bash tests/run.sh --unit $(OUT)/run_tests '$(CLI_SUITES)'
check:                                 # every test stage in turn, as CI runs them (tests/check.sh)
	bash tests/check.sh
data: gpt2                             # tiny shakespeare and the GPT-2 tokenizer into data/
	bash scripts/prepare_data.sh
bench: $(OUT)/run_bench portable-bench  # the headline benchmarks; CASES="peak decode_fp32" picks cases
	$(BENCH_ENV) $(OUT)/run_bench $(CASES)
clean:                                 # removes build/, ./gpt2, ./gpt2-mpi and ./gpt2-core
	rm -rf build gpt2 gpt2-mpi gpt2-core
format:                                # clang-format over the sources
	clang-format -i src/*/*.cpp src/*/*.h tests/*.cpp tests/*.h tests/fuzz/*.cpp

# ---- How: every src/*/*.cpp compiles to $(BUILD)/*.o (-MMD writes its header dependencies beside it as .d;
# MPI=1's own three to $(BUILD)/mpi/), linked into $(BIN); tests/test_*.cpp add $(OUT)/run_tests,
# tests/bench_*.cpp $(OUT)/run_bench.
$(BIN): $(MAIN_OBJ) $(LIB_OBJ) $(BIN_FROM)
	$(LINK_CXX) -o $@ $(filter %.o,$^) $(LINK)
$(OUT)/run_tests$(EXE): $(TEST_OBJ) $(LIB_OBJ)
	$(LINK_CXX) -o $@ $^ $(LINK)
$(OUT)/run_bench$(EXE): $(BENCH_OBJ) $(LIB_OBJ)
	$(LINK_CXX) -o $@ $^ $(LINK)
$(CORE_BIN): $(CORE_OBJ)
	$(CXX) -o $@ $^ $(LINK)
$(CORE_DIR)/%.o: src/core/%.cpp $(FLAGS_FILE) | $(CORE_DIR)/include/core
	$(CORE_COMPILE) -c $< -o $@
$(CORE_DIR)/include/core:
	@mkdir -p $(dir $@) && ln -sfn $(abspath src/core) $@
$(BUILD)/%.o: src/%.cpp $(FLAGS_FILE) | $(STB_LINK)
	@mkdir -p $(dir $@)
	$(COMPILE) -c $< -o $@
$(BUILD)/mpi/%.o: src/%.cpp $(MPI_FLAGS_FILE)
	@mkdir -p $(dir $@)
	$(MPI_COMPILE) -c $< -o $@
# The chat page, src/serve/page.html, becomes a raw string literal that serve/page.cpp includes (through a
# temporary file of each writer's own: make fuzz's build writes it too).
$(BUILD)/serve/page.o: $(BUILD)/gen/serve_page.inc
$(BUILD)/serve/page.o: COMPILE += -I$(BUILD)/gen
$(BUILD)/gen/serve_page.inc: src/serve/page.html
	@mkdir -p $(dir $@)
	{ printf 'R"PAGE('; cat $<; printf ')PAGE"\n'; } >$@.$$$$ && mv $@.$$$$ $@
$(BUILD)/tests/%.o: tests/%.cpp $(FLAGS_FILE) | $(STB_LINK)
	@mkdir -p $(dir $@)
	$(COMPILE) -c $< -o $@
# ARCH=portable on x86-64: the kernels once more per instruction set, into $(BUILD)/isa_NAME/.
define ISA_RULE
$(BUILD)/isa_$(1)/%.o: src/%.cpp $(FLAGS_FILE) | $(STB_LINK)
	@mkdir -p $$(dir $$@)
	$(COMPILE) $(ISA_FLAGS_$(1)) -DGPT2_ISA=isa_$(1) -c $$< -o $$@
endef
$(foreach i,$(ISAS),$(eval $(call ISA_RULE,$(i))))

# $(FLAGS_FILE) holds the line the objects were compiled with (and $(MPI_FLAGS_FILE) MPI=1's own), and
# $(BIN_FROM) the build that last linked $(BIN): RECORD FILE,TEXT (variable names) rewrites each (by a recipe:
# reading a file here writes nothing, nor does make -n) only when it differs from this make's, so that new flags
# recompile everything and switching builds relinks $(BIN).
quote = '$(subst ','\'',$(1))'
define RECORD
ifneq ($$(file <$$($(1))),$$($(2)))
$$($(1)): FORCE
endif
$$($(1)):
	@mkdir -p $$(dir $$@) && printf '%s\n' $$(call quote,$$($(2))) >$$@
endef
$(eval $(call RECORD,FLAGS_FILE,FLAGS_LINE))
$(eval $(call RECORD,BIN_FROM,OUT))
$(if $(MPI_FLAGS_FILE),$(eval $(call RECORD,MPI_FLAGS_FILE,MPI_COMPILE)))
# Windows builds reach the build machine's stb headers through $(STB_LINK) (src/build.mk), remade when
# STB_DIR changes.
ifneq ($(STB_LINK),)
$(STB_LINK): $(if $(filter $(STB_DIR),$(shell readlink $(STB_LINK) 2>/dev/null)),,FORCE)
	@mkdir -p $(dir $@) && ln -sfn $(STB_DIR) $@
endif

include tests/tests.mk tests/bench.mk tests/fuzz/fuzz.mk
-include $(shell find build -name '*.d' 2>/dev/null)
