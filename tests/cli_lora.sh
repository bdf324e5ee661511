#!/usr/bin/env bash
# cli_lora.sh: train --lora on tiny shakespeare (make data), from a small base trained here:
#   * the base's files stay bit for bit what they were, and the LoRA run's --out holds the adapter (PEFT's two
#     files) and its train state, never the base's weights;
#   * a LoRA run starts at the base's loss (B = 0: its first step's loss is a full fine-tune's from the same
#     base), its loss goes down, and eval --lora-from gives its last val loss to the digit;
#   * a LoRA run stopped and resumed equals an uninterrupted one bit for bit (losses and adapter);
#   * generate --lora-from samples from base + adapter;
#   * on an int8 or a bf16 base (--recompute), the same bits as on the fp32 base of the same values (the base's
#     q8_0 GGUF or bf16 export), and from an llm.c file as from a HuggingFace directory; such a base is held so
#     as it loads, each block matrix's fp32 values given back as soon as it is read: the peak stays near what
#     training holds, not the fp32 base's size (as it was when the base was read whole first);
#   * every error: rank 0 or larger than a target, an unknown target, --lora without --model, the flags it
#     cannot combine with, dropout, an adapter of another geometry, a resume on a changed base, a resumed run's
#     adapter flags changed, --lora added to a resumed full run, eval --hellaswag with --lora-from.
source "$(dirname "$0")/lib.sh"
T=$TEST_TMP
need_shakespeare "LoRA on tiny shakespeare"
DATA=(--train $TRAIN --val $VAL -B 4 -T 64 --sample-tokens 0)
"$GPT2" train "${DATA[@]}" --layers 2 --heads 2 --channels 64 --seq-len 64 --steps 40 --lr 3e-3 --val-every 0 \
    --out $T/base >$T/base.out 2>&1 || { echo "base training failed:"; tail -3 $T/base.out; }
sha256sum $T/base/* >$T/base.sum
LORA=(train "${DATA[@]}" --model $T/base --lora 4 --lora-targets c_attn,c_proj,c_fc --lr 1e-2 --warmup 2)
first_loss() { grep -o '^step *1/[0-9]* | loss [0-9.]*' "$1" | grep -o '[0-9.]*$'; }
step_lines() { grep -o '^step *[0-9]*/[0-9]* | loss [0-9.]* | lr [0-9.e+-]* | norm [0-9.]*' "$1"; }

# --- training, the base, what is saved -------------------------------------------------------------------
"$GPT2" "${LORA[@]}" --steps 60 --val-every 60 --log $T/ad.jsonl --out $T/ad >$T/ad.out 2>&1
check "a LoRA run trains and saves (rank 4 on c_attn, c_proj, c_fc)" grep -q 'saved .*/ad at step 60' $T/ad.out
check "... leaving every file of its base bit for bit as it was" sha256sum -c --quiet $T/base.sum
check "... saving the adapter in PEFT's layout and its train state, not the base's weights" \
    test -f $T/ad/adapter_config.json -a -f $T/ad/adapter_model.safetensors -a -f $T/ad/train_state.safetensors \
    -a ! -e $T/ad/model.safetensors -a ! -e $T/ad/config.json
"$GPT2" train "${DATA[@]}" --model $T/base --lr 1e-2 --warmup 2 --steps 1 --val-every 0 >$T/full.out 2>&1
check "its first step's loss is the base's (B = 0), as a full fine-tune's from it ($(first_loss $T/full.out))" \
    test -n "$(first_loss $T/full.out)" -a "$(first_loss $T/ad.out)" = "$(first_loss $T/full.out)"
