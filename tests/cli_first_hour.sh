#!/usr/bin/env bash
# cli_first_hour.sh: what a newcomer from llm.c or nanoGPT meets in their first hour, as the binary shows
# it: the progress lines, resuming a run with its log, what a val loss covers, `info` on a checkpoint,
# errors that point the right way, `--help` and `--version`. A tiny model on the committed 1000-token
# fixture, so every run takes a second.
source "$(dirname "$0")/lib.sh"
TOK=tests/fixtures/tokens_v1000.bin
TINY=(--vocab 1000 --layers 1 --heads 2 --channels 32 --seq-len 32 -B 4 -T 16 --train $TOK --val $TOK
      --sample-tokens 0)

# ---- one progress format: every step line carries step, loss, lr, norm, ms, tok/s and the ETA ----
step_re='^step +[0-9]+/12 \| loss [0-9.]+ \| lr [0-9.e+-]+ \| norm [0-9.]+ \| [0-9.]+ ms \| [0-9]+ tok/s \| ETA [0-9]+m[0-9]+s$'
"$GPT2" train "${TINY[@]}" --steps 12 --val-every 5 >"$TEST_TMP/piped" 2>&1
n=$(grep -Ec "$step_re" "$TEST_TMP/piped")
if [ "$n" = 12 ] && ! grep -q $'\r\|\033' "$TEST_TMP/piped"; then pass "piped: 12 plain step lines with every field"
else fail "piped: 12 plain step lines with every field (got $n)"; sed 's/^/    /' "$TEST_TMP/piped" | head; fi
if command -v script >/dev/null; then
    # on a terminal (script(1) gives the run one) the line is rewritten in place, with the same fields
    script -qec "$GPT2 train ${TINY[*]} --steps 12 --val-every 5" /dev/null >"$TEST_TMP/tty" 2>&1
    n=$(tr '\r' '\n' <"$TEST_TMP/tty" | sed 's/\x1b\[K//g' | grep -Ec "$step_re")
    if [ "$n" = 12 ] && grep -q $'\r' "$TEST_TMP/tty"; then pass "terminal: 12 step lines rewritten in place, every field"
    else fail "terminal: 12 step lines rewritten in place, every field (got $n)"; fi
else
    skip "terminal progress: no script(1) here"
fi
# eval says how far it is, on stderr, a line at each tenth when stderr is not a terminal
"$GPT2" eval --model tests/fixtures/trained_tiny --data $TOK -T 16 2>"$TEST_TMP/eval_err" >"$TEST_TMP/eval_out"
if grep -Eq '^eval: +100% of [0-9]+ tokens \| [0-9]+ tok/s \| ETA' "$TEST_TMP/eval_err" &&
    [ "$(grep -c '^eval: ' "$TEST_TMP/eval_err")" -le 11 ] && grep -q '^loss ' "$TEST_TMP/eval_out"; then
    pass "eval shows its progress on stderr"
else fail "eval shows its progress on stderr"; head -3 "$TEST_TMP/eval_err"; fi

# ---- `train | head -1` ends at once: a closed standard output stops the run ----
"$GPT2" train "${TINY[@]}" --steps 5000 --val-every 0 --log "$TEST_TMP/head.jsonl" 2>"$TEST_TMP/head_err" | head -1 >/dev/null
rc=${PIPESTATUS[0]}
lines=$(wc -l <"$TEST_TMP/head.jsonl")
if [ "$rc" = 1 ] && [ "$lines" -lt 100 ] && grep -q '^error: cannot write standard output' "$TEST_TMP/head_err"; then
    pass "train | head -1 stops after a step or two ($lines logged)"
else fail "train | head -1 stops after a step or two (exit $rc, $lines steps logged)"; fi

# ---- resume: the run's --log goes on, overridden flags are named with old and new values ----
R=$TEST_TMP/run
"$GPT2" train "${TINY[@]}" --steps 8 --val-every 4 --out $R --log $R.jsonl --stop-after 4 >"$TEST_TMP/first" 2>&1
grep -q "^saved $R at step 4; continue with: $GPT2 train --resume $R$" "$TEST_TMP/first" &&
    pass "a save says how to resume" || fail "a save says how to resume"
"$GPT2" train --resume $R --lr 3e-4 >"$TEST_TMP/resumed" 2>&1
check "the resumed run appends steps 5-8 to the run's --log" \
    test "$(grep -c '^{"step":[5-8],"loss"' $R.jsonl) $(grep -c '^{"step":[1-4],"loss"' $R.jsonl)" = "4 4"
