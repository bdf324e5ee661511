#!/usr/bin/env bash
# cli_core.sh: src/core is the trainer ./gpt2 runs, and it stands alone. gpt2-core (`make core`: src/core
# compiled where nothing else of src/ can be included) trains with the same flags to the same losses,
# learning rates and norms as `gpt2 train`, step for step, and to the same weights bit for bit, from a random
# init and from a HuggingFace checkpoint; src/core stays within its line budget; and a core file that
# includes anything outside src/core does not build.
source "$(dirname "$0")/lib.sh"
CORE=${GPT2_CORE:-$(dirname "$GPT2")/gpt2-core}
TOK=tests/fixtures/tokens_v1000.bin
T=$TEST_TMP
# src/core's budget: every line of its files (code, comments, blank lines), as `cat src/core/* | wc -l`.
BUDGET=3000
tiny="--vocab 1000 --layers 2 --heads 2 --channels 64 --seq-len 32 -B 4 -T 16 --steps 20 --lr 3e-3 --warmup 5"
# steps LOG: each step's loss, lr and norm as printed (the same fields, in the same format, by both).
steps() { grep -o '^step *[0-9]*/[0-9]* | loss [0-9.]* | lr [0-9.e+-]* | norm [0-9.]*' "$1"; }
# data_of FILE: a safetensors file's tensor bytes (what follows its 8-byte length and JSON header).
data_of() { tail -c +$((9 + $(od -An -tu8 -N8 "$1"))) "$1"; }
not() { ! "$@"; }
# same_run A B: both logs hold 20 steps, the same in every field, and both saved the same weights bit for bit.
same_run() {
    [ "$(steps $T/$1.log | wc -l)" = 20 ] && diff <(steps $T/$1.log) <(steps $T/$2.log) &&
        cmp <(data_of $T/$1/model.safetensors) <(data_of $T/$2/model.safetensors)
}

if [ ! -x "$CORE" ]; then
    fail "gpt2-core is built beside $GPT2 (make core)"
    summary
    exit 1
fi

# --- the same run, bit for bit ------------------------------------------------------------------------------
"$GPT2" train $tiny --train $TOK --val '' --sample-tokens 0 --out $T/full >$T/full.log 2>&1
"$CORE" $tiny --train $TOK --out $T/core >$T/core.log 2>&1
check "from a random init: gpt2-core's 20 steps (loss, lr, norm) and weights equal gpt2 train's bit for bit" \
    same_run full core
# 2 micro-batches of 5 windows a step: 20 steps take 200 of the file's 187 windows of T=16, so the epoch ends
# with 7 windows left, too few for a step but not for a micro-batch.
accum="--model $T/full -B 5 --grad-accum 2"
"$GPT2" train $tiny --train $TOK --val '' --sample-tokens 0 $accum --lr 1e-3 --out $T/full_hf >$T/full_hf.log 2>&1
"$CORE" $tiny --train $TOK $accum --lr 1e-3 --out $T/core_hf >$T/core_hf.log 2>&1
check "from a HuggingFace checkpoint, 2 micro-batches a step, past an epoch's end: the same, bit for bit" \
    same_run full_hf core_hf
"$CORE" $tiny --train $TOK $accum --lr 1.1e-3 --out $T/core_lr >$T/core_lr.log 2>&1
check "... and the check tells another --lr apart" not same_run full_hf core_lr
"$CORE" $tiny --train $TOK --out $T/core >$T/again.log 2>&1
check "gpt2-core never replaces an existing --out (exit 1, one error line naming it)" \
    test $? = 1 -a "$(cat $T/again.log)" = "error: bad value for --out (gpt2-core): $T/core exists; expected a new directory"