"$GPT2" eval --model $T/base --data $VAL -B 4 -T 64 --batches 8 >$T/eval_base.out 2>&1
"$GPT2" eval --model $T/base --lora-from $T/ad --data $VAL -B 4 -T 64 --batches 8 >$T/eval_ad.out 2>&1
base_val=$(grep -o '^loss [0-9.]*' $T/eval_base.out | cut -d' ' -f2)
ad_val=$(grep -o '^loss [0-9.]*' $T/eval_ad.out | cut -d' ' -f2)
check "its val loss goes down: $base_val (base) to $ad_val" \
    awk -v a="$ad_val" -v b="$base_val" 'BEGIN { exit !(a != "" && b != "" && a + 0.005 < b) }'
check "eval --lora-from gives the run's last val loss to the digit ($(val_loss $T/ad.out))" \
    test "$ad_val" = "$(val_loss $T/ad.out)"
check "the log holds its 60 steps and its val loss" test "$(log_losses $T/ad.jsonl | wc -l)" = 61
"$GPT2" generate --model $T/base --lora-from $T/ad --prompt-ids 0 --ids -n 8 --temperature 0 >$T/gen.out 2>$T/gen.err
check "generate --lora-from samples from base + adapter" grep -q "lora: $T/ad (rank 4" $T/gen.err

# --- resume, with dropout (PEFT's lora_dropout: its masks depend on the step, so a resume redraws them) --------
"$GPT2" "${LORA[@]}" --lora-dropout 0.1 --steps 30 --val-every 10 --out $T/whole >$T/whole.out 2>&1
"$GPT2" "${LORA[@]}" --lora-dropout 0.1 --steps 30 --val-every 10 --stop-after 15 --out $T/part >$T/part.out 2>&1
"$GPT2" train --resume $T/part >$T/resumed.out 2>&1
check "a LoRA run with --lora-dropout 0.1 says so and writes it to adapter_config.json" \
    eval 'grep -q "^lora: rank 4, alpha 8 (scale 2, dropout 0.1)" $T/whole.out && grep -q "\"lora_dropout\": 0.1," $T/whole/adapter_config.json'
check "... trains otherwise than without it (step 2 on)" \
    test "$(step_lines $T/whole.out | sed -n 2p)" != "$("$GPT2" "${LORA[@]}" --steps 2 --val-every 0 2>&1 | step_lines /dev/stdin | sed -n 2p)"
check "... stopped at step 15 and resumed, gives the uninterrupted run's steps" \
    diff <(step_lines $T/whole.out | tail -15) <(step_lines $T/resumed.out)
check "... and its adapter, bit for bit" cmp $T/whole/adapter_model.safetensors $T/part/adapter_model.safetensors
"$GPT2" eval --model $T/base --lora-from $T/whole --data $VAL -B 4 -T 64 --batches 8 >$T/eval_whole.out 2>&1
check "... and validates without dropout: eval --lora-from gives its last val loss ($(val_loss $T/whole.out))" \
    test -n "$(val_loss $T/whole.out)" -a "$(grep -o '^loss [0-9.]*' $T/eval_whole.out | cut -d' ' -f2)" = "$(val_loss $T/whole.out)"

# --recompute-blocks runs each block's forward again in the backward, the adapters' too: their dropout masks
# must come out the same, in every micro-batch (--grad-accum 2).
"$GPT2" "${LORA[@]}" --lora-dropout 0.1 --grad-accum 2 --steps 6 --val-every 0 --out $T/dr >$T/dr.out 2>&1
"$GPT2" "${LORA[@]}" --lora-dropout 0.1 --grad-accum 2 --steps 6 --val-every 0 --recompute-blocks --out $T/dr_rb \
    >$T/dr_rb.out 2>&1
check "... with --recompute-blocks and --grad-accum 2, the same steps and adapter, bit for bit" \
    eval 'test -n "$(step_lines $T/dr.out)" -a "$(step_lines $T/dr.out)" = "$(step_lines $T/dr_rb.out)" &&
          cmp $T/dr/adapter_model.safetensors $T/dr_rb/adapter_model.safetensors'

