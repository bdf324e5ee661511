#!/usr/bin/env bash
# run.sh DIR SECONDS TARGET...: runs libFuzzer targets built into DIR (make fuzz). For each target it first
# replays every file in tests/fuzz/regressions/<target>/ once (any crash fails), then fuzzes for SECONDS
# from DIR/corpus/<target>, seeded with tests/fuzz/seeds/<target>/. A new crasher (crash-, leak-, timeout-
# or oom- file) is copied into tests/fuzz/regressions/<target>/ so every later run replays it; commit it
# with the fix. Prints executions and crashes per target and `N passed, N failed` (a target passes when it
# ran clean); non-zero exit on any crash.
# Targets run as many at a time as there are CPUs (FUZZ_JOBS), each one process fuzzing for its own SECONDS.
# Memory is checked in both: one allocation past 256 MB, or 1 GB resident, is a crash (an oom- file), so an
# input whose counts claim more than its bytes can hold fails here, not only on the machine it exhausts.
set -u
limits=(-rss_limit_mb=1024 -malloc_limit_mb=256)
cd "$(dirname "$0")/../.."
dir=$1 seconds=$2
shift 2
jobs=${FUZZ_JOBS:-$(nproc 2>/dev/null || getconf _NPROCESSORS_ONLN 2>/dev/null)}
[[ $jobs =~ ^[1-9][0-9]*$ ]] || jobs=1
# stop: ends the fuzz_one jobs and the fuzzers they run, so that no fuzzer outlives a run stopped by a signal,
# which then exits before any further batch. Each job is stopped first, so that it starts no other child between
# its child's end and its own.
stop() {
    local j
    for j in $(jobs -p); do
        kill -STOP "$j" 2>/dev/null
        pkill -P "$j" 2>/dev/null
        kill "$j" 2>/dev/null
        kill -CONT "$j" 2>/dev/null
    done
}
trap stop EXIT
trap 'stop; exit 130' INT
trap 'stop; exit 143' TERM

# fuzz_one TARGET: replays and fuzzes one target; prints its lines, and writes its result (pass or fail) to
# $dir/logs/TARGET.result.
fuzz_one() {
    local t=$1
    local bin=$dir/fuzz_$t reg=tests/fuzz/regressions/$t corpus=$dir/corpus/$t art=$dir/artifacts/$t
    local log=$dir/logs/$t.log result=$dir/logs/$t.result
    mkdir -p "$corpus" "$art"
    echo fail >"$result"
    local replayed=0
    if compgen -G "$reg/*" >/dev/null; then
        replayed=$(find "$reg" -type f | wc -l)
        if ! "$bin" -timeout=10 "${limits[@]}" $(find "$reg" -type f | sort) >"$log" 2>&1; then
            echo "FAIL fuzz_$t: a regression input in $reg crashes again; see $log"
            grep -E 'ERROR|runtime error|Running:|out-of-memory' "$log" | tail -5
            return
        fi
    fi
    rm -f "$art"/*  # only this run's crashers count
    local seeds=()
    [ -d "tests/fuzz/seeds/$t" ] && seeds=("tests/fuzz/seeds/$t")
    "$bin" -max_total_time="$seconds" -timeout=10 "${limits[@]}" -print_final_stats=1 \
        -artifact_prefix="$art/" "$corpus" "${seeds[@]}" >"$log" 2>&1
    local rc=$?
    local execs=$(grep -E '^stat::number_of_executed_units' "$log" | awk '{print $2}' | tail -1)
    local crashes=0 f
    for f in $(find "$art" -type f | sort); do
        [ -e "$reg/$(basename "$f")" ] && continue
        mkdir -p "$reg"
        cp "$f" "$reg/"
        crashes=$((crashes + 1))
        echo "new crasher for fuzz_$t: $reg/$(basename "$f")"
    done
    if [ "$crashes" -gt 0 ]; then
        grep -E 'ERROR|runtime error|SUMMARY|out-of-memory' "$log" | head -5
    elif [ "$rc" -ne 0 ]; then
        echo "FAIL fuzz_$t: exit $rc without a crash file; see $log"
        tail -3 "$log"
    fi
    echo "fuzz_$t: ${execs:-?} executions in ${seconds}s, $replayed regression inputs replayed, $crashes crashes (log $log)"
    [ "$crashes" -eq 0 ] && [ "$rc" -eq 0 ] && echo pass >"$result"
}

# $jobs targets at a time, each one's lines printed together when the batch ends
targets=("$@")
mkdir -p "$dir/logs"
for t in "${targets[@]}"; do rm -f "$dir/logs/$t.result"; done  # only this run's results count
for ((i = 0; i < ${#targets[@]}; i += jobs)); do
    batch=("${targets[@]:i:jobs}")
    for t in "${batch[@]}"; do fuzz_one "$t" >"$dir/logs/$t.lines" 2>&1 & done
    wait
    for t in "${batch[@]}"; do cat "$dir/logs/$t.lines"; done
done
passed=0 failed=0
for t in "${targets[@]}"; do
    if [ "$(cat "$dir/logs/$t.result" 2>/dev/null)" = pass ]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
