#!/usr/bin/env bash
# check.sh (make check): every test stage in turn, then the grand total `N passed, N failed`:
#   make test (no Python), make test-bench (the benchmarks' driver, run_bench), make test-ref (PyTorch
#   references, 124M geometry), make test-mpi (mpirun -np 2 against one process, with the MPI=1 build),
#   make test-portable (the x86-64 build that picks its kernels at run time, under each kernel set and on
#   emulated older CPUs), make test-arm64 (the aarch64 cross build under qemu-aarch64), make test-windows
#   (the mingw-w64 cross build's unit tests and a tiny train, resume and generate under wine), make
#   test-clang (the unit tests and the numeric suites built by clang++ with libomp), make test SAN=1
#   (AddressSanitizer + UBSan; SAN_SUITES below), make fuzz (libFuzzer, FUZZ_SECONDS=10 per target).
# Needs what .ci/run installs. Exits non-zero if any stage fails.
cd "$(dirname "$0")/.."
source tests/suite.sh
suite_limit=${STAGE_LIMIT:-3600}  # seconds a stage may take; each suite inside one has its own bound (run.sh)
FUZZ_SECONDS=${FUZZ_SECONDS:-10}
# Each stage builds its own variant first (tests, MPI, dispatch, cross, clang, sanitizers, fuzzers): with every
# CPU, as README's build does. The suites themselves run one at a time.
J=-j${JOBS:-$(nproc)}
run_suite "make test" make -s $J test
run_suite "make test-bench" make -s $J test-bench
run_suite "make test-ref" make -s $J test-ref
run_suite "make test-mpi" make -s $J test-mpi
run_suite "make test-portable" make -s $J test-portable
run_suite "make test-arm64" make -s $J test-arm64
run_suite "make test-windows" make -s $J test-windows
# The unit tests run again under clang and the sanitizers as light runs (GPT2_TEST_LIGHT, tests/test.h): make test
# has the largest shapes.
run_suite "make test-clang" env GPT2_TEST_LIGHT=1 make -s $J test-clang
# Under AddressSanitizer + UBSan (a step costs 10-50 times more): the unit tests and the suites that read what
# a user hands over (checkpoints, GGUF, token and text files, flags, gpt2 serve's requests) or handle signals and
# outputs. The rest of make test runs the same code on fixtures and tiny models (make test, and make fuzz parses
# under ASan). tests/cli_generate.sh is make test's alone (2 minutes here): decoding, sampling and drafting run
# under the sanitizers in the unit tests, and generate's --interactive lines (a NUL, an over-long one) in
# tests/cli_red_team.sh; its prompt files and --draft-model checkpoints do not.
SAN_SUITES="tests/cli_checkpoint.sh tests/cli_gguf.sh tests/cli_red_team.sh tests/cli_tokenize.sh tests/cli_trust.sh tests/cli_serve_red_team.sh"
run_suite "make test SAN=1" env GPT2_TEST_LIGHT=1 make -s $J test SAN=1 CLI_SUITES="$SAN_SUITES"
run_suite "make fuzz" make -s $J fuzz FUZZ_SECONDS="$FUZZ_SECONDS"
suite_total
