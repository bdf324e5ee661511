#!/usr/bin/env bash
# cli_checkpoint.sh: checkpoint formats, conversions, exact resume and crash safety, without Python.
source "$(dirname "$0")/lib.sh"
FIX=tests/fixtures/ref_tiny
TOK=tests/fixtures/tokens_v1000.bin
T=$TEST_TMP

# --- formats and round trips -------------------------------------------------------------------------
"$GPT2" export --model $FIX/model --out $T/hf >/dev/null
"$GPT2" export --model $FIX/model --out $T/fix.bin --format llmc >/dev/null
"$GPT2" export --model $T/hf --out $T/hf.bin --format llmc >/dev/null
check "HF -> ours -> HF keeps every tensor bit for bit" cmp $T/fix.bin $T/hf.bin
check "exported HF still passes compare" "$GPT2" compare --model $T/hf --ref $FIX/dump.safetensors
"$GPT2" export --model $T/fix.bin --out $T/again.bin --format llmc >/dev/null
check "llm.c v3 -> ours -> llm.c v3 is byte-identical" cmp $T/fix.bin $T/again.bin
"$GPT2" export --model $T/fix.bin --out $T/v5.bin --format llmc --dtype bf16 >/dev/null
"$GPT2" export --model $T/v5.bin --out $T/v5again.bin --format llmc --dtype bf16 >/dev/null
check "llm.c v5 (bf16) -> ours -> llm.c v5 is byte-identical" cmp $T/v5.bin $T/v5again.bin
check "llm.c v3 passes compare" "$GPT2" compare --model $T/fix.bin --ref $FIX/dump.safetensors
check "bare .safetensors with --heads passes compare" "$GPT2" compare --model $FIX/model/model.safetensors --heads 4 --ref $FIX/dump.safetensors
for f in "$FIX/model:huggingface:F32" "$T/fix.bin:llm.c v3:F32" "$T/v5.bin:llm.c v5:BF16" "$FIX/model/model.safetensors:safetensors:F32"; do
    IFS=: read -r path format dtype <<<"$f"
    check "info names $format, $dtype" bash -c ""$GPT2" info --model '$path' --heads 4 | grep -q '^format: $format' && "$GPT2" info --model '$path' --heads 4 | grep -q '^dtype: $dtype' && "$GPT2" info --model '$path' --heads 4 | grep -q 'parameters: 166144'"
done
"$GPT2" export --model $FIX/model --out $T/f16 --dtype f16 >/dev/null
"$GPT2" export --model $T/f16 --out $T/f16b --dtype f16 >/dev/null
check "F16 HF round trip is byte-identical" cmp $T/f16/model.safetensors $T/f16b/model.safetensors
check "info reads F16" bash -c ""$GPT2" info --model $T/f16 | grep -q '^dtype: F16'"

# --- exact resume ---------------------------------------------------------------------------------------
common="--train $TOK --val $TOK --vocab 1000 --layers 2 --heads 2 --channels 32 --seq-len 32 -B 4 -T 16 --steps 20 --lr 3e-3 --warmup 5 --val-every 5 --sample-tokens 0"
losses() { grep -o 'step *[0-9]*/20 | loss [0-9.]*' "$1" | tail -10; }
"$GPT2" train $common --out $T/A --save-every 10 >$T/a.log 2>&1
"$GPT2" train $common --out $T/B --stop-after 10 >$T/b1.log 2>&1
"$GPT2" train --resume $T/B >$T/b2.log 2>&1
check "resumed run starts at step 10" grep -q "resumed $T/B at step 10" $T/b2.log
check "20 steps straight == 10 + resume + 10: same losses" diff <(losses $T/a.log) <(losses $T/b2.log)
check "20 steps straight == 10 + resume + 10: same parameters" cmp $T/A/model.safetensors $T/B/model.safetensors
check_error "resume refuses a different batch size" "a resumed run keeps 4" "$GPT2" train --resume $T/B -B 8
cp $T/A/train_state.safetensors $T/B/train_state.safetensors.A
"$GPT2" export --model $FIX/model --out $T/other >/dev/null && cp -r $T/other $T/mixed && cp $T/A/train_state.safetensors $T/mixed/
check_error "resume refuses a train state of another model" "does not belong to this model" "$GPT2" train --resume $T/mixed

# --- SIGINT: finish the step, save, exit 130 -------------------------------------------------------------
"$GPT2" train $common --steps 100000 --val-every 0 --out $T/C >$T/c.log 2>&1 &
pid=$!
sleep 1
kill -INT $pid
wait_bounded $pid 120
rc=$?
check "Ctrl-C exits 130" test $rc -eq 130
step=$(grep -o 'interrupted at step [0-9]*' $T/c.log | grep -o '[0-9]*$')
check "Ctrl-C saved a checkpoint that resumes (step $step)" "$GPT2" train --resume $T/C --stop-after 1 --steps 100000

