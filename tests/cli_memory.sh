#!/usr/bin/env bash
# cli_memory.sh: train's memory options (--recompute, --recompute-blocks, --optimizer-in-backward,
# --optimizer-state bf16 and 8bit) on a scaled-down model, on tiny shakespeare (make data):
#   * 20 steps with --recompute or --recompute-blocks, with --optimizer-in-backward (clipped: two backwards;
#     unclipped: one) and with both give the fp32 run's model bit for bit (the same model.safetensors): so
#     their 200-step runs would end at fp32's val loss to the digit;
#   * 200 steps with --optimizer-state bf16 end within 1% of the fp32 run's val loss, and with the other
#     two it gives the bf16 run's model bit for bit; its moments are saved as BF16 and a stopped bf16 run
#     resumes exactly;
#   * the same for --optimizer-state 8bit (saved as U8 with each block's steps), and its moments resumed as
#     fp32 (exactly) and fp32's resumed as 8 bits (each within half a code's step); a corrupt 8-bit state is
#     refused;
#   * the memory train predicts ("memory: N MiB") is within 10% of the peak it measures ("peak memory: N
#     MiB") for every combination of the flags, at a size where the buffers outweigh the program, and
#     --recompute-blocks keeps fewer activations than --recompute there;
#   * and within 5% at 124M (GPT-2 small) fine-tuned as a user would: from a checkpoint, B=4 T=64, samples
#     on, a validation and a save, then its --resume (which reads the saved moments back), for none of the
#     three and all three (with --recompute-blocks and 8bit), and a resume that converts fp32 moments to bf16
#     (make data's tokenizer; 5 runs of
#     one step, each 124M save about 1.5 GB: the costliest part of make test, so the other sixteen
#     combinations are left to the 10% check above);
#   * the flags it refuses (--grad-accum > 1 with --optimizer-in-backward, a bad --optimizer-state), and the
#     note when both recompute flags are given.
# Under AddressSanitizer (make test SAN=1) a step costs about 50 times more (400 steps: 194 s): the runs are
# short there (10 and 40 steps, two of the eighteen memory combinations), for the sanitizer's sake, and the
# 200-step bars, the other sixteen combinations and the activations check are counted as skipped: make test
# checks them.
source "$(dirname "$0")/lib.sh"
SHORT=20 LONG=200 SAN_NOTE=""
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

