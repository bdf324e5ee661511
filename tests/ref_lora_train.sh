#!/usr/bin/env bash
# ref_lora_train.sh (make test-ref): LoRA training against an independent float64 PyTorch LoRA
# (scripts/lora_reference.py: reference.py's GPT-2 with y += scale (x A^T) B^T on each adapted Conv1D, the base
# frozen). `gpt2 compare --lora-from` checks logits, loss, every adapter gradient (max|ours-ref|/max|ref| per
# tensor within 1e-5) and the losses of AdamW steps on the adapter alone (within 1e-5), for:
#   * a tiny base with GPT-2's vocabulary (scripts/random_checkpoint.py), r 4, alpha 16 on c_attn, c_proj and c_fc
#     (all four Conv1D layers), B drawn non-zero (scripts/peft_adapter.py), so dA is not zero;
#   * the same base, r 8 with use_rslora on attn.c_attn and mlp.c_proj only;
#   * a wider base (4 layers, 128 channels, 4 heads), r 16 on c_attn.
source "$(dirname "$0")/lib.sh"
PY=${PYTHON:-/usr/bin/python3}
T=$TEST_TMP
if ! "$PY" -c 'import numpy, torch' 2>/dev/null; then
    fail "$PY cannot import numpy and torch"
    summary; exit 1
fi
"$PY" scripts/random_checkpoint.py --layers 2 --heads 2 --channels 64 --seq-len 128 --seed 3 --out $T/base >/dev/null
"$PY" scripts/random_checkpoint.py --layers 4 --heads 4 --channels 128 --seq-len 64 --seed 4 --out $T/wide >/dev/null
"$PY" scripts/peft_adapter.py make $T/all --base $T/base --r 4 --alpha 16 --targets c_attn,c_proj,c_fc >/dev/null
"$PY" scripts/peft_adapter.py make $T/rs --base $T/base --r 8 --alpha 8 --targets attn.c_attn,mlp.c_proj --rslora \
    --seed 2 >/dev/null
"$PY" scripts/peft_adapter.py make $T/wide_ad --base $T/wide --r 16 --alpha 32 --targets c_attn --seed 5 >/dev/null
compare() {  # NAME BASE ADAPTER FLAGS...: the reference, then compare
    local name=$1 base=$2 adapter=$3; shift 3
    "$PY" scripts/lora_reference.py --model $base --adapter $adapter --dump-out $T/$name.st "$@" >/dev/null &&
        "$GPT2" compare --model $base --lora-from $adapter --ref $T/$name.st >$T/$name.out
}
check "r 4, alpha 16 on c_attn, c_proj, c_fc: logits, loss, 16 adapter gradients, 5 AdamW losses" \
    compare all $T/base $T/all -B 2 -T 16 --seed 1
sort -k3 -g $T/all.out | grep ' rel ' | tail -2
check "r 8, rslora, on attn.c_attn and mlp.c_proj" compare rs $T/base $T/rs -B 3 -T 32 --seed 2 --lr 3e-3
sort -k3 -g $T/rs.out | grep ' rel ' | tail -1
check "4 layers, 128 channels, r 16 on c_attn" compare wide $T/wide $T/wide_ad -B 2 -T 64 --seed 3
sort -k3 -g $T/wide.out | grep ' rel ' | tail -1
summary
