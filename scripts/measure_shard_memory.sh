#!/usr/bin/env bash
# measure_shard_memory.sh: shows that training memory does not grow with the corpus. Trains the same model
# for 20 steps on tiny shakespeare (one token file), on one shard, and on all of a generated ~1e9-token set
# of 10 shards (about 2 GB, uniform random ids from /dev/urandom), sampling RssAnon and RssFile of
# /proc/PID/status every 0.1 s, and prints each run's peaks. The one-shard run separates what could grow with
# the shard size from what would grow with the corpus (a shard of more than 65,536 windows keeps no window
# order list, so neither should).
# The shards are deleted at the end (also on failure or Ctrl-C). Not part of CI: it needs ~2.2 GB of disk
# and a few minutes. Run from the repository root:
#   GPT2_DATA_DIR=/work/shared/data bash scripts/measure_shard_memory.sh [DIR]   (DIR: where the shards go)
# Every run uses --vocab 65536, so every random uint16 is a valid id and the models are the same.
set -euo pipefail
GPT2=${GPT2:-./gpt2}
DATA=${GPT2_DATA_DIR:-data}
DIR=${1:-$(pwd)/build/shard_memory}
SHARDS=${SHARDS:-10}
SHARD_TOKENS=${SHARD_TOKENS:-100000000}  # llm.c's fineweb.py writes shards of 1e8 tokens
mkdir -p "$DIR"
trap 'rm -rf "$DIR"' EXIT

need_mb=$((SHARDS * SHARD_TOKENS * 2 / 1000000 + 200))
avail_mb=$(df -Pm "$DIR" | awk 'NR == 2 { print $4 }')
df -h "$DIR"
if [ "$avail_mb" -lt "$need_mb" ]; then
    echo "error: not enough disk in $DIR: expected $need_mb MB free, got $avail_mb MB" >&2
    exit 1
fi

# shard PATH N: an llm.c token file of N random uint16 ids
shard() {
    perl -e 'print pack("l<3", 20240520, 1, $ARGV[0]) . ("\0" x 1012)' "$2" >"$1"
    head -c $(($2 * 2)) /dev/urandom >>"$1"
}
t0=$(date +%s)
for i in $(seq 1 "$SHARDS"); do shard "$(printf '%s/rand_train_%06d.bin' "$DIR" "$i")" "$SHARD_TOKENS"; done
echo "generated $SHARDS shards of $SHARD_TOKENS tokens ($(du -sh "$DIR" | cut -f1)) in $(($(date +%s) - t0)) s"
"$GPT2" tokenize --tokenizer "$DATA/gpt2" -o "$DIR/shakespeare" "$DATA/tinyshakespeare.txt" >/dev/null

since() { awk -v a="$(date +%s.%N)" -v b="$1" 'BEGIN { print a - b }'; }
common="--vocab 65536 --steps 20 --val-every 0 --sample-tokens 0"
# run NAME ARGS...: trains, sampling the process; prints peak RssAnon / RssFile (kB), the seconds until the
# first step (opening and validating the data) and the total.
run() {
    local name=$1
    shift
    local log="$DIR/$name.log" start
    start=$(date +%s.%N)
    "$GPT2" train $common "$@" >"$log" 2>&1 &
    local pid=$! anon=0 file=0 first=""
    while kill -0 $pid 2>/dev/null; do
        if read -r a f < <(awk '/^RssAnon/ { a = $2 } /^RssFile/ { f = $2 } END { print a, f }' /proc/$pid/status 2>/dev/null); then
            [ -n "$a" ] && [ "$a" -gt "$anon" ] && anon=$a
            [ -n "$f" ] && [ "$f" -gt "$file" ] && file=$f
        fi
        [ -z "$first" ] && grep -q '^step' "$log" && first=$(since "$start")
        sleep 0.1
    done
    wait $pid || { echo "error: $name run failed:" >&2; tail -3 "$log" >&2; exit 1; }
    printf '%-12s peak RssAnon %8d kB  peak RssFile %8d kB  first step after %5.1f s  total %5.1f s  (%s)\n' \
        "$name" "$anon" "$file" "${first:-0}" "$(since "$start")" "$(grep '^data:' "$log")"
}
run shakespeare --train "$DIR/shakespeare_train.bin"
run one_shard --train "$DIR/rand_train_000001.bin"
run all_shards --train "$DIR/rand_train_*.bin"
