#!/usr/bin/env bash
# cli_memory.sh: train's memory options (--recompute, --recompute-blocks, --optimizer-in-backward,
# --optimizer-state bf16) on a scaled-down model, on tiny shakespeare (make data):
#   * 50 steps with --recompute or --recompute-blocks, with --optimizer-in-backward (clipped: two backwards;
#     unclipped: one) and with both give the fp32 run's model bit for bit (the same model.safetensors): so
#     their 200-step runs would end at fp32's val loss to the digit;
#   * 200 steps with --optimizer-state bf16 end within 1% of the fp32 run's val loss, and with the other
#     two it gives the bf16 run's model bit for bit; its moments are saved as BF16 and a stopped bf16 run
#     resumes exactly;
#   * the memory train predicts ("memory: N MiB") is within 10% of the peak it measures ("peak memory: N
#     MiB") for every combination of the flags, at a size where the buffers outweigh the program, and
#     --recompute-blocks keeps fewer activations than --recompute there;
#   * and within 5% at 124M (GPT-2 small) fine-tuned as a user would: from a checkpoint, B=4 T=64, samples
#     on, a validation and a save, then its --resume (which reads the saved moments back), for none of the
#     three and all three, and a resume that converts fp32 moments to bf16 (make data's tokenizer; 5 runs of
#     one step, each 124M save about 1.5 GB: the costliest part of make test, so the other ten combinations
#     are left to the 10% check above);
#   * the flags it refuses (--grad-accum > 1 with --optimizer-in-backward, a bad --optimizer-state).
# Under AddressSanitizer (make test SAN=1) a step costs about 50 times more (400 steps: 194 s): the runs are
# short there (10 and 40 steps, two of the twelve memory combinations), for the sanitizer's sake, and the
# 200-step bars, the other ten combinations and the activations check are counted as skipped: make test checks
# them.
source "$(dirname "$0")/lib.sh"
SHORT=50 LONG=200 SAN_NOTE=""
if under_asan; then
    SHORT=10 LONG=40 SAN_NOTE="under AddressSanitizer (checked by make test)"
fi
T=$TEST_TMP
TRAIN=data/tinyshakespeare/train.bin VAL=data/tinyshakespeare/val.bin
if [ ! -f $TRAIN ] || [ ! -f $VAL ]; then
    skip "memory options on tiny shakespeare: $TRAIN or $VAL not found (make data)"
    summary; exit
fi
SMALL=(train --train $TRAIN --val $VAL --layers 2 --heads 2 --channels 64 --seq-len 64 -B 2 -T 64 --steps $LONG
       --lr 3e-3 --val-every $LONG --val-batches 16 --sample-tokens 0)
run() {  # NAME FLAGS...: $LONG steps (unless FLAGS say otherwise) saved to $T/NAME
    local name=$1; shift
    "$GPT2" "${SMALL[@]}" --out $T/$name "$@" >$T/$name.out 2>&1 || { echo "train $name failed:"; tail -3 $T/$name.out; }
}
run fp32_short --steps $SHORT
run recompute --steps $SHORT --recompute
run inback --steps $SHORT --optimizer-in-backward
run inback_rc --steps $SHORT --optimizer-in-backward --recompute
run blocks --steps $SHORT --recompute-blocks
run inback_rb --steps $SHORT --optimizer-in-backward --recompute-blocks
run fp32_noclip --steps $SHORT --grad-clip 0
run inback_noclip --steps $SHORT --grad-clip 0 --optimizer-in-backward
for v in "recompute:--recompute" "inback:--optimizer-in-backward" "inback_rc:--optimizer-in-backward --recompute" \
    "blocks:--recompute-blocks" "inback_rb:--optimizer-in-backward --recompute-blocks"; do
    check "${v#*:}: $SHORT steps give the fp32 run's model bit for bit" \
        cmp $T/fp32_short/model.safetensors $T/${v%%:*}/model.safetensors
done
check "--optimizer-in-backward --grad-clip 0 (one backward): the unclipped run's model bit for bit" \
    cmp $T/fp32_noclip/model.safetensors $T/inback_noclip/model.safetensors
check "... and clipping mattered (the clipped and unclipped models differ)" \
    bash -c "! cmp -s $T/fp32_short/model.safetensors $T/fp32_noclip/model.safetensors"
run fp32

run bf16 --optimizer-state bf16
run bf16_short --steps $SHORT --optimizer-state bf16
run bf16_all --steps $SHORT --optimizer-state bf16 --optimizer-in-backward --recompute
check "--optimizer-state bf16 --optimizer-in-backward --recompute: $SHORT steps give the bf16 run's model bit for bit" \
    cmp $T/bf16_short/model.safetensors $T/bf16_all/model.safetensors
within_1pct() {  # A B: val losses within 1% of each other (printed)
    awk -v a="$1" -v b="$2" 'BEGIN { d = (a - b) / b; if (d < 0) d = -d; printf("%s against %s: %.2g\n", a, b, d);
                                      exit !(a > 0 && d <= 0.01) }'
}
ref=$(val_loss $T/fp32.out)
name="--optimizer-state bf16: val loss after $LONG steps within 1% of fp32's"
if [ -n "$SAN_NOTE" ]; then
    skip "$name $SAN_NOTE"
else
    check "$name" within_1pct "$(val_loss $T/bf16.out)" "$ref"
    cat $T/out
fi
check "... and is not fp32's to the digit (the moments really are bf16)" \
    bash -c "[ '$(val_loss $T/bf16.out)' != '$ref' ]"
check "the bf16 moments are saved as BF16" \
    bash -c "head -c 4000 $T/bf16/train_state.safetensors | grep -aq '\"adamw.m\":{\"dtype\":\"BF16\"'"
