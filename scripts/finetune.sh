#!/usr/bin/env bash
# finetune.sh: LoRA fine-tuning on the CPU, the way people fine-tune now. Tokenizes a small instruction set
# (tests/fixtures/instruct/*.jsonl: prompt/completion, Alpaca and chat lines) with loss masks, so only the
# answers are scored; trains a LoRA adapter on a frozen GPT-2 (BASE: the base never changes, only the
# adapter's few MiB are trained and saved, in PEFT's layout); prints the greedy answer to a prompt held out of
# the data, before and after; says whether val loss fell; exports the adapter for llama.cpp. Run again after a
# Ctrl-C: it continues the adapter's run.
#   bash scripts/finetune.sh                      BASE: data/gpt2's GPT-2 (scripts/download_gpt2.sh gpt2), else
#                                                 out/shakespeare (scripts/quickstart.sh's model)
#   BASE=DIR STEPS=200 OUT=out/ft bash scripts/finetune.sh    OUT: where the data, adapter and log go
#                                                 (default out/finetune; one OUT holds one base's adapter)
#   DATA='my data/*.jsonl' bash scripts/finetune.sh    your own instruction files (one glob)
# BASE, OUT and DATA given relative are read from the directory you run it in; their defaults are the repository's.
# OUT keeps the tokenized DATA (sft_*.bin) and what it was made from: another DATA is tokenized again, or refused
# while OUT/adapter holds a run trained on the first one.
# What to expect: 60 examples teach the format (a short answer, then <|endoftext|>), not facts. GPT-2 124M's
# real weights know some answers; a base trained on tiny shakespeare or of random weights knows none, so its
# answers stay wrong after fine-tuning, and with so few examples val loss may rise while train loss falls.
set -euo pipefail
SECONDS=0
die() { echo "error: $1" >&2; [ -z "${2:-}" ] || echo "hint: $2" >&2; exit 1; }
# here PATH: a path given relative, joined to the directory the script was run from (before the cd below).
caller=$PWD
here() { case $1 in /*) printf '%s' "$1" ;; *) printf '%s/%s' "$caller" "$1" ;; esac; }
[ -z "${BASE:-}" ] || BASE_AT=$(here "$BASE")
[ -z "${OUT:-}" ] || OUT=$(here "$OUT")
[ -z "${DATA:-}" ] || DATA_AT=$(here "$DATA")
cd "$(dirname "$0")/.."
STEPS=${STEPS:-100} OUT=${OUT:-out/finetune} DATA=${DATA:-tests/fixtures/instruct/*.jsonl}
DATA_AT=${DATA_AT:-$DATA}
SEQ=128  # -T: each example packed whole into windows of this many tokens
# is_model PATH: a checkpoint train --model reads (a HuggingFace directory or a model file), not the tokenizer
# files that make data puts in data/gpt2.
is_model() {
    [ -f "$1/config.json" ] && return
    case $1 in *.safetensors | *.bin | *.gguf) [ -s "$1" ] ;; *) false ;; esac
}
if [ -z "${BASE:-}" ]; then
    if is_model data/gpt2; then BASE=data/gpt2
    elif is_model out/shakespeare; then
        BASE=out/shakespeare
        echo "finetune: no GPT-2 checkpoint in data/gpt2, so the base is out/shakespeare (the quick start's model;" \
            "BASE=DIR picks another)"
    else
        die "no base model: data/gpt2 holds no checkpoint (config.json) and out/shakespeare does not exist" \
            "scripts/download_gpt2.sh gpt2 puts GPT-2 124M in data/gpt2; offline, run bash scripts/quickstart.sh first, or give BASE=DIR"
    fi
fi
BASE_AT=${BASE_AT:-$BASE}
is_model "$BASE_AT" || die "no base model at $BASE (BASE): expected a GPT-2 checkpoint (a directory with config.json, or a .safetensors, .bin or .gguf file)" \
    "scripts/download_gpt2.sh gpt2 puts GPT-2 124M in data/gpt2; offline, BASE=out/shakespeare after scripts/quickstart.sh"
base_abs=$(realpath "$BASE_AT")  # one base by any path: a link to it is the same base
[ ! -e "$OUT" ] || [ -d "$OUT" ] || die "OUT=$OUT exists and is not a directory: expected a directory for the data, adapter and log" \
    "give a new OUT=DIR"
# One OUT, one base: an adapter trained on one base means nothing on another (and may not fit its shape).
if [ -f "$OUT/base" ] && [ "$(cat "$OUT/base")" != "$base_abs" ]; then
    die "$OUT holds an adapter trained on $(cat "$OUT/base"), not on BASE=$BASE" \
        "give another OUT=DIR for this base, or remove $OUT to start over"
fi
echo "finetune: building ./gpt2 (make)"
make -s -j"$(nproc)"
context=$(./gpt2 info --model "$BASE_AT" 2>/dev/null | sed -n 's/.*, context \([0-9]*\),.*/\1/p' || true)
[ -z "$context" ] || [ "$context" -ge $SEQ ] || die "BASE=$BASE has a context of $context tokens: this script packs each example into $SEQ-token windows (-T $SEQ), expected a base of context $SEQ or more" \
    "fine-tune a GPT-2 checkpoint (context 1024), or run ./gpt2 tokenize --instructions and ./gpt2 train --lora yourself with a smaller -T"
mkdir -p "$OUT"
# Each example packed whole into 128-token windows, each token file with its loss mask (X.mask beside X.bin).
# DATA is one glob, a space in it part of the path (several files: a glob such as 'dir/*.jsonl').
mapfile -t files < <(compgen -G "$DATA_AT" || true)
[ ${#files[@]} -gt 0 ] || die "no file matches $DATA (DATA): expected a glob of JSON lines of instructions"
# OUT/sft_data: what OUT/sft_*.bin were tokenized from (-T, then each file's checksum and size, in order).
made=$(echo "-T $SEQ"; for f in "${files[@]}"; do cksum <"$f"; done)
if [ -f "$OUT/sft_train.bin" ] && [ "$(cat "$OUT/sft_data" 2>/dev/null)" != "$made" ]; then
    if [ -f "$OUT/adapter/train_state.safetensors" ]; then
        [ -f "$OUT/sft_data" ] || die "$OUT/sft_train.bin holds data tokenized by an earlier finetune.sh, which did not record its DATA; DATA=$DATA may differ from it" \
            "remove $OUT/adapter and $OUT/sft_train.bin to train on DATA, or give another OUT=DIR"
        die "$OUT/adapter holds a run trained on other data than DATA=$DATA (files or contents changed since $OUT/sft_train.bin was tokenized)" \
            "give another OUT=DIR for this DATA, or remove $OUT/adapter to start over on it"
    fi
    echo "finetune: DATA=$DATA is not what $OUT/sft_train.bin was tokenized from: tokenizing it again"
    rm -f "$OUT/sft_train.bin" "$OUT/sft_train.mask" "$OUT/sft_val.bin" "$OUT/sft_val.mask" "$OUT/sft_data"
fi
if [ ! -f "$OUT/sft_train.bin" ]; then
    ./gpt2 tokenize --instructions -T $SEQ -o "$OUT/sft" "${files[@]}"
    echo "$made" >"$OUT/sft_data"
fi
# A question the instruction set does not hold: the answer shows what was learnt beyond the examples.
PROMPT=$'User: What is the capital of Germany?\nAssistant:'
echo "---- before (the base alone; the prompt is not in the training data) ----"
./gpt2 generate --model "$BASE_AT" --prompt "$PROMPT" --temperature 0 --max-tokens 24
if [ -f "$OUT/adapter/train_state.safetensors" ]; then
    echo "finetune: $OUT/adapter holds an earlier run: continuing it (./gpt2 train --resume); remove it to start over"
    ./gpt2 train --resume "$OUT/adapter" --steps "$STEPS"
else
    # rank 16 on attention and MLP, alpha 32: scale 2; the base's weights get no gradient and no AdamW state
    ./gpt2 train --model "$BASE_AT" --lora 16 --lora-alpha 32 --lora-targets c_attn,c_proj,c_fc \
        --train "$OUT/sft_train.bin" --val "$OUT/sft_val.bin" -B 1 --grad-accum 4 -T $SEQ --steps "$STEPS" \
        --lr 1e-3 --weight-decay 0 --val-every 25 --val-batches 1 --sample-tokens 0 --out "$OUT/adapter" --log "$OUT/adapter.jsonl"
fi
# The adapter exists now: OUT belongs to this base (a run that failed before it ties OUT to nothing).
[ -f "$OUT/base" ] || echo "$base_abs" >"$OUT/base"
echo "---- after (the base with the adapter) ----"
./gpt2 generate --model "$BASE_AT" --lora-from "$OUT/adapter" --prompt "$PROMPT" --temperature 0 --max-tokens 24
# val loss at the run's first and last validation (the log's "val_loss" lines)
vals=($(sed -n 's/.*"val_loss": *\([-0-9.eE+]*\).*/\1/p' "$OUT/adapter.jsonl" 2>/dev/null))
if [ ${#vals[@]} -ge 2 ]; then
    first=${vals[0]} last=${vals[${#vals[@]} - 1]}
    if awk -v a="$first" -v b="$last" 'BEGIN { exit !(b > a) }'; then
        echo "finetune: val loss rose, $first -> $last: the adapter fits the training examples more than it" \
            "generalizes (few examples, or a base that knows little); fewer STEPS or more data help"
    else
        echo "finetune: val loss fell or held, $first -> $last"
    fi
elif [ ${#vals[@]} = 1 ]; then
    echo "finetune: val loss ${vals[0]}, measured once (every 25 steps and at the end): nothing to compare"
fi
./gpt2 export --model "$BASE_AT" --lora-from "$OUT/adapter" --format gguf --out "$OUT/adapter.gguf"
echo "finetune: the adapter is $OUT/adapter (PEFT: adapter_config.json + adapter_model.safetensors) and" \
    "$OUT/adapter.gguf (llama.cpp --lora); $((SECONDS / 60))m$(printf %02d $((SECONDS % 60)))s in all"
