#!/usr/bin/env bash
# ref_checkpoint.sh (make test-ref): checkpoints written by PyTorch (scripts/reference.py --formats-out):
# llm.c v3/v5 files from an independent writer load and pass compare; F16 and BF16 tensors widen to
# exactly the fp32 values PyTorch's .float() gives, and our narrowing equals PyTorch's .half() and
# .bfloat16(); an unknown tensor is rejected and a tied lm_head.weight accepted.
source "$(dirname "$0")/lib.sh"
PY=${PYTHON:-/usr/bin/python3}
W=$TEST_TMP
$PY scripts/reference.py --layers 2 --heads 4 --channels 64 --vocab 1000 --seq-len 32 -B 2 -T 16 --seed 11 \
    --model-out $W/model --dump-out $W/dump.safetensors --formats-out $W/fmt >/dev/null
check "llm.c v3 written by PyTorch passes compare" "$GPT2" compare --model $W/fmt/llmc_v3.bin --ref $W/dump.safetensors
# raw fp32 of every parameter, in one fixed layout, for bit-for-bit comparisons
raw() { "$GPT2" export --model "$1" --out "$2" --format llmc >/dev/null; }
raw $W/model $W/model.bin
raw $W/fmt/llmc_v3.bin $W/v3.bin
check "llm.c v3 from PyTorch loads bit for bit" cmp $W/v3.bin $W/model.bin
check "llm.c v3 from PyTorch round-trips byte for byte" cmp $W/v3.bin $W/fmt/llmc_v3.bin
raw $W/fmt/llmc_v5.bin $W/v5.bin; raw $W/fmt/bf16_up $W/bf16_up.bin
check "llm.c v5 (bf16) widens as PyTorch's .float()" cmp $W/v5.bin $W/bf16_up.bin
raw $W/fmt/bf16 $W/bf16.bin
check "HF BF16 widens as PyTorch's .float()" cmp $W/bf16.bin $W/bf16_up.bin
raw $W/fmt/f16 $W/f16.bin; raw $W/fmt/f16_up $W/f16_up.bin
check "HF F16 widens as PyTorch's .float()" cmp $W/f16.bin $W/f16_up.bin
"$GPT2" export --model $W/model --out $W/our_f16 --dtype f16 >/dev/null; raw $W/our_f16 $W/our_f16.bin
check "our F16 narrowing equals PyTorch's .half()" cmp $W/our_f16.bin $W/f16_up.bin
"$GPT2" export --model $W/model --out $W/our_bf16 --dtype bf16 >/dev/null; raw $W/our_bf16 $W/our_bf16.bin
check "our BF16 narrowing equals PyTorch's .bfloat16()" cmp $W/our_bf16.bin $W/bf16_up.bin
"$GPT2" export --model $W/model --out $W/our_v5.bin --format llmc --dtype bf16 >/dev/null
check "our llm.c v5 equals PyTorch's" cmp $W/our_v5.bin $W/fmt/llmc_v5.bin
check_error "unknown tensor is rejected by name" "unknown tensor h.0.attn.extra_scale" "$GPT2" info --model $W/fmt/extra
check "tied lm_head.weight is accepted" "$GPT2" compare --model $W/fmt/lm_head --ref $W/dump.safetensors
summary