grep -q "^log: appending to $R.jsonl" "$TEST_TMP/resumed" && pass "the resumed run says it appends to the log" ||
    fail "the resumed run says it appends to the log"
grep -q '^note: --lr 3e-4 replaces the run.s 1e-3 (the default)$' "$TEST_TMP/resumed" &&
    pass "an overriding flag is named with its old value" || fail "an overriding flag is named with its old value"
grep -q "^saved $R at step 8, the last; train on with: $GPT2 train --resume $R --steps 16$" "$TEST_TMP/resumed" &&
    pass "the last save says how to train on" || fail "the last save says how to train on"
# the run's end names its plot and how to sample from the model it saved
if [ "$(tail -2 "$TEST_TMP/resumed")" = "plot: $R/loss.png
sample from it: $GPT2 generate --model $R --prompt-ids 0 --ids" ]; then
    pass "the run's end names its loss.png and the generate line"
else fail "the run's end names its loss.png and the generate line"; tail -3 "$TEST_TMP/resumed"; fi
"$GPT2" train "${TINY[@]}" --steps 1 --val-every 1 --plot "$TEST_TMP/one.png" >"$TEST_TMP/one" 2>&1
[ "$(tail -1 "$TEST_TMP/one")" = "plot: $TEST_TMP/one.png" ] && pass "... and a run without --out names its --plot" ||
    { fail "... and a run without --out names its --plot"; tail -2 "$TEST_TMP/one"; }
grep -q '; 1 step of 64 tokens' "$TEST_TMP/one" && grep -q '^val: every step, ' "$TEST_TMP/one" &&
    pass "one step is \"1 step\", not \"1 steps\"" || fail "one step is \"1 step\", not \"1 steps\""
"$GPT2" train "${TINY[@]}" --steps 1 --optimizer-state bf16 >"$TEST_TMP/bf16state" 2>&1
if grep -q '^precision: .*fp32 master weights, AdamW state bf16' "$TEST_TMP/bf16state" &&
    ! grep -q 'master weights and optimizer' "$TEST_TMP/bf16state"; then
    pass "--optimizer-state bf16 says the AdamW state is bf16"
else fail "--optimizer-state bf16 says the AdamW state is bf16"; grep precision "$TEST_TMP/bf16state"; fi

# ---- info on a checkpoint: where the run stands and how to continue ----
"$GPT2" info --model $R >"$TEST_TMP/info"
last_train=$(grep '"loss"' $R.jsonl | tail -1 | sed 's/.*"loss":\([0-9.]*\).*/\1/')
last_val=$(grep '"val_loss"' $R.jsonl | tail -1 | sed 's/.*"val_loss":\([0-9.]*\).*/\1/')
if grep -q '^run: step 8 of 8 (--steps), 512 tokens read (64 per step)$' "$TEST_TMP/info" &&
    grep -q "^last train loss: $last_train (step 8)$" "$TEST_TMP/info" &&
    grep -q "^last val loss: $last_val (step 8)$" "$TEST_TMP/info" && grep -q '^precision: fp32$' "$TEST_TMP/info" &&
    grep -q "^data: --train $(pwd)/$TOK, --val $(pwd)/$TOK$" "$TEST_TMP/info" &&  # recorded absolute grep -q -- '--lr 3e-4' "$TEST_TMP/info" &&
    grep -q "^finished; train on with: $GPT2 train --resume $R --steps 16$" "$TEST_TMP/info"; then
    pass "info shows the run's step, tokens, losses, precision, data, flags and how to go on"
else fail "info shows the run's step, tokens, losses, precision, data, flags and how to go on"; cat "$TEST_TMP/info"; fi

# ---- the val loss says what it covers, and eval over the same windows gives the same number ----
"$GPT2" train "${TINY[@]}" --steps 3 --val-every 3 --val-batches 5 --out $TEST_TMP/v >"$TEST_TMP/val" 2>&1
vl=$(grep -E '^step +3/3 \| val loss [0-9.]+ on 320 tokens$' "$TEST_TMP/val" | sed 's/.*val loss \([0-9.]*\) on.*/\1/')
el=$("$GPT2" eval --model $TEST_TMP/v --data $TOK -B 4 -T 16 --batches 5 2>/dev/null | sed -n 's/^loss //p')
if [ -n "$vl" ] && [ "$vl" = "$el" ] && grep -q '^val: every 3 steps, the first 320 of [0-9]* val tokens' "$TEST_TMP/val"; then
    pass "train's val loss ($vl on 320 tokens) is eval's over the same batches ($el)"
else fail "train's val loss ($vl) is eval's over the same batches ($el)"; fi

# ---- random init is the same on any thread count (it runs on all of them) ----
OMP_NUM_THREADS=1 "$GPT2" train "${TINY[@]}" --steps 0 --out $TEST_TMP/init1 >/dev/null 2>&1
OMP_NUM_THREADS=2 "$GPT2" train "${TINY[@]}" --steps 0 --out $TEST_TMP/init2 >/dev/null 2>&1
check "random init: 1 and 2 threads give the same weights" cmp $TEST_TMP/init1/model.safetensors $TEST_TMP/init2/model.safetensors

# ---- errors that point the right way ----
cp $TOK $TEST_TMP/s_train_000001.bin && cp $TOK $TEST_TMP/s_train_000002.bin
check_error "an unquoted glob: a hint to quote it" "unexpected argument .*after --train" \
    "$GPT2" train --train $TEST_TMP/s_train_*.bin
grep -q "^hint: .*quote it: --train 'data/" "$TEST_TMP/err" && pass "the hint shows the quoted form" ||
    fail "the hint shows the quoted form"
# a pattern that matches nothing is reported before a model too big for this machine is even checked
check_error "a glob matching nothing fails before allocating" "no file matches --train" \
    "$GPT2" train --train "$TEST_TMP/nothing_*.bin" --layers 96 --channels 16384 --heads 128
"$GPT2" train "${TINY[@]}" --steps 1 --model $R >"$TEST_TMP/loaded" 2>&1
grep -q "^loaded $R (huggingface, F32)$" "$TEST_TMP/loaded" && pass "train --model says what it loaded (equal geometry flags are fine)" ||
    fail "train --model says what it loaded (equal geometry flags are fine)"
check_error "train --model refuses a geometry flag the checkpoint does not have" \
    "bad value for --layers (train): the --model $R has 1, got 4" \
    "$GPT2" train --model $R --train $TOK --layers 4 --channels 64 --steps 1 --sample-tokens 0
check_error "... each of them" "bad value for --seq-len (train): the --model $R has 32, got 64" \
    "$GPT2" train --model $R --train $TOK --seq-len 64 --steps 1 --sample-tokens 0
# info's flags: a --model run shows --model, never a from-scratch model's default geometry, also after a resume
"$GPT2" train --model $R --train $TOK -B 4 -T 16 --steps 4 --stop-after 2 --sample-tokens 0 --out $TEST_TMP/ft >/dev/null 2>&1
"$GPT2" info --model $TEST_TMP/ft | grep '^flags:' >"$TEST_TMP/ft_flags"
"$GPT2" train --resume $TEST_TMP/ft >/dev/null 2>&1
"$GPT2" info --model $TEST_TMP/ft | grep '^flags:' >>"$TEST_TMP/ft_flags"
if [ "$(grep -c -- "--model $R " "$TEST_TMP/ft_flags")" = 2 ] && ! grep -Eq -- '--(layers|heads|channels|seq-len|vocab) ' "$TEST_TMP/ft_flags"; then
    pass "info's flags for a --model run: --model, no default geometry, before and after a resume"
else fail "info's flags for a --model run: --model, no default geometry, before and after a resume"; cat "$TEST_TMP/ft_flags"; fi
check_error "-b (for -B) suggests -B" "unknown flag -b (train)" "$GPT2" train -b 4
grep -qx 'hint: did you mean -B (--batch)?' "$TEST_TMP/err" && pass "... as -B (--batch), not --lr" ||
    { fail "... as -B (--batch), not --lr"; cat "$TEST_TMP/err"; }

# ---- config.json names the model's real stop token: 50256 only in a vocabulary that has it ----
"$GPT2" export --model $R --out $TEST_TMP/exported >/dev/null
"$GPT2" train --vocab 50257 --layers 1 --heads 2 --channels 32 --seq-len 32 -B 4 -T 16 --train $TOK --val '' \
    --sample-tokens 0 --steps 0 --out $TEST_TMP/v50257 >/dev/null 2>&1
if grep -q '"eos_token_id": null' $R/config.json && grep -q '"bos_token_id": null' $TEST_TMP/exported/config.json &&
    grep -q '"eos_token_id": 50256' $TEST_TMP/v50257/config.json; then
    pass "config.json: bos/eos null for a 1000-token vocabulary, 50256 for GPT-2's"
else fail "config.json: bos/eos null for a 1000-token vocabulary, 50256 for GPT-2's"; fi
check "... and such a config loads" "$GPT2" generate --model $TEST_TMP/exported --prompt-ids 1 --ids --max-tokens 2

# compare with a model the dump was not made from blames neither file alone
check_error "compare: another model than the dump's is named as the mismatch" \
    "\-\-model and --ref disagree (compare): the model has 1 layers, wte (1000, 32).*holds gradients of 2 layers, wte (1000, 64)" \
    "$GPT2" compare --model $R --ref tests/fixtures/ref_tiny/dump.safetensors
check_error "compare: the same with llm.c's debug state" "llm.c debug state .* does not fit the model" \
    "$GPT2" compare --model $R --ref tests/fixtures/ref_tiny/llmc_debug_state.bin

# ---- the quick start after a Ctrl-C: run again, it resumes the interrupted run and says so ----
# scripts/quickstart.sh in a scratch tree: this gpt2, the fixture tokens as tiny shakespeare, and stand-ins
# for the package install and make (the build and the data are there)
Q=$TEST_TMP/qs
mkdir -p $Q/scripts $Q/bin $Q/data/tinyshakespeare
cp scripts/quickstart.sh $Q/scripts/ && printf '#!/bin/sh\n' >$Q/scripts/install_deps.sh && printf '#!/bin/sh\n' >$Q/bin/make
chmod +x $Q/bin/make && ln -s "$(cd "$(dirname "$GPT2")" && pwd)/$(basename "$GPT2")" $Q/gpt2
cp $TOK $Q/data/tinyshakespeare/train.bin && cp $TOK $Q/data/tinyshakespeare/val.bin
quickstart() { (cd $Q && PATH=$Q/bin:$PATH STEPS=3 exec timeout -k 10 600 env -u GPT2_DATA_DIR bash scripts/quickstart.sh) >>$Q/qs.log 2>&1; }
quickstart &
pid=$!
for _ in $(seq 1200); do grep -q "^step *[12]/3" $Q/qs.log && break; sleep 0.1; done
kill -INT "$(head -1 $Q/out/shakespeare.lock 2>/dev/null)" 2>/dev/null  # Ctrl-C to train (its pid is in its --out's lock)
wait_bounded $pid 600
stopped=$(grep -o 'interrupted at step [0-9]*' $Q/qs.log | grep -o '[0-9]*$')
quickstart
losses=$(grep -c '"loss"' $Q/out/shakespeare.jsonl)
if [ -n "$stopped" ] && grep -q "^quickstart: out/shakespeare holds an earlier run (at step $stopped): continuing it with ./gpt2 train --resume out/shakespeare" $Q/qs.log &&
    grep -q "^saved out/shakespeare at step 3, the last" $Q/qs.log && ! grep -q '^error' $Q/qs.log &&
    [ "$losses" = 3 ]; then
    pass "the quick start run again after a Ctrl-C at step $stopped resumes it to step 3 and says so"
else fail "the quick start run again after a Ctrl-C at step ${stopped:-?} resumes it to step 3 and says so"; grep -v '^step' $Q/qs.log | sed 's/^/    /'; fi

# ---- --help and --version ----
bad=0
for c in train eval generate tokenize compare info export plot; do
    "$GPT2" $c --help >"$TEST_TMP/help_$c" || bad=1
    grep -q '(default: .*(default: ' "$TEST_TMP/help_$c" && { echo "    $c: a default printed twice"; bad=1; }
    [ $c != generate ] && grep -Eq '^  -n, ' "$TEST_TMP/help_$c" && { echo "    $c: -n"; bad=1; }
done
grep -Eq '^  -n, --max-tokens X ' "$TEST_TMP/help_generate" || { echo "    generate: no -n, --max-tokens"; bad=1; }
[ $bad = 0 ] && pass "no command's --help prints a default twice; -n is generate's --max-tokens alone" ||
    fail "no command's --help prints a default twice; -n is generate's --max-tokens alone"
"$GPT2" generate --model $R --prompt-ids 1 --ids -n 5 2>/dev/null >"$TEST_TMP/gen_n"
[ "$(wc -w <"$TEST_TMP/gen_n")" = 5 ] && pass "generate -n 5 (llama.cpp's spelling) makes 5 tokens" ||
    { fail "generate -n 5 (llama.cpp's spelling) makes 5 tokens"; cat "$TEST_TMP/gen_n"; }
"$GPT2" --version >"$TEST_TMP/version" && grep -Eq '^gpt2.cpp [0-9]+\.[0-9]+\.[0-9]+ \(built with' "$TEST_TMP/version" &&
    pass "gpt2 --version" || fail "gpt2 --version"
grep -q 'steps of 64 tokens (-B 4 x -T 16)' "$TEST_TMP/first" && pass "the data line spells out a step's tokens" ||
    fail "the data line spells out a step's tokens"

# ---- offline: every download fails in one error line and a hint saying how to give the file locally ----
# Each script runs from a copy of scripts/ (it works in the directory above its own) with a curl that fails
# as an unreachable host makes it fail; no network is touched.
mkdir -p "$TEST_TMP/offline/scripts" "$TEST_TMP/bin"
cp scripts/download_gpt2.sh scripts/download_hellaswag.sh scripts/prepare_data.sh "$TEST_TMP/offline/scripts/"
printf '#!/bin/sh\necho "curl: (6) Could not resolve host: example" >&2\nexit 6\n' >"$TEST_TMP/bin/curl"
chmod +x "$TEST_TMP/bin/curl"
offline_hint() {  # SCRIPT HINT_PATTERN: exit 1, an error line naming curl's reason, then one hint line
    env -u GPT2_DATA_DIR PATH="$TEST_TMP/bin:$PATH" bash "$TEST_TMP/offline/scripts/$1" >/dev/null 2>"$TEST_TMP/offline.err"
    local rc=$?
    sed 's/^/    /' "$TEST_TMP/offline.err"
    [ $rc = 1 ] && [ "$(wc -l <"$TEST_TMP/offline.err")" = 2 ] &&
        grep -q '^error: .*expected a reachable URL, got curl: (6) Could not resolve host' "$TEST_TMP/offline.err" &&
        sed -n 2p "$TEST_TMP/offline.err" | grep -q "^hint: $2" &&
        [ -z "$(find "$TEST_TMP/offline" -name '*.tmp*')" ]
}
check "download_gpt2.sh offline: one error line, a hint naming the files to put in data/gpt2/, exit 1" \
    offline_hint download_gpt2.sh "offline, put config.json, vocab.json, merges.txt and model.safetensors .* in data/gpt2/"
check "download_hellaswag.sh offline: the same, naming its file" \
    offline_hint download_hellaswag.sh "offline: copy hellaswag_val.jsonl .* to data/hellaswag/hellaswag_val.jsonl"
check "make data (prepare_data.sh) offline: the same, naming GPT2_DATA_DIR" \
    offline_hint prepare_data.sh "offline: set GPT2_DATA_DIR to a directory holding tinyshakespeare.txt"
# ---- the random checkpoint README offers for fine-tuning without a download: without numpy, one line ----
if command -v python3 >/dev/null; then
    python3 -S scripts/random_checkpoint.py --size gpt2 --out "$TEST_TMP/random" 2>"$TEST_TMP/nonumpy.err"  # -S: no site-packages
    rc=$?
    check "random_checkpoint.py under a Python without numpy: exit 1 and one line saying what it needs" \
        bash -c "test $rc = 1 && test \$(wc -l <'$TEST_TMP/nonumpy.err') = 1 && grep -q '^error: numpy not found (.*python3-numpy' '$TEST_TMP/nonumpy.err'"
else
    skip "random_checkpoint.py without numpy: no python3"
fi

# A path with a space (or a quote) in the hints is one shell word: the printed commands run as printed.
Q="$TEST_TMP/a dir/it's run"
"$GPT2" train "${TINY[@]}" --steps 2 --sample-tokens 0 --out "$Q" >"$TEST_TMP/quoted" 2>&1
hint=$(sed -n 's/^saved .* train on with: //p' "$TEST_TMP/quoted")
check "the 'train on with' hint quotes a path with a space and a quote, and runs as printed" \
    eval "$hint >$TEST_TMP/quoted_resume 2>&1 && grep -q '^saved .* at step 4, the last' $TEST_TMP/quoted_resume"
sample=$(sed -n 's/^sample from it: //p' "$TEST_TMP/quoted")
check "... and so does the 'sample from it' line" eval "$sample --max-tokens 2 --prompt-ids 1 --ids >/dev/null 2>&1"
summary