# --- an int8 and a bf16 base, --recompute ---------------------------------------------------------------------
# The base's q8_0 GGUF export (bf16 export) is an fp32 base holding the values --precision int8 quantizes
# (bf16 rounds) it to: the same run on it, without --recompute, must give the same bits.
"$GPT2" export --model $T/base --format gguf --dtype q8_0 --out $T/base_int8.gguf >$T/x8.out 2>&1
"$GPT2" export --model $T/base --dtype bf16 --out $T/base_bf16 >$T/x16.out 2>&1
for p in "int8:base_int8.gguf:int8, 10 of 10 weight matrices in q8_0 blocks" \
    "bf16:base_bf16:bf16 base, .* 8 of 10 matrices held as bf16 alone"; do
    prec=${p%%:*} copy=$(cut -d: -f2 <<<"$p") said=${p#*:*:}
    "$GPT2" "${LORA[@]}" --steps 12 --val-every 12 --precision $prec --recompute --out $T/ad_$prec >$T/ad_$prec.out 2>&1
    "$GPT2" train "${DATA[@]}" --model $T/$copy --lora 4 --lora-targets c_attn,c_proj,c_fc --lr 1e-2 --warmup 2 \
        --steps 12 --val-every 12 --out $T/of_$prec >$T/of_$prec.out 2>&1
    check "--precision $prec holds the base so and gives its fp32 block matrices back" \
        awk "/^precision: $said/"' && / MiB of their fp32 values given back/ {
            for (i = 1; i < NF; i++) if ($(i + 1) == "MiB") found = $i + 0 > 0 } END { exit !found }' $T/ad_$prec.out
    check "... --recompute keeps fewer activations ($(acts $T/ad_$prec.out) MiB against $(acts $T/ad.out))" \
        test -n "$(acts $T/ad_$prec.out)" -a "$(acts $T/ad_$prec.out)" -lt "$(acts $T/ad.out)"
    check "... and with --recompute trains as the fp32 base of the same values ($copy) without: steps" \
        test -n "$(step_lines $T/of_$prec.out)" -a "$(step_lines $T/ad_$prec.out)" = "$(step_lines $T/of_$prec.out)"
    check "... and adapter, bit for bit" cmp $T/ad_$prec/adapter_model.safetensors $T/of_$prec/adapter_model.safetensors
    check "... a base other than the fp32 one: first loss $(first_loss $T/ad_$prec.out) against $(first_loss $T/ad.out)" \
        test -n "$(first_loss $T/ad_$prec.out)" -a "$(first_loss $T/ad_$prec.out)" != "$(first_loss $T/ad.out)"
    "$GPT2" eval --model $T/base --precision $prec --lora-from $T/ad_$prec --data $VAL -B 4 -T 64 --batches 8 >$T/ev.out 2>&1
    check "eval --precision $prec --lora-from gives the $prec run's last val loss ($(val_loss $T/ad_$prec.out))" \
        test -n "$(val_loss $T/ad_$prec.out)" -a "$(grep -o '^loss [0-9.]*' $T/ev.out | cut -d' ' -f2)" = "$(val_loss $T/ad_$prec.out)"
done

# An llm.c file is read whole, then held in int8 a tensor at a time (a HuggingFace directory: as each is read):
# the same values, the same bits.
"$GPT2" export --model $T/base --format llmc --out $T/base.bin >$T/llmc.out 2>&1
"$GPT2" train "${DATA[@]}" --model $T/base.bin --lora 4 --lora-targets c_attn,c_proj,c_fc --lr 1e-2 --warmup 2 \
    --steps 12 --val-every 12 --precision int8 --recompute --out $T/ad_llmc >$T/ad_llmc.out 2>&1
check "--precision int8 on the base's llm.c export trains as on its HuggingFace directory: steps and adapter" \
    eval 'test -n "$(step_lines $T/ad_llmc.out)" -a "$(step_lines $T/ad_llmc.out)" = "$(step_lines $T/ad_int8.out)" &&
          cmp $T/ad_llmc/adapter_model.safetensors $T/ad_int8/adapter_model.safetensors'
