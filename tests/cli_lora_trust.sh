#!/usr/bin/env bash
# cli_lora_trust.sh: a LoRA run's ties to its base and to its own files (issue 56, "trust round four"), on a tiny
# base trained here:
#   * --out that is the --lora-from adapter itself is refused, --overwrite or not (the run's own work);
#   * a resumed run's adapter_config.json must agree with its train state (r, lora_alpha, target_modules), and a
#     config's lora_alpha must be above 0;
#   * the adapter written names the base it was trained on (absolute), and a resume works from another directory,
#     or with --model pointing at the moved base (its fingerprint checked);
#   * eval, generate and export --lora-from on a base other than the run's are refused (--force-base: a note);
#   * the words: a resumed run's own --lora flags accepted (targets in any order), info on a LoRA run, --lora-from
#     on a model checkpoint, the range errors, the sample line's --precision, the program as typed in hints.
source "$(dirname "$0")/lib.sh"
T=$TEST_TMP
need_shakespeare "LoRA trust on tiny shakespeare"
DATA=(--train $TRAIN --val $VAL -B 4 -T 64 --sample-tokens 0 --val-every 0)
GEOM=(--layers 2 --heads 2 --channels 64 --seq-len 64)
"$GPT2" train "${DATA[@]}" "${GEOM[@]}" --steps 2 --out $T/base >/dev/null 2>&1
"$GPT2" train "${DATA[@]}" "${GEOM[@]}" --steps 2 --seed 7 --out $T/base_b >/dev/null 2>&1
"$GPT2" train "${DATA[@]}" --model $T/base --lora 4 --steps 4 --stop-after 2 --out $T/ad >$T/ad.out 2>&1
check "(the fixtures: two bases and a LoRA run at step 2)" \
    test -s $T/base_b/model.safetensors -a -s $T/ad/train_state.safetensors
abs() { (cd "$(dirname "$1")" && echo "$(pwd -P)/$(basename "$1")"); }

