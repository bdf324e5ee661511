#!/usr/bin/env bash
# cli_model.sh: the model commands end to end on committed fixtures (no Python needed):
# compare against the committed PyTorch dump, eval against the reference's loss, a short training run,
# and the one-line errors for bad input. Fixtures come from scripts/reference.py (see tests/ref_model.sh).
source "$(dirname "$0")/lib.sh"
FIX=tests/fixtures/ref_tiny
TOK=tests/fixtures/tokens_v1000.bin

check "compare passes on the committed tiny dump" "$GPT2" compare --model $FIX/model --ref $FIX/dump.safetensors

# A model with two weights in the middle of the file set to 1.0 must make compare fail: the check can fail.
cp -r $FIX/model "$TEST_TMP/broken"
size=$(stat -c %s "$TEST_TMP/broken/model.safetensors")
printf '\x00\x00\x80\x3f\x00\x00\x80\x3f' | dd of="$TEST_TMP/broken/model.safetensors" bs=1 seek=$((size / 8 * 4)) conv=notrunc status=none
"$GPT2" compare --model "$TEST_TMP/broken" --ref $FIX/dump.safetensors >"$TEST_TMP/cmp" 2>&1
rc=$?
if [ $rc -eq 1 ] && tail -1 "$TEST_TMP/cmp" | grep -q '^FAIL$'; then pass "compare fails on a perturbed model"; else fail "compare fails on a perturbed model (exit $rc)"; fi

# llm.c's reference dump (gpt2_124M_debug_state.bin's format): the committed dump.safetensors rewritten by
# scripts/reference.py --llmc-from-dump. It must pass with the HuggingFace model and with its llm.c export.
STATE=$FIX/llmc_debug_state.bin
check "compare passes on llm.c's dump format (HuggingFace model)" "$GPT2" compare --model $FIX/model --ref $STATE
grep -q '^reference: llm.c dump, B=2, T=16$' "$TEST_TMP/out" || fail "compare names the llm.c dump and its B, T"
"$GPT2" export --model $FIX/model --out "$TEST_TMP/fix.bin" --format llmc >/dev/null
check "compare passes on llm.c's dump format (llm.c model)" "$GPT2" compare --model "$TEST_TMP/fix.bin" --ref $STATE
"$GPT2" compare --model "$TEST_TMP/broken" --ref $STATE >"$TEST_TMP/cmp" 2>&1
rc=$?
if [ $rc -eq 1 ] && tail -1 "$TEST_TMP/cmp" | grep -q '^FAIL$'; then pass "compare with llm.c's dump fails on a perturbed model"; else fail "compare with llm.c's dump fails on a perturbed model (exit $rc)"; fi
# --steps 3 on llm.c's dump prints the AdamW losses our own dump holds (the same PyTorch run).
steps_match() {
    "$GPT2" compare --model $FIX/model --ref $STATE --steps 3 | sed -n 's/^step \([0-9]\): loss \(.*\)$/\1 \2/p' >"$TEST_TMP/llmc_steps"
    "$GPT2" compare --model $FIX/model --ref $FIX/dump.safetensors --steps 3 | grep -c 'adamw.loss.* ok$' | grep -qx 3 || return 1
    [ "$(wc -l <"$TEST_TMP/llmc_steps")" = 3 ] || return 1
    # the reference's losses, read from the safetensors dump: tensor "losses" (F32), with perl
    perl -e 'open(F, "<", $ARGV[0]) or die; binmode F; read(F, $b, 8); my $n = unpack("Q<", $b); read(F, $h, $n);
             $h =~ /"losses":\{[^}]*"data_offsets":\[(\d+),(\d+)\]/ or die; seek(F, 8 + $n + $1, 0); read(F, $d, $2 - $1);
             my @l = unpack("f<*", $d); printf("%d %.6f\n", $_, $l[$_]) for 0 .. 2' $FIX/dump.safetensors >"$TEST_TMP/ref_steps"
    cat "$TEST_TMP/llmc_steps" "$TEST_TMP/ref_steps"
    awk 'NR == FNR { a[$1] = $2; next } { d = a[$1] - $2; if (d < 0) d = -d; if (!($1 in a) || d > 2e-6) bad = 1 } END { exit bad }' \
        "$TEST_TMP/llmc_steps" "$TEST_TMP/ref_steps"
}
check "compare --steps 3 on llm.c's dump prints the reference's AdamW losses" steps_match

