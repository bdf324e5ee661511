#!/usr/bin/env bash
# cli_tokenize.sh: `gpt2 tokenize` end to end: ids of every committed fixture (tiktoken's, or for invalid
# UTF-8 scripts/bpe_reference.py's), stdin, token files written with -o, the llm.c document layout, and
# one-line errors for bad input, flags and tokenizer files. Needs "$GPT2" and the tokenizer files (GPT2_DATA_DIR or
# data/gpt2); it needs no Python.
source "$(dirname "$0")/lib.sh"

FIX=tests/fixtures/tokenizer
need_tokenizer

# ids_equal CASE [ARGS...]: `gpt2 tokenize --ids ARGS FILE` prints the fixture's expected ids.
ids_equal() {
    local name=$1; shift
    "$GPT2" tokenize --ids "$@" "$FIX/$name.in" >"$TEST_TMP/ids" && cmp -s "$TEST_TMP/ids" "$FIX/$name.ids"
}
mapfile -t cases <"$FIX/cases.txt"
for name in "${cases[@]}"; do
    [ "$name" = empty ] && continue  # an empty input is an error, checked below
    check "ids of fixture $name" ids_equal "$name"
done

stdin_ids() { "$GPT2" tokenize --ids - <"$FIX/cyrillic.in" | cmp -s - "$FIX/cyrillic.ids"; }
check "stdin (-) gives the same ids" stdin_ids

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

total=$(wc -w <"$FIX/shakespeare.ids" | tr -d ' ')
check "-o PREFIX writes PREFIX_val.bin and PREFIX_train.bin" \
    "$GPT2" tokenize "$FIX/shakespeare.in" -o "$TEST_TMP/prefixed/shk" --val-tokens 10
check "val file has the first 10 tokens" header_is "$TEST_TMP/prefixed/shk_val.bin" 10
check "train file has the rest" header_is "$TEST_TMP/prefixed/shk_train.bin" $((total - 10))
val_ids_match() {
    # Bytes 1024.. of the val file are the first 10 expected ids as uint16.
    local got want
    got=$(od -An -t u2 -j 1024 "$TEST_TMP/prefixed/shk_val.bin" | tr -s ' \n' ' ' | sed 's/^ //; s/ $//')
    want=$(cut -d' ' -f1-10 "$FIX/shakespeare.ids")
    echo "got '$got' want '$want'"
    [ "$got" = "$want" ]
}
check "val file holds the expected ids" val_ids_match
check "-o DIR/ writes DIR/val.bin and DIR/train.bin" \
    "$GPT2" tokenize "$FIX/shakespeare.in" -o "$TEST_TMP/dir/" --val-tokens 0
check "DIR/val.bin is empty with --val-tokens 0" header_is "$TEST_TMP/dir/val.bin" 0
check "DIR/train.bin holds every token" header_is "$TEST_TMP/dir/train.bin" "$total"
# Without --val-tokens the text's last 10% (by bytes, as nanoGPT's split) is val: each file holds the ids of
# its part of the text, encoded on its own, and the command says how many went where.
fixture_text 40 >"$TEST_TMP/ten.txt"
size=$(wc -c <"$TEST_TMP/ten.txt")
head -c $((size - size / 10)) "$TEST_TMP/ten.txt" >"$TEST_TMP/ten_head.txt"
tail -c $((size / 10)) "$TEST_TMP/ten.txt" >"$TEST_TMP/ten_tail.txt"
"$GPT2" tokenize "$TEST_TMP/ten.txt" -o "$TEST_TMP/ten" >"$TEST_TMP/ten.out"
ids_in() { od -v -An -t u2 -j 1024 "$1" | tr -s ' \n' ' ' | sed 's/^ //; s/ $//'; }
check "-o without --val-tokens: val holds the last 10% of the text" \
    test "$(ids_in "$TEST_TMP/ten_val.bin")" = "$("$GPT2" tokenize --ids "$TEST_TMP/ten_tail.txt")"
check "... and train the rest" test "$(ids_in "$TEST_TMP/ten_train.bin")" = "$("$GPT2" tokenize --ids "$TEST_TMP/ten_head.txt")"
n_train=$(ids_in "$TEST_TMP/ten_train.bin" | wc -w) n_val=$(ids_in "$TEST_TMP/ten_val.bin" | wc -w)
check "... and says so ($n_train train, $n_val val tokens)" \
    grep -q ": $n_train train tokens -> $TEST_TMP/ten_train.bin, $n_val val tokens (the last 10% of the text" "$TEST_TMP/ten.out"
# One token is "1 val token", not "1 val tokens" (issue 34 item 4: counts read as words)
printf 'Hello world' >"$TEST_TMP/one_val.txt"
check "a split of one val token says \"1 val token\"" \
    bash -c "'$GPT2' tokenize '$TEST_TMP/one_val.txt' -o '$TEST_TMP/one_val' | grep -q ' 1 val token (the last 10%'"
check "... and with --val-tokens 1 too" \
    bash -c "'$GPT2' tokenize '$TEST_TMP/one_val.txt' -o '$TEST_TMP/one_val1' --val-tokens 1 | grep -q ': 1 val token -> '"
check_error "... which needs the input's size: a pipe is refused without --val-tokens" "unknown input size (stdin)" \
    bash -c "cat '$TEST_TMP/ten.txt' | '$GPT2' tokenize -o '$TEST_TMP/stdin' -"

