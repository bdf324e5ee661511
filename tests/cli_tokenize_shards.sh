#!/usr/bin/env bash
# cli_tokenize_shards.sh: streamed `gpt2 tokenize`: parts cut smaller than a document give the committed
# (tiktoken's) fixture ids, llm.c-named shards of exactly --shard-tokens (first one val) whose tokens
# concatenate to the whole input's, 1 and 2 threads writing the same bytes, directory, stdin and JSONL inputs
# and their errors, and output safety (foreign files kept, no half-written shard after an error or SIGTERM,
# stale shards of a longer run removed). Needs "$GPT2" and the tokenizer files; no Python.
source "$(dirname "$0")/lib.sh"

FIX=tests/fixtures/tokenizer
need_tokenizer
T=$TEST_TMP
EOT=50256

# Every fixture cut into parts of 1 and 7 bytes (--chunk-bytes) still gives its expected ids.
mapfile -t cases <"$FIX/cases.txt"
chunked_ids() {
    local chunk=$1 name
    for name in "${cases[@]}"; do
        [ "$name" = empty ] && continue
        "$GPT2" tokenize --chunk-bytes $chunk --ids "$FIX/$name.in" >"$T/ids" || return 1
        cmp -s "$T/ids" "$FIX/$name.ids" || { echo "fixture $name differs with $chunk-byte parts"; return 1; }
    done
}
check "every fixture's ids with 1-byte parts" chunked_ids 1
check "every fixture's ids with 7-byte parts" chunked_ids 7

# payload FILE...: the tokens of token files, in the order given, one line space-separated.
payload() {
    local f
    for f in "$@"; do tail -c +1025 "$f"; done | od -An -t u2 -v | tr -s ' \n' ' ' | sed 's/^ //; s/ $//'
}
# header_is FILE COUNT: llm.c header (magic, version, count) and size 1024 + 2 * COUNT.
header_is() {
    local file=$1 count=$2
    [ -f "$file" ] || { echo "missing $file"; return 1; }
    local header size
    header=$(od -An -t d4 -N 12 "$file" | tr -s ' ' | sed 's/^ //')
    size=$(wc -c <"$file" | tr -d ' ')
    echo "$file: header '$header', $size bytes"
    [ "$header" = "20240520 1 $count" ] && [ "$size" -eq $((1024 + 2 * count)) ]
}

# shakespeare.in is one document: <|endoftext|> and its 115 ids = 116 tokens = 3 x 30 + 26.
want="$EOT $(cat "$FIX/shakespeare.ids")"
n=$(echo "$want" | wc -w | tr -d ' ')
check "--shard-tokens 30 writes shards" \
    "$GPT2" tokenize --chunk-bytes 40 "$FIX/shakespeare.in" -o "$T/sh/shk" --shard-tokens 30
check "first shard shk_val_000000.bin holds 30 tokens" header_is "$T/sh/shk_val_000000.bin" 30
check "shk_train_000001.bin holds 30 tokens" header_is "$T/sh/shk_train_000001.bin" 30
check "shk_train_000002.bin holds 30 tokens" header_is "$T/sh/shk_train_000002.bin" 30
check "last shard shk_train_000003.bin holds the rest" header_is "$T/sh/shk_train_000003.bin" $((n - 90))
only_four() { [ "$(ls "$T/sh")" = "$(printf 'shk_train_000001.bin\nshk_train_000002.bin\nshk_train_000003.bin\nshk_val_000000.bin')" ]; }
check "no other file in the output directory" only_four
shards=("$T/sh/shk_val_000000.bin" "$T/sh/shk_train_00000"{1,2,3}.bin)
concat_equal() { [ "$(payload "${shards[@]}")" = "$want" ]; }
check "shard tokens concatenate to <|endoftext|> + the fixture's ids" concat_equal
exact_fit() {
    "$GPT2" tokenize "$FIX/shakespeare.in" -o "$T/fit/" --shard-tokens $((n / 2)) >/dev/null || return 1
    header_is "$T/fit/val_000000.bin" $((n / 2)) && header_is "$T/fit/train_000001.bin" $((n / 2)) &&
        [ ! -e "$T/fit/train_000002.bin" ]
}
check "-o DIR/ with the input filling two shards exactly: DIR/val_000000.bin, DIR/train_000001.bin" exact_fit

