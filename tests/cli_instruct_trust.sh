#!/usr/bin/env bash
# cli_instruct_trust.sh: instruction data that a red team found mishandled (issue 56): val windows that score
# nothing refused before step 1, a train step that scores nothing skipped and said so (log, plot, resume), packing
# that fills its windows with memory bounded by one window, a plain tokenize over an --instructions prefix, a loss
# mask in a glob, -o P and -o P/ locks, eval on a small val file. Needs "$GPT2" and the tokenizer files; no Python.
source "$(dirname "$0")/lib.sh"

need_tokenizer
T=$TEST_TMP
FIX=tests/fixtures/instruct
MODEL=(--layers 1 --channels 32 --heads 2 --sample-tokens 0)
# repeat N X: X N times, space-separated.
repeat() { local i out=""; for ((i = 0; i < $1; i++)); do out+="$2 "; done; echo "${out% }"; }
# wait_for CMD...: up to 20 s for CMD to succeed.
wait_for() { local i; for ((i = 0; i < 200; i++)); do "$@" && return 0; sleep 0.1; done; return 1; }

# Data: 9 short examples, then one whose prompt is 200 words: -T 32 splits it over windows of prompt alone.
LONG=$(repeat 200 word)
{ head -n 9 $FIX/prompt_completion.jsonl; printf '{"prompt": "%s", "completion": " yes"}\n' "$LONG"; } >"$T/longval.jsonl"
"$GPT2" tokenize --instructions -T 32 --val-examples 1 -o "$T/lv/x" "$T/longval.jsonl" >/dev/null 2>&1

# --- 1: val windows that score no token are refused before step 1, not after every step trained -------------
no_val_scored() {
    "$GPT2" train --train "$T/lv/x_train.bin" --val "$T/lv/x_val.bin" "${MODEL[@]}" -B 1 -T 32 --val-batches 2 \
        --steps 3 --out "$T/lv/m" >"$T/nv.out" 2>"$T/nv.err"
    local rc=$?
    cat "$T/nv.err"
    [ $rc = 1 ] && [ "$(grep -c '^error: ' "$T/nv.err")" = 1 ] || return 1
    grep -q "^error: .*$T/lv/x_val.bin.*none of the 2 val windows" "$T/nv.err" || return 1
    grep -q "^hint: .*-T.*--loss-on all" "$T/nv.err" || return 1
    ! grep -q "^step " "$T/nv.out"  # refused before any step
}
check "val windows that score no token: refused before step 1, naming the val file and the count, with a hint" no_val_scored

# --- 2: a train step whose batch scores no token: said so, skipped (no AdamW step), logged without a loss -----
# The train file: a long example first (its prompt alone fills windows 1..6 once short ones fill window 0).
{ printf '{"prompt": "%s", "completion": " yes"}\n' "$LONG"; head -n 12 $FIX/prompt_completion.jsonl; } >"$T/lt.jsonl"
"$GPT2" tokenize --instructions -T 32 --val-examples 1 -o "$T/lt/x" "$T/lt.jsonl" >/dev/null 2>&1
STEPRUN=(--train "$T/lt/x_train.bin" --val "" "${MODEL[@]}" -B 1 -T 32 --no-shuffle --steps 4)
skipped_step() {
    "$GPT2" train "${STEPRUN[@]}" --out "$T/lt/a" --log "$T/lt/a.jsonl" >"$T/sk.out" 2>&1 || { cat "$T/sk.out"; return 1; }
    cat "$T/sk.out"
    grep -q "^step *2/4 | loss -- (no scored token in this batch) | " "$T/sk.out" || return 1
    ! grep -q "loss 0.000000" "$T/sk.out" || return 1
    sed -n 2p "$T/lt/a.jsonl" | grep -q '"step":2,"loss":null,' || { cat "$T/lt/a.jsonl"; return 1; }
    head -c 4000 "$T/lt/a/train_state.safetensors" | grep -aq '"adamw.step":"1"' || return 1  # steps 2-4 skipped
}
check "a step that scores no token: 'loss --', the log's loss null, and no AdamW step (adamw.step counts only updates)" skipped_step
# info counts the tokens the steps read and says how many steps were skipped: not "trained on" (red team D8).
info_skipped() {
    "$GPT2" info --model "$T/lt/a" >"$T/sk.info" 2>&1 || { cat "$T/sk.info"; return 1; }
    grep "^run:" "$T/sk.info"
    grep -q "^run: step 4 of 4 (--steps), 128 tokens read (32 per step), 3 steps skipped (their batches scored no token)$" \
        "$T/sk.info" && ! grep -q "trained on" "$T/sk.info"
}
check "... info: 128 tokens read, 3 steps skipped (not '128 tokens trained on')" info_skipped
no_speed() {
    grep "^step *[234]/4 " "$T/sk.out" | grep -q . || return 1
    ! grep "^step *[234]/4 " "$T/sk.out" | grep -q "ms |\|tok/s"
}
check "... a skipped step shows no speed (no 'ms', no 'tok/s': it computed nothing)" no_speed
check "... plot --log-y draws such a log (the step without a loss is left out)" \
    "$GPT2" plot --log-y --out "$T/lt/a.png" "$T/lt/a.jsonl"