# The core alone reads F32 checkpoints (./gpt2 reads F16 and BF16 too: formats/safetensors_file).
"$GPT2" export --model $T/full --out $T/f16 --dtype f16 >/dev/null
"$CORE" $tiny --train $TOK --model $T/f16 >$T/f16.log 2>&1
check "gpt2-core refuses an F16 checkpoint (exit 1, one error line naming the tensor, the file and F32)" \
    test $? = 1 -a "$(cat $T/f16.log)" = "error: unsupported dtype for tensor wte.weight ($T/f16/model.safetensors): expected F32, got F16"

"$CORE" $tiny --train $T/missing.bin --out $T/failed >$T/failed.log 2>&1
check "a run that fails leaves no --out behind (exit 1, the error names the file)" \
    test $? = 1 -a ! -e $T/failed -a -n "$(grep "^error: .*$T/missing.bin" $T/failed.log)"
"$CORE" $tiny --train $TOK --out $T/no/such/dir >$T/nodir.log 2>&1
check "an --out that cannot be made fails before the first step" \
    test $? = 1 -a -z "$(grep '^step' $T/nodir.log)" -a -n "$(grep "^error: cannot create --out $T/no/such/dir" $T/nodir.log)"

check_error "gpt2-core: --seed past long long is out of range, not clamped to its largest" \
    "bad value for --seed (gpt2-core): expected an integer in \[0, 9223372036854775807\], got '18446744073709551615'" \
    "$CORE" $tiny --train $TOK --seed 18446744073709551615
# An allocation that fails (here under an address-space limit) is one error line and exit 1, not an abort,
# and the --out made for the run goes with it.
if ldd "$CORE" 2>/dev/null | grep -q libasan; then
    skip "gpt2-core under ulimit -v: AddressSanitizer reserves more address space than any limit allows"
else
    (ulimit -v 2000000; exec "$CORE" $tiny --train $TOK -B 65536 --out $T/huge) >$T/huge.log 2>&1
    rc=$?
    check "an oversized -B: exit 1 (exit $rc), one error line saying out of memory, no --out left" \
        test $rc = 1 -a "$(grep -c . $T/huge.log)" = 1 -a -n "$(grep '^error: out of memory' $T/huge.log)" -a ! -e $T/huge
fi
# Ctrl-C before the end (nothing saved yet) leaves no empty --out that a rerun would refuse.
# signal_mid_run SIG OUT: gpt2-core's exit code when SIG comes after its first step line.
signal_mid_run() {
    "$CORE" $tiny --train $TOK --steps 1000000 --out $2 >$2.log 2>&1 &
    local pid=$!
    for _ in $(seq 100); do grep -qs '^step' $2.log && break; sleep 0.1; done
    kill -$1 $pid
    wait_bounded $pid 60
}
signal_mid_run INT $T/int
rc=$?
check "SIGINT ends gpt2-core as the signal does (exit $rc) and leaves no --out" test $rc = 130 -a ! -e $T/int


# --- what gpt2 train refuses, gpt2-core refuses too -----------------------------------------------------------
mkfifo $T/fifo
check_error "gpt2-core: a FIFO as --train is refused at once, not waited on (one error line naming it)" \
    "not a regular file ($T/fifo)" timeout 20 "$CORE" $tiny --train $T/fifo
# A large file that is no token file is refused by its header, before its tokens are read (here a sparse 2 GB
# file under a 1 GB address-space limit: reading it whole would run out of memory).
truncate -s 2G $T/sparse.bin
if ldd "$CORE" 2>/dev/null | grep -q libasan; then
    skip "gpt2-core's header check under ulimit -v: AddressSanitizer reserves more address space than any limit allows"
else
    check_error "gpt2-core: a 2 GB file of zeros is refused by its magic before its tokens are read" \
        "bad magic in token file ($T/sparse.bin) at offset 0" bash -c "ulimit -v 1000000; exec $CORE $tiny --train $T/sparse.bin"
    head -c 1024 $TOK >$T/big_count.bin && truncate -s 2G $T/big_count.bin
    check_error "... and a header whose count disagrees with the file's size, the same" \
        "token count mismatch in token file ($T/big_count.bin) at offset 8" \
        bash -c "ulimit -v 1000000; exec $CORE $tiny --train $T/big_count.bin"