within_1pct() {  # A B: val losses within 1% of each other (printed)
    awk -v a="$1" -v b="$2" 'BEGIN { d = (a - b) / b; if (d < 0) d = -d; printf("%s against %s: %.2g\n", a, b, d);
                                      exit !(a > 0 && d <= 0.01) }'
}
ref=$(val_loss $T/fp32.out)
# each form of the moments with a recompute flag (bf16 with --recompute, 8bit with --recompute-blocks)
for form in bf16:--recompute 8bit:--recompute-blocks; do
    st=${form%%:*} rc=${form#*:}
    run $st --optimizer-state $st
    run ${st}_short --steps $SHORT --optimizer-state $st
    run ${st}_all --steps $SHORT --optimizer-state $st --optimizer-in-backward $rc
    check "--optimizer-state $st --optimizer-in-backward $rc: $SHORT steps give the $st run's model bit for bit" \
        cmp $T/${st}_short/model.safetensors $T/${st}_all/model.safetensors
    name="--optimizer-state $st: val loss after $LONG steps within 1% of fp32's"
    if [ -n "$SAN_NOTE" ]; then
        skip "$name $SAN_NOTE"
    else
        check "$name" within_1pct "$(val_loss $T/$st.out)" "$ref"
        cat $T/out
    fi
    check "... and is not fp32's to the digit (the moments really are $st)" \
        bash -c "[ '$(val_loss $T/$st.out)' != '$ref' ]"
    "$GPT2" "${SMALL[@]}" --steps $((2 * SHORT)) --optimizer-state $st --val "" --out $T/${st}whole >/dev/null 2>&1
    "$GPT2" "${SMALL[@]}" --steps $((2 * SHORT)) --optimizer-state $st --val "" --stop-after $SHORT \
        --out $T/${st}half >/dev/null 2>&1
    "$GPT2" train --resume $T/${st}half >/dev/null 2>&1
    check "$st moments: a run stopped at step $SHORT and resumed equals the run of $((2 * SHORT)) steps, bit for bit" \
        cmp $T/${st}whole/model.safetensors $T/${st}half/model.safetensors
done
check "the bf16 moments are saved as BF16" \
    bash -c "head -c 4000 $T/bf16/train_state.safetensors | grep -aq '\"adamw.m\":{\"dtype\":\"BF16\"'"
check "the 8-bit moments are saved as U8, with each block's steps as F32" \
    bash -c "head -c 4000 $T/8bit/train_state.safetensors | grep -aq '\"adamw.m\":{\"dtype\":\"U8\"' &&
             head -c 4000 $T/8bit/train_state.safetensors | grep -aq '\"adamw.v_step\":{\"dtype\":\"F32\"'"
# Resumed in another form. 8 bits to fp32 reads each value exactly: a step from there gives the 8-bit run's
# step bit for bit (the 8-bit update reads its moments into fp32 the same way). fp32 to 8 bits rounds each
# value to the nearest code: saved at once (--steps at the checkpoint's step) and read back as fp32, each
# moment is within half a code's step of the original, |x| / 16, or below the normal codes half the
# subnormals' step: 2^-18 of its block's largest for m, 2^-34 for v.
"$GPT2" train --resume $T/8bit --steps $((LONG + 1)) --optimizer-state fp32 --out $T/q8to32 >/dev/null 2>&1
"$GPT2" train --resume $T/8bit --steps $((LONG + 1)) --out $T/q8on >/dev/null 2>&1
check "8-bit moments resumed as fp32: a step gives the 8-bit run's step bit for bit" \
    cmp $T/q8on/model.safetensors $T/q8to32/model.safetensors
"$GPT2" train --resume $T/fp32 --steps $LONG --optimizer-state 8bit --out $T/to8 >/dev/null 2>&1
"$GPT2" train --resume $T/to8 --steps $LONG --optimizer-state fp32 --out $T/back32 >/dev/null 2>&1
# moments_near A B: A's F32 moments (adamw.m, adamw.v) within half a code's step of B's (printed)
moments_near() {
    perl -e 'sub t { open(my $f, "<", $_[0]) or die "$_[0]\n"; binmode $f; local $/; my $b = <$f>;
                 my $n = unpack("Q<", substr($b, 0, 8)); my $h = substr($b, 8, $n);
                 $h =~ /"$_[1]":\{"dtype":"F32","shape":\[\d+\],"data_offsets":\[(\d+),(\d+)\]/ or die "$_[1]\n";
                 return unpack("f<*", substr($b, 8 + $n + $1, $2 - $1)); }
             my ($far, $n, $worst) = (0, 0, 0);
             for my $k ("adamw.m", "adamw.v") {
                 my @a = t($ARGV[0], $k); my @b = t($ARGV[1], $k); die "sizes\n" if @a != @b || !@a;
                 my $sub = $k eq "adamw.m" ? 2**-18 : 2**-34;
                 for (my $s = 0; $s < @b; $s += 64) {
                     my $big = 0; for my $i ($s .. $s + 63) { $big = abs($b[$i]) if abs($b[$i]) > $big; }
                     for my $i ($s .. $s + 63) { my $d = abs($a[$i] - $b[$i]);
                         my $r = $d ? $d / (abs($b[$i]) + $big * $sub) : 0;
                         $worst = $r if $r > $worst; $far++ if $d > abs($b[$i]) / 16 + $big * $sub; $n++; } } }
             printf("%d moments, %d beyond half a code step (worst %.4f of the value)\n", $n, $far, $worst);
             exit !($n > 0 && $far == 0 && $worst > 0);' "$1" "$2"
}
check "fp32 moments resumed as 8 bits and saved, then read back as fp32: each within half a code's step" \
    moments_near $T/back32/train_state.safetensors $T/fp32/train_state.safetensors
cat $T/out

# A corrupt 8-bit train state: a step tensor missing, and a negative step for m (which would flip the sign of
# every m of its block without the check: the codes alone stay valid), each one line naming the file.
cp -r $T/8bit $T/q8bad && perl -pi -e 's/adamw\.v_step/adamw.v_stex/' $T/q8bad/train_state.safetensors
check_error "a resume refuses an 8-bit state without adamw.v_step" \
    "bad train state ($T/q8bad/train_state.safetensors): expected tensor adamw.v_step as F32" \
    "$GPT2" train --resume $T/q8bad --steps $((LONG + 1))
cp $T/8bit/train_state.safetensors $T/q8bad/
perl -e 'open(my $f, "+<", $ARGV[0]) or die; binmode $f; read($f, my $n8, 8); my $n = unpack("Q<", $n8);
         read($f, my $h, $n); $h =~ /"adamw.m_step":\{[^}]*"data_offsets":\[(\d+),/ or die;
         seek($f, 8 + $n + $1, 0); print $f pack("f<", -1.0);' $T/q8bad/train_state.safetensors
check_error "... and one whose first m step is negative" \
    "bad train state ($T/q8bad/train_state.safetensors): AdamW moments at 0: expected finite values" \
    "$GPT2" train --resume $T/q8bad --steps $((LONG + 1))

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
        for st in fp32 bf16 8bit; do
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
    for flags in "--optimizer-state fp32" "--recompute-blocks --optimizer-in-backward --optimizer-state 8bit"; do
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

"$GPT2" "${SMALL[@]}" --steps 1 --val "" --recompute --recompute-blocks >$T/both.out 2>&1
check "--recompute with --recompute-blocks: a note says the latter alone applies" \
    grep -q '^note: --recompute-blocks keeps less than --recompute, with the same numbers: it alone applies$' $T/both.out
check_error "--optimizer-in-backward refuses --grad-accum 2" "grad-accum.*optimizer-in-backward" \
    "$GPT2" "${SMALL[@]}" --optimizer-in-backward --grad-accum 2
check_error "a bad --optimizer-state is named" "optimizer-state.*expected fp32, bf16 or 8bit" \
    "$GPT2" "${SMALL[@]}" --optimizer-state fp16
check_error "--optimizer-state 8bit refuses n_embd 96, naming it" \
    "optimizer-state.*8bit moments come in blocks of 64: n_embd 96 is not a multiple of 64" \
    "$GPT2" "${SMALL[@]}" --channels 96 --optimizer-state 8bit
summary
