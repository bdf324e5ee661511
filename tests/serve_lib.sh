# serve_lib.sh: helpers for the suites that run `gpt2 serve` (sourced after lib.sh): a tiny model of ASCII text
# to serve, servers started on a free loopback port and always killed at the end, node found or a reason to skip.
# Every wait here is bounded: a server that does not come up or answer fails the test, never stalls it.
SERVE_PIDS=()
# The servers started are killed (SIGKILL) however the suite ends: its last line, a failure, or a signal.
serve_kill_all() {
    local pid
    for pid in "${SERVE_PIDS[@]}"; do kill -9 "$pid" 2>/dev/null; done
    for pid in "${SERVE_PIDS[@]}"; do wait "$pid" 2>/dev/null; done
    SERVE_PIDS=()
}
at_exit 'serve_kill_all; rm -rf "$TEST_TMP"'
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

# serve_model DIR: a tiny model (2 layers, 64 channels, a context of 64) into DIR, one step from its random init
# on this repository's READMEs, in a few seconds: greedy decoding gives each prompt its own words (a trained tiny
# model gives every prompt the same most frequent token, which would hide one stream's tokens given to another).
serve_model() {
    local dir=$1
    cat README.md src/README.md tests/README.md | tr -cd '\n -~' >"$TEST_TMP/prose.txt"
    "$GPT2" tokenize "$TEST_TMP/prose.txt" -o "$TEST_TMP/prose" --val-tokens 256 >/dev/null 2>&1 &&
        "$GPT2" train --layers 2 --heads 2 --channels 64 --seq-len 64 -B 4 -T 64 --steps 1 \
            --train "$TEST_TMP/prose_train.bin" --val '' --sample-tokens 0 --out "$dir" >/dev/null 2>&1
}

# serve_start NAME ARGS...: starts `$GPT2 serve ARGS...` in the background (stdout to $TEST_TMP/NAME.out, stderr
# to NAME.err) and waits up to 60 s for its line `serving ... on http://HOST:PORT`; sets SERVE_PID and SERVE_URL
# (http://HOST:PORT). Returns 1 (the reason on stdout) when the server exits or does not say where it listens.
serve_start() {
    local name=$1 i
    shift
    SERVE_PID="" SERVE_URL=""
    "$GPT2" serve "$@" >"$TEST_TMP/$name.out" 2>"$TEST_TMP/$name.err" &
    SERVE_PID=$!
    SERVE_PIDS+=("$SERVE_PID")
    for ((i = 0; i < 600; i++)); do
        SERVE_URL=$(grep -o 'on http://[0-9a-z.]*:[0-9]*' "$TEST_TMP/$name.out" 2>/dev/null | head -1 | cut -c4-)
        [ -n "$SERVE_URL" ] && return 0
        kill -0 "$SERVE_PID" 2>/dev/null || break
        sleep 0.1
    done
    echo "the server $name did not say where it listens: $(tail -3 "$TEST_TMP/$name.err")"
    return 1
}

# serve_stop PID [SIGNAL]: sends SIGNAL (TERM unless given) and waits up to 20 s; returns the exit code (124 and a
# SIGKILL when it did not stop).
serve_stop() {
    kill -"${2:-TERM}" "$1" 2>/dev/null
    wait_bounded "$1" 20
}

# rss_kib PID: the process's resident memory in KiB, from /proc/PID/status.
rss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }

# node_missing [PACKAGE]: prints why tests/node cannot run here (node not found, or PACKAGE not installed in
# tests/node/node_modules), or nothing when it can. A suite skips its node-driven cases with this reason.
node_missing() {
    command -v node >/dev/null || { echo "node not found: install Debian's nodejs (bash scripts/install_deps.sh test)"; return; }
    [ -z "${1:-}" ] || [ -f "tests/node/node_modules/$1/package.json" ] ||
        echo "npm package $1 missing from tests/node/node_modules: run \`make node-deps\` (npm ci in tests/node)"
}

# node_checks NAME CMD...: runs a node script that prints one line per check, `ok WHAT` or `FAIL WHAT`, with
# indented detail lines after a failure; each becomes this suite's pass or fail, named `NAME: WHAT` (WHAT alone
# when NAME is ""). A script that ends non-zero,
# or prints no check at all, is one more failure (its last lines shown).
node_checks() {
    local name=$1 line n=0 prefix=${1:+$1: }
    shift
    "$@" >"$TEST_TMP/node.out" 2>&1
    local rc=$?
    while IFS= read -r line; do
        case $line in
            "ok "*) pass "$prefix${line#ok }"; n=$((n + 1)) ;;
            "FAIL "*) fail "$prefix${line#FAIL }"; n=$((n + 1)) ;;
            "skip "*) skip "$prefix${line#skip }" ;;
            "    "*) echo "$line" ;;
        esac
    done <"$TEST_TMP/node.out"
    if [ $rc -ne 0 ] || [ $n -eq 0 ]; then
        fail "${name:-$*}: the script ended with exit $rc after $n checks"
        tail -15 "$TEST_TMP/node.out" | sed 's/^/    /'
    fi
}