fi
check_error "gpt2-core: an --lr that underflows to 0 is refused, not taken as 0" "bad value for --lr (gpt2-core)" \
    "$CORE" $tiny --train $TOK --lr 1e-400
check_error "gpt2-core: --train '' is refused naming --train" "bad value for --train (gpt2-core)" \
    "$CORE" $tiny --train ''
check_error "gpt2-core: a geometry flag beside --model is still checked as typed" \
    "bad value for --layers (gpt2-core): expected an integer" "$CORE" $tiny --train $TOK --model $T/full --layers abc
check_error "gpt2-core: a geometry flag beside --model that disagrees with it is refused, as gpt2 train does" \
    "bad value for --vocab (gpt2-core): the --model $T/full has 1000, got 100" \
    "$CORE" $tiny --train $TOK --model $T/full --vocab 100

# --- signals and thread start-up ----------------------------------------------------------------------------
if kill -l HUP >/dev/null 2>&1; then
    signal_mid_run HUP $T/hup
    rc=$?
    check "SIGHUP (the terminal closed) ends gpt2-core as the signal does (exit $rc) and leaves no --out" \
        test $rc = 129 -a ! -e $T/hup
    # A signal during the save: the save ends whole (a 4-layer model of 16M parameters takes a while to write).
    # env restores the signal's default action (a background job of a script starts with SIGQUIT ignored); a
    # SIGQUIT that came too early would dump no core here.
    ulimit -c 0
    for sig in HUP QUIT; do
        env --default-signal=$sig "$CORE" --train $TOK --vocab 1000 --steps 2 -B 4 -T 16 --out $T/save_$sig >$T/save_$sig.log 2>&1 &
        pid=$!
        for _ in $(seq 1000); do grep -qs '^step *2/2' $T/save_$sig.log && break; sleep 0.01; done
        kill -$sig $pid
        wait_bounded $pid 60
        rc=$?
        # (on a busy machine the signal can still come before the save, between the last step's line and it:
        # then nothing is written; what never shows is a part of a save)
        saved=$(ls $T/save_$sig 2>/dev/null | tr '\n' ' ')
        check "SIG$sig during the save: it ends whole (exit $rc, $saved)" \
            eval '[ "$saved" = "config.json model.safetensors " -a $rc = 0 ] || [ -z "$saved" -a $rc -gt 128 ]'
    done
fi
# --- red team round 2 (issue 56) ------------------------------------------------------------------------------
# nohup: a SIGHUP ignored when gpt2-core starts stays ignored; the run goes on to its save.
hup_under_nohup $T/nohup.log "$CORE" $tiny --train $TOK --steps 3000 --out $T/nohup
rc=$?
check "under nohup (SIGHUP ignored at start) a SIGHUP leaves gpt2-core training to its save (exit $rc)" \
    test $rc = 0 -a -s $T/nohup/model.safetensors
# Standard output closed (a pipe whose reader left) or full: one error, no --out left, not a SIGPIPE death.
"$CORE" $tiny --train $TOK --steps 3000 --out $T/pipe 2>$T/pipe.err | head -c 1 >/dev/null
rc=${PIPESTATUS[0]}
check "gpt2-core | head -c 1: one error (exit $rc), no --out left" \
    eval '[ $rc = 1 ] && grep -q "^error: cannot write standard output" $T/pipe.err && [ ! -e $T/pipe ]'
mknod $T/fulldev c 1 7  # the kernel's full device, this test's own node (never /dev/full)
check_error "gpt2-core >full: the write that fails is one error" "cannot write standard output: No space left" \
    bash -c "exec '$CORE' $tiny --train $TOK --out $T/tofull >$T/fulldev"