# The weights after a skipped step are those before it: not even weight decay touches them.
no_update() {
    "$GPT2" train "${STEPRUN[@]}" --stop-after 1 --out "$T/lt/b" >/dev/null 2>&1 || return 1
    cmp "$T/lt/a/model.safetensors" "$T/lt/b/model.safetensors"
}
check "... the weights after steps 2-4 (all skipped) are byte for byte those after step 1" no_update
# Resume stays exact across skipped steps: 4 steps straight equal 2 + 2 resumed (data, lr, moments, log).
{ printf '{"prompt": "%s", "completion": " yes"}\n' "$(repeat 60 word)"; head -n 12 $FIX/prompt_completion.jsonl; } >"$T/lr.jsonl"
"$GPT2" tokenize --instructions -T 32 --val-examples 1 -o "$T/lr/x" "$T/lr.jsonl" >/dev/null 2>&1
resume_exact() {
    local run=(--train "$T/lr/x_train.bin" --val "" "${MODEL[@]}" -B 1 -T 32 --no-shuffle --steps 5)
    "$GPT2" train "${run[@]}" --out "$T/lr/a" >"$T/lr/a.out" 2>&1 || return 1
    "$GPT2" train "${run[@]}" --stop-after 2 --out "$T/lr/b" >"$T/lr/b.out" 2>&1 || return 1
    "$GPT2" train --resume "$T/lr/b" --steps 5 >>"$T/lr/b.out" 2>&1 || return 1
    grep -q "no scored token" "$T/lr/a.out" || { cat "$T/lr/a.out"; return 1; }
    cmp "$T/lr/a/model.safetensors" "$T/lr/b/model.safetensors" || return 1
    diff <(grep -o '^step.*| loss [^|]*|' "$T/lr/a.out") <(grep -o '^step.*| loss [^|]*|' "$T/lr/b.out")
}
check "... resume across a skipped step is bit-exact (5 steps straight = 2 + 3 resumed)" resume_exact

# --- 3: packing fills the windows; memory bounded by a window, not by the windows' count ----------------------
for ((i = 0; i < 2000; i++)); do echo '{"prompt": "a", "completion": " b"}'; done >"$T/tiny.jsonl"
fills_window() {
    "$GPT2" tokenize --instructions -T 8192 --val-examples 1 -o "$T/tiny/x" "$T/tiny.jsonl" >"$T/tiny.out" 2>"$T/tiny.err" || return 1
    cat "$T/tiny.err"
    grep -q "^packed train: 1999 examples into 1 window of -T 8192: 5997 of 8192 tokens used (73.2%)" "$T/tiny.err" || return 1
    [ "$(wc -c <"$T/tiny/x_train.bin")" = $((1024 + 2 * 8193)) ]
}
check "2,000 three-token examples with -T 8192 fill 1 window (best fit over a look-ahead that refills)" fills_window
check "... and the utilisation over both parts is printed at the end" grep -q "^utilisation: .*%" "$T/tiny.out"
# Peak memory with -T 1048576: 20,000 examples (about 80 windows' worth before) take about what one window does.
for ((i = 0; i < 20000; i++)); do echo '{"prompt": "a", "completion": " b"}'; done >"$T/many.jsonl"
peak_kib() { /usr/bin/time -f '%M' "$@" 2>&1 >/dev/null | tail -1; }
bounded_memory() {
    local small big
    small=$(peak_kib "$GPT2" tokenize --instructions -T 1048576 --val-examples 1 -o "$T/mem/a" "$T/tiny.jsonl")
    big=$(peak_kib "$GPT2" tokenize --instructions -T 1048576 --val-examples 1 -o "$T/mem/b" "$T/many.jsonl")
    echo "peak RSS: 2,000 examples $small KiB, 20,000 examples $big KiB"
    [ -n "$small" ] && [ -n "$big" ] && [ "$big" -lt $((small + 20000)) ]
}
if [ -x /usr/bin/time ]; then
    check "-T 1048576: peak memory does not grow with the windows (20,000 examples within 20 MiB of 2,000's)" bounded_memory