# Corrupt or mismatched llm.c dumps: one line each, naming the file.
L=$TEST_TMP/llmc
mkdir -p "$L"
poke_int() { printf "$(printf '\\x%02x\\x%02x\\x%02x\\x%02x' $(($3 & 255)) $(($3 >> 8 & 255)) $(($3 >> 16 & 255)) $(($3 >> 24 & 255)))" |
    dd of="$1" bs=1 seek="$2" conv=notrunc status=none; }
cp $STATE "$L/trunc.bin" && truncate -s -4 "$L/trunc.bin"
check_error "compare refuses a truncated llm.c dump" "llm.c debug state .*trunc.bin does not fit the model: 800000 bytes, expected 800004.*truncated" \
    "$GPT2" compare --model $FIX/model --ref "$L/trunc.bin"
cp $STATE "$L/vp.bin" && head -c $((128 * 64 * 4)) /dev/zero >>"$L/vp.bin"
check_error "compare refuses an llm.c dump padded to another Vp" "vp.bin does not fit the model: wte's gradient is padded to 1152 rows, expected the model's Vp 1024" \
    "$GPT2" compare --model $FIX/model --ref "$L/vp.bin"
cp $STATE "$L/t.bin" && poke_int "$L/t.bin" 12 33
check_error "compare refuses an llm.c dump with T past the model's context" "t.bin: B 2, T 33; expected .*T <= 32" \
    "$GPT2" compare --model $FIX/model --ref "$L/t.bin"
cp $STATE "$L/v.bin" && poke_int "$L/v.bin" 4 1
check_error "compare refuses an llm.c dump of another version" "v.bin: version 1, expected 2" \
    "$GPT2" compare --model $FIX/model --ref "$L/v.bin"
cp $STATE "$L/tok.bin" && poke_int "$L/tok.bin" 1024 1000
check_error "compare refuses an llm.c dump with a token out of range" "tok.bin: token 1000 .* expected 0..999" \
    "$GPT2" compare --model $FIX/model --ref "$L/tok.bin"
cp $STATE "$L/nan.bin" && poke_int "$L/nan.bin" $((1024 + 2 * 32 * 4 + 8)) 2143289344
check_error "compare refuses an llm.c dump with a NaN logit" "nan.bin: non-finite logit" \
    "$GPT2" compare --model $FIX/model --ref "$L/nan.bin"
check_error "compare --steps past our dump's losses" "bad value for --steps" \
    "$GPT2" compare --model $FIX/model --ref $FIX/dump.safetensors --steps 11

want=$(cut -d' ' -f2 $FIX/eval_loss.txt)
got=$("$GPT2" eval --model $FIX/model --data $TOK -B 2 -T 16 --batches 5 | tail -1)
if echo "$got" | grep -Eq '^loss [0-9]+\.[0-9]{6}$' && awk -v a="${got#loss }" -v b="$want" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 1e-5) }'; then
    pass "eval loss matches the PyTorch reference within 1e-5 ($got vs $want)"
else
    fail "eval loss matches the PyTorch reference within 1e-5 (got '$got', want $want)"
fi

# --precision bf16: bf16 matmuls pass compare's bf16 bars on the committed dump and fail them on the perturbed
# model; eval's loss moves off fp32's by bf16 rounding (more than 1e-6, less than 5e-3 relative). Without
# AVX512_BF16 the flag says so in one note and runs fp32.
check_error "bad --precision" "bad value for --precision (eval): expected fp32, bf16 or int8, got 'fp16'" \
    "$GPT2" eval --model $FIX/model --data $TOK --precision fp16
