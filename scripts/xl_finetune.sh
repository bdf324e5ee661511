#!/usr/bin/env bash
# xl_finetune.sh: fine-tunes GPT-2 XL (1.56B parameters) on tiny shakespeare at B=1, T=1024 for a few steps
# on one machine, and prints the peak resident memory: with the three memory flags below the run fits in
# about 10 GiB where plain fp32 AdamW would need 29 GiB. The weights are random at GPT-2's scale
# (scripts/random_checkpoint.py), since the real ones may not be downloadable; with them in data/gpt2-xl
# (scripts/download_gpt2.sh gpt2-xl), MODEL=data/gpt2-xl uses them instead.
#
#   bash scripts/xl_finetune.sh                 # STEPS=3, MODEL=data/gpt2-xl-random (written once, 6 GiB)
#
# The flags: --optimizer-state 8bit (AdamW's m and v in 8 bits, blocks of 64 with a scale each, as
# bitsandbytes' 8-bit AdamW, stochastically rounded: 3.1 GiB instead of 11.6; bf16 keeps 5.8),
# --optimizer-in-backward (AdamW applied a layer at a time inside the backward: 0.4 GB of gradients instead
# of 6; with clipping the backward runs twice, the first for the norm) and --recompute-blocks (each block's
# input kept alone, the block's forward run again before its backward: 0.7 GiB of activations instead of 5.6;
# --recompute, LayerNorm and GELU outputs recomputed, keeps 3.3 GiB; its step is faster: tests/bench_results.md).
set -euo pipefail
cd "$(dirname "$0")/.."
STEPS=${STEPS:-3}
MODEL=${MODEL:-data/gpt2-xl-random}
make -s
make -s data
if [ ! -f "$MODEL/model.safetensors" ]; then
    [ "$MODEL" = data/gpt2-xl-random ] || { echo "error: missing $MODEL/model.safetensors" >&2; exit 1; }
    /usr/bin/python3 scripts/random_checkpoint.py --size gpt2-xl --out "$MODEL"
fi
./gpt2 train --model "$MODEL" --train data/tinyshakespeare/train.bin --val data/tinyshakespeare/val.bin \
    -B 1 -T 1024 --steps "$STEPS" --lr 1e-5 --warmup 0 --val-every 0 --sample-tokens 0 \
    --optimizer-state 8bit --optimizer-in-backward --recompute-blocks
