#!/usr/bin/env bash
# check.sh (make check): every test stage in turn, then the grand total `N passed, N failed`:
#   make test (no Python), make test-ref (PyTorch references, 124M geometry), make test SAN=1
#   (AddressSanitizer + UBSan build), make fuzz FUZZ_SECONDS=$FUZZ_SECONDS (libFuzzer smoke, 20 s each).
# Needs what .ci/run installs. Exits non-zero if any stage fails.
cd "$(dirname "$0")/.."
FUZZ_SECONDS=${FUZZ_SECONDS:-20}
total_passed=0
total_failed=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT
stage() {
    echo "==== $*"
    "$@" 2>&1 | tee "$log"
    local rc=${PIPESTATUS[0]} line
    line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -1)
    if [ -z "$line" ]; then
        echo "FAIL $*: no summary line (exit $rc)"
        total_failed=$((total_failed + 1))
        return
    fi
    total_passed=$((total_passed + $(echo "$line" | cut -d' ' -f1)))
    total_failed=$((total_failed + $(echo "$line" | cut -d' ' -f3)))
    if [ "$rc" -ne 0 ] && [ "$(echo "$line" | cut -d' ' -f3)" -eq 0 ]; then
        echo "FAIL $*: exit $rc"
        total_failed=$((total_failed + 1))
    fi
}
stage make -s test
stage make -s test-ref
stage make -s test SAN=1
stage make -s fuzz FUZZ_SECONDS="$FUZZ_SECONDS"
echo "$total_passed passed, $total_failed failed"
[ "$total_failed" -eq 0 ]