if grep -q avx512_bf16 /proc/cpuinfo; then
    check "compare --precision bf16 passes on the committed tiny dump" \
        "$GPT2" compare --model $FIX/model --ref $FIX/dump.safetensors --precision bf16
    "$GPT2" compare --model "$TEST_TMP/broken" --ref $FIX/dump.safetensors --precision bf16 >"$TEST_TMP/cmp" 2>&1
    rc=$?
    if [ $rc -eq 1 ] && tail -1 "$TEST_TMP/cmp" | grep -q '^FAIL$'; then pass "compare --precision bf16 fails on a perturbed model"
    else fail "compare --precision bf16 fails on a perturbed model (exit $rc)"; fi
    got16=$("$GPT2" eval --model $FIX/model --data $TOK -B 2 -T 16 --batches 5 --precision bf16 | tail -1)
    check "eval --precision bf16 moves the loss by bf16 rounding only ($got16 vs $got)" \
        awk -v a="${got16#loss }" -v b="${got#loss }" 'BEGIN { d = (a - b) / b; if (d < 0) d = -d; exit !(d > 1e-6 && d < 5e-3) }'
    a=$("$GPT2" generate --model tests/fixtures/trained_tiny --prompt-ids 0 --temperature 0 --max-tokens 40 --ids --precision bf16 2>/dev/null)
    check "generate --precision bf16 decodes 40 tokens" test "$(echo $a | wc -w)" -eq 40
else
    "$GPT2" eval --model $FIX/model --data $TOK -B 2 -T 16 --batches 5 --precision bf16 >"$TEST_TMP/bf16.out" 2>"$TEST_TMP/bf16.err"
    # (not $TEST_TMP/out or err: check writes its own output there before the command reads them)
    check "without AVX512_BF16, --precision bf16 notes it and runs fp32" \
        bash -c "grep -q 'no AVX512_BF16' '$TEST_TMP/bf16.err' && [ \"\$(tail -1 '$TEST_TMP/bf16.out')\" = '$got' ]"
fi

# Train a small model from scratch on the fixture tokens: the loss must fall, the log must hold one JSON
# line per step and per validation, the same seed must give the same losses, and the saved model loads.
train() {
    "$GPT2" train --train $TOK --val $TOK --vocab 1000 --layers 2 --heads 2 --channels 32 --seq-len 32 -B 4 -T 16 \
        --steps 40 --lr 3e-3 --warmup 5 --val-every 20 --val-batches 2 --sample-tokens 0 "$@"
}
train --log "$TEST_TMP/log.jsonl" --out "$TEST_TMP/trained" >"$TEST_TMP/train1" 2>&1
check "train exits 0" test $? -eq 0
first=$(grep -m1 -o 'loss [0-9.]*' "$TEST_TMP/train1" | cut -d' ' -f2)
last_val=$(grep 'val loss' "$TEST_TMP/train1" | tail -1 | grep -o 'val loss [0-9.]*' | cut -d' ' -f3)
first_val=$(grep 'val loss' "$TEST_TMP/train1" | head -1 | grep -o 'val loss [0-9.]*' | cut -d' ' -f3)
check "training loss falls ($first -> val $first_val -> $last_val)" awk -v a="$first" -v b="$last_val" -v c="$first_val" 'BEGIN { exit !(b < a - 0.5 && b < c) }'
check "log has 40 step lines with step, loss, ms" test "$(grep -c '^{"step":[0-9]*,"loss":[0-9.]*,"lr":.*"ms":[0-9.]*,"tokens":[0-9]*}$' "$TEST_TMP/log.jsonl")" -eq 40
check "log has 2 validation lines" test "$(grep -c '"val_loss"' "$TEST_TMP/log.jsonl")" -eq 2
train >"$TEST_TMP/train2" 2>&1
check "same seed, same losses" diff <(grep -o 'loss [0-9.]*' "$TEST_TMP/train1") <(grep -o 'loss [0-9.]*' "$TEST_TMP/train2")
check "grad accumulation runs" train --steps 2 --grad-accum 3
check "saved model evaluates" "$GPT2" eval --model "$TEST_TMP/trained" --data $TOK -B 2 -T 16 --batches 2
png="$TEST_TMP/trained/loss.png"
check "the loss plot is a PNG of 800x500 in the checkpoint" bash -c "head -c 8 '$png' | od -An -tx1 | tr -d ' \n' | grep -q '^89504e470d0a1a0a$' && test \"\$(od -An -tu1 -j16 -N8 '$png' | tr -s ' ')\" = ' 0 0 3 32 0 0 1 244'"
check "info describes the saved model" bash -c ""$GPT2" info --model '$TEST_TMP/trained' | grep -q 'layers 2, heads 2, channels 32'"

# Greedy generation equals PyTorch's argmax continuation (fixture from scripts/reference.py --greedy-prompt)
TRAINED=tests/fixtures/trained_tiny
check "greedy generation equals the PyTorch reference" \
    diff <("$GPT2" generate --model $TRAINED --prompt-ids 0 --temperature 0 --max-tokens 30 --ids 2>/dev/null) $TRAINED/greedy.txt
