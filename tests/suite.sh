# suite.sh: sourced by run.sh and check.sh. run_suite NAME CMD... runs one suite under a time bound, echoes
# its output and its time, and adds its closing `N passed, N failed[, N skipped]` line to the totals (a suite
# without one, one that exits non-zero while reporting no failure, or one still running after $suite_limit
# seconds counts as a failure); suite_total prints the grand total and returns non-zero on any failure.
# The bound makes a stalled suite a failure CI can show, never a run cut off with no verdict.
total_passed=0
total_failed=0
total_skipped=0
suite_log=$(mktemp)
trap 'if [ "$BASHPID" = "$$" ]; then rm -f "$suite_log"; fi' EXIT  # the shell's own, not a job's before its exec (lib.sh)

run_suite() {
    local name=$1; shift
    local start=$SECONDS limit=${suite_limit:-1800} rc line p f s
    echo "== $name"
    timeout --kill-after=20 "$limit" "$@" 2>&1 | tee "$suite_log"
    rc=${PIPESTATUS[0]}
    echo "== $name: $((SECONDS - start)) s"
    if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
        echo "FAIL $name: still running after ${limit} s, stopped"
        total_failed=$((total_failed + 1))
        return
    fi
    line=$(grep -E '^[0-9]+ passed, [0-9]+ failed(, [0-9]+ skipped)?$' "$suite_log" | tail -1)
    if [ -z "$line" ]; then
        echo "FAIL $name: no summary line (exit $rc)"
        total_failed=$((total_failed + 1))
        return
    fi
    p=$(echo "$line" | cut -d' ' -f1)
    f=$(echo "$line" | cut -d' ' -f3 | tr -d ,)
    s=$(echo "$line" | sed -n 's/.*, \([0-9]*\) skipped$/\1/p')
    total_skipped=$((total_skipped + ${s:-0}))
    total_passed=$((total_passed + p))
    total_failed=$((total_failed + f))
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
        echo "FAIL $name: exit $rc despite no failed test"
        total_failed=$((total_failed + 1))
    fi
}

suite_total() {
    echo "$total_passed passed, $total_failed failed, $total_skipped skipped"
    [ "$total_failed" -eq 0 ]
}