else
    skip "bounded packing memory: /usr/bin/time not installed"
fi

# --- 4: a plain tokenize over an --instructions prefix leaves no stale loss mask -----------------------------
fixture_text 2 >"$T/plain.txt"
"$GPT2" tokenize --instructions -T 64 -o "$T/pp/x" $FIX/*.jsonl >/dev/null 2>&1
plain_over() {
    "$GPT2" tokenize --val-tokens 100 -o "$T/pp/x" "$T/plain.txt" >"$T/pp.out" 2>"$T/pp.err" || { cat "$T/pp.err"; return 1; }
    cat "$T/pp.out" "$T/pp.err"
    [ ! -e "$T/pp/x_train.mask" ] && [ ! -e "$T/pp/x_val.mask" ] || return 1
    grep -q "^note: removed $T/pp/x_val.mask and $T/pp/x_train.mask" "$T/pp.err" || return 1
    "$GPT2" train --train "$T/pp/x_train.bin" --val "$T/pp/x_val.bin" "${MODEL[@]}" -B 1 -T 32 --steps 1 >/dev/null 2>&1
}
check "plain tokenize over an --instructions prefix: the masks of the token files it replaces go, said so; train works" plain_over
mkdir -p "$T/pu" && echo "my notes" >"$T/pu/x_train.mask"
"$GPT2" tokenize --val-tokens 100 -o "$T/pu/x" "$T/plain.txt" >/dev/null 2>&1
check "... a user's file at X_train.mask is kept" test "$(cat "$T/pu/x_train.mask")" = "my notes"
# A removed mask, on resume: said so, naming it, not "training data changed".
missing_mask() {
    "$GPT2" tokenize --instructions -T 64 -o "$T/mm/x" $FIX/*.jsonl >/dev/null 2>&1 || return 1
    "$GPT2" train --train "$T/mm/x_train.bin" --val "" "${MODEL[@]}" -B 1 -T 64 --steps 2 --stop-after 1 \
        --out "$T/mm/m" >/dev/null 2>&1 || return 1
    rm "$T/mm/x_train.mask"
    "$GPT2" train --resume "$T/mm/m" --steps 2 >"$T/mm.out" 2>"$T/mm.err"
    cat "$T/mm.err"
    [ "$(grep -c '^error: ' "$T/mm.err")" = 1 ] && grep -q "^error: .*loss mask $T/mm/x_train.mask is missing" "$T/mm.err"
}
check "resume after the loss mask was removed: 'the loss mask X.mask is missing', naming it" missing_mask

# --- 5: a loss mask matched by a glob is named as one ---------------------------------------------------------
check_error "a glob matching a loss mask: says it is a loss mask, naming the glob" \
    "^error: $T/pp2/x_train.mask is a loss mask, not a token file (--train '$T/pp2/x_\*' matches it)" \
    bash -c "'$GPT2' tokenize --instructions -T 64 -o '$T/pp2/x' $FIX/*.jsonl >/dev/null 2>&1 && \
        '$GPT2' train --train '$T/pp2/x_*' --val '' ${MODEL[*]} -B 1 -T 64 --steps 1"

# hold_lock FILE: a process that holds FILE's lock (as PathLock takes it) until killed; its pid in $holder.
hold_lock() {
    perl -e 'open(my $f, ">>", $ARGV[0]) or die; flock($f, 2) or die; sleep 30' "$1" &
    holder=$!
    wait_for test -e "$1"
}
check "... and hints at a glob of token files ('.../x_*.bin')" grep -q "^hint: .*'$T/pp2/x_\*.bin'" "$TEST_TMP/err"
check_error "a loss mask given as the train file: said so" "^error: $T/pp2/x_train.mask is a loss mask, not a token file" \
    "$GPT2" train --train "$T/pp2/x_train.mask" --val '' "${MODEL[@]}" -B 1 -T 64 --steps 1

# --- 6: -o P and -o P/ are different outputs (P_val.bin..., P/val.bin...) with different locks ---------------
# tokenize_held LOCK PREFIX OUT: tokenize into PREFIX while another process holds LOCK; its exit code.
tokenize_held() {
    hold_lock "$1"
    "$GPT2" tokenize --val-tokens 100 -o "$2" "$T/plain.txt" >"$3" 2>&1
    local rc=$?
    kill $holder; wait $holder 2>/dev/null
    cat "$3"
    return $rc
}
two_locks() {
    mkdir -p "$T/lk"
    tokenize_held "$T/lk/p.lock" "$T/lk/p" "$T/lk1.out" && [ -e "$T/lk/p_val.bin" ] || return 1
    tokenize_held "$T/lk/p_.lock" "$T/lk/p/" "$T/lk2.out" && [ -e "$T/lk/p/val.bin" ] || return 1
    tokenize_held "$T/lk/p_.lock" "$T/lk/p" "$T/lk3.out"
    [ $? = 1 ] && grep -q "in use" "$T/lk3.out"  # the same prefix still waits its turn
}
check "-o P/ (a directory's lock, P.lock) and -o P (files P_*, lock P_.lock) do not block each other" two_locks

# --- 7: eval on the small fine-tune val file at the default -B -----------------------------------------------
eval_small() {
    "$GPT2" tokenize --instructions -T 128 -o "$T/ft/sft" $FIX/*.jsonl >/dev/null 2>&1 || return 1
    "$GPT2" train --train "$T/ft/sft_train.bin" --val "" "${MODEL[@]}" -B 1 -T 128 --steps 1 --out "$T/ft/m" >/dev/null 2>&1 || return 1
    "$GPT2" eval --model "$T/ft/m" --data "$T/ft/sft_val.bin" -T 128 >"$T/ev.out" 2>"$T/ev.err" || { cat "$T/ev.err"; return 1; }
    cat "$T/ev.out" "$T/ev.err"
    grep -q "^note: .*holds 2 windows of T=128: -B 2" "$T/ev.err" && grep -q "^loss [0-9]" "$T/ev.out"
}
check "eval at the default -B 4 on a val file of 2 windows: -B 2, with a note" eval_small

# --- 8: a loss mask truncated during the run within its last page (no SIGBUS there): said so, after saving -----
mask_truncated() {
    "$GPT2" tokenize --instructions -T 64 -o "$T/mt/x" $FIX/*.jsonl >/dev/null 2>&1 || return 1
    "$GPT2" train --train "$T/mt/x_train.bin" --val "" "${MODEL[@]}" -B 1 -T 64 --steps 100000 \
        --log "$T/mt/l.jsonl" --out "$T/mt/m" >"$T/mt.out" 2>"$T/mt.err" &
    local pid=$!
    wait_for test -s "$T/mt/l.jsonl" || { kill $pid; wait $pid; return 1; }
    truncate -s 1024 "$T/mt/x_train.mask"
    local i
    for ((i = 0; i < 600; i++)); do kill -0 $pid 2>/dev/null || break; sleep 0.1; done
    kill $pid 2>/dev/null
    wait $pid
    local rc=$?
    cat "$T/mt.err"
    [ $rc = 1 ] && [ "$(grep -c '^error: ' "$T/mt.err")" = 1 ] || return 1
    grep -q "^error: loss mask changed during the run ($T/mt/x_train.mask)" "$T/mt.err" || return 1
    [ -e "$T/mt/m/model.safetensors" ]  # saved first
}
check "a loss mask truncated during the run within its last page: 'loss mask changed during the run', saved" mask_truncated

# --- 9: eval on data whose masks score nothing: refused before the evaluation, not after it -------------------
eval_nothing() {
    local n
    "$GPT2" tokenize --instructions -T 32 -o "$T/ez/x" $FIX/*.jsonl >/dev/null 2>&1 || return 1
    n=$(($(wc -c <"$T/ez/x_val.mask") - 1024))
    dd if=/dev/zero of="$T/ez/x_val.mask" bs=1 seek=1024 count=$n conv=notrunc 2>/dev/null || return 1
    "$GPT2" eval --model "$T/lt/a" --data "$T/ez/x_val.bin" -B 1 -T 32 "$@" >"$T/ez.out" 2>"$T/ez.err"
    local rc=$?
    cat "$T/ez.err"
    [ $rc = 1 ] && [ "$(grep -c '^error: ' "$T/ez.err")" = 1 ] || return 1
    grep -q "^error: no scored tokens.*$T/ez/x_val.bin" "$T/ez.err" || return 1
    ! grep -q "^eval: " "$T/ez.err"  # no progress: refused before the first batch
}
check "eval --batches all on data whose masks score nothing: refused before any batch" eval_nothing
check "eval --batches 2 on windows whose masks score nothing: refused before any batch" eval_nothing --batches 2

# --- 10: every input checked before any is encoded: a missing file or a directory named first ----------------
echo '{"prompt": "a", "completion": ' >"$T/bad.jsonl"  # malformed: reported only if read before the others are checked
check_error "tokenize --instructions with a missing input after others: named before any input is read" \
    "^error: cannot open $T/missing.jsonl: No such file or directory" \
    "$GPT2" tokenize --instructions -o "$T/in/x" "$T/bad.jsonl" "$T/missing.jsonl"
check_error "... a directory as an input: named before any input is read" "^error: is a directory ($T): expected" \
    "$GPT2" tokenize --instructions -o "$T/in/x" "$T/bad.jsonl" "$T"

# --- 11: one line over --max-unsplit-bytes: said so, without copying it (memory about the file, not twice it) ---
truncate -s 300M "$T/long.jsonl"
check_error "a 300 MB line under a 700 MB address-space limit: 'line too long', not out of memory" \
    "^error: line too long ($T/long.jsonl) at line 1: expected JSON lines of at most 67108864 bytes, got 314572800" \
    bash -c "ulimit -v 700000; exec '$GPT2' tokenize --instructions -o '$T/ll/x' '$T/long.jsonl'"
rm -f "$T/long.jsonl"

# --- 12: invalid UTF-8 inside a JSON string: refused naming the file and line, not encoded byte by byte ------
{ head -n 3 $FIX/prompt_completion.jsonl; printf '{"prompt": "a\xff\xfe", "completion": " b"}\n'; } >"$T/u1.jsonl"
check_error "invalid UTF-8 in a string (0xff 0xfe): refused naming the file and line" \
    "^error: invalid UTF-8 ($T/u1.jsonl line 4)" "$GPT2" tokenize --instructions -o "$T/u/x" "$T/u1.jsonl"
{ head -n 3 $FIX/prompt_completion.jsonl; printf '{"prompt": "a", "completion": " \xc0\xaf"}\n'; } >"$T/u2.jsonl"
check_error "... an overlong form (0xc0 0xaf, '/'): refused too" \
    "^error: invalid UTF-8 ($T/u2.jsonl line 4)" "$GPT2" tokenize --instructions -o "$T/u/x" "$T/u2.jsonl"
{ head -n 3 $FIX/prompt_completion.jsonl; printf '{"prompt": "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", "completion": " b"}\n'; } >"$T/u3.jsonl"
check "... while valid 2-, 3- and 4-byte characters are taken" \
    "$GPT2" tokenize --instructions --val-examples 1 -o "$T/u/y" "$T/u3.jsonl"

# --- 13: no examples at all: said so, naming the inputs, not a flag never given -----------------------------
: >"$T/empty.jsonl"
printf '\n  \n\t\n' >"$T/blank.jsonl"
check_error "tokenize --instructions on an empty and an all-blank file: 'no examples in' both" \
    "^error: no examples in $T/empty.jsonl, $T/blank.jsonl" \
    "$GPT2" tokenize --instructions -o "$T/e/x" "$T/empty.jsonl" "$T/blank.jsonl"
check "... without naming --val-examples, which was not given" bash -c "! grep -q -- --val-examples '$TEST_TMP/err'"
head -n 1 $FIX/prompt_completion.jsonl >"$T/one.jsonl"
check_error "one example and no --val-examples: too few to split, without naming the flag as given" \
    "^error: too few examples ($T/one.jsonl): expected at least 2" \
    "$GPT2" tokenize --instructions -o "$T/e/x" "$T/one.jsonl"

# --- 14: plot on a log whose steps were all skipped: says that, not that train did not write it -------------
printf '{"step":1,"loss":null,"lr":0.0001,"norm":null,"ms":0.1,"tokens":64}\n{"step":2,"loss":null,"lr":0.0001,"norm":null,"ms":0.1,"tokens":128}\n' >"$T/allskip.jsonl"
check_error "plot on a log of skipped steps only: 'every step scored no token'" \
    "^error: no loss points in $T/allskip.jsonl: its 2 steps all scored no token" \
    "$GPT2" plot --out "$T/allskip.png" "$T/allskip.jsonl"
check "... not 'as train --log writes them' (train wrote it)" bash -c "! grep -q 'as train --log writes' '$TEST_TMP/err'"

# --- 15: the note on a mask packed for another -T recommends no command tokenize refuses --------------------
t1_note() {
    "$GPT2" tokenize --instructions -T 64 -o "$T/t1/x" $FIX/*.jsonl >/dev/null 2>&1 || return 1
    "$GPT2" train --train "$T/t1/x_train.bin" --val "" "${MODEL[@]}" -B 1 -T 1 --steps 1 >"$T/t1.out" 2>&1
    local rc=$?
    cat "$T/t1.out"
    [ $rc = 0 ] && grep -q "^note: the loss mask of $T/t1/x_train.bin was packed for -T 64, this run has -T 1" "$T/t1.out" || return 1
    ! grep -q "tokenize --instructions -T 1 " "$T/t1.out"  # tokenize takes -T 2 and up
}
check "train -T 1 on a mask packed for -T 64: the note does not recommend tokenize -T 1 (refused)" t1_note

# --- 16: --chunk-bytes does not apply to --instructions (each line is read whole): refused, not ignored -------
check_error "tokenize --instructions --chunk-bytes: refused as a flag that does not apply" \
    "^error: conflicting flags --instructions and --chunk-bytes (tokenize)" \
    "$GPT2" tokenize --instructions --chunk-bytes 4096 -o "$T/cb/x" $FIX/prompt_completion.jsonl

# --- 17: the loss mask header's -T is checked: -7 refused naming the mask and the offset ----------------------
"$GPT2" tokenize --instructions -T 64 -o "$T/hT/x" $FIX/*.jsonl >/dev/null 2>&1
printf '\xf9\xff\xff\xff' | dd of="$T/hT/x_train.mask" bs=1 seek=20 conv=notrunc 2>/dev/null  # -7, little-endian
check_error "a loss mask whose header says -T -7: refused, naming the mask and the field's offset" \
    "^error: bad -T in loss mask ($T/hT/x_train.mask) at offset 20: expected 0 (not packed) or 2\.\.1048576, got -7" \
    "$GPT2" train --train "$T/hT/x_train.bin" --val "" "${MODEL[@]}" -B 1 -T 64 --steps 1


# --- red team round 2 (issue 56) ------------------------------------------------------------------------------
# mask_flags FILE OFFSET... / mask_clear FILE: flip the flags of tokens at OFFSET / clear every flag (a mask's
# flags follow its 1024-byte header, one byte per token).
mask_flags() { local f=$1 i; shift; for i in "$@"; do perl -e 'open(my $h, "+<:raw", $ARGV[0]) or die;
    seek($h, 1024 + $ARGV[1], 0); read($h, my $b, 1); seek($h, 1024 + $ARGV[1], 0); print $h chr(1 - ord($b));' "$f" "$i"; done; }
mask_clear() { perl -e 'open(my $h, "+<:raw", $ARGV[0]) or die; my $n = (-s $h) - 1024; seek($h, 1024, 0);
    print $h "\0" x $n;' "$1"; }
ntok() { echo $(( ($(stat -c %s "$1") - 1024) / 2 )); }
# A mask scoring only a target past the last whole window (no window holds it) scores nothing: refused before step 1.
mkdir -p "$T/reach" && cp "$T/lt/x_train.bin" "$T/lt/x_train.mask" "$T/reach/"
n=$(ntok "$T/reach/x_train.bin") && RT=32 && [ $(((n - 1) % RT)) != 0 ] || RT=31
mask_clear "$T/reach/x_train.mask" && mask_flags "$T/reach/x_train.mask" $((n - 1))
check_error "a mask whose one scored target no window reaches (-T $RT, $n tokens) is refused before step 1" \
    "no scored tokens in $T/reach/x_train.bin" \
    "$GPT2" train --train "$T/reach/x_train.bin" --val "" "${MODEL[@]}" -B 1 -T $RT --steps 2
# A run whose every step so far scored nothing saves no loss.png: there is no loss to draw.
mask_clear "$T/reach/x_train.mask" && mask_flags "$T/reach/x_train.mask" $((RT + 1))  # window 1's
"$GPT2" train --train "$T/reach/x_train.bin" --val "" "${MODEL[@]}" -B 1 -T $RT --no-shuffle --steps 1 \
    --out "$T/reach/run" >"$T/reach/run.out" 2>&1
check "a run whose one step scored nothing saves its checkpoint but no (empty) loss.png" \
    eval 'grep -q "loss -- " "$T/reach/run.out" && [ -s "$T/reach/run/model.safetensors" ] && [ ! -e "$T/reach/run/loss.png" ]'
# A resume on a mask that changed, appeared or was written in place names the mask.
mkdir -p "$T/rm" && cp "$T/lr/x_train.bin" "$T/lr/x_train.mask" "$T/rm/"
RM=(--train "$T/rm/x_train.bin" --val "" "${MODEL[@]}" -B 1 -T 32 --no-shuffle --steps 6)
"$GPT2" train "${RM[@]}" --stop-after 2 --out "$T/rm/a" >/dev/null 2>&1
mask_flags "$T/rm/x_train.mask" 40
check_error "a resume on a mask whose flags changed names the mask" \
    "training data changed ($T/rm/a.*): the loss mask of $T/rm/x_train.bin ($T/rm/x_train.mask) holds other flags" \
    "$GPT2" train --resume "$T/rm/a"
mask_flags "$T/rm/x_train.mask" 40 && mv "$T/rm/x_train.mask" "$T/rm/away.mask"
"$GPT2" train "${RM[@]}" --stop-after 2 --out "$T/rm/b" >/dev/null 2>&1  # trained on every token: no mask
mv "$T/rm/away.mask" "$T/rm/x_train.mask"
check_error "... and a mask that appeared since the run" \
    "the loss mask of $T/rm/x_train.bin ($T/rm/x_train.mask) appeared beside it since the run" \
    "$GPT2" train --resume "$T/rm/b"
# ... and so does a format 2 run (from before loss masks): its train state rewritten as format 2 wrote it.
mv "$T/rm/x_train.mask" "$T/rm/away.mask"
"$GPT2" train "${RM[@]}" --stop-after 2 --out "$T/rm/c" >/dev/null 2>&1
fnv64() {  # format 2's data hash: FNV-1a over the file's tokens, in 32-bit halves (no big integers)
    perl -e 'open(my $h, "<:raw", $ARGV[0]) or die; local $/; my $d = substr(<$h>, 1024);
        my ($hi, $lo) = (0x14650fb0, 0x739d0383);
        for my $c (unpack("C*", $d)) { $lo ^= $c; my $l = $lo * 0x1b3;
            $hi = ($hi * 0x1b3 + $lo * 0x100 + ($l >> 32)) & 0xffffffff; $lo = $l & 0xffffffff; }
        printf("%08x%08x", $hi, $lo);' "$1"
}
perl -e 'my ($f, $hash) = @ARGV; open(my $h, "+<:raw", $f) or die; local $/; my $d = <$h>;
    my $n = unpack("Q<", substr($d, 0, 8)); my $j = substr($d, 8, $n); my $rest = substr($d, 8 + $n);
    $j =~ s/\s+$//; $j =~ s/"gpt2\.cpp train state 3"/"gpt2.cpp train state 2"/ or die;
    $j =~ s/"data\.fingerprint":"\w+"/"data.fnv1a":"$hash"/ or die; $j =~ s/"data\.shards":"1",// or die;
    $j =~ s/"loader\.shard_pos":"0",//; $j =~ s/"data\.(masks|content)":"[^"]*",?//g;
    $j .= " " x ((8 - length($j) % 8) % 8);
    seek($h, 0, 0); truncate($h, 0); print $h pack("Q<", length($j)) . $j . $rest;' \
    "$T/rm/c/train_state.safetensors" "$(fnv64 "$T/rm/x_train.bin")"
cp -r "$T/rm/c" "$T/rm/c2"
"$GPT2" train --resume "$T/rm/c2" --stop-after 1 >"$T/rm/c2.out" 2>&1
check "(the rewritten format 2 state resumes without the mask)" grep -q "resumed $T/rm/c2 at step 2" "$T/rm/c2.out"
mv "$T/rm/away.mask" "$T/rm/x_train.mask"
check_error "... a format 2 run on a file that has a loss mask since is refused, naming the mask" \
    "the loss mask $T/rm/x_train.mask appeared beside $T/rm/x_train.bin since the run" "$GPT2" train --resume "$T/rm/c"
# A mask written in place during the run (same size): the run stops at its next read, naming it.
mkdir -p "$T/live" && cp "$T/lr/x_train.bin" "$T/lr/x_train.mask" "$T/live/"
"$GPT2" train --train "$T/live/x_train.bin" --val "" "${MODEL[@]}" -B 1 -T 32 --steps 100000 >"$T/live.out" 2>&1 &
pid=$!
wait_for grep -q '^step  *3/' "$T/live.out"
mask_flags "$T/live/x_train.mask" 3 4 5
sleep 1
kill -TERM $pid 2>/dev/null
wait_bounded $pid 120
rc=$?
check "a loss mask written in place during the run stops it at the next read, naming it (exit $rc)" \
    eval '[ $rc = 1 ] && grep -q "^error: loss mask changed during the run ($T/live/x_train.mask): it no longer holds the flags" "$T/live.out"'

# --- 18: a stop signal ends tokenize while it waits for input that may never come (red team D1) ---------------
# stop_blocked NAME SIG RC CMD...: CMD, started in the background, blocks opening or reading its input; one SIG
# ends it within 10 s with RC, one `interrupted by SIG` line, and nothing left in $T/bk (outputs, locks, dirs).
stop_blocked() {
    local name=$1 sig=$2 want=$3 pid rc
    shift 3
    rm -rf "$T/bk" && mkdir -p "$T/bk"
    "$@" >"$T/bk.out" 2>"$T/bk.err" &
    pid=$!
    sleep 1.5  # blocked by then (the tokenizer loads in well under a second)
    kill -"$sig" $pid
    wait_bounded $pid 10
    rc=$?
    cat "$T/bk.err"
    if [ $rc = "$want" ] && [ "$(grep -c "^interrupted by SIG$sig: " "$T/bk.err")" = 1 ] && [ -z "$(ls -A "$T/bk")" ]; then
        pass "$name"
    else
        fail "$name (exit $rc, wanted $want and one 'interrupted by SIG$sig' line; left: $(ls -A "$T/bk" | tr '\n' ' '))"
    fi
}
rm -f "$T/ff" && mkfifo "$T/ff"
stop_blocked "tokenize --instructions on a FIFO with no writer: the first SIGTERM ends it (143), said, nothing left" \
    TERM 143 "$GPT2" tokenize --instructions -T 64 -o "$T/bk/p" "$T/ff"
stop_blocked "plain tokenize on a FIFO with no writer: the first SIGINT ends it (130), said, nothing left" \
    INT 130 "$GPT2" tokenize --jsonl-field text -o "$T/bk/p" "$T/ff"
exec 7<>"$T/ff"  # a writer that never writes: the open returns, the read waits
stop_blocked "tokenize --instructions reading a silent pipe on stdin: the first SIGINT ends it (130), said" \
    INT 130 bash -c "exec \"\$0\" tokenize --instructions -T 64 -o '$T/bk/p' - <'$T/ff'" "$GPT2"
stop_blocked "plain tokenize reading a FIFO whose writer is silent: the first SIGTERM ends it (143), said" \
    TERM 143 "$GPT2" tokenize --jsonl-field text -o "$T/bk/p" "$T/ff"
exec 7>&-
# A regular file keeps the graceful stop: still refused or finished as before (no change for files).
check "tokenize --instructions on a regular file still runs to the end" \
    "$GPT2" tokenize --instructions -T 64 -o "$T/rg/x" $FIX/prompt_completion.jsonl

# --- 19: what tokenize --instructions is given instead of JSON lines is named (red team D9) -------------------
"$GPT2" tokenize --instructions -T 64 -o "$T/tf/" $FIX/prompt_completion.jsonl >/dev/null 2>&1
check_error "tokenize --instructions given a token file: said to be a token file, not JSON lines" \
    "^error: a token file, not JSON lines ($T/tf/train.bin): expected instruction JSON lines" \
    "$GPT2" tokenize --instructions -T 64 -o "$T/tf2/x" $FIX/prompt_completion.jsonl "$T/tf/train.bin"
check_error "tokenize --instructions given a loss mask: said to be a loss mask, not JSON lines" \
    "^error: a loss mask, not JSON lines ($T/tf/train.mask): expected instruction JSON lines" \
    "$GPT2" tokenize --instructions -T 64 -o "$T/tf2/x" "$T/tf/train.mask"
head -n 3 $FIX/prompt_completion.jsonl | tr '\n' '\r' >"$T/cr.jsonl"
check_error "CR-only line ends (old Mac): the message names them" \
    "^error: CR line endings ($T/cr.jsonl line 1): expected JSON lines ending in LF" \
    "$GPT2" tokenize --instructions -T 64 -o "$T/cr/x" "$T/cr.jsonl"

summary