# Past the context (32 here) the window slides as nanoGPT's does: 200 greedy tokens equal PyTorch's
# continuation with each pass on the last 32 tokens (greedy_slide.txt, from reference.py --greedy-tokens 200).
check "greedy generation past the context equals PyTorch's cropped-window continuation" \
    diff <("$GPT2" generate --model $TRAINED --prompt-ids 0 --temperature 0 --max-tokens 200 --ids 2>"$TEST_TMP/slide_err") \
    $TRAINED/greedy_slide.txt
check "generate says why it stopped and how long the window slid" \
    grep -qz 'stopped: --max-tokens 200 reached.context of 32 full: the window slid for the last 168 tokens' "$TEST_TMP/slide_err"
# Sampled: 1000 tokens from a 3-token prompt; while the context is not full nothing changes, token for token.
"$GPT2" generate --model $TRAINED --prompt-ids "1 2 3" --max-tokens 1000 --ids >"$TEST_TMP/g1000" 2>/dev/null
"$GPT2" generate --model $TRAINED --prompt-ids "1 2 3" --max-tokens 29 --ids >"$TEST_TMP/g29" 2>/dev/null
check "generate writes 1000 sampled tokens past a 32-token context" test "$(wc -w <"$TEST_TMP/g1000")" = 1000
check "the first 29 of them (context not yet full) equal a 29-token run" \
    test "$(cut -d' ' -f1-29 "$TEST_TMP/g1000")" = "$(cat "$TEST_TMP/g29")"
# The quickstart's context (256) no longer caps a sample: 1000 tokens from a 256-context model (random init).
"$GPT2" train --layers 1 --heads 2 --channels 16 --seq-len 256 --vocab 1000 --train $TOK --val "" -B 1 -T 8 \
    --steps 0 --out "$TEST_TMP/ctx256" >/dev/null 2>&1
check "a 256-context model generates 1000 tokens" \
    test "$("$GPT2" generate --model "$TEST_TMP/ctx256" --prompt-ids 7 --max-tokens 1000 --ids 2>/dev/null | wc -w)" = 1000
# generate --interactive: one prompt per line from stdin, the model loaded once (off a terminal a line
# === ends each answer). A 50257-token model
# (train --steps 0 saves its random init) so that the GPT-2 tokenizer fits.
if [ -n "${GPT2_DATA_DIR:-}" ]; then TOK_DIR=$GPT2_DATA_DIR/gpt2; else TOK_DIR=data/gpt2; fi
"$GPT2" train --layers 1 --heads 2 --channels 16 --seq-len 16 --vocab 50257 --train $TOK --val "" -B 1 -T 8 \
    --steps 0 --out "$TEST_TMP/v50257" >/dev/null 2>&1
G=("$GPT2" generate --model "$TEST_TMP/v50257" --tokenizer "$TOK_DIR" --temperature 0 --max-tokens 6 --ids)
interactive() {
    printf 'To be, or not\n\nthat is the question\r\n' | "${G[@]}" --interactive >"$TEST_TMP/inter" 2>"$TEST_TMP/inter_err" || return 1
    "${G[@]}" --prompt "To be, or not" >"$TEST_TMP/one" 2>/dev/null && "${G[@]}" --prompt "that is the question" >>"$TEST_TMP/one" 2>/dev/null
    cat "$TEST_TMP/inter"
    [ "$(grep -c '^stopped: ' "$TEST_TMP/inter_err")" = 2 ] && cmp <(grep -vx '===' "$TEST_TMP/inter") "$TEST_TMP/one"
}
check "generate --interactive answers each non-empty line as --prompt would" interactive
long_line() {
    { echo "hi"; printf 'word %.0s' $(seq 40); echo; echo "there"; } | "${G[@]}" --interactive >"$TEST_TMP/inter" 2>"$TEST_TMP/inter_err"
    local rc=$?
    cat "$TEST_TMP/inter_err"
    [ $rc = 1 ] && [ "$(grep -cvx '===' "$TEST_TMP/inter")" = 2 ] && grep -q '^error: prompt too long: 41 tokens, expected at most the model.s context of 16 (--interactive, line 2 skipped)' "$TEST_TMP/inter_err" &&
        grep -q '^error: 1 prompt skipped (--interactive)' "$TEST_TMP/inter_err"
}
check "generate --interactive skips a line past the context with an error, goes on, and exits 1" long_line
check_error "generate --interactive with --prompt" "conflicting flags (generate): --interactive reads" "${G[@]}" --interactive --prompt hi

