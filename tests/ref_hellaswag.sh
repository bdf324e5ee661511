#!/usr/bin/env bash
# ref_hellaswag.sh (make test-ref): `gpt2 eval --hellaswag` against scripts/ref_hellaswag.py (PyTorch,
# float64, each candidate alone and unpadded) on the committed fixture tests/fixtures/hellaswag/mini.jsonl
# (21 hand-written examples: unicode, punctuation, endings of 1 to 50 tokens) with a random full-vocabulary
# model from scripts/reference.py. For several batch sizes (a partial last batch, one example per pass, all
# in one pass) every example's two choices must equal the reference's, every candidate loss must be within
# 1e-5 as max |ours - ref| / max |ref|, and the printed acc / acc_norm lines must equal the reference's.
# Token ids come from `gpt2 tokenize` (see the script). Needs the tokenizer files (GPT2_DATA_DIR or data/).
source "$(dirname "$0")/lib.sh"
PY=${PYTHON:-/usr/bin/python3}
REF="$PY scripts/ref_hellaswag.py"
FIX=tests/fixtures/hellaswag/mini.jsonl
if [ -n "${GPT2_DATA_DIR:-}" ]; then TOK_DIR=$GPT2_DATA_DIR/gpt2; else TOK_DIR=data/gpt2; fi
W=$TEST_TMP

if [ ! -f "$TOK_DIR/encoder.json" ] && [ ! -f "$TOK_DIR/vocab.json" ]; then
    fail "tokenizer files not found in $TOK_DIR: set GPT2_DATA_DIR or run \`make data\`"
    summary
    exit 1
fi

$PY scripts/reference.py --layers 2 --heads 4 --channels 64 --vocab 50257 --seq-len 128 --seed 5 \
    --model-out "$W/model" >/dev/null
check "the reference scores the fixture (choices clear of fp32 noise, acc and acc_norm differ somewhere)" \
    $REF --model "$W/model" --data $FIX --gpt2 "$GPT2" --tokenizer "$TOK_DIR" --ref-out "$W/ref.jsonl" \
    --expect-out "$W/expect.txt"
head -1 "$TEST_TMP/out"

for per in 3 1 21; do
    "$GPT2" eval --model "$W/model" --hellaswag $FIX --tokenizer "$TOK_DIR" --hellaswag-batch $per \
        --hellaswag-scores "$W/ours$per.jsonl" >"$W/stdout$per" 2>"$W/stderr$per"
    check "--hellaswag-batch $per: exit 0" test $? -eq 0
    check "--hellaswag-batch $per: choices and losses match the reference" $REF --ref-in "$W/ref.jsonl" \
        --check "$W/ours$per.jsonl" --tol 1e-5
    grep 'losses:' "$TEST_TMP/out"
    check "--hellaswag-batch $per: prints the reference's acc and acc_norm" diff "$W/stdout$per" "$W/expect.txt"
done
cat "$W/expect.txt"
summary
