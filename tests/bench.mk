# tests/bench.mk (included by the Makefile, where `make bench` is): the benchmarks, which are not tests.
# build/.../run_bench runs the cases tests/bench_main.cpp lists (`run_bench --list`). `make bench` runs the
# headline cases (peak, first step, 124M step fp32 and bf16 at B=4 T=64, decode alone and batched, beside
# llama.cpp and PyTorch with the ratios, serve's latencies; 2.5 minutes on this 2-core machine before
# decode_batch_llama, which adds 2 to 5 minutes at a load average of 2 to 4), `make bench-full` every case, `make
# bench CASES="peak decode_fp32"` the named ones. Each figure is printed as it is measured. PYTHON=... picks
# the PyTorch cases' interpreter; BENCH_TORCH=0 skips them. make test-bench tests the driver (tests/tests.mk).
.PHONY: bench-full portable-bench
PYTHON      ?= /usr/bin/python3
BENCH_TORCH ?= 1
# The cases dispatch_fp32_b4t64 and isa_paths run the dispatching build's run_bench (x86-64 only), which
# bench and bench-full build first.
PORTABLE_BENCH = $(if $(X86_64),$(PORTABLE_DIR)/run_bench,)
BENCH_ENV   = PYTHON='$(PYTHON)' BENCH_TORCH='$(BENCH_TORCH)' PORTABLE_BENCH='$(PORTABLE_BENCH)'

bench-full: $(OUT)/run_bench portable-bench
	$(BENCH_ENV) $(OUT)/run_bench --all

portable-bench:
	$(if $(PORTABLE_BENCH),$(MAKE) -s ARCH=portable $(PLAIN) $(PORTABLE_BENCH),)