"$GPT2" generate --model $TRAINED --prompt-ids 0 --max-tokens 8 --ids >/dev/null 2>"$TEST_TMP/gen_err"
check "generate reports the prompt's time and the decode speed on stderr, in one line" \
    grep -Eq '^prompt: 1 tokens in [0-9]+ ms; 8 new tokens, the last 7 decoded in [0-9.]+ s \([0-9.]+ tok/s\)$' "$TEST_TMP/gen_err"
check "generate --num-samples prints one line of ids per sample" \
    test "$("$GPT2" generate --model $TRAINED --prompt-ids 0 --max-tokens 5 --num-samples 3 --ids 2>/dev/null | wc -l)" -eq 3
"$GPT2" generate --model $TRAINED --prompt-ids "$(seq -s ' ' 1 30)" --max-tokens 10 --ids >/dev/null 2>"$TEST_TMP/ctx_err"
check "a 30-token prompt with 10 more slides for the last 7" grep -q "the window slid for the last 7 tokens" "$TEST_TMP/ctx_err"
check_error "prompt longer than the context" "prompt too long" "$GPT2" generate --model $TRAINED --prompt-ids "$(seq -s ' ' 1 40)" --ids
check_error "prompt id beyond the vocabulary" "out of range (--prompt-ids)" "$GPT2" generate --model $TRAINED --prompt-ids "5 1000" --ids
check_error "bad top-p" "expected 0 < p <= 1, got 1.5" "$GPT2" generate --model $TRAINED --top-p 1.5 --ids
check_error "top-p 0" "expected 0 < p <= 1" "$GPT2" generate --model $TRAINED --top-p 0 --ids
check_error "tokenizer that does not fit the model" "tokenizer" "$GPT2" generate --model $TRAINED --prompt hello --tokenizer "$TEST_TMP/none"

# A non-finite loss stops training, naming the step, and leaves the last good checkpoint in --out as it
# was. The poison is 3e38 in every ln_f.bias (the last 128 bytes of an llm.c v3 file): finite weights that
# overflow, so every logit is NaN. (Non-finite weights are refused at load; see cli_trust.sh.)
"$GPT2" export --model $TRAINED --out "$TEST_TMP/poison.bin" --format llmc >/dev/null
size=$(stat -c %s "$TEST_TMP/poison.bin")
perl -e 'print pack("f<", 3e38) x 32' | dd of="$TEST_TMP/poison.bin" bs=1 seek=$((size - 128)) conv=notrunc status=none
before=$(cksum <"$TEST_TMP/trained/model.safetensors")
check_error "a NaN loss stops training, naming the step" "loss is -*nan at step 1" \
    "$GPT2" train --model "$TEST_TMP/poison.bin" --train $TOK -B 4 -T 16 --steps 5 --sample-tokens 0 --out "$TEST_TMP/trained" \
    --overwrite
check "the last good checkpoint survives the NaN" test "$(cksum <"$TEST_TMP/trained/model.safetensors")" = "$before"
check_error "empty prompt" "empty prompt (--prompt-ids)" "$GPT2" generate --model $TRAINED --prompt-ids "" --ids

# Bad input: one line naming the file or flag, exit 1.
check_error "missing model directory" "nonexistent" "$GPT2" eval --model "$TEST_TMP/nonexistent" --data $TOK
check_error "unknown flag with a suggestion" "unknown flag --modle" "$GPT2" eval --modle x
check_error "malformed number" "malformed value for --batch" "$GPT2" eval --model $FIX/model --data $TOK -B x
check_error "missing flag value" "missing value for flag --data" "$GPT2" eval --model $FIX/model --data
check_error "T beyond the context" "expected <= 32" "$GPT2" eval --model $FIX/model --data $TOK -T 33
check_error "tokens beyond the vocabulary" "out of range in .*tokens_v1000.bin" \
    "$GPT2" train --train $TOK --vocab 500 --layers 1 --heads 1 --channels 8 --steps 1 --sample-tokens 0
