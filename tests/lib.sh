# lib.sh: helpers for the shell-level tests (sourced). Each script records results with pass/fail and
# ends with `summary`, which prints `N passed, N failed` and exits non-zero on any failure.
# Scripts run from the repository root and call the binary as "$GPT2" (./gpt2 unless the Makefile points
# it at another build, e.g. the sanitizer one).
set -u
GPT2=${GPT2:-./gpt2}
TESTS_PASSED=0
TESTS_FAILED=0
TEST_TMP=$(mktemp -d)
trap 'rm -rf "$TEST_TMP"' EXIT

pass() { TESTS_PASSED=$((TESTS_PASSED + 1)); echo "ok   $1"; }
fail() { TESTS_FAILED=$((TESTS_FAILED + 1)); echo "FAIL $1"; }

# check NAME CMD...: passes when CMD exits 0.
check() {
    local name=$1; shift
    if "$@" >"$TEST_TMP/out" 2>&1; then pass "$name"; else fail "$name"; sed 's/^/    /' "$TEST_TMP/out" | tail -20; fi
}

# check_error NAME PATTERN CMD...: passes when CMD exits 1 with exactly one `error:` line matching PATTERN
# on stderr (a crash, a signal or a silent success fails).
check_error() {
    local name=$1 pattern=$2; shift 2
    "$@" >"$TEST_TMP/out" 2>"$TEST_TMP/err"
    local rc=$?
    if [ $rc -eq 1 ] && [ "$(grep -c '^error: ' "$TEST_TMP/err")" -eq 1 ] && grep -q -- "$pattern" "$TEST_TMP/err"; then
        pass "$name"
    else
        fail "$name (exit $rc, wanted 1 and an error matching '$pattern')"; sed 's/^/    /' "$TEST_TMP/err" | tail -5
    fi
}

summary() {
    echo "$TESTS_PASSED passed, $TESTS_FAILED failed"
    [ "$TESTS_FAILED" -eq 0 ]
}