# --- kill -9 at random moments: the previous checkpoint stays whole ----------------------------------------
big="--train $TOK --val $TOK --vocab 1000 --layers 4 --heads 4 --channels 256 --seq-len 32 -B 2 -T 16 --val-every 0 --sample-tokens 0 --steps 100000 --save-every 1 --out $T/K"
"$GPT2" train $big --stop-after 1 >/dev/null 2>&1  # the checkpoint every kill must leave intact
ok=1
# Each kill lands a different time after the run's first save (so it hits later steps and saves whatever
# the machine's speed, a sanitizer build included).
for delay in 0.1 0.35 0.6 0.9 1.3; do
    rm -f $T/k.log  # the last run's log would end the wait at once
    "$GPT2" train --resume $T/K --stop-after 0 >$T/k.log 2>&1 &
    pid=$!
    for _ in $(seq 600); do grep -qs '^saved ' $T/k.log && break; sleep 0.1; done
    sleep $delay
    kill -9 $pid
    wait_bounded $pid 30 2>/dev/null
    if ! "$GPT2" train --resume $T/K --stop-after 1 >$T/kr.log 2>&1; then ok=0; echo "    resume after kill at ${delay}s failed:"; tail -2 $T/kr.log; fi
    if [ "$(ls $T/K | tr '\n' ' ')" != "config.json loss.png model.safetensors train_state.safetensors " ]; then ok=0; ls $T/K; fi
done
check "stale staging directories of killed runs are cleaned up by the next save" test -z "$(ls -d $T/K.saving.* 2>/dev/null | grep -v "saving.$pid\$")"
check "after kill -9 mid-run (5 times) the checkpoint loads and resumes" test $ok -eq 1
saves=$(grep -c '^saved ' $T/k.log)
check "the killed runs were saving (last run saved $saves times)" test "$saves" -ge 1

# --- corrupt files: one error line, exit 1 -------------------------------------------------------------
mkst() {  # mkst FILE HEADER DATA_BYTES [CLAIMED_LEN]: a safetensors image
    local len=${4:-${#2}}
    printf "$(printf '\\x%02x\\x%02x\\x%02x\\x%02x\\x00\\x00\\x00\\x00' $((len & 255)) $(((len >> 8) & 255)) $(((len >> 16) & 255)) $(((len >> 24) & 255)))" >"$1"
    printf '%s' "$2" >>"$1"
    head -c "$3" /dev/zero >>"$1"
}
good='{"wte.weight":{"dtype":"F32","shape":[2,64],"data_offsets":[0,512]}}'
mkst $T/len.safetensors "$good" 512 99999
check_error "safetensors: header length past the end" "header length 99999 runs past the end" "$GPT2" info --model $T/len.safetensors
mkst $T/json.safetensors '{"wte.weight":{"dtype":"F32",' 0
check_error "safetensors: bad JSON" "malformed JSON header" "$GPT2" info --model $T/json.safetensors
mkst $T/dtype.safetensors '{"wte.weight":{"dtype":"Q4","shape":[2,64],"data_offsets":[0,512]}}' 512
check_error "safetensors: unknown dtype" "unknown dtype Q4" "$GPT2" info --model $T/dtype.safetensors
mkst $T/span.safetensors '{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}' 12
check_error "safetensors: overlapping spans" "overlap" "$GPT2" info --model $T/span.safetensors
mkst $T/trunc.safetensors "$good" 100
check_error "safetensors: data truncated" "outside the data section" "$GPT2" info --model $T/trunc.safetensors
head -c 5000 $T/fix.bin >$T/trunc.bin
check_error "llm.c: truncated file" "truncated" "$GPT2" info --model $T/trunc.bin
cp $T/fix.bin $T/ver.bin && printf '\x07' | dd of=$T/ver.bin bs=1 seek=4 conv=notrunc status=none
check_error "llm.c: unknown version" "unsupported version 7" "$GPT2" info --model $T/ver.bin
cp $T/fix.bin $T/magic.bin && printf '\x00' | dd of=$T/magic.bin bs=1 seek=0 conv=notrunc status=none
check_error "llm.c: wrong magic" "unrecognised checkpoint" "$GPT2" info --model $T/magic.bin
cp -r $FIX/model $T/shape && sed -i 's/"n_embd": 64/"n_embd": 32/' $T/shape/config.json
check_error "shape mismatch names tensor and shape" "shape mismatch for tensor transformer.wte.weight .*expected (1000, 32), got (1000, 64)" "$GPT2" info --model $T/shape
check_error "export: f16 is not an llm.c dtype" "llm.c files are f32" "$GPT2" export --model $FIX/model --out $T/x.bin --format llmc --dtype f16
summary
