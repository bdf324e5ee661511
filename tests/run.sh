#!/usr/bin/env bash
# run.sh: runs test suites and prints the total `N passed, N failed`; non-zero exit on any failure.
#   make test:     tests/run.sh --unit build/.../run_tests 'tests/cli_*.sh'   (no Python, no network)
#   make test-ref: tests/run.sh 'tests/ref_*.sh'   (regenerates references with PyTorch / Python)
# Each suite must end with its own `N passed, N failed` line; a suite without one counts as a failure.
cd "$(dirname "$0")/.."
total_passed=0
total_failed=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT

run_suite() {
    local name=$1; shift
    echo "== $name"
    "$@" 2>&1 | tee "$log"
    local rc=${PIPESTATUS[0]} line
    line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -1)
    if [ -z "$line" ]; then
        echo "FAIL $name: no summary line (exit $rc)"
        total_failed=$((total_failed + 1))
        return
    fi
    local p f
    p=$(echo "$line" | cut -d' ' -f1)
    f=$(echo "$line" | cut -d' ' -f3)
    total_passed=$((total_passed + p))
    total_failed=$((total_failed + f))
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
        echo "FAIL $name: exit $rc despite no failed test"
        total_failed=$((total_failed + 1))
    fi
}

if [ "${1:-}" = "--unit" ]; then
    run_suite unit "$2"
    shift 2
fi
for script in $1; do
    [ -e "$script" ] || continue
    run_suite "$script" bash "$script"
done
echo "$total_passed passed, $total_failed failed"
[ "$total_failed" -eq 0 ]