# A bigger text (all valid-UTF-8 fixtures, 20 times), cut into 64-byte parts over many batches: 1 and 2
# threads write the same bytes, and the same ids as --ids in one part per section.
fixture_text 20 >"$T/big.txt"
threads_equal() {
    local t
    for t in 1 2; do
        OMP_NUM_THREADS=$t "$GPT2" tokenize --chunk-bytes 64 --split-on-blank-lines "$T/big.txt" \
            -o "$T/thr$t/big" --shard-tokens 5000 >/dev/null || return 1
    done
    ls "$T/thr1"
    [ "$(ls "$T/thr1")" = "$(ls "$T/thr2")" ] && [ "$(ls "$T/thr1" | wc -l)" -ge 3 ] || return 1
    for f in "$T/thr1"/*; do cmp "$f" "$T/thr2/$(basename "$f")" || return 1; done
}
check "OMP_NUM_THREADS=1 and 2 write identical shards" threads_equal
big_ids_equal() {
    "$GPT2" tokenize --ids --split-on-blank-lines "$T/big.txt" >"$T/big.ids" || return 1
    [ "$(payload "$T/thr2/big_val_000000.bin" "$T/thr2"/big_train_*.bin)" = "$(cat "$T/big.ids")" ]
}
check "the shards hold the ids of --ids --split-on-blank-lines" big_ids_equal

stdin_equal() {
    "$GPT2" tokenize - -o "$T/stdin/shk" --shard-tokens 30 <"$FIX/shakespeare.in" >/dev/null || return 1
    for k in val_000000 train_000001 train_000002 train_000003; do
        cmp "$T/stdin/shk_$k.bin" "$T/sh/shk_$k.bin" || return 1
    done
}
check "stdin (-) writes the same shards as the file" stdin_equal

# A directory: its regular files sorted by name, one document each; dot files and subdirectories skipped.
mkdir -p "$T/dir/sub" "$T/dirout"
cp "$FIX/greek.in" "$T/dir/b.txt"
cp "$FIX/cyrillic.in" "$T/dir/a.txt"
cp "$FIX/emoji.in" "$T/dir/.hidden"
cp "$FIX/emoji.in" "$T/dir/sub/c.txt"
dir_ids() {
    "$GPT2" tokenize --ids "$T/dir" >"$T/dir.ids" || return 1
    [ "$(cat "$T/dir.ids")" = "$EOT $(cat "$FIX/cyrillic.ids") $EOT $(cat "$FIX/greek.ids")" ]
}
check "directory: files sorted by name, <|endoftext|> before each" dir_ids
dir_shards() {
    "$GPT2" tokenize "$T/dir" -o "$T/dirout/d" --shard-tokens 10 >/dev/null || return 1
    [ "$(payload "$T/dirout/d_val_000000.bin" "$T/dirout"/d_train_*.bin)" = "$(cat "$T/dir.ids")" ]
}
check "directory with -o writes shards of its documents" dir_shards
check_error "empty directory" "no input files in directory ($T/dir/sub/x)" \
    bash -c "mkdir -p '$T/dir/sub/x' && '$GPT2' tokenize --ids '$T/dir/sub/x'"

# JSONL: the field's string is one document; other fields, escapes and blank lines are fine.
json_string() {
    perl -0777 -ne 's/\\/\\\\/g; s/"/\\"/g; s/\n/\\n/g; s/\r/\\r/g; s/\t/\\t/g;
        s/([\x00-\x1f])/sprintf("\\u%04x", ord $1)/ge; print "\"$_\""' "$1"
}
{
    echo "{\"id\": 1, \"text\": $(json_string "$FIX/shakespeare.in"), \"url\": \"x\"}"
    echo
    echo "{\"text\": $(json_string "$FIX/greek.in")}"
    echo "{\"meta\": {\"text\": 5}, \"text\": $(json_string "$FIX/cjk.in")}"
} >"$T/docs.jsonl"
jsonl_want="$EOT $(cat "$FIX/shakespeare.ids") $EOT $(cat "$FIX/greek.ids") $EOT $(cat "$FIX/cjk.ids")"
jsonl_ids() {
    "$GPT2" tokenize --chunk-bytes 16 --ids --jsonl-field text "$T/docs.jsonl" >"$T/jsonl.ids" || return 1
    [ "$(cat "$T/jsonl.ids")" = "$jsonl_want" ]
}
check "--jsonl-field text: <|endoftext|> + each record's ids" jsonl_ids
jsonl_escape() {
    printf '{"text": "caf\\u00e9 \\"x\\"\\n"}\n' >"$T/esc.jsonl"
    printf 'caf\xc3\xa9 "x"\n' >"$T/esc.txt"
    [ "$("$GPT2" tokenize --ids --jsonl-field text "$T/esc.jsonl")" = \
        "$EOT $("$GPT2" tokenize --ids "$T/esc.txt")" ]
}
check "--jsonl-field decodes JSON escapes" jsonl_escape
jsonl_shards() {
    "$GPT2" tokenize --jsonl-field text "$T/docs.jsonl" -o "$T/js/docs" --shard-tokens 100 >/dev/null || return 1
    [ "$(payload "$T/js/docs_val_000000.bin" "$T/js"/docs_train_*.bin)" = "$jsonl_want" ]
}
check "--jsonl-field with -o writes shards" jsonl_shards
printf '{"text": "a"}\n{"text": "b",}\n' >"$T/bad1.jsonl"
check_error "malformed JSON line" "malformed JSON ($T/bad1.jsonl) at line 2" \
    "$GPT2" tokenize --ids --jsonl-field text "$T/bad1.jsonl"
printf '{"text": "a"}\n\n{"body": "b"}\n' >"$T/bad2.jsonl"
check_error "record without the field" "missing field \"text\" ($T/bad2.jsonl) at line 3" \
    "$GPT2" tokenize --ids --jsonl-field text "$T/bad2.jsonl"
printf '{"text": ["a"]}\n' >"$T/bad3.jsonl"
check_error "field that is not a string" "field \"text\" is not a string ($T/bad3.jsonl) at line 1" \
    "$GPT2" tokenize --ids --jsonl-field text "$T/bad3.jsonl"
printf '"just a string"\n' >"$T/bad4.jsonl"
check_error "record that is not an object" "bad JSONL record ($T/bad4.jsonl) at line 1" \
    "$GPT2" tokenize --ids --jsonl-field text "$T/bad4.jsonl"

# Memory bound: a stretch without a cut point, or a JSON line, longer than the limit is refused, naming it.
head -c 3000 /dev/zero | tr '\0' 'a' >"$T/word.txt"
check_error "no cut point within --max-unsplit-bytes" "no place to split the text ($T/word.txt)" \
    "$GPT2" tokenize --chunk-bytes 100 --max-unsplit-bytes 1000 --ids "$T/word.txt"
{ printf '{"text": "short"}\n{"text": "'; cat "$T/word.txt"; printf '"}\n'; } >"$T/long.jsonl"
check_error "JSON line over --max-unsplit-bytes" "line too long ($T/long.jsonl) at line 2" \
    "$GPT2" tokenize --max-unsplit-bytes 1000 --ids --jsonl-field text "$T/long.jsonl"
long_word_ok() {
    "$GPT2" tokenize --chunk-bytes 100 --ids "$T/word.txt" >"$T/word.chunked" &&
        "$GPT2" tokenize --ids "$T/word.txt" >"$T/word.whole" && cmp "$T/word.chunked" "$T/word.whole"
}
check "a stretch without a cut point under the limit stays whole" long_word_ok

# Flags.
# --val-tokens sizes the val shard; by default it is one shard (fineweb.py's layout), and a note says when
# that is more than a tenth of the tokens
"$GPT2" tokenize "$FIX/shakespeare.in" -o "$T/vt/x" --shard-tokens 30 --val-tokens 5 >/dev/null 2>"$T/vt.err"
check "--val-tokens 5 with shards: a val shard of 5 tokens" header_is "$T/vt/x_val_000000.bin" 5
check "... then train shards of --shard-tokens" header_is "$T/vt/x_train_000001.bin" 30
check "... and no note (5 tokens are under a tenth)" test ! -s "$T/vt.err"
"$GPT2" tokenize "$FIX/shakespeare.in" -o "$T/vt2/x" --shard-tokens 30 >/dev/null 2>"$T/vt2.err"
check "a default val shard of 30 tokens, a note on its share" grep -q '^note: the val shard holds [0-9]*% of the tokens; --val-tokens' "$T/vt2.err"
cp "$FIX/shakespeare.in" "$T/plain.jsonl"
"$GPT2" tokenize --ids "$T/plain.jsonl" >/dev/null 2>"$T/jsonl.err"
check "a .jsonl input without --jsonl-field gets a note" grep -q "^note: $T/plain.jsonl is encoded as plain text.*--jsonl-field text" "$T/jsonl.err"
GPT2_DATA_DIR=/nonexistent "$GPT2" tokenize --help >"$T/tokhelp"
check "--help states the tokenizer default as train and generate do" grep -q 'default: \$GPT2_DATA_DIR/gpt2 or data/gpt2)$' "$T/tokhelp"
check_error "--shard-tokens 0" "bad value for --shard-tokens" \
    "$GPT2" tokenize "$FIX/shakespeare.in" -o "$T/x/x" --shard-tokens 0
check_error "--shard-tokens with --ids" "flag --shard-tokens needs -o" \
    "$GPT2" tokenize --ids "$FIX/shakespeare.in" --shard-tokens 30
check_error "everything fits the val shard" "too few tokens for a val shard of $n" \
    "$GPT2" tokenize "$FIX/shakespeare.in" -o "$T/few/shk" --shard-tokens $n
nothing_left() { [ -z "$(ls -A "$T/few" 2>/dev/null)" ]; }
check "... and no shard or temporary is left behind" nothing_left

# Output safety: a foreign file is never replaced, found up front (train_000001) or mid-run (train_000003);
# the run leaves no temporary and the foreign file as it was.
mkdir -p "$T/safe"
echo "my notes" >"$T/safe/shk_train_000001.bin"
check_error "foreign file as the first train shard" "shk_train_000001.bin exists and is not a token file" \
    "$GPT2" tokenize "$FIX/shakespeare.in" -o "$T/safe/shk" --shard-tokens 30
rm "$T/safe/shk_train_000001.bin"
echo "my notes" >"$T/safe/shk_train_000003.bin"
check_error "foreign file as a later shard" "shk_train_000003.bin exists and is not a token file" \
    "$GPT2" tokenize "$FIX/shakespeare.in" -o "$T/safe/shk" --shard-tokens 30
foreign_kept() {
    [ "$(cat "$T/safe/shk_train_000003.bin")" = "my notes" ] || return 1
    ! ls "$T/safe" | grep -q '\.tmp\.'
}
check "the foreign file is unchanged and no temporary is left" foreign_kept

# SIGTERM while reading stdin: the staged shard goes, published ones are whole.
sigterm_clean() {
    mkdir -p "$T/sig"
    { cat "$T/big.txt"; sleep 3; } |
        "$GPT2" tokenize --chunk-bytes 64 - -o "$T/sig/s" --shard-tokens 2000 &
    local pid=$!
    sleep 1.5
    local staged
    staged=$(ls "$T/sig" | grep -c '\.tmp\.[0-9]*$')  # the staged shard, not its mark
    kill -TERM "$pid"
    wait_bounded "$pid" 60
    local rc=$?
    echo "exit $rc, $staged staged before the signal: $(ls "$T/sig" | tr '\n' ' ')"
    [ "$rc" -eq 143 ] && [ "$staged" -eq 1 ] || return 1
    ! ls "$T/sig" | grep -q '\.tmp\.' || return 1
    local f
    for f in "$T/sig"/*.bin; do header_is "$f" 2000 || return 1; done
}
check "SIGTERM leaves no half-written shard" sigterm_clean

# A second, shorter run removes the later shards of the first (they would join a glob of its shards).
stale_removed() {
    "$GPT2" tokenize "$FIX/shakespeare.in" -o "$T/sh/shk" --shard-tokens 60 >/dev/null 2>"$T/stale.err" || return 1
    cat "$T/stale.err"
    [ "$(ls "$T/sh")" = "$(printf 'shk_train_000001.bin\nshk_val_000000.bin')" ] && grep -q "removed 2 shards" "$T/stale.err"
}
check "stale shards of a longer run are removed" stale_removed

summary