# eval --batches all: every token after the first, once; the mean over all of them, with its perplexity.
eval_all() {
    "$GPT2" eval --model $FIX/model --data $TOK -B 2 -T 16 --batches all >"$TEST_TMP/all" || return 1
    "$GPT2" eval --model $FIX/model --data $TOK -B 2 -T 16 --batches 93 >"$TEST_TMP/some" || return 1
    cat "$TEST_TMP/all" "$TEST_TMP/some"
    local n=$(od -An -t d4 -j 8 -N 4 $TOK | tr -d ' ')
    grep -q "^tokens $((n - 1)) " "$TEST_TMP/all" || return 1
    # perplexity = exp(loss); and the file's 2999 tokens are more than the 93 whole batches' 2976
    awk '/^perplexity/ { p = $2 } /^loss/ { l = $2 } END { d = p / exp(l) - 1; if (d < 0) d = -d; exit !(l > 0 && d < 1e-4) }' "$TEST_TMP/all" &&
        ! cmp -s <(tail -1 "$TEST_TMP/all") <(tail -1 "$TEST_TMP/some")
}
check "eval --batches all covers every token and prints perplexity" eval_all
check_error "eval --batches 0" "bad value for --batches (eval): expected 1\.\." "$GPT2" eval --model $FIX/model --data $TOK --batches 0
check_error "eval --batches nonsense" "expected a count of batches or .all., got 'x'" "$GPT2" eval --model $FIX/model --data $TOK --batches x
check_error "eval batches beyond the data" "too few tokens" "$GPT2" eval --model $FIX/model --data $TOK -B 2 -T 16 --batches 1000
cp -r $FIX/model "$TEST_TMP/trunc"
head -c 5000 $FIX/model/model.safetensors >"$TEST_TMP/trunc/model.safetensors"
check_error "truncated safetensors names the file" "corrupt safetensors file (.*trunc/model.safetensors)" "$GPT2" info --model "$TEST_TMP/trunc"
cp -r $FIX/model "$TEST_TMP/badjson"
echo '{"n_embd": 64,' >"$TEST_TMP/badjson/config.json"
check_error "malformed config.json" "malformed JSON in .*config.json" "$GPT2" info --model "$TEST_TMP/badjson"
cp -r $FIX/model "$TEST_TMP/geometry"
sed -i 's/"n_layer": 2/"n_layer": 3/' "$TEST_TMP/geometry/config.json"
check_error "missing tensor names tensor and shape" "missing tensor transformer.h.2.ln_1.weight .*expected shape (64,)" "$GPT2" info --model "$TEST_TMP/geometry"
check_error "bad token file magic" "bad magic in token file (.*) at offset 0" "$GPT2" eval --model $FIX/model --data $FIX/model/model.safetensors -B 2 -T 16
cp $TOK "$TEST_TMP/odd.bin" && printf 'x' >>"$TEST_TMP/odd.bin"
check_error "odd byte count in a token file" "odd byte count in token file (.*odd.bin)" "$GPT2" eval --model $FIX/model --data "$TEST_TMP/odd.bin" -B 2 -T 16
cp $TOK "$TEST_TMP/count.bin" && printf 'xy' >>"$TEST_TMP/count.bin"
check_error "token count disagreeing with the size" "token count mismatch in token file (.*count.bin) at offset 8" "$GPT2" eval --model $FIX/model --data "$TEST_TMP/count.bin" -B 2 -T 16
head -c 1024 $TOK >"$TEST_TMP/empty.bin" && printf '\x00\x00\x00\x00' | dd of="$TEST_TMP/empty.bin" bs=1 seek=8 conv=notrunc status=none
check_error "empty token file" "too few tokens in .*empty.bin" "$GPT2" eval --model $FIX/model --data "$TEST_TMP/empty.bin" -B 2 -T 16
check_error "B of 0" "bad value for --batch (eval): expected 1.." "$GPT2" eval --model $FIX/model --data $TOK -B 0
check_error "T of 0" "bad value for --tokens (eval): expected 1.." "$GPT2" eval --model $FIX/model --data $TOK -T 0
check "--name=value flags give the same result" test "$("$GPT2" eval --model=$FIX/model --data=$TOK -B 2 -T 16 --batches=5 | tail -1)" = "$got"
check_error "unknown command with a suggestion" "unknown command 'trian'" "$GPT2" trian
summary
