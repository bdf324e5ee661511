#!/usr/bin/env bash
# bench_driver.sh (make test-bench): `make bench`'s driver, run_bench ($RUN_BENCH): tests/README.md's
# Benchmarks section names each of its cases, it runs the cases named and no others, refuses an unknown
# name, and a figure reaches a file (or a pipe) as soon as it is measured, so a run stopped later keeps it.
# Not in make test, which builds no benchmark.
source "$(dirname "$0")/lib.sh"
RUN_BENCH=${RUN_BENCH:-build/omp/run_bench}
if [ ! -x "$RUN_BENCH" ]; then
    fail "run_bench: $RUN_BENCH not built (make test-bench builds it)"; summary; exit
fi
"$RUN_BENCH" --list | cut -d' ' -f1 >$TEST_TMP/cases
sed -n '/^## Benchmarks/,/^## /p' tests/README.md >$TEST_TMP/bench_section
check "run_bench --list names its cases" test "$(wc -l <$TEST_TMP/cases)" -gt 5
# names_all FILE: every case name in $TEST_TMP/cases appears in FILE in backquotes.
names_all() {
    local c missing=0
    for c in $(cat $TEST_TMP/cases); do grep -qF "\`$c\`" "$1" || { echo "missing: $c"; missing=1; }; done
    return $missing
}
check "tests/README.md's Benchmarks section names every case run_bench --list prints" names_all $TEST_TMP/bench_section
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
kill $bench_pid 2>/dev/null; wait_bounded $bench_pid 30 2>/dev/null
check "... and a run stopped then keeps it" grep -q '^peak fp32' $TEST_TMP/streamed
summary
