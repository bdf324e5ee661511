#!/usr/bin/env bash
# cli_build.sh: the Makefile's promises about which binary each build writes, read from `make -n -B` (which
# prints every command and runs none, so nothing is built): `make MPI=1` links its own binary and never
# ./gpt2, with or without SAN=1 or NO_OMP=1, so a later plain `make` cannot keep an MPI binary unknowingly;
# `make test-mpi` tests the binary MPI=1 links; README's mpirun lines run that binary; git ignores it.
# Then `make bench`'s driver, run_bench ($RUN_BENCH, which `make test` builds): README names each of its cases,
# it runs the cases named and no others, refuses an unknown name, and a figure reaches a file (or a pipe) as
# soon as it is measured, so a run stopped later keeps it.
source "$(dirname "$0")/lib.sh"
if ! command -v make >/dev/null; then
    skip "make not found"; summary; exit
fi
# The outer `make test SAN=1` would hand its flags and variables to these makes through MAKEFLAGS and,
# for a variable set on its command line, through the environment.
dry_make() {
    env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u SAN -u DEBUG -u MPI -u NO_OMP -u BIN make -n -B "$@" 2>&1
}
# linked_bin ARGS...: the file the link line of `make ARGS` writes (the -o of the command naming cli/main.o).
linked_bin() { dry_make "$@" | grep '/cli/main\.o ' | grep -v ' -c ' | sed -n 's/.* -o \([^ ]*\) .*/\1/p'; }

plain=$(linked_bin)
check "plain make links ./gpt2" test "$plain" = gpt2
for switches in "" "SAN=1" "NO_OMP=1"; do
    one=$(linked_bin $switches)
    mpi=$(linked_bin MPI=1 $switches)
    check "make MPI=1${switches:+ $switches} links a binary of its own ($mpi), not ./gpt2 nor that of make${switches:+ $switches} ($one)" \
        eval '[ -n "$mpi" ] && [ -n "$one" ] && [ "$mpi" != "$one" ] && [ "$mpi" != gpt2 ] && [ "$mpi" != ./gpt2 ]'
done

mpi=$(linked_bin MPI=1)
tested=$(dry_make test-mpi | sed -n 's/.*GPT2_MPI=\([^ ]*\) .*/\1/p' | head -1)
check "make test-mpi tests the binary make MPI=1 links ($tested against $mpi)" \
    test "${tested#./}" = "$mpi"

grep -E '^mpirun ' README.md >$TEST_TMP/mpirun_lines
check "README shows mpirun lines" test -s $TEST_TMP/mpirun_lines
check "README's mpirun lines each run ./$mpi" \
    eval '! grep -v -- " \./$mpi " $TEST_TMP/mpirun_lines'
check "README shows mpirun with --allow-run-as-root (needed as root)" grep -q -- '--allow-run-as-root' $TEST_TMP/mpirun_lines

if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    check "git ignores ./$mpi" git check-ignore -q "$mpi"
else
    skip "git ignores ./$mpi: not a git checkout"
fi

RUN_BENCH=${RUN_BENCH:-build/omp/run_bench}
if [ ! -x "$RUN_BENCH" ]; then
    skip "run_bench: $RUN_BENCH not built (make build/omp/run_bench)"; summary; exit
fi
"$RUN_BENCH" --list | cut -d' ' -f1 >$TEST_TMP/cases
sed -n '/^## Benchmarks/,/^## /p' README.md >$TEST_TMP/bench_section
check "run_bench --list names its cases" test "$(wc -l <$TEST_TMP/cases)" -gt 5
# names_all FILE: every case name in $TEST_TMP/cases appears in FILE in backquotes.
names_all() {
    local c missing=0
    for c in $(cat $TEST_TMP/cases); do grep -qF "\`$c\`" "$1" || { echo "missing: $c"; missing=1; }; done
    return $missing
}
check "README's Benchmarks section names every case run_bench --list prints" names_all $TEST_TMP/bench_section
check_error "run_bench refuses an unknown case, naming it" "no_such_case" "$RUN_BENCH" peak no_such_case
BENCH_TORCH=0 "$RUN_BENCH" torch_decode peak >$TEST_TMP/picked 2>&1
check "run_bench NAME... runs those cases and no others" \
    eval '[ "$(grep "^== " $TEST_TMP/picked | sort | tr "\n" " ")" = "== peak == torch_decode " ]'
check "... and BENCH_TORCH=0 skips the PyTorch ones" grep -q "skipped (BENCH_TORCH=0)" $TEST_TMP/picked

# The peak takes well under a second and decode_fp32 several; the peak's line must be in the file while
# decode_fp32 still runs (buffered output shows nothing until the process ends). Then the run is stopped.
"$RUN_BENCH" peak decode_fp32 >$TEST_TMP/streamed 2>&1 &
bench_pid=$!
for i in $(seq 1200); do
    grep -q '^peak fp32' $TEST_TMP/streamed && break
    kill -0 $bench_pid 2>/dev/null || break
    sleep 0.1
done
if grep -q '^peak fp32' $TEST_TMP/streamed && kill -0 $bench_pid 2>/dev/null; then
    pass "run_bench writes each figure as it is measured (the peak's line is in the file while the next case runs)"
else
    fail "run_bench writes each figure as it is measured (the peak's line is in the file while the next case runs)"
    sed 's/^/    /' $TEST_TMP/streamed | tail -5
fi
kill $bench_pid 2>/dev/null; wait $bench_pid 2>/dev/null
check "... and a run stopped then keeps it" grep -q '^peak fp32' $TEST_TMP/streamed
summary