"$GPT2" "${SMALL[@]}" --steps $((2 * SHORT)) --optimizer-state bf16 --val "" --out $T/whole >/dev/null 2>&1
"$GPT2" "${SMALL[@]}" --steps $((2 * SHORT)) --optimizer-state bf16 --val "" --stop-after $SHORT --out $T/half \
    >/dev/null 2>&1
"$GPT2" train --resume $T/half >$T/resumed.out 2>&1
check "a bf16-moments run stopped at step $SHORT and resumed equals the run of $((2 * SHORT)) steps, bit for bit" \
    cmp $T/whole/model.safetensors $T/half/model.safetensors

# prediction_within PCT OUT: train's predicted memory ("memory: N MiB") within PCT% of the peak it measured
# ("peak memory: N MiB"), both in OUT (printed).
prediction_within() {
    awk -v pct="$1" -v p="$(grep -o '^memory: [0-9]*' "$2" | cut -d' ' -f2)" \
        -v m="$(grep -o '^peak memory: [0-9]*' "$2" | cut -d' ' -f3)" 'BEGIN { d = (p - m) / m; if (d < 0) d = -d;
            printf("predicted %d MiB, measured %d MiB: %.1f%%\n", p, m, 100 * d); exit !(m > 0 && d <= pct / 100) }'
}

# The prediction against the measured peak, at a size where the buffers (about 150-400 MiB) outweigh the
# program itself (about 8 MiB).
MID=(train --train $TRAIN --val "" --layers 4 --heads 4 --channels 256 --seq-len 256 -B 4 -T 256 --steps 1
     --sample-tokens 0)
for rc in "" --recompute --recompute-blocks; do
    for ib in "" --optimizer-in-backward; do
        for st in fp32 bf16; do
            flags=$(echo $rc $ib --optimizer-state $st)
            name="predicted memory within 10% of the peak measured, with $flags"
            if [ -n "$SAN_NOTE" ] && [ "$flags" != "--optimizer-state fp32" ] &&
                [ "$flags" != "--recompute --optimizer-in-backward --optimizer-state bf16" ]; then
                skip "$name $SAN_NOTE"; continue
            fi
            "$GPT2" "${MID[@]}" $flags >$T/mem.out 2>&1
            check "$name" prediction_within 10 $T/mem.out
            cat $T/out
            kept=${rc#--}
            [ "$ib$st" = fp32 ] && cp $T/mem.out $T/mem_${kept:-plain}.out
        done
    done
done
name="activations: --recompute-blocks keeps fewer than --recompute, which keeps fewer than neither"
if [ -n "$SAN_NOTE" ]; then
    skip "$name $SAN_NOTE"
else
    a=$(acts $T/mem_recompute-blocks.out) b=$(acts $T/mem_recompute.out) c=$(acts $T/mem_plain.out)
    check "$name ($a, $b and $c MiB)" \
        test -n "$a" -a -n "$b" -a -n "$c" -a "${a:-0}" -lt "${b:-0}" -a "${b:-0}" -lt "${c:-0}"
fi

# At 124M, as a user fine-tunes: a random GPT-2 small checkpoint (written by train itself, --steps 0), one
# step from it with samples on (the default --sample-tokens 64), a validation and a save; then a step more
# from that checkpoint with --resume. The peak covers the save (the model written in HuggingFace's layout),
# the sample (its KV cache) and the resume's read of the moments.
TOK_DIR=${GPT2_DATA_DIR:-data}/gpt2
M124=(train --model $T/gpt2-124m --train $TRAIN --val $VAL -B 4 -T 64 --val-batches 1 --tokenizer $TOK_DIR)
if [ -n "$SAN_NOTE" ] || [ ! -f $TOK_DIR/encoder.json ]; then
    why=${SAN_NOTE:-"(no tokenizer in $TOK_DIR: make data)"}
    skip "predicted memory within 5% of the peak at 124M, fine-tuned and resumed with samples on, two combinations $why"
else
    "$GPT2" train --train $TRAIN --val "" --layers 12 --heads 12 --channels 768 --seq-len 1024 --steps 0 \
        --sample-tokens 0 --out $T/gpt2-124m >/dev/null 2>&1
    sampled_within_5pct() { grep -q '^---- sample ----' "$1" && prediction_within 5 "$1"; }
    for flags in "--optimizer-state fp32" "--recompute --optimizer-in-backward --optimizer-state bf16"; do
        rm -rf $T/ft
        "$GPT2" "${M124[@]}" --steps 1 $flags --out $T/ft >$T/ft.out 2>&1
        check "124M, $flags: predicted memory within 5% of the peak of a step, a sample and a save" \
            sampled_within_5pct $T/ft.out
        cat $T/out
        if [ "$flags" = "--optimizer-state fp32" ]; then
            "$GPT2" train --resume $T/ft --steps 2 --optimizer-state bf16 --out $T/ft16 >$T/rs.out 2>&1
            check "... its --resume with --optimizer-state bf16 (the fp32 moments rounded as they are read)" \
                sampled_within_5pct $T/rs.out
            cat $T/out
            rm -rf $T/ft16
        fi
        "$GPT2" train --resume $T/ft --steps 2 >$T/rs.out 2>&1
        check "... and its --resume (the moments read back), within 5%" sampled_within_5pct $T/rs.out
        cat $T/out
    done
    rm -rf $T/ft $T/gpt2-124m
fi

check_error "--optimizer-in-backward refuses --grad-accum 2" "grad-accum.*optimizer-in-backward" \
    "$GPT2" "${SMALL[@]}" --optimizer-in-backward --grad-accum 2
check_error "a bad --optimizer-state is named" "optimizer-state.*expected fp32 or bf16" \
    "$GPT2" "${SMALL[@]}" --optimizer-state fp16
summary