check "... and leaves no --out" test ! -e $T/tofull
check_error "gpt2-core past a file-size limit: the save that fails is one error" "cannot write $T/fsz/" \
    bash -c "ulimit -f 100; exec '$CORE' $tiny --train $TOK --channels 128 --out $T/fsz"
check "... and leaves nothing behind (no config.json, no .partial)" test ! -e $T/fsz
# A --model holding a NaN: refused naming the file and the tensor, not trained into "loss is nan".
cp -r $T/full $T/nan_model
perl -e 'open(my $h, "+<:raw", $ARGV[0]) or die; read($h, my $n, 8); seek($h, 8 + unpack("Q<", $n), 0);
    print $h pack("L<", 0x7fc00000);' $T/nan_model/model.safetensors
check_error "gpt2-core: a --model with a NaN weight is refused naming it and the tensor" \
    "non-finite parameter ($T/nan_model): .*\[0\] is nan" "$CORE" $tiny --train $TOK --model $T/nan_model
# A token file too large to read whole names itself (a sparse 2 GB file with a true header, 1 GB of address space).
perl -e 'print pack("l<3", 20240520, 1, (2 ** 31 - 1024) / 2) . ("\0" x 1012)' >$T/huge.bin && truncate -s 2G $T/huge.bin
if ldd "$CORE" 2>/dev/null | grep -q libasan; then
    skip "gpt2-core's out-of-memory message under ulimit -v: AddressSanitizer reserves more address space than any limit allows"
else
    check_error "gpt2-core: a token file that does not fit in memory is named" "out of memory ($T/huge.bin)" \
        bash -c "ulimit -v 1000000; exec '$CORE' $tiny --train $T/huge.bin"
fi

if ! ldd "$CORE" 2>/dev/null | grep -q libasan; then
    # Too little address space for OpenMP's threads: gpt2-core fails before it makes --out.
    big="--vocab 50257 --layers 2 --heads 2 --channels 64 --seq-len 64 -B 2 -T 32 --steps 2"
    (ulimit -v 20000; exec "$CORE" $big --train $TOK --out $T/threads) >/dev/null 2>$T/threads.log
    rc=$?
    check "under ulimit -v 20000 gpt2-core fails (exit $rc) in one line and leaves no --out" \
        test $rc = 1 -a "$(grep -c . $T/threads.log)" = 1 -a ! -e $T/threads
fi

# --- the budget ---------------------------------------------------------------------------------------------
# over_budget DIR LIMIT: prints the lines of DIR's files and fails when they exceed LIMIT.
over_budget() {
    local n
    n=$(cat "$1"/* | wc -l)
    echo "$n lines"
    [ "$n" -le "$2" ]
}
mkdir -p $T/budget && seq 3000 >$T/budget/a.cpp
check "the budget check passes a folder of exactly $BUDGET lines" over_budget $T/budget $BUDGET
echo >>$T/budget/a.cpp
check "... and fails at $((BUDGET + 1))" not over_budget $T/budget $BUDGET
check "src/core is within its budget of $BUDGET lines ($(cat src/core/* | wc -l))" over_budget src/core $BUDGET

# --- the core builds alone ----------------------------------------------------------------------------------
# builds_alone DIR FILE: compiles DIR/FILE as make core does: its one include directory links to DIR alone.
builds_alone() {
    mkdir -p $T/inc && ln -sfn "$(cd "$1" && pwd)" $T/inc/core
    ${CXX:-g++} -std=c++17 -fopenmp -I$T/inc -fsyntax-only "$1/$2" 2>$T/alone.err
}
cp -r src/core $T/copy
check "a core file compiles with src/core as its only include directory" builds_alone $T/copy trainer.cpp
sed -i '1i #include "platform/util.h"' $T/copy/trainer.cpp
builds_alone $T/copy trainer.cpp
check "... and fails once it includes platform/util.h" test $? -ne 0 -a -n "$(grep -l 'platform/util.h' $T/alone.err)"
summary
