#!/usr/bin/env bash
# ref_instruct.sh (make test-ref): the answer-only loss against PyTorch. scripts/reference.py --masked sets
# about half the targets to -1 and computes F.cross_entropy(..., ignore_index=-1) in float64: the mean over
# the scored targets, its gradient at the logits (dlogits), every parameter's gradient and 10 AdamW losses on
# that batch; `gpt2 compare` checks ours against them at its bars (1e-5; max|ours - ref| / max|ref| per tensor).
source "$(dirname "$0")/lib.sh"
PY=${PYTHON:-/usr/bin/python3}
W=$TEST_TMP

masked_ref() {
    $PY scripts/reference.py --layers 2 --heads 4 --channels 64 --vocab 50257 --seq-len 64 -B 2 -T 16 --seed 5 \
        --masked --model-out "$W/m/model" --dump-out "$W/m/dump.safetensors" >/dev/null || return 1
    "$PY" -c 'import sys; sys.path.insert(0, "scripts"); import safetensors_io
y = safetensors_io.read(sys.argv[1])[0]["y"]; n = (y == -1).sum(); print(f"{n} of {y.size} targets not scored")
sys.exit(not 0 < n < y.size)' "$W/m/dump.safetensors"
}
check "reference.py --masked: a float64 dump with targets of -1" masked_ref
cat "$TEST_TMP/out"
masked_compare() {
    "$GPT2" compare --model "$W/m/model" --ref "$W/m/dump.safetensors" >"$W/cmp" 2>&1
    local rc=$?
    cat "$W/cmp"
    [ $rc -eq 0 ] && grep -q '^dlogits ' "$W/cmp"
}
check "masked cross-entropy: loss, dlogits, every gradient and 10 AdamW losses against PyTorch (ignore_index=-1)" \
    masked_compare
grep -E '^(loss|dlogits|adamw.loss\[9\]) ' "$W/cmp"
grep ' rel ' "$W/cmp" | sort -k3 -g | tail -1  # the worst tensor
summary
