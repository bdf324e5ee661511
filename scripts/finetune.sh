#!/usr/bin/env bash
# finetune.sh: LoRA fine-tuning on the CPU, the way people fine-tune now. Tokenizes a small instruction set
# (tests/fixtures/instruct/*.jsonl: prompt/completion, Alpaca and chat lines) with loss masks, so only the
# answers are scored; trains a LoRA adapter on a frozen GPT-2 (BASE: the base never changes, only the
# adapter's few MiB are trained and saved, in PEFT's layout); prints one prompt's greedy answer before and
# after; exports the adapter for llama.cpp. Run again after a Ctrl-C: it continues the adapter's run.
#   bash scripts/finetune.sh                      BASE=data/gpt2 (scripts/download_gpt2.sh gpt2)
#   BASE=out/shakespeare STEPS=200 bash scripts/finetune.sh
#   DATA='my/*.jsonl' bash scripts/finetune.sh    your own instruction files
set -euo pipefail
SECONDS=0
cd "$(dirname "$0")/.."
BASE=${BASE:-data/gpt2} STEPS=${STEPS:-100} OUT=${OUT:-out/finetune} DATA=${DATA:-tests/fixtures/instruct/*.jsonl}
make -j"$(nproc)"
if [ ! -e "$BASE" ]; then
    echo "error: no base model at $BASE (BASE): expected a GPT-2 checkpoint" >&2
    echo "hint: scripts/download_gpt2.sh gpt2 puts GPT-2 124M in data/gpt2; offline, BASE=out/shakespeare after scripts/quickstart.sh" >&2
    exit 1
fi
mkdir -p "$OUT"
# Each example packed whole into 128-token windows, each token file with its loss mask (X.mask beside X.bin).
[ -f "$OUT/sft_train.bin" ] || ./gpt2 tokenize --instructions -T 128 -o "$OUT/sft" $DATA
PROMPT=$'User: What is the capital of France?\nAssistant:'
echo "---- before (the base alone) ----"
./gpt2 generate --model "$BASE" --prompt "$PROMPT" --temperature 0 --max-tokens 24
if [ -f "$OUT/adapter/train_state.safetensors" ]; then
    echo "finetune: $OUT/adapter holds an earlier run: continuing it (gpt2 train --resume); remove it to start over"
    ./gpt2 train --resume "$OUT/adapter" --steps "$STEPS"
else
    # rank 16 on attention and MLP, alpha 32: scale 2; the base's weights get no gradient and no AdamW state
    ./gpt2 train --model "$BASE" --lora 16 --lora-alpha 32 --lora-targets c_attn,c_proj,c_fc \
        --train "$OUT/sft_train.bin" --val "$OUT/sft_val.bin" -B 1 --grad-accum 4 -T 128 --steps "$STEPS" \
        --lr 1e-3 --weight-decay 0 --val-every 25 --val-batches 1 --sample-tokens 0 --out "$OUT/adapter" --log "$OUT/adapter.jsonl"
fi
echo "---- after (the base with the adapter) ----"
./gpt2 generate --model "$BASE" --lora-from "$OUT/adapter" --prompt "$PROMPT" --temperature 0 --max-tokens 24
./gpt2 export --model "$BASE" --lora-from "$OUT/adapter" --format gguf --out "$OUT/adapter.gguf"
echo "finetune: the adapter is $OUT/adapter (PEFT: adapter_config.json + adapter_model.safetensors) and" \
    "$OUT/adapter.gguf (llama.cpp --lora); $((SECONDS / 60))m$(printf %02d $((SECONDS % 60)))s in all"
