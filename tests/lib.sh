# lib.sh: helpers for the shell-level tests (sourced). Each script records results with pass/fail and
# ends with `summary`, which prints `N passed, N failed` and exits non-zero on any failure.
# Scripts run from the repository root and call the binary as "$GPT2" (./gpt2 unless the Makefile points
# it at another build, e.g. the sanitizer one).
set -u
GPT2=${GPT2:-./gpt2}
TESTS_PASSED=0
TESTS_FAILED=0
TESTS_SKIPPED=0
TEST_TMP=$(mktemp -d)
# at_exit CMDS: the suite's EXIT trap, run by the suite's own shell only. A background job is a copy of the shell
# until its exec, EXIT trap included: a signal reaching it there (a test that kills a job it has just started) would
# run CMDS in the copy, removing the temporary directory under the suite that goes on using it.
at_exit() { trap "if [ \"\$BASHPID\" = \"\$\$\" ]; then"$'\n'"$1"$'\n'"fi" EXIT; }
at_exit 'rm -rf "$TEST_TMP"'

pass() { TESTS_PASSED=$((TESTS_PASSED + 1)); echo "ok   $1"; }
fail() { TESTS_FAILED=$((TESTS_FAILED + 1)); echo "FAIL $1"; }
# skip NAME: REASON: a test that cannot run here (counted as skipped, never as passed).
skip() { TESTS_SKIPPED=$((TESTS_SKIPPED + 1)); echo "skip $1"; }
# need_tokenizer: sets TOK_DIR to the tokenizer files ($GPT2_DATA_DIR/gpt2, else data/gpt2); a suite that needs
# them and finds none fails and ends there.
need_tokenizer() {
    if [ -n "${GPT2_DATA_DIR:-}" ]; then TOK_DIR=$GPT2_DATA_DIR/gpt2; else TOK_DIR=data/gpt2; fi
    if [ ! -f "$TOK_DIR/encoder.json" ] && [ ! -f "$TOK_DIR/vocab.json" ]; then
        fail "tokenizer files not found in $TOK_DIR: set GPT2_DATA_DIR or run \`make data\`"
        summary
        exit 1
    fi
}
# need_shakespeare WHAT: sets TRAIN and VAL to make data's tiny shakespeare; without them the suite's WHAT is
# skipped (counted) and the suite ends there.
need_shakespeare() {
    TRAIN=data/tinyshakespeare/train.bin VAL=data/tinyshakespeare/val.bin
    if [ ! -f $TRAIN ] || [ ! -f $VAL ]; then
        skip "$1: $TRAIN or $VAL not found (make data)"
        summary; exit
    fi
}
# llama_oracle_unusable: prints why tests/node's llama.cpp oracle (node-llama-cpp) cannot run here, or nothing
# when it can: node-llama-cpp 3.22 needs Node >= 20, newer than Debian 12's Node 18, so on such a machine its
# cases are skipped with this reason and the rest of the suite runs. A missing npm package is not a reason to
# skip (`make node-deps` installs it): the suites fail on that.
llama_oracle_unusable() {
    local major
    command -v node >/dev/null || { echo "node not found"; return; }
    major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null) || { echo "node does not run here"; return; }
    [ "$major" -ge 20 ] || echo "llama.cpp's oracle (node-llama-cpp 3.22) needs Node >= 20; this Node is $(node --version)"
}
# oracle_check NAME CMD...: check NAME CMD... where the llama.cpp oracle runs; elsewhere a skip with the reason.
oracle_check() {
    local why
    why=$(llama_oracle_unusable)
    if [ -n "$why" ]; then skip "$1: $why"; return; fi
    check "$@"
}
# under_asan: "$GPT2" is an AddressSanitizer build (make test SAN=1), where address-space limits cannot hold
# and a training step costs about 50 times more.
under_asan() { ldd "$GPT2" 2>/dev/null | grep -q libasan; }

