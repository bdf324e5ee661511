#!/usr/bin/env bash
# run.sh: runs test suites and prints the total `N passed, N failed`; non-zero exit on any failure.
#   make test:     tests/run.sh --unit build/.../run_tests 'tests/cli_*.sh'   (no Python, no network)
#   make test-ref: tests/run.sh 'tests/ref_*.sh'   (regenerates references with PyTorch / Python)
# Each suite must end with its own `N passed, N failed` line (see suite.sh).
cd "$(dirname "$0")/.."
source tests/suite.sh
suite_limit=${SUITE_LIMIT:-1800}  # seconds a suite may take (a stalled one fails)
if [ "${1:-}" = "--unit" ]; then
    run_suite unit "$2"
    [ -z "${UNIT_DONE:-}" ] || : >"$UNIT_DONE"  # tests/check.sh starts its builds ahead then
    shift 2
fi
for script in $1; do
    [ -e "$script" ] || continue
    run_suite "$script" bash "$script"
done
suite_total
