#!/usr/bin/env bash
# quickstart.sh: the main job on a fresh Debian machine. Installs the build packages if missing
# (scripts/install_deps.sh build: apt, as root), builds ./gpt2, prepares tiny shakespeare (make data:
# $GPT2_DATA_DIR or download), trains a small GPT-2 from scratch for a few minutes on the CPU while
# printing train and val loss, saves the model to out/shakespeare/ and prints a generated sample.
# Run again after a Ctrl-C, it continues the interrupted run from its checkpoint (train --resume).
#   STEPS=600 bash scripts/quickstart.sh       more steps (a finished run trains on to STEPS)
#   FINETUNE=1 bash scripts/quickstart.sh      fine-tune data/gpt2/ (scripts/download_gpt2.sh) instead
set -euo pipefail
SECONDS=0
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh build
echo "quickstart: building ./gpt2 (make; a minute or two)"
make -s -j"$(nproc)"
make -s data
STEPS=${STEPS:-400}
mkdir -p out
OUT=out/shakespeare
[ "${FINETUNE:-0}" = 1 ] && OUT=out/shakespeare-ft
if [ -f "$OUT/train_state.safetensors" ]; then
    # an earlier run (a Ctrl-C saves one): train never replaces it, so continue it with its own flags
    at=$(./gpt2 info --model "$OUT" 2>/dev/null | sed -n 's/^run: step \([0-9]*\) of.*/\1/p' || true)  # train says what is wrong
    echo "quickstart: $OUT holds an earlier run (at step ${at:-?}): continuing it with ./gpt2 train --resume $OUT; remove $OUT to start over"
    ./gpt2 train --resume "$OUT" --steps "${STEPS}"
elif [ "${FINETUNE:-0}" = 1 ]; then
    [ -f data/gpt2/model.safetensors ] || { echo "error: no checkpoint in data/gpt2/: run scripts/download_gpt2.sh gpt2 first" >&2; exit 1; }
    # llm.c's CPU demo: fine-tune GPT-2 124M on tiny shakespeare with B=4, T=64
    ./gpt2 train --model data/gpt2 -B 4 -T 64 --steps "${STEPS}" --lr 1e-4 --warmup 0 --weight-decay 0 \
        --val-every 20 --val-batches 4 --out "$OUT" --log "$OUT.jsonl" --sample-every 20
else
    # -T equal to the model's context (--seq-len 256, the default): every position is trained, so the
    # samples, which generate up to the context, never run on untrained positions
    ./gpt2 train -B 4 -T 256 --steps "${STEPS}" --val-every 50 --out "$OUT" --log "$OUT.jsonl"
fi
echo "quickstart: $((SECONDS / 60))m$(printf %02d $((SECONDS % 60)))s in all (build, data, training, sample)"