# wait_bounded PID [SECONDS]: waits for the background job PID, at most SECONDS (60 unless given), and returns
# its exit code; a job still running then is killed (SIGKILL) and 124 returned, so a test that would hang
# fails instead of stalling the suite.
wait_bounded() {
    local pid=$1 limit=${2:-60} i
    for ((i = 0; i < limit * 10; i++)); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
        echo "    (pid $pid still running after ${limit}s: killed)"
        kill -9 "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
        return 124
    fi
    wait "$pid"
}
# hup_under_nohup LOG CMD...: runs CMD in the background with SIGHUP ignored, as nohup starts it (output to
# LOG), sends it a SIGHUP once LOG shows a step line, and returns its exit code (wait_bounded, 300 s).
hup_under_nohup() {
    local log=$1 pid i
    shift
    rm -f "$log"  # an older log's step line would send the signal before the trap
    (trap '' HUP; exec "$@") >"$log" 2>&1 &
    pid=$!
    for ((i = 0; i < 200; i++)); do grep -qs '^step' "$log" && break; sleep 0.1; done
    kill -HUP $pid 2>/dev/null
    wait_bounded $pid 300
}

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

# mark_staging DIR: puts gpt2's staging marker in DIR, as a save does before it swaps (the marker holds this
# text, so a user's file of that name is not taken for it).
mark_staging() { printf 'gpt2.cpp staging directory\n' >"$1/.gpt2-staging"; }

# fixture_text N: the valid-UTF-8 tokenizer fixtures (tests/fixtures/tokenizer) N times over, each followed by
# a blank line, on stdout: a text of known content for the tokenize tests.
fixture_text() {
    local i name names
    mapfile -t names <tests/fixtures/tokenizer/cases.txt
    for i in $(seq "$1"); do
        for name in "${names[@]}"; do
            case $name in empty | invalid_*) continue ;; esac
            cat "tests/fixtures/tokenizer/$name.in"
            printf '\n\n'
        done
    done
}

# repeat_tokens FILE K: llm.c's token file FILE with its tokens K times over (the header's count to match), on
# stdout: a token file as long as a test needs.
repeat_tokens() {
    perl -e 'my ($f, $k) = @ARGV; open(my $h, "<:raw", $f) or die; local $/; my $d = <$h>; my $p = substr($d, 1024);
        print pack("l<3", 20240520, 1, length($p) / 2 * $k) . substr($d, 12, 1012) . ($p x $k)' "$1" "$2"
}

# log_losses LOG: the train and val losses a --log file holds, one per line.
log_losses() { grep -o '"[a-z_]*loss":[-0-9.enan]*' "$1" | cut -d: -f2; }
# val_loss OUT: the last "val loss N" train printed to OUT; acts OUT: the activations' MiB of its "memory:" line.
val_loss() { grep -o 'val loss [0-9.]*' "$1" | tail -1 | cut -d' ' -f3; }
acts() { grep -o 'activations [0-9]* MiB' "$1" | grep -o '[0-9]*'; }
# rel_close A B: two files of numbers agree line by line to 1e-5 (or $REL_TOL): max |a - b| / max |b|
# (printed) <= the tolerance.
rel_close() {
    ! grep -qi nan "$1" "$2" || { echo "NaN in $1 or $2"; return 1; }
    paste "$1" "$2" | awk -v tol="${REL_TOL:-1e-5}" '{ d = $1 - $2; if (d < 0) d = -d; if (d > md) md = d; m = $2 < 0 ? -$2 : $2;
        if (m > mr) mr = m; n++ } END { printf "%d values, max |a - b| / max |b| = %.3g\n", n, md / mr; exit !(n > 0 && md / mr <= tol) }'
}
# logs_close LOG_A LOG_B [MIN]: the two logs hold as many losses, MIN (default 20) or more, and they agree as
# rel_close says.
logs_close() {
    log_losses "$1" >"$TEST_TMP/losses_a"
    log_losses "$2" >"$TEST_TMP/losses_b"
    local n=$(wc -l <"$TEST_TMP/losses_a")
    [ "$n" -ge "${3:-20}" ] && [ "$n" = "$(wc -l <"$TEST_TMP/losses_b")" ] || { echo "$n losses against $(wc -l <"$TEST_TMP/losses_b")"; return 1; }
    rel_close "$TEST_TMP/losses_a" "$TEST_TMP/losses_b"
}