# Memory: 8 layers of 768 channels and a vocabulary of 1000 (57.5M parameters, 219 MiB in fp32, 95% of it in
# the block matrices). Read whole in fp32 first, the base set the run's peak at its fp32 size (GPT-2 XL: 6305 MiB
# against the 5185 MiB training holds; here 236 MiB against 66 in int8, 237 against 116 in bf16); held so as it
# loads, the peak is what training holds and the program (19 MiB here). The bar: a quarter of the fp32 size.
TOK=tests/fixtures/tokens_v1000.bin
"$GPT2" train --train $TOK --val '' --sample-tokens 0 --layers 8 --heads 12 --channels 768 --seq-len 64 --vocab 1000 \
    -B 1 -T 16 --steps 0 --out $T/wide >$T/wide.out 2>&1
fp32_mib=$(($(stat -c %s $T/wide/model.safetensors) / 1048576))
for prec in int8 bf16; do
    "$GPT2" train --train $TOK --val '' --sample-tokens 0 --model $T/wide -B 1 -T 16 --steps 1 --lora 4 \
        --precision $prec --recompute >$T/wide_$prec.out 2>&1
    held=$(grep -m1 -o '^memory: [0-9]*' $T/wide_$prec.out | cut -d' ' -f2)  # what training holds
    peak=$(grep -o '^peak memory: [0-9]*' $T/wide_$prec.out | cut -d' ' -f3)
    bar=$((${held:-0} + fp32_mib / 4))
    if under_asan; then skip "the peak of a base held so as it loads: AddressSanitizer keeps freed memory"; continue; fi
    check "--precision $prec, the base held so as it loads: peak ${peak:-?} MiB < $bar (${held:-?} training holds + $fp32_mib / 4)" \
        test -n "$peak" -a -n "$held" -a "${peak:-0}" -lt $bar
done

# --- errors ----------------------------------------------------------------------------------------------
check_error "--lora 0 is refused" "bad value for --lora" "$GPT2" "${LORA[@]}" --lora 0 --steps 1
check_error "a rank past a target's smaller side is refused" "expected a rank in \[1, 64\]" \
    "$GPT2" "${LORA[@]}" --lora 65 --steps 1
check_error "an unknown target is refused" "bad value for --lora-targets.*got 'wte'" \
    "$GPT2" "${LORA[@]}" --lora-targets c_attn,wte --steps 1
check_error "--lora needs --model" "missing flag --model (train): --lora" \
    "$GPT2" train "${DATA[@]}" --lora 4 --steps 1
for flag in --optimizer-in-backward "--optimizer-state bf16" "--optimizer-state 8bit"; do
    check_error "--lora with $flag is refused, saying why" "conflicting flags (train): --lora cannot take ${flag}:" \
        "$GPT2" "${LORA[@]}" $flag --steps 1
done
check_error "--lora-dropout past 1 is refused" "bad value for --lora-dropout" \
    "$GPT2" "${LORA[@]}" --lora-dropout 1.5 --steps 1
"$GPT2" train "${DATA[@]}" --layers 3 --heads 2 --channels 64 --seq-len 64 --steps 1 --val-every 0 \
    --out $T/base3 >/dev/null 2>&1
"$GPT2" train "${DATA[@]}" --model $T/base3 --lora 4 --steps 1 --val-every 0 --out $T/ad3 >/dev/null 2>&1
check "(the other geometry's adapter was written)" test -s $T/ad3/adapter_model.safetensors
check_error "an adapter of another geometry is refused (--lora-from)" "unexpected tensor .* in $T/ad3/adapter_model.safetensors" \
    "$GPT2" train "${DATA[@]}" --model $T/base --lora-from $T/ad3 --steps 1
