#!/usr/bin/env bash
# ref_tokenizer.sh (make test-ref): compares the C++ tokenizer with scripts/bpe_reference.py: the
# committed fixtures must regenerate unchanged, and `gpt2 tokenize --ids` must equal the reference on all
# of tiny shakespeare and on seeded random mixed text (many scripts, whitespace, invalid UTF-8). It also
# checks llm.c's tiny shakespeare split: 32,768 val and 305,260 train tokens. Needs ./gpt2, python3 with
# `regex`, and the data (GPT2_DATA_DIR or data/).
source "$(dirname "$0")/lib.sh"

PY=${PYTHON:-python3}
REF=scripts/bpe_reference.py
if [ -n "${GPT2_DATA_DIR:-}" ]; then DATA=$GPT2_DATA_DIR; else DATA=data; fi
TOK_DIR=$DATA/gpt2
SHAKESPEARE=""
for f in "$DATA/tinyshakespeare/input.txt" "$DATA/tinyshakespeare.txt"; do
    if [ -f "$f" ]; then SHAKESPEARE=$f; break; fi
done

if ! "$PY" -c 'import regex' 2>/dev/null; then
    fail "$PY cannot import regex (Debian: apt-get install python3-regex)"
    summary; exit 1
fi
if [ ! -f "$TOK_DIR/encoder.json" ] || [ -z "$SHAKESPEARE" ]; then
    fail "tokenizer files or tiny shakespeare not found under $DATA: set GPT2_DATA_DIR or run \`make data\`"
    summary; exit 1
fi

check "fixtures regenerate" "$PY" "$REF" --tokenizer "$TOK_DIR" --fixtures "$TEST_TMP/fixtures"
check "regenerated fixtures equal the committed ones" diff -r "$TEST_TMP/fixtures" tests/fixtures/tokenizer

# same_ids NAME FILE [FLAGS...]: C++ and Python print identical ids for FILE.
same_ids() {
    local name=$1 file=$2; shift 2
    "$GPT2" tokenize --ids --tokenizer "$TOK_DIR" "$@" "$file" >"$TEST_TMP/$name.cc" || return 1
    "$PY" "$REF" --tokenizer "$TOK_DIR" "$@" "$file" >"$TEST_TMP/$name.py" || return 1
    echo "$(wc -w <"$TEST_TMP/$name.cc") ids from C++, $(wc -w <"$TEST_TMP/$name.py") from Python"
    cmp "$TEST_TMP/$name.cc" "$TEST_TMP/$name.py"
}
check "tiny shakespeare: C++ ids equal the reference" same_ids shakespeare "$SHAKESPEARE"
check "tiny shakespeare, llm.c layout: C++ ids equal the reference" \
    same_ids shakespeare_docs "$SHAKESPEARE" --split-on-blank-lines
for seed in 1 2 3; do
    check "random text seed $seed generates" "$PY" "$REF" --random-text "$TEST_TMP/random$seed.txt" --seed $seed
    check "random text seed $seed: C++ ids equal the reference" same_ids "random$seed" "$TEST_TMP/random$seed.txt"
done

header_count() { od -An -t d4 -j 8 -N 4 "$1" | tr -d ' '; }
llmc_split() {
    "$GPT2" tokenize --tokenizer "$TOK_DIR" "$SHAKESPEARE" -o "$TEST_TMP/ts/" --split-on-blank-lines \
        --val-tokens 32768 || return 1
    local val train
    val=$(header_count "$TEST_TMP/ts/val.bin")
    train=$(header_count "$TEST_TMP/ts/train.bin")
    echo "val $val train $train"
    [ "$val" = 32768 ] && [ "$train" = 305260 ]
}
check "tiny shakespeare split: 32,768 val and 305,260 train tokens (as llm.c)" llmc_split
ref_counts() { [ "$("$PY" "$REF" --tokenizer "$TOK_DIR" --counts 32768 "$SHAKESPEARE")" = "val 32768 train 305260" ]; }
check "the reference agrees on those counts" ref_counts

summary