summary() {
    echo "$TESTS_PASSED passed, $TESTS_FAILED failed, $TESTS_SKIPPED skipped"
    [ "$TESTS_FAILED" -eq 0 ]
}

# st_meta FILE KEY VALUE: sets string metadata KEY of a safetensors FILE to VALUE (__delete__ removes the
# entry), rewriting the header length; st_fill FILE TENSOR BYTE: overwrites a tensor's data with BYTE.
# Plain perl (perl-base is in every Debian), so the shell tests need no Python.
st_meta() {
    perl -e 'my ($f, $k, $v) = @ARGV; open(my $h, "+<:raw", $f) or die; local $/; my $d = <$h>;
        my $n = unpack("Q<", substr($d, 0, 8)); my $j = substr($d, 8, $n); my $rest = substr($d, 8 + $n);
        $j =~ s/\s+$//;
        if ($v eq "__delete__") { $j =~ s/"\Q$k\E":"(?:[^"\\]|\\.)*",?//; $j =~ s/,\}/}/; }
        else { $j =~ s/"\Q$k\E":"(?:[^"\\]|\\.)*"/"$k":"$v"/ or die "no key $k\n"; }
        $j .= " " x ((8 - length($j) % 8) % 8);
        seek($h, 0, 0); truncate($h, 0); print $h pack("Q<", length($j)) . $j . $rest;' "$@"
}
st_fill() {
    perl -e 'my ($f, $t, $b) = @ARGV; open(my $h, "+<:raw", $f) or die; local $/; my $d = <$h>;
        my $n = unpack("Q<", substr($d, 0, 8)); my $j = substr($d, 8, $n);
        $j =~ /"\Q$t\E":\{[^}]*"data_offsets":\[(\d+),(\d+)\]/ or die "no tensor $t\n";
        substr($d, 8 + $n + $1, $2 - $1) = chr(hex($b)) x ($2 - $1);
        seek($h, 0, 0); print $h $d;' "$@"
}
# st_empty FILE TENSOR: makes TENSOR shape [0], removing its bytes and moving the later tensors down, so the
# file stays well-formed.
st_empty() {
    perl -e 'my ($f, $t) = @ARGV; open(my $h, "+<:raw", $f) or die; local $/; my $d = <$h>;
        my $n = unpack("Q<", substr($d, 0, 8)); my $j = substr($d, 8, $n); my $data = substr($d, 8 + $n);
        $j =~ /"\Q$t\E":\{"dtype":"\w+","shape":\[[\d,]*\],"data_offsets":\[(\d+),(\d+)\]/ or die "no tensor $t\n";
        my ($b, $e) = ($1, $2); my $cut = $e - $b;
        $j =~ s/("\Q$t\E":\{"dtype":"\w+","shape":)\[[\d,]*\](,"data_offsets":)\[\d+,\d+\]/$1\[0\]$2\[$b,$b\]/;
        $j =~ s/"data_offsets":\[(\d+),(\d+)\]/q{"data_offsets":[} . ($1 > $b ? $1 - $cut : $1) . q{,} . ($2 > $b ? $2 - $cut : $2) . q{]}/ge;
        substr($data, $b, $cut) = ""; $j =~ s/\s+$//; $j .= " " x ((8 - length($j) % 8) % 8);
        seek($h, 0, 0); truncate($h, 0); print $h pack("Q<", length($j)) . $j . $data;' "$@"
}