check_error "... and by eval --lora-from" "unexpected tensor .* in $T/ad3/adapter_model.safetensors" \
    "$GPT2" eval --model $T/base --lora-from $T/ad3 --data $VAL -B 4 -T 64 --batches 1
"$GPT2" train "${DATA[@]}" --model $T/base --lora-from $T/ad --steps 1 --val-every 0 >$T/from.out 2>&1
check "--lora-from alone trains its adapter, with its rank and targets" grep -q "^lora: rank 4, .* on c_attn,c_proj,c_fc" $T/from.out
check_error "--lora with --lora-from is refused (the adapter brings its rank)" \
    "conflicting flags (train): --lora-from .* drop --lora$" "$GPT2" "${LORA[@]}" --lora-from $T/ad --steps 1
check_error "--lora-alpha without --lora is refused (not a silent full fine-tune)" \
    "flag --lora-alpha (train) needs --lora" "$GPT2" train "${DATA[@]}" --model $T/base --lora-alpha 16 --steps 1
check_error "--lora-alpha 0 (a scale of 0: nothing trains) is refused" "bad value for --lora-alpha (train): expected a number above 0" \
    "$GPT2" "${LORA[@]}" --lora-alpha 0 --steps 1
cp -r $T/ad $T/ad_drop && sed -i 's/"lora_dropout": 0.0/"lora_dropout": 0.05/' $T/ad_drop/adapter_config.json
"$GPT2" train "${DATA[@]}" --model $T/base --lora-from $T/ad_drop --steps 1 --val-every 0 >$T/from_drop.out 2>&1
check "--lora-from an adapter whose config asks for dropout trains with it" \
    grep -q "^lora: rank 4, alpha 8 (scale 2, dropout 0.05)" $T/from_drop.out
cp -r $T/base $T/base2
"$GPT2" train "${DATA[@]}" --model $T/base2 --lora 4 --steps 4 --stop-after 2 --val-every 0 --out $T/ad2 >/dev/null 2>&1
cp $T/base3/model.safetensors $T/base2/model.safetensors  # another model's weights (its first 2 layers' shapes differ)
"$GPT2" train "${DATA[@]}" --layers 2 --heads 2 --channels 64 --seq-len 64 --steps 1 --seed 7 --val-every 0 \
    --out $T/other >/dev/null 2>&1
cp $T/other/model.safetensors $T/base2/model.safetensors  # the same geometry, other weights
check_error "a resume on a changed base is refused" "base model changed since the checkpoint" \
    "$GPT2" train --resume $T/ad2
check_error "a resumed LoRA run keeps its adapter's flags" "bad value for --lora-alpha (train): a resumed run keeps" \
    "$GPT2" train --resume $T/part --lora-alpha 16
check_error "--lora added to a resumed full run is refused" "bad value for --lora (train): a resumed run keeps its training without --lora" \
    "$GPT2" train --resume $T/base --lora 4
# A NaN in h.1's mlp.c_proj.weight (the file's last matrix, before 64 + 2 x 64 floats of biases): found before
# its fp32 values would be given back.
mkdir -p $T/nan_base && cp $T/base/config.json $T/base/model.safetensors $T/nan_base/
size=$(stat -c %s $T/nan_base/model.safetensors)
printf '\x00\x00\xc0\x7f' | dd of=$T/nan_base/model.safetensors bs=1 seek=$((size - 4 * 192 - 4)) conv=notrunc 2>/dev/null
check_error "an int8 base with a NaN in a block matrix is refused as it loads, naming it" \
    "non-finite parameter ($T/nan_base): h.1.mlp.c_proj.weight\[" \
    "$GPT2" train "${DATA[@]}" --model $T/nan_base --lora 4 --precision int8 --steps 1
check_error "eval --hellaswag with --lora-from is refused" "conflicting flags (eval): --lora-from" \
    "$GPT2" eval --model $T/base --lora-from $T/ad --hellaswag tests/fixtures/hellaswag_tiny.jsonl
summary
