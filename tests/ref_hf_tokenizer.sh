#!/usr/bin/env bash
# ref_hf_tokenizer.sh (make test-ref): the tokenizer files `export --format hf` writes are the ones
# HuggingFace's GPT2Tokenizer loads, for a model of GPT-2's full vocabulary (50257 tokens): vocab.json equal
# as JSON to GPT-2's encoder.json, merges.txt byte for byte GPT-2's vocab.bpe (its `#version: 0.2` line
# first, which GPT2Tokenizer skips, and a newline after the last merge, which it drops), and
# tokenizer_config.json + special_tokens_map.json naming GPT2Tokenizer and <|endoftext|> as bos, eos and unk.
# Read with Python's json module alone (transformers is not needed), and GPT2Tokenizer's own way of reading
# merges.txt (split on newlines, the first and last entries dropped) must give GPT-2's 50,000 merges. Then
# the export alone tokenizes as GPT-2 does: `gpt2 tokenize --tokenizer EXPORT` gives the ids of data/gpt2.
source "$(dirname "$0")/lib.sh"
PY=${PYTHON:-/usr/bin/python3}
if [ -n "${GPT2_DATA_DIR:-}" ]; then DATA=$GPT2_DATA_DIR; else DATA=data; fi
T=$TEST_TMP
if [ ! -f "$DATA/gpt2/encoder.json" ] || [ ! -f "$DATA/gpt2/vocab.bpe" ]; then
    fail "tokenizer files not found in $DATA/gpt2: set GPT2_DATA_DIR and run \`make data\`"
    summary; exit 1
fi

# the smallest model of GPT-2's vocabulary: one layer of 8 channels, one step on the committed tokens
"$GPT2" train --vocab 50257 --layers 1 --heads 1 --channels 8 --seq-len 16 --train tests/fixtures/tokens_v1000.bin \
    --val "" -B 1 -T 8 --steps 1 --sample-tokens 0 --out $T/m >/dev/null
check "export --format hf of a 50257-token model" "$GPT2" export --model $T/m --out $T/hf --tokenizer "$DATA/gpt2"
check "vocab.json equals encoder.json as JSON" "$PY" -c 'import json, sys
a, b = (json.load(open(p, encoding="utf-8")) for p in sys.argv[1:])
sys.exit(a != b or len(a) != 50257)' $T/hf/vocab.json "$DATA/gpt2/encoder.json"
check "merges.txt equals vocab.bpe, byte for byte" cmp $T/hf/merges.txt "$DATA/gpt2/vocab.bpe"
check "... its first line is #version: 0.2" test "$(head -1 $T/hf/merges.txt)" = "#version: 0.2"
check "read as GPT2Tokenizer reads it: 50,000 merges of two tokens each" "$PY" -c 'import sys
merges = open(sys.argv[1], encoding="utf-8").read().split("\n")[1:-1]
sys.exit(len(merges) != 50000 or any(len(m.split()) != 2 for m in merges))' $T/hf/merges.txt
check "tokenizer_config.json: GPT2Tokenizer, <|endoftext|> as bos, eos and unk, the model's context" "$PY" -c 'import json, sys
c = json.load(open(sys.argv[1]))
eot = "<|endoftext|>"
sys.exit(not (c["tokenizer_class"] == "GPT2Tokenizer" and c["model_max_length"] == 16 and
              c["add_prefix_space"] is False and c["bos_token"] == c["eos_token"] == c["unk_token"] == eot))' \
    $T/hf/tokenizer_config.json
check "special_tokens_map.json: <|endoftext|> as bos, eos and unk" "$PY" -c 'import json, sys
m = json.load(open(sys.argv[1]))
sys.exit(m != {"bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>", "unk_token": "<|endoftext|>"})' \
    $T/hf/special_tokens_map.json
head -c 20000 tests/fixtures/tokenizer/shakespeare.in >$T/text.txt
"$GPT2" tokenize --ids --tokenizer "$DATA/gpt2" $T/text.txt >$T/ids_gpt2
"$GPT2" tokenize --ids --tokenizer $T/hf $T/text.txt >$T/ids_export
check "the export's tokenizer gives GPT-2's ids" test -s $T/ids_gpt2 -a "$(cat $T/ids_export)" = "$(cat $T/ids_gpt2)"
summary