# --- 1. --out is the --lora-from adapter: the run's own work is never replaced -------------------------------
sha256sum $T/ad/* >$T/ad.sum
for over in "" --overwrite; do
    check_error "--out that is the --lora-from adapter is refused${over:+ (with $over too)}" \
        "bad value for --out (train): .* holds the --lora-from adapter this run starts from" \
        "$GPT2" train "${DATA[@]}" --model $T/base --lora-from $T/ad --out $T/./ad $over --steps 2
done
check "... leaving the adapter and its train state as they were" sha256sum -c --quiet $T/ad.sum

# --- 2. adapter_config.json against the train state --------------------------------------------------------
cp -r $T/ad $T/ad_alpha && sed -i 's/"lora_alpha": 8/"lora_alpha": 16/' $T/ad_alpha/adapter_config.json
check_error "a resumed run's config edited to another lora_alpha is refused, naming the file and the key" \
    "key lora_alpha in $T/ad_alpha/adapter_config.json: 16 .* train state .* 8" "$GPT2" train --resume $T/ad_alpha
cp -r $T/ad $T/ad_tg && sed -i 's/"c_attn"/"c_attn", "c_fc"/' $T/ad_tg/adapter_config.json
check_error "... to other target_modules too" "key target_modules in $T/ad_tg/adapter_config.json" \
    "$GPT2" train --resume $T/ad_tg
cp -r $T/ad $T/ad_zero && rm $T/ad_zero/train_state.safetensors && \
    sed -i 's/"lora_alpha": 8/"lora_alpha": 0/' $T/ad_zero/adapter_config.json
check_error "--lora-from a config with lora_alpha 0 (a scale of 0: nothing trains) is refused" \
    "bad value for key lora_alpha in $T/ad_zero/adapter_config.json: expected a number above 0" \
    "$GPT2" train "${DATA[@]}" --model $T/base --lora-from $T/ad_zero --steps 1

# --- 3. the base an adapter names is the one it was trained on ---------------------------------------------
"$GPT2" train "${DATA[@]}" --model $T/base_b --lora-from $T/ad --steps 4 --stop-after 2 --out $T/from_b >$T/from_b.out 2>&1
check "train --model B --lora-from A writes B as base_model_name_or_path, absolute" \
    grep -q "\"base_model_name_or_path\": \"$(abs $T/base_b)\"" $T/from_b/adapter_config.json
check "... and says A was trained on another base" grep -q "^note: .*$T/ad .* trained on .*fingerprint" $T/from_b.out
check "... in plain words (red team rt_lora 12: no \"on on\")" eval "! grep -q 'on on' $T/from_b.out"
"$GPT2" train --resume $T/from_b >$T/from_b_resumed.out 2>&1
check "... and the run (made with --lora-from) resumes" grep -q "saved $T/from_b at step 4" $T/from_b_resumed.out

# --- 4. a run is as portable as its base: an absolute path, a fingerprint, --model on resume -------------------
rel=$(realpath --relative-to=. $T/base)
"$GPT2" train "${DATA[@]}" --model $rel --lora 4 --steps 6 --stop-after 2 --out $T/rel >/dev/null 2>&1
mkdir -p $T/elsewhere
BIN=$(abs "$GPT2") ABS_DATA=(--train $(abs $TRAIN) --val $(abs $VAL))
(cd $T/elsewhere && "$BIN" train --resume $T/rel --stop-after 2 "${ABS_DATA[@]}" >$T/rel_resumed.out 2>&1)
check "a run on a relative --model resumes from another directory" grep -q "saved $T/rel at step 4" $T/rel_resumed.out
mv $T/base $T/base_moved
check_error "a resume whose base moved says so" "base model not found ($(abs $T/base)): --resume $T/rel was trained on it" "$GPT2" train --resume $T/rel
check_error "... given --steps too" "base model not found ($(abs $T/base))" "$GPT2" train --resume $T/rel --steps 8
cat $TEST_TMP/out $TEST_TMP/err >$T/refused.out
check "... with no note on --steps before the refusal (red team rt_lora 2)" eval "! grep -q '^note:' $T/refused.out"
"$GPT2" train --resume $T/rel --model $T/base_moved >$T/rel_moved.out 2>&1
check "... and --model on resume points at the moved base (same fingerprint)" grep -q "saved $T/rel at step 6" $T/rel_moved.out
check "... which the adapter then names" grep -q "\"base_model_name_or_path\": \"$(abs $T/base_moved)\"" $T/rel/adapter_config.json
check_error "--model of another base on resume is refused as not the run's base, naming both" \
    "base model mismatch (--model $T/base_b): it is not the run's base: $T/rel was trained on .*$T/base_moved.* --model $T/base_b fingerprints to" \
    "$GPT2" train --resume $T/rel --model $T/base_b --steps 8
cat $TEST_TMP/out $TEST_TMP/err >$T/refused.out
check "... with no note before the refusal (red team rt_lora 2)" eval "! grep -q '^note:' $T/refused.out"
mv $T/base_moved $T/base

# --- 5. eval, generate, export --lora-from on another base ---------------------------------------------------
EV=(eval --data $VAL -B 4 -T 64 --batches 1)
GEN=(generate --prompt-ids 0 --ids -n 2 --temperature 0)
for cmd in "${EV[*]}" "${GEN[*]}" "export --format peft --out $T/exp" "export --merge-lora --out $T/merged"; do
    check_error "${cmd%% *} --lora-from RUN --model OTHER is refused, naming both" \
        "base model mismatch (--lora-from $T/ad): it was trained on $(abs $T/base), fingerprint .*; --model $T/base_b fingerprints to" \
        "$GPT2" $cmd --model $T/base_b --lora-from $T/ad
    "$GPT2" $cmd --model $T/base_b --lora-from $T/ad --force-base >$T/force.out 2>&1
    check "... with --force-base: runs, saying so in a note" \
        eval "test $? = 0 && grep -q '^note: .*--force-base' $T/force.out"
    rm -rf $T/exp $T/merged
done
check "--force-base is in eval --help" eval '"$GPT2" eval --help | grep -q -- --force-base'
mkdir -p $T/peft && cp $T/ad/adapter_config.json $T/ad/adapter_model.safetensors $T/peft/
check "an adapter without a train state (PEFT's) is applied to any base of its shape" \
    "$GPT2" "${EV[@]}" --model $T/base_b --lora-from $T/peft
"$GPT2" "${EV[@]}" --model $T/base --lora-from $T/ad >$T/same.out 2>&1
check "... and the run's own base passes silently" eval "test $? = 0 && ! grep -q '^note:' $T/same.out"

# --- 6. words ---------------------------------------------------------------------------------------------
"$GPT2" train --resume $T/ad --lora 4 --lora-alpha 8 --stop-after 1 >$T/own.out 2>&1
check "a resumed run given its own --lora and --lora-alpha takes them without a word" \
    eval "test $? = 0 && ! grep -q 'lora' <(grep '^note:' $T/own.out)"
"$GPT2" train "${DATA[@]}" --model $T/base --lora 4 --lora-targets c_attn,c_fc --steps 4 --stop-after 2 \
    --out $T/tg >/dev/null 2>&1
check "... and its --lora-targets in another order (the same set)" \
    "$GPT2" train --resume $T/tg --lora-targets c_fc,c_attn --stop-after 1
check_error "... but not another alpha, naming the run's" \
    "bad value for --lora-alpha (train): a resumed run keeps its adapter (--lora-alpha 8); got 16" \
    "$GPT2" train --resume $T/tg --lora-alpha 16
check_error "... nor another alpha on a run made with --lora-from" \
    "bad value for --lora-alpha (train): a resumed run keeps its adapter (--lora-alpha 8); got 2" \
    "$GPT2" train --resume $T/from_b --lora-alpha 2
"$GPT2" info --model $T/ad >$T/info.out 2>&1
check "info on a LoRA run prints the adapter, its base and where the run stands" \
    eval "grep -q '^lora: rank 4, alpha 8 (scale 2) on attn.c_attn' $T/info.out &&
          grep -q '^base: $(abs $T/base) (fingerprint [0-9a-f]*)' $T/info.out && grep -q '^run: step 3 of 4' $T/info.out"
check_error "--lora-from a model checkpoint says so" \
    "not a LoRA adapter (--lora-from $T/base): a model checkpoint" "$GPT2" "${EV[@]}" --model $T/base --lora-from $T/base
grep -q '^hint: .*--model' $T/err
check "... hinting --model" test $? = 0
check_error "--lora -1: its range text is true" "bad value for --lora (train): expected 1\.\." \
    "$GPT2" train "${DATA[@]}" --model $T/base --lora -1
check_error "--lora-alpha -1: its range text is true" "bad value for --lora-alpha (train): expected a number above 0" \
    "$GPT2" train "${DATA[@]}" --model $T/base --lora 4 --lora-alpha -1
"$GPT2" train "${DATA[@]}" --model $T/base --lora 4 --precision int8 --steps 1 --out $T/i8 >$T/i8.out 2>&1
check "the sample line after an int8 LoRA run has --precision int8" \
    grep -q "^sample from it: .* --precision int8" $T/i8.out
check "... and names the program as typed ($GPT2)" grep -q "^sample from it: $GPT2 generate" $T/i8.out
check "the resume hint names the program as typed" grep -q "continue with: $GPT2 train --resume $T/ad" $T/ad.out
# --- 7. red team round two ------------------------------------------------------------------------------------
LT=(train --model $T/base --train $TRAIN --val "" -B 2 -T 32 --sample-tokens 0)
"$GPT2" "${LT[@]}" --steps 4 --stop-after 2 --lora 4 --lora-alpha 12.3456789 --lora-dropout 0.123456789 \
    --out $T/al >/dev/null 2>&1
cp -r $T/al $T/al_old && st_meta $T/al_old/train_state.safetensors lora.alpha 12.3457 && \
    st_meta $T/al_old/train_state.safetensors lora.dropout 0.123457 && \
    st_meta $T/al_old/train_state.safetensors lora.exact __delete__
check "a run whose train state kept alpha and dropout in 6 digits (before they were exact) resumes, given them" \
    "$GPT2" train --resume $T/al_old --steps 4 --lora-alpha 12.3456789 --lora-dropout 0.123456789
check "a resumed run takes its own --lora-alpha and --lora-dropout given to more than 6 digits" \
    "$GPT2" train --resume $T/al --steps 4 --stop-after 1 --lora-alpha 12.3456789 --lora-dropout 0.123456789
check_error "... but not an alpha equal to its own only in 6 digits" \
    "bad value for --lora-alpha (train): a resumed run keeps its adapter (--lora-alpha 12.345679); got 12.3457" \
    "$GPT2" train --resume $T/al --steps 4 --lora-alpha 12.3457
check_error "... nor such a dropout" \
    "bad value for --lora-dropout (train): a resumed run keeps its adapter (--lora-dropout 0.12345679); got 0.123457" \
    "$GPT2" train --resume $T/al --steps 4 --lora-dropout 0.123457
cp -r $T/peft $T/peft_out
check_error "export --merge-lora --out the --lora-from adapter names --lora-from and the adapter" \
    "bad value for --out (export): $T/peft_out holds adapter_.*, which this export reads (--lora-from); replacing it would lose the adapter it merges" \
    "$GPT2" export --model $T/base --lora-from $T/peft_out --merge-lora --out $T/peft_out
for extra in "--lora-from $T/peft" "--zero 1" "--loss-on all"; do
    check_error "train --resume RUN --steps 8 $extra: the refusal alone, no note on a replaced flag before it" \
        "^error: " "$GPT2" train --resume $T/tg --steps 8 $extra
    cat $TEST_TMP/out $TEST_TMP/err >$T/refused.out
    check "... (no note)" eval "! grep -q '^note:' $T/refused.out"
done
check_error "eval --lora-from a file says it is a file, expected an adapter directory" \
    "not a LoRA adapter (--lora-from $T/peft/adapter_model.safetensors): a file, expected a PEFT adapter directory" \
    "$GPT2" "${EV[@]}" --model $T/base --lora-from $T/peft/adapter_model.safetensors
check "... hinting its directory" grep -q "^hint: .*--lora-from $T/peft\$" $T/err
cp -r $T/peft $T/peft_r && sed -i 's/"r": 4/"r": "4"/' $T/peft_r/adapter_config.json
check_error "a config's r as a string: the range in integers" \
    "bad value for key r in $T/peft_r/adapter_config.json: expected an integer in \[1, 1048576\], got \"4\"" \
    "$GPT2" "${EV[@]}" --model $T/base --lora-from $T/peft_r
cp -r $T/ad $T/ad_edit
st_fill $T/ad_edit/adapter_model.safetensors base_model.model.transformer.h.0.attn.c_attn.lora_A.weight 00
check_error "a run's adapter_model.safetensors edited: resume names it as no longer matching its train state" \
    "adapter changed since the checkpoint ($T/ad_edit/adapter_model.safetensors): .* train state" \
    "$GPT2" train --resume $T/ad_edit
cp -r $T/peft $T/peft_inf && for m in A B; do
    st_fill $T/peft_inf/adapter_model.safetensors base_model.model.transformer.h.0.attn.c_attn.lora_$m.weight 7f; done
for f in hf:minf llmc:minf.bin gguf:minf.gguf; do
    check_error "export --merge-lora --format ${f%%:*} whose merged weights overflow names --out, not a staging name" \
        "non-finite .*(--out $T/${f#*:}).*--lora-from $T/peft_inf" \
        "$GPT2" export --model $T/base --lora-from $T/peft_inf --merge-lora --format ${f%%:*} --out $T/${f#*:}
    check "... writing nothing" eval "! ls -d $T/${f#*:}* 2>/dev/null"
done
# An adapter whose A is ~6e29 (B zero: the loss stays the base's) has dB ~1e30, whose square overflows AdamW's v
# when nothing clips it: the run stops at that step naming the tensor, by the check a full model's run makes.
cp -r $T/peft $T/peft_steep && st_fill $T/peft_steep/adapter_model.safetensors base_model.model.transformer.h.0.attn.c_attn.lora_A.weight 71
st_fill $T/peft_steep/adapter_model.safetensors base_model.model.transformer.h.0.attn.c_attn.lora_B.weight 00
check_error "AdamW's v of an adapter overflowing stops a LoRA run at that step, naming the tensor" \
    "AdamW v of h.0.attn.c_attn.lora_B.weight\[[0-9]*\] is inf at step 1: training diverged" \
    "$GPT2" train "${DATA[@]}" --model $T/base_b --lora-from $T/peft_steep --grad-clip 0 --steps 3

# --- 8. red team round three (rt_lora.md; the numbers are its defects) ------------------------------------------
sha256sum $T/ad/* >$T/ad.sum
check_error "1: --out DIR/missing/../AD, the --lora-from adapter AD spelled through a missing directory, is refused" \
    "bad value for --out (train): $T/nox/../ad holds the --lora-from adapter" \
    "$GPT2" train "${DATA[@]}" --model $T/base --lora-from $T/ad --out $T/nox/../ad --overwrite --steps 1
check "... leaving the adapter and its train state as they were" sha256sum -c --quiet $T/ad.sum
cp -r $T/ad $T/ad_noam && rm $T/ad_noam/adapter_model.safetensors
check_error "2: a resume whose adapter weights are missing is refused" "missing $T/ad_noam/adapter_model.safetensors" \
    "$GPT2" train --resume $T/ad_noam --steps 8
cat $TEST_TMP/out $TEST_TMP/err >$T/refused.out
check "... with no note on --steps before the refusal" eval "! grep -q '^note:' $T/refused.out"
check_error "2: a resume whose adapter_config.json disagrees with its train state is refused" \
    "key lora_alpha in $T/ad_alpha/adapter_config.json" "$GPT2" train --resume $T/ad_alpha --steps 8
cat $TEST_TMP/out $TEST_TMP/err >$T/refused.out
check "... with no note before the refusal" eval "! grep -q '^note:' $T/refused.out"
"$GPT2" train --model $T/base --lora 4 -B 4 -T 64 --sample-tokens 0 --val-every 0 --steps 2 --stop-after 1 \
    --out $T/deft >/dev/null 2>&1
(cd $T/elsewhere && "$BIN" train --resume $T/deft >$T/deft_resumed.out 2>&1)
check "3: a run on the default --train resumes from another directory (the default recorded absolute)" \
    grep -q "saved $T/deft at step 2" $T/deft_resumed.out
check_error "5: --log OUT/train_state.safetensors (a name the save writes into --out) is refused" \
    "bad value for --log (train): $T/l5/train_state.safetensors is in --out $T/l5, where each save writes" \
    "$GPT2" train "${DATA[@]}" --model $T/base --lora 4 --steps 1 --out $T/l5 --log $T/l5/train_state.safetensors
check "... before anything is written" test ! -e $T/l5
check_error "5: ... and --log OUT/config.json of a full run" "bad value for --log (train): $T/l5b/config.json is in --out" \
    "$GPT2" train "${DATA[@]}" "${GEOM[@]}" --steps 1 --out $T/l5b --log $T/l5b/config.json
check_error "14: --plot AD/loss.png, the --lora-from adapter's plot, is refused" \
    "bad value for --plot (train): $T/ad/loss.png is a file of the --lora-from adapter $T/ad" \
    "$GPT2" train "${DATA[@]}" --model $T/base --lora-from $T/ad --steps 1 --out $T/p14 --plot $T/ad/loss.png
check "... leaving it as it was" sha256sum -c --quiet $T/ad.sum
sha256sum $T/tg/* >$T/tg.sum
check_error "14: --plot RUN/loss.png on a --resume RUN continued into --out NEW is refused (RUN is only read)" \
    "bad value for --plot (train): $T/tg/loss.png is a file of the --resume run $T/tg" \
    "$GPT2" train --resume $T/tg --out $T/tg_next --plot $T/tg/loss.png
check "... leaving that run as it was" sha256sum -c --quiet $T/tg.sum
check_error "14: --plot NEW/loss.png with --out NEW, not made yet, is refused as inside --out" \
    "bad value for --plot (train): $T/p14b/loss.png is in.* --out $T/p14b" \
    "$GPT2" train "${DATA[@]}" --model $T/base --lora 4 --steps 1 --out $T/p14b --plot $T/p14b/loss.png
cp -r $T/ad $T/ad6 && rm $T/ad6/adapter_model.safetensors
check_error "6: info on a LoRA run without its adapter_model.safetensors names the missing file" \
    "missing $T/ad6/adapter_model.safetensors: expected the LoRA run's adapter" "$GPT2" info --model $T/ad6
cp -r $T/ad $T/ad17 && head -c 1000 $T/ad/train_state.safetensors >$T/ad17/train_state.safetensors
check_error "7: generate --lora-from a run whose train state is truncated is refused (never applied unchecked)" \
    "corrupt safetensors file ($T/ad17/train_state.safetensors)" "$GPT2" "${GEN[@]}" --model $T/base_b --lora-from $T/ad17
check_error "8: info on that run names the train state" "corrupt safetensors file ($T/ad17/train_state.safetensors)" \
    "$GPT2" info --model $T/ad17
cp -r $T/ad $T/ad_noac && rm $T/ad_noac/adapter_config.json
check_error "8: info on a LoRA run without its adapter_config.json names that file" \
    "missing $T/ad_noac/adapter_config.json: expected the LoRA run's adapter" "$GPT2" info --model $T/ad_noac
cp -r $T/peft $T/k13 && rm $T/k13/adapter_config.json && mkdir $T/k13/adapter_config.json
check_error "9: an adapter_config.json that is a directory is named as not a regular file, not as missing" \
    "not a regular file ($T/k13/adapter_config.json): a directory" "$GPT2" "${EV[@]}" --model $T/base --lora-from $T/k13
cp -r $T/peft $T/k15 && rm $T/k15/adapter_model.safetensors && mkfifo $T/k15/adapter_model.safetensors
check_error "9: ... an adapter_model.safetensors that is a FIFO too" \
    "not a regular file ($T/k15/adapter_model.safetensors)" "$GPT2" "${EV[@]}" --model $T/base --lora-from $T/k15
# a base whose model.safetensors is a FIFO: refused at once as not a regular file, however the base is held (its
# open waited for a writer, and SIGTERM did not end that wait: red team of issue 59's load)
mkdir $T/fifo_base && cp $T/base/config.json $T/fifo_base/ && mkfifo $T/fifo_base/model.safetensors
for how in "train ${DATA[*]} --lora 4 --precision int8 --steps 1" "train ${DATA[*]} --lora 4 --steps 1" "${GEN[*]}"; do
    "$GPT2" $how --model $T/fifo_base >$T/fifo.out 2>&1 &
    wait_bounded $! 60
    rc=$?
    check "9: ${how:0:40}... on a base whose model.safetensors is a FIFO: refused at once (exit $rc)" \
        eval '[ $rc = 1 ] && grep -q "not a regular file ($T/fifo_base/model.safetensors)" $T/fifo.out'
done
for a in 0 -8; do
    cp -r $T/peft $T/pa$a && sed -i "s/\"lora_alpha\": 8/\"lora_alpha\": $a/" $T/pa$a/adapter_config.json
    for cmd in "${EV[*]}" "${GEN[*]}" "export --format gguf --out $T/pa.gguf"; do
        check_error "15: ${cmd%% *} --lora-from a config with lora_alpha $a is refused, as train refuses it" \
            "bad value for key lora_alpha in $T/pa$a/adapter_config.json: expected a number above 0" \
            "$GPT2" $cmd --model $T/base --lora-from $T/pa$a
    done
done
check_error "15: export --merge-lora --out a LoRA run: refused, saying it holds an adapter (not a model)" \
    "bad value for --out (export): $T/tg is a training checkpoint; .*(a LoRA run: it holds an adapter)" \
    "$GPT2" export --model $T/base --lora-from $T/peft --merge-lora --out $T/tg
"$GPT2" info --model $T/al >$T/al_info.out 2>&1
check "15: info on a LoRA run shows its dropout, as train prints it" grep -q "^lora: rank 4, alpha .*, dropout 0.123457)" $T/al_info.out
summary