documents() {
    # shakespeare.in has 6 blank-line separators, so 7 sections each opened by <|endoftext|>.
    "$GPT2" tokenize --ids --split-on-blank-lines "$FIX/shakespeare.in" >"$TEST_TMP/docs" || return 1
    local first eots
    first=$(cut -d' ' -f1 "$TEST_TMP/docs")
    eots=$(tr ' ' '\n' <"$TEST_TMP/docs" | grep -c '^50256$')
    echo "first $first, $eots EOTs"
    [ "$first" = 50256 ] && [ "$eots" -eq 7 ]
}
check "--split-on-blank-lines puts <|endoftext|> before each section" documents

# Error paths: exit 1 with one `error:` line naming the file or flag.
check_error "missing input file" "no_such_file.txt" "$GPT2" tokenize --ids "$TEST_TMP/no_such_file.txt"
check_error "no input file given" "missing input file" "$GPT2" tokenize --ids
check_error "unknown flag" "unknown flag --idz" "$GPT2" tokenize --idz "$FIX/greek.in"
check_error "empty input" "empty input ($FIX/empty.in)" "$GPT2" tokenize --ids "$FIX/empty.in"
check_error "empty stdin" "empty input (stdin)" "$GPT2" tokenize --ids - </dev/null
check_error "neither --ids nor -o" "missing output" "$GPT2" tokenize "$FIX/greek.in"
check_error "both --ids and -o" "conflicting flags" "$GPT2" tokenize --ids -o "$TEST_TMP/x" "$FIX/greek.in"
check_error "--val-tokens larger than the text" "too few tokens for --val-tokens" \
    "$GPT2" tokenize -o "$TEST_TMP/small" --val-tokens 32768 "$FIX/greek.in"
check_error "a text too short to hold out a tenth of it" "too little text to hold out its last 10% as val" \
    bash -c "printf x >'$TEST_TMP/x.txt' && exec '$GPT2' tokenize -o '$TEST_TMP/small' '$TEST_TMP/x.txt'"
check_error "malformed --val-tokens" "val-tokens" "$GPT2" tokenize -o "$TEST_TMP/x" --val-tokens ten "$FIX/greek.in"
check_error "missing tokenizer dir" "tokenizer directory not found ($TEST_TMP/nope)" \
    "$GPT2" tokenize --tokenizer "$TEST_TMP/nope" --ids "$FIX/greek.in"

mkdir -p "$TEST_TMP/tok_empty" "$TEST_TMP/tok_no_merges" "$TEST_TMP/tok_bad_json" "$TEST_TMP/tok_bad_merge"
check_error "tokenizer dir without files" "tokenizer files not found ($TEST_TMP/tok_empty)" \
    "$GPT2" tokenize --tokenizer "$TEST_TMP/tok_empty" --ids "$FIX/greek.in"
cp "$TOK_DIR/encoder.json" "$TEST_TMP/tok_no_merges/encoder.json"
check_error "encoder.json without vocab.bpe" "$TEST_TMP/tok_no_merges/vocab.bpe" \
    "$GPT2" tokenize --tokenizer "$TEST_TMP/tok_no_merges" --ids "$FIX/greek.in"
head -c 5000 "$TOK_DIR/encoder.json" >"$TEST_TMP/tok_bad_json/encoder.json"
cp "$TOK_DIR/vocab.bpe" "$TEST_TMP/tok_bad_json/vocab.bpe"
check_error "truncated encoder.json" "malformed JSON ($TEST_TMP/tok_bad_json/encoder.json)" \
    "$GPT2" tokenize --tokenizer "$TEST_TMP/tok_bad_json" --ids "$FIX/greek.in"
cp "$TOK_DIR/encoder.json" "$TEST_TMP/tok_bad_merge/vocab.json"
{ head -n 100 "$TOK_DIR/vocab.bpe"; echo "this line is bad"; } >"$TEST_TMP/tok_bad_merge/merges.txt"
check_error "malformed line in merges.txt" "malformed merge ($TEST_TMP/tok_bad_merge/merges.txt) at line 101" \
    "$GPT2" tokenize --tokenizer "$TEST_TMP/tok_bad_merge" --ids "$FIX/greek.in"

# Rule orders the merge loop cannot reproduce exactly are refused (see load_merges).
mkdir -p "$TEST_TMP/tok_order" "$TEST_TMP/tok_twice"
cp "$TOK_DIR/encoder.json" "$TEST_TMP/tok_order/encoder.json"
printf '#version: 0.2\n\xc4\xa0 t\n\xc4\xa0t he\nh e\n' >"$TEST_TMP/tok_order/vocab.bpe"
check_error "merge using a token made later" "merge out of order ($TEST_TMP/tok_order/vocab.bpe) at line 3" \
    "$GPT2" tokenize --tokenizer "$TEST_TMP/tok_order" --ids "$FIX/greek.in"
cp "$TOK_DIR/encoder.json" "$TEST_TMP/tok_twice/encoder.json"
printf '#version: 0.2\n\xc4\xa0 t\nh e\n\xc4\xa0t h\n\xc4\xa0t he\n\xc4\xa0th e\n' >"$TEST_TMP/tok_twice/vocab.bpe"
check_error "two merges making the same token" "token made twice ($TEST_TMP/tok_twice/vocab.bpe) at line 6" \
    "$GPT2" tokenize --tokenizer "$TEST_TMP/tok_twice" --ids "$FIX/greek.in"

summary
