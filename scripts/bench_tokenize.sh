#!/usr/bin/env bash
# bench_tokenize.sh: throughput and peak memory of streamed `gpt2 tokenize` on a generated corpus (default
# 500 MB): tiny shakespeare's paragraphs in random order, each led by a line of random letter-words so the
# tokenizer's piece cache does not see only Shakespeare's vocabulary. It tokenizes the corpus into shards
# with OMP_NUM_THREADS=2 and =1 under /usr/bin/time -v (package `time`), reports MB/s, wall time and peak
# RSS of each, checks the two sets of shards are byte-identical, and deletes everything it made. Not part of
# CI (it takes minutes); run it under the shared lock on a shared machine:
#   flock /tmp/gpt2-build.lock bash scripts/bench_tokenize.sh [MB]
# Environment: GPT2 (binary, ./gpt2), GPT2_DATA_DIR (tokenizer + tinyshakespeare.txt, else data/),
# BENCH_DIR (where the corpus goes; a new directory under $TMPDIR or /tmp).
set -euo pipefail
cd "$(dirname "$0")/.."

MB=${1:-500}
GPT2=${GPT2:-./gpt2}
DATA=${GPT2_DATA_DIR:-data}
SRC=""
for f in "$DATA/tinyshakespeare.txt" "$DATA/tinyshakespeare/input.txt"; do
    if [ -f "$f" ]; then SRC=$f; break; fi
done
[ -n "$SRC" ] || { echo "error: tiny shakespeare not found under $DATA: set GPT2_DATA_DIR or run \`make data\`" >&2; exit 1; }
[ -x "$GPT2" ] || { echo "error: $GPT2 not found: run \`make\`" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "error: /usr/bin/time not found: apt-get install time" >&2; exit 1; }

WORK=$(mktemp -d "${BENCH_DIR:-${TMPDIR:-/tmp}}/bench_tokenize.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
# The corpus plus two sets of shards (2 bytes per token, about one token per 4 bytes of English).
need_kb=$((MB * 1024 * 2))
avail_kb=$(df -Pk "$WORK" | awk 'NR == 2 { print $4 }')
if [ "$avail_kb" -lt "$need_kb" ]; then
    echo "error: not enough space in $WORK: expected $((need_kb / 1024)) MB free, got $((avail_kb / 1024)) MB" >&2
    exit 1
fi

echo "generating a $MB MB corpus from $SRC in $WORK"
perl -e '
    my ($src, $bytes) = @ARGV;
    srand(1234);
    open(my $in, "<", $src) or die "cannot read $src\n";
    local $/ = ""; my @paras = <$in>; close $in;
    my @letters = ("a" .. "z");
    my $written = 0;
    open(my $out, ">", "/dev/stdout") or die;
    while ($written < $bytes) {
        my $p = $paras[int(rand(@paras))];
        my $line = join(" ", map { my $n = 2 + int(rand(9)); join("", map { $letters[int(rand(26))] } 1 .. $n) } 1 .. 6);
        my $doc = ucfirst($line) . ".\n" . $p;
        $doc .= "\n" unless $doc =~ /\n\n$/;
        print $out $doc;
        $written += length($doc);
    }' "$SRC" $((MB * 1000 * 1000)) >"$WORK/corpus.txt"
bytes=$(wc -c <"$WORK/corpus.txt" | tr -d ' ')

# run THREADS: tokenizes the corpus into $WORK/tTHREADS (about 10 shards); sets WALL (s) and RSS (KB).
run() {
    local t=$1
    OMP_NUM_THREADS=$t /usr/bin/time -v -o "$WORK/time$t" "$GPT2" tokenize --split-on-blank-lines \
        "$WORK/corpus.txt" -o "$WORK/t$t/corpus" --shard-tokens $((MB * 25000)) >"$WORK/out$t"
    WALL=$(awk -F': ' '/Elapsed \(wall clock\)/ {
        n = split($2, p, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + p[i]; print s }' "$WORK/time$t")
    RSS=$(awk -F': ' '/Maximum resident set size/ { print $2 }' "$WORK/time$t")
    cat "$WORK/out$t"
}
report() {
    awk -v t="$1" -v b="$bytes" -v w="$WALL" -v r="$RSS" 'BEGIN {
        printf "%d thread%s: %.1f s, %.1f MB/s, peak RSS %.1f MB\n", t, t == 1 ? "" : "s", w, b / 1e6 / w, r / 1024 }'
}

run 2
report 2 | tee "$WORK/report2"
run 1
report 1 | tee "$WORK/report1"

same=yes
for f in "$WORK"/t1/*; do
    cmp -s "$f" "$WORK/t2/$(basename "$f")" || same=no
done
[ "$(ls "$WORK/t1")" = "$(ls "$WORK/t2")" ] || same=no
echo
echo "corpus: $bytes bytes; $(ls "$WORK/t2" | wc -l | tr -d ' ') shards"
cat "$WORK/report2" "$WORK/report1"
echo "ids identical for 1 and 2 threads: $same"
echo "load average during the run (other processes share the cores): $(cut -d' ' -f1-3 /proc/loadavg)"
[ "$same" = yes ]
