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
# Each stage builds its own variant (tests, MPI, dispatch, cross, clang, sanitizers, fuzzers) with every CPU, as
# README's build does, most of them ahead and at low priority (below). The suites themselves run one at a time.
J=-j${JOBS:-$(nproc)}
SAN_SUITES="tests/cli_checkpoint.sh tests/cli_gguf.sh tests/cli_red_team.sh tests/cli_tokenize.sh tests/cli_trust.sh tests/cli_serve_red_team.sh"

# The later stages' builds, made while the earlier stages' tests run. Tests leave part of the CPU idle (make test
# here: 507 s of wall, 685 s of CPU on 2 cores); these builds take it at the lowest priority (nice 19), one after
# another in the stages' order, from the end of make test's unit tests (thread_tuner_measures_a_busy_process
# needs an idle machine: it runs there, and skips in the stages with a build beside them). Before a stage,
# `built NAME` waits for its build and prints its output (the warnings); the stage's make then finds nothing to
# do, or builds again and shows why if the build ahead failed.
ahead=$(mktemp -d) || exit 1
check_pid=$$
build_ahead() {
    until [ -e "$ahead/unit.done" ]; do kill -0 $check_pid 2>/dev/null || exit; sleep 1; done
    # NAME MAKE-ARGS...: one build, its output in NAME.log, then NAME.done; none once check.sh is gone
    one() {
        kill -0 $check_pid 2>/dev/null || exit
        nice -n 19 make -s $J "${@:2}" >"$ahead/$1.log" 2>&1
        : >"$ahead/$1.done"
    }
    one noomp build-noomp-test
    one portable build-portable
    one arm64 build-arm64
    one windows windows
    one clang build-clang
    one san test-build SAN=1 CLI_SUITES="$SAN_SUITES"
    one fuzz fuzz-build
}
# In a process group of its own (set -m), which the EXIT trap stops whole while it runs. Not a session of its own
# (setsid): the kernel's autogroups share the CPU equally between sessions, whatever their nice values.
set -m
build_ahead </dev/null >/dev/null 2>&1 &
ahead_pgid=$!
set +m
ahead_running() { [ -n "$(jobs -rp)" ]; }  # the only job of this shell
trap 'if [ "$BASHPID" = "$$" ]; then ahead_running && kill -- -$ahead_pgid 2>/dev/null; rm -rf "$ahead" "$suite_log"; fi' EXIT
# built NAME: waits for the build ahead of the next stage, at most $suite_limit s (then stops all building ahead:
# the stages build for themselves).
built() {
    local start=$SECONDS
    while [ ! -e "$ahead/$1.done" ] && ahead_running; do
        if ((SECONDS - start >= suite_limit)); then kill -- -$ahead_pgid 2>/dev/null; break; fi
        sleep 1
    done
    if [ -e "$ahead/$1.done" ]; then
        echo "== waited $((SECONDS - start)) s for the build of the next stage ($1), made ahead"
        cat "$ahead/$1.log"
    else
        echo "== the build of the next stage ($1) was not made ahead (waited $((SECONDS - start)) s): the stage makes it"
    fi
}

UNIT_DONE=$ahead/unit.done run_suite "make test" make -s $J test
: >"$ahead/unit.done"  # even where make test stopped before its unit tests
run_suite "make test-bench" make -s $J test-bench
built noomp
run_suite "make test-ref" make -s $J test-ref
run_suite "make test-mpi" make -s $J test-mpi
built portable
run_suite "make test-portable" make -s $J test-portable
built arm64
run_suite "make test-arm64" make -s $J test-arm64
built windows
run_suite "make test-windows" make -s $J test-windows
# The unit tests run again under clang and the sanitizers as light runs (GPT2_TEST_LIGHT, tests/test.h): make test
# has the largest shapes.
built clang
run_suite "make test-clang" env GPT2_TEST_LIGHT=1 make -s $J test-clang
# Under AddressSanitizer + UBSan (a step costs 10-50 times more): the unit tests and the suites that read what
# a user hands over (checkpoints, GGUF, token and text files, flags, gpt2 serve's requests) or handle signals and
# outputs. The rest of make test runs the same code on fixtures and tiny models (make test, and make fuzz parses
# under ASan). tests/cli_generate.sh is make test's alone (2 minutes here): decoding, sampling and drafting run
# under the sanitizers in the unit tests, and generate's --interactive lines (a NUL, an over-long one) in
# tests/cli_red_team.sh; its prompt files and --draft-model checkpoints do not.
built san
run_suite "make test SAN=1" env GPT2_TEST_LIGHT=1 make -s $J test SAN=1 CLI_SUITES="$SAN_SUITES"
built fuzz
run_suite "make fuzz" make -s $J fuzz FUZZ_SECONDS="$FUZZ_SECONDS"
suite_total
