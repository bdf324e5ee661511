#!/usr/bin/env bash
# cli_trust.sh: nothing the user owns is lost, and bad input or a failing environment ends in one error
# line and a non-zero exit. One section per defect class of the trust issue: output directories, corrupt
# train state, non-finite values, memory, paths, resume, signals, write errors, atomic outputs, locks and
# strict readers. No Python: safetensors headers are edited with st_meta/st_fill (lib.sh).
source "$(dirname "$0")/lib.sh"
FIX=tests/fixtures/ref_tiny
TRAINED=tests/fixtures/trained_tiny
TOK=$(pwd)/tests/fixtures/tokens_v1000.bin  # absolute: some runs start in a scratch directory
T=$TEST_TMP
GPT2_ABS=$(cd "$(dirname "$GPT2")" && pwd)/$(basename "$GPT2")  # for runs from another directory
tiny="--train $TOK --val $TOK --vocab 1000 --layers 2 --heads 2 --channels 32 --seq-len 32 -B 4 -T 16 --lr 3e-3 --val-every 5 --sample-tokens 0"
sum() { cksum <"$1"; }
# fails the named test unless CMD exits with code $2
check_exit() {
    local name=$1 want=$2; shift 2
    "$@" >"$T/out" 2>&1
    local rc=$?
    if [ $rc -eq "$want" ]; then pass "$name"; else fail "$name (exit $rc, wanted $want)"; tail -3 "$T/out" | sed 's/^/    /'; fi
}
"$GPT2" train $tiny --steps 10 --out $T/ck >/dev/null 2>&1

# --- first run: training on token files needs no tokenizer files ------------------------------------------
mkdir -p $T/empty
(cd $T/empty && env -u GPT2_DATA_DIR "$GPT2_ABS" train $tiny --sample-tokens 8 --steps 2) >$T/notok.log 2>&1
check "train without tokenizer files runs and skips the samples with a note" \
    bash -c "grep -q '^note: no tokenizer files in data/gpt2' $T/notok.log && grep -q 'step *2/2' $T/notok.log"

# --- 1. never delete what gpt2 did not write ----------------------------------------------------------------
mkdir -p $T/thesis/chapters && echo draft >$T/thesis/thesis.txt && echo one >$T/thesis/chapters/1.txt
check_error "train --out refuses a directory it did not write" "is not a checkpoint written by .gpt2 train" \
    "$GPT2" train $tiny --steps 2 --out $T/thesis
check "... and its files are untouched" test "$(cat $T/thesis/thesis.txt $T/thesis/chapters/1.txt)" = "$(printf 'draft\none')"
ln -s $T/ck $T/link
before=$(sum $T/ck/model.safetensors)
check_error "train --out refuses a symbolic link" "is a symbolic link" "$GPT2" train $tiny --steps 2 --out $T/link
check "... and the link's target is untouched" test "$(sum $T/ck/model.safetensors)" = "$before"
cp -r $T/ck $T/notes && echo mine >$T/notes/NOTES.md
before=$(sum $T/notes/model.safetensors)
check_error "train --out refuses another run's finished checkpoint, naming it" \
    "bad value for --out (train): $T/notes holds the checkpoint of another run (at step 10)" \
    "$GPT2" train $tiny --steps 3 --out $T/notes
check "... offering --resume and --overwrite in one hint" \
    grep -q "^hint: continue that run with: $GPT2 train --resume $T/notes; or replace it with a new one: --overwrite$" $T/err
check "... and the checkpoint is untouched" test "$(sum $T/notes/model.safetensors)" = "$before"
"$GPT2" train $tiny --steps 40 --stop-after 3 --out $T/half >/dev/null 2>&1
check_error "... and an unfinished one (3 of 40 steps)" "$T/half holds the checkpoint of another run (at step 3)" \
    "$GPT2" train $tiny --steps 1 --out $T/half/
check_error "--overwrite with the --resume directory itself is refused" "conflicting flags (train): --overwrite" \
    "$GPT2" train --resume $T/half --overwrite
check "--resume A --out B refuses B's run too" bash -c "'$GPT2' train --resume $T/half --out $T/notes 2>&1 | grep -q 'notes holds the checkpoint of another run'"
check "train --out --overwrite replaces its own checkpoint" "$GPT2" train $tiny --steps 3 --out $T/notes --overwrite
check "... keeping a file the user put in it" test "$(cat $T/notes/NOTES.md 2>/dev/null)" = mine
check "... and the new model is there" bash -c "'$GPT2' train --resume $T/notes --steps 3 | grep -q 'nothing to do: .* at step 3 of 3'"
check_error "export refuses a directory it did not write" "which gpt2 export did not write" \
    "$GPT2" export --model $FIX/model --out $T/thesis
check_error "export --format llmc refuses to replace a file of another kind" "is not an llm.c checkpoint" \
    "$GPT2" export --model $FIX/model --out $T/thesis/thesis.txt --format llmc
check "... and the file is untouched" test "$(cat $T/thesis/thesis.txt)" = draft
check_error "export --format gguf refuses it too" "is not a model GGUF gpt2 wrote" \
    "$GPT2" export --model $FIX/model --out $T/thesis/thesis.txt --format gguf
check "... with a hint that reads as a sentence" \
    grep -qx "hint: choose a new path; gpt2 replaces a file only when it is a model GGUF gpt2 wrote" $T/err
if [ -n "${GPT2_DATA_DIR:-}" ]; then TOK_DIR=$GPT2_DATA_DIR/gpt2; else TOK_DIR=data/gpt2; fi
echo "To be, or not to be: that is the question." >$T/text.txt
mkdir -p $T/tok && echo notes >$T/tok/val.bin
check_error "tokenize -o refuses to replace a file that is not a token file" "tok/val.bin exists and is not a token file" \
    "$GPT2" tokenize --tokenizer $TOK_DIR --val-tokens 2 -o $T/tok/ $T/text.txt
check "... and the file is untouched" test "$(cat $T/tok/val.bin)" = notes

# --- 2. a corrupt train_state.safetensors is an error, never a crash ----------------------------------------
corrupt() {  # corrupt NAME PATTERN EDIT...: a copy of ck with one edit must refuse to resume
    local name=$1 pattern=$2; shift 2
    rm -rf $T/bad && cp -r $T/ck $T/bad
    "$1" $T/bad/train_state.safetensors "${@:2}"
    check_error "resume refuses a train state with $name" "$pattern" "$GPT2" train --resume $T/bad --steps 12
}
corrupt "loader.order of 0xff bytes" "not a permutation" st_fill loader.order ff
corrupt "loader.order with a repeated window" "not a permutation" st_fill loader.order 00
corrupt "a non-numeric loader.rng" "loader.rng" st_meta loader.rng abc
corrupt "an over-long loader.rng" "loader.rng" st_meta loader.rng 99999999999999999999999
corrupt "no loader.rng" "loader.rng" st_meta loader.rng __delete__
corrupt "step -5" "\"step\" is '-5'" st_meta step -5
corrupt "step 99999999999" "\"step\" is '99999999999'" st_meta step 99999999999
corrupt "loader.epoch INT_MAX" "loader.epoch" st_meta loader.epoch 2147483647
corrupt "an unknown flag" "unknown flag --bogus" st_meta flags '[[\"bogus\",\"1\"]]'
corrupt "a NaN AdamW moment" "AdamW moments" st_fill adamw.v ff

# --- 3. non-finite values are refused, never saved or printed ---------------------------------------------
"$GPT2" export --model $TRAINED --out $T/nan.bin --format llmc >/dev/null
size=$(stat -c %s $T/nan.bin)
printf '\x00\x00\xc0\x7f' | dd of=$T/nan.bin bs=1 seek=$((size - 4)) conv=notrunc status=none
check_error "eval refuses NaN weights" "non-finite parameter .*ln_f.bias\[31\]" "$GPT2" eval --model $T/nan.bin --data $TOK -B 2 -T 16
check_error "generate refuses NaN weights" "non-finite parameter" "$GPT2" generate --model $T/nan.bin --prompt-ids 1 --ids --top-k 5
check_error "export refuses NaN weights" "non-finite parameter" "$GPT2" export --model $T/nan.bin --out $T/nan-hf
# finite weights whose activations overflow: ln_f.bias set to 3e38 (loss NaN) or 1e38 (finite loss,
# infinite gradient norm)
big() { cp $T/nan.bin $2 && perl -e 'print pack("f<", $ARGV[0]) x 32' $1 | dd of=$2 bs=1 seek=$((size - 128)) conv=notrunc status=none; }
big 3e38 $T/overflow.bin
big 1e38 $T/steep.bin
check_error "eval refuses a non-finite loss" "loss is .*nan.*expected a finite loss" "$GPT2" eval --model $T/overflow.bin --data $TOK -B 2 -T 16
check_error "generate refuses non-finite logits" "non-finite logits" "$GPT2" generate --model $T/overflow.bin --prompt-ids 1 --ids --top-k 5
rm -rf $T/keep && "$GPT2" train --model $TRAINED --train $TOK -B 4 -T 16 --steps 2 --sample-tokens 0 --out $T/keep >/dev/null
before=$(sum $T/keep/model.safetensors)
check_error "an infinite gradient norm stops training at that step" "gradient norm is inf at step 1" \
    "$GPT2" train --model $T/steep.bin --train $TOK -B 4 -T 16 --steps 5 --save-every 1 --sample-tokens 0 --out $T/keep --overwrite
check "... and the last checkpoint is kept as it was" test "$(sum $T/keep/model.safetensors)" = "$before"
check "... and still evaluates to a finite loss" bash -c "'$GPT2' eval --model $T/keep --data $TOK -B 2 -T 16 | grep -Eq '^loss [0-9]'"
# ln_f.bias 1e25: a finite loss and gradient norm, but gradients of ~1e26 whose squares overflow AdamW's v
# when nothing clips them (in fp32 and in bf16 moments alike): the run stops at that step, as on a NaN loss
big 1e25 $T/vbig.bin
for state in fp32 bf16; do
    check_error "AdamW's v overflowing stops training at that step ($state state)" "AdamW v of .* is inf at step 1: training diverged" \
        "$GPT2" train --model $T/vbig.bin --train $TOK -B 4 -T 16 --steps 5 --save-every 1 --grad-clip 0 --sample-tokens 0 \
        --optimizer-state $state --out $T/keep --overwrite
    check "... and the last good checkpoint is kept as it was ($state)" test "$(sum $T/keep/model.safetensors)" = "$before"
done
check_error "... with --optimizer-in-backward too" "AdamW v of .* is inf at step 1" \
    "$GPT2" train --model $T/vbig.bin --train $TOK -B 4 -T 16 --steps 5 --grad-clip 0 --sample-tokens 0 --optimizer-in-backward
perl -e 'print pack("f<", 1e5) x 32' | dd of=$T/nan.bin bs=1 seek=$((size - 128)) conv=notrunc status=none
check_error "export f16 refuses a value past F16's range" "value out of F16 range" "$GPT2" export --model $T/nan.bin --out $T/f16 --dtype f16
check "... and leaves nothing behind" test -z "$(ls -d $T/f16* 2>/dev/null)"

# --- 4. memory is checked before input-sized allocations --------------------------------------------------
check_error "train -T beyond --seq-len fails before allocating" "expected <= --seq-len 32" "$GPT2" train $tiny -T 64 --steps 1
cp -r $TRAINED $T/huge && sed -i 's/"n_layer": [0-9]*/"n_layer": 1000/; s/"n_embd": [0-9]*/"n_embd": 65536/' $T/huge/config.json
check_error "info reads headers only (config.json claims 1000 x 65536)" "shape mismatch" "$GPT2" info --model $T/huge
# 16M rows of about 40 KB of activations each, 256 channels (the classifier's buffer holds 1,024 rows whatever B*T)
"$GPT2" train --train $TOK --vocab 1000 --layers 2 --heads 2 --channels 256 --seq-len 256 -B 1 -T 4 --steps 0 \
    --sample-tokens 0 --out $T/wide >/dev/null
perl -e 'my $n = 65536 * 256 + 1; print pack("l<256", 20240520, 1, $n, (0) x 253) . ("\0" x (2 * $n))' >$T/many.bin
check_error "eval with a batch larger than memory" "not enough memory (activations" \
    "$GPT2" eval --model $T/wide --data $T/many.bin -B 65536 -T 256
rm -rf $T/wide $T/many.bin
# a context of 2^20 positions: 512 layers of 8 channels make its KV cache 32 GB, far past the machine
"$GPT2" train --train $TOK --vocab 1000 --layers 512 --heads 8 --channels 8 --seq-len 1048576 -B 1 -T 4 --steps 0 \
    --sample-tokens 0 --out $T/deep >/dev/null
check_error "generate --max-tokens past memory on a long-context model" "not enough memory (the KV cache for --max-tokens 1048576)" \
    "$GPT2" generate --model $T/deep --prompt-ids 1 --ids --max-tokens 1048576
rm -rf $T/deep
"$GPT2" train --train $TOK --vocab 1000 --layers 1 --heads 64 --channels 64 --seq-len 8192 -B 1 -T 4 --steps 0 \
    --sample-tokens 0 --out $T/long >/dev/null
if under_asan; then
    skip "generate under ulimit -v: AddressSanitizer reserves more address space than any limit allows"
else
    check "generate sizes its scratch by the prompt, not the square of the length (4000 tokens in 2 GB)" \
        bash -c "ulimit -v 2000000; '$GPT2' generate --model $T/long --prompt-ids 1 --ids --max-tokens 4000 --top-k 1 | wc -w | grep -qx 4000"
fi
check_error "train refuses --sample-tokens past memory before the first step" "not enough memory (samples" \
    "$GPT2" train --train $TOK --vocab 1000 --layers 96 --heads 1 --channels 64 --seq-len 1048576 -B 1 -T 4 --steps 1 --sample-tokens 1048576

# --- 5. output paths are checked before the first step, and a failed save leaves nothing behind ---------------
check "--out with a trailing slash saves into the directory" "$GPT2" train $tiny --steps 2 --out $T/slash/
check "... which then holds the checkpoint" test -f $T/slash/model.safetensors -a -z "$(ls -A $T/slash | grep saving)"
check "--out in directories that do not exist yet creates them" "$GPT2" train $tiny --steps 2 --out $T/new/nested/dir
check "... and saves there" test -f $T/new/nested/dir/model.safetensors
check_error "--out ''" "empty value for --out" "$GPT2" train $tiny --steps 2 --out ''
check "--steps 0 --out saves the initial model" "$GPT2" train $tiny --steps 0 --out $T/zero
check "... which loads" "$GPT2" info --model $T/zero
echo x >$T/afile
mkdir -p $T/cwd && echo mine >$T/cwd/file.txt
# each refused before the first step (no step line); "." from inside a scratch directory, so that a
# regression cannot touch the checkout
refused_early() {
    local name=$1 pattern=$2 out=$3
    (cd $T/cwd && "$GPT2_ABS" train $tiny --steps 2 --out "$out") >$T/o 2>$T/e
    local rc=$?
    if [ $rc -eq 1 ] && ! grep -q '^step' $T/o && [ "$(grep -c '^error: ' $T/e)" -eq 1 ] && grep -q -- "$pattern" $T/e; then
        pass "$name"
    else
        fail "$name (exit $rc)"; sed 's/^/    /' $T/e
    fi
}
refused_early "--out naming a file is refused before the first step" "exists and is not a directory" $T/afile
refused_early "--out . (not a checkpoint) is refused before the first step" "holds file.txt and is not a checkpoint" .
check "... and the directory is untouched" test "$(ls -A $T/cwd)" = file.txt
check_error "--plot in a missing directory is refused before the first step" "directory $T/nodir does not exist" \
    "$GPT2" train $tiny --steps 2 --plot $T/nodir/loss.png
check_error "--plot over a file that is not a PNG" "not a PNG" "$GPT2" train $tiny --steps 2 --plot $T/afile
before=$(sum $T/ck/model.safetensors)
check_error "a save past the file-size limit fails with one line" "cannot write .*File too large" \
    bash -c "ulimit -f 100; exec '$GPT2' train --resume $T/ck --steps 12"
check "... leaving no staging directory" test -z "$(ls -d $T/ck.saving.* $T/ck/*.tmp.* 2>/dev/null)"
check "... and the previous checkpoint as it was" test "$(sum $T/ck/model.safetensors)" = "$before"

# --- 6. resume writes where it resumed from and refuses what changed ------------------------------------------
"$GPT2" train $tiny --steps 20 --stop-after 5 --out $T/orig >/dev/null 2>&1
cp -r $T/orig $T/copy
before=$(sum $T/orig/model.safetensors)
"$GPT2" train --resume $T/copy >$T/copy.log 2>&1
check "resume saves into the copy it resumed from" grep -q "saved $T/copy at step 20" $T/copy.log
check "... leaving the original as it was" test "$(sum $T/orig/model.safetensors)" = "$before"
check "--stop-after belongs to one invocation: a plain resume runs to --steps" grep -q 'step *20/20' $T/copy.log
cp -r $T/orig $T/same
"$GPT2" train --resume $T/same --steps 8 --out $T/./same/ >$T/same.log 2>&1
check "--resume DIR --out DIR spelt otherwise (DIR/./DIR/) continues in place" grep -q "saved $T/same at step 8" $T/same.log
(cd $T && "$GPT2_ABS" train --resume same --steps 11 --out "$T/same" >same2.log 2>&1 &&
    "$GPT2_ABS" train --resume ./same/ --steps 14 --out same >>same2.log 2>&1)
check "... and as an absolute path or ./DIR/ against DIR" eval "grep -q 'saved same at step 11' $T/same2.log &&
    grep -q 'saved ./same at step 14' $T/same2.log"
mkdir -p $T/reldata/d && cp $TOK $T/reldata/d/tr.bin && cp $TOK $T/reldata/d/va.bin
(cd $T/reldata && "$GPT2_ABS" train ${tiny//--train $TOK --val $TOK/--train 'd/t*.bin' --val d/va.bin} --steps 10 \
    --stop-after 5 --out ck >/dev/null 2>&1)
(cd $T && "$GPT2_ABS" train --resume reldata/ck >rel_resumed.log 2>&1)
check "a run on a relative --train (a glob) and --val resumes from another directory" \
    eval "grep -q 'saved reldata/ck at step 10' $T/rel_resumed.log && grep -q 'step *10/10 | val loss' $T/rel_resumed.log"
mkdir -p $T/def/data/tinyshakespeare && cp $TOK $T/def/data/tinyshakespeare/train.bin && cp $TOK $T/def/data/tinyshakespeare/val.bin
(cd $T/def && "$GPT2_ABS" train --vocab 1000 --layers 2 --heads 2 --channels 32 --seq-len 32 -B 4 -T 16 --steps 10 --stop-after 5 \
    --val-every 5 --sample-tokens 0 --out ck >/dev/null 2>&1 && "$GPT2_ABS" train --resume ck >../def.log 2>&1)
check "a resumed run on the default data keeps validating" grep -q 'step *10/10 | val loss' $T/def.log
cp $TOK $T/data.bin
"$GPT2" train $tiny --train $T/data.bin --steps 20 --stop-after 5 --out $T/changed >/dev/null 2>&1
printf '\x07\x00' | dd of=$T/data.bin bs=1 seek=2000 conv=notrunc status=none
check_error "resume refuses training data changed in place (same length)" "training data changed" "$GPT2" train --resume $T/changed
cp -r $T/orig $T/heads && sed -i 's/"n_head": 2/"n_head": 4/' $T/heads/config.json
check_error "resume refuses an edited n_head" "model changed since the checkpoint" "$GPT2" train --resume $T/heads

# --- 7. SIGTERM and SIGHUP save like Ctrl-C ---------------------------------------------------------------
for sig in TERM HUP; do
    rm -rf $T/sig $T/sig.log  # the last run's log, read before this one's replaced it, sent the signal at once
    "$GPT2" train $tiny --steps 1000000 --val-every 0 --out $T/sig >$T/sig.log 2>&1 &
    pid=$!
    for _ in $(seq 100); do grep -qs '^step' $T/sig.log && break; sleep 0.1; done
    kill -$sig $pid
    wait_bounded $pid 120
    rc=$?
    want=$((128 + $(kill -l $sig)))
    check "SIG$sig exits $want" test $rc -eq $want
    check "SIG$sig saved a checkpoint that resumes" "$GPT2" train --resume $T/sig --stop-after 1
done

# --- 8. every write is checked ----------------------------------------------------------------------------
# A full disk is this test's own device node (the kernel's "full" device, 1:7), never /dev/full.
mknod $T/full c 1 7
check_error "--log past a file-size limit" "cannot write $T/full.jsonl (--log (train))" \
    bash -c "ulimit -f 1; exec '$GPT2' train $tiny --steps 40 --log $T/full.jsonl >/dev/null"
check_error "--log on a device node is refused before training" "full exists and is not a regular file" \
    "$GPT2" train $tiny --steps 2 --log $T/full
check "... and it is still a character device" test -c $T/full
check_error "tokenize --ids > a full device" "cannot write standard output" bash -c "exec '$GPT2' tokenize --tokenizer $TOK_DIR --ids $T/text.txt >$T/full"
check_error "train > a full device" "cannot write standard output" bash -c "exec '$GPT2' train $tiny --steps 2 >$T/full"

# --- 9. outputs that come in sets are published together -----------------------------------------------------
"$GPT2" tokenize --tokenizer $TOK_DIR --val-tokens 2 -o $T/pair $T/text.txt >/dev/null
before=$(sum $T/pair_val.bin)
rm $T/pair_train.bin && mkdir $T/pair_train.bin
check_error "tokenize -o checks every output before writing any" "pair_train.bin is a directory" \
    "$GPT2" tokenize --tokenizer $TOK_DIR --val-tokens 3 -o $T/pair $T/text.txt
check "... so the old val file is as it was" test "$(sum $T/pair_val.bin)" = "$before"
check_error "export refuses to replace a training checkpoint's model" "is a training checkpoint" \
    "$GPT2" export --model $FIX/model --out $T/ck --dtype bf16
"$GPT2" export --model $FIX/model --out $T/exp >/dev/null
check "export replaces its own export in one step" "$GPT2" export --model $FIX/model --out $T/exp/ --dtype bf16
check "... leaving no staging directory" test -z "$(ls -d $T/exp.* 2>/dev/null)"
check "... and the new dtype is there" bash -c "'$GPT2' info --model $T/exp | grep -q 'dtype: BF16'"
# Staged files of a killed or interrupted export. A 25M-parameter llm.c file of zeros (sparse) exports 100 MB:
# long enough to aim a signal at once its staged output exists (start_until).
C=256 L=16
perl -e 'print pack("l<256", 20240326, 3, 64, 50257, 16, 4, 256, 50304, (0) x 248)' >$T/big.bin
truncate -s $((1024 + 4 * (50304 * C + 64 * C + L * (12 * C * C + 13 * C) + 2 * C))) $T/big.bin
mkdir $T/sk
# start_until GLOB CMD...: runs CMD in the background (its pid in $pid), returning once a path matches GLOB
start_until() {
    local glob=$1; shift
    "$@" >$T/sk.out 2>$T/sk.err &
    pid=$!
    for _ in $(seq 3000); do compgen -G "$glob" >/dev/null && return; kill -0 $pid 2>/dev/null || return; sleep 0.01; done
}
start_until "$T/sk/o.gguf.tmp.*[0-9]" "$GPT2" export --model $T/big.bin --out $T/sk/o.gguf --format gguf --tokenizer $TOK_DIR
killed=$T/sk/o.gguf.tmp.$pid
for _ in $(seq 300); do [ -s $killed ] && break; sleep 0.01; done
kill -9 $pid; wait_bounded $pid 30 2>/dev/null
check "kill -9 during export --format gguf leaves its staged file (the case below)" test -s $killed
echo mine >$T/sk/o.gguf.tmp.99999999  # a user's file of that name, no mark
# ... and a user's whole GGUF of that name, no mark (every staged file of gpt2's has one)
"$GPT2" export --model $T/ck --out $T/sk/o.gguf.tmp.99999996 --format gguf --tokenizer $TOK_DIR >/dev/null 2>&1
: >$T/sk/o.gguf.tmp.99999997.gpt2-staging && echo mine >$T/sk/o.gguf.tmp.99999997  # ... beside an empty mark
# a staged file whose pid is alive now (reused) but whose mark nobody holds: its writer is dead
printf 'gpt2.cpp staged file\n' >$T/sk/o.gguf.tmp.$$.gpt2-staging && echo half >$T/sk/o.gguf.tmp.$$
# a live writer's (in another pid namespace, say: pid 99999998 is dead here), its mark locked
printf 'gpt2.cpp staged file\n' >$T/sk/o.gguf.tmp.99999998.gpt2-staging && echo half >$T/sk/o.gguf.tmp.99999998
# (the holder is one process, the lock on its own descriptor, and keeps no pipe of the suite's open: a child
# left behind by `flock FILE sleep` held run.sh's output open, and the suite, for the rest of its 120 s)
(exec 9>>$T/sk/o.gguf.tmp.99999998.gpt2-staging && flock 9 && exec sleep 120) >/dev/null 2>&1 &
holder=$!
for _ in $(seq 100); do flock -n $T/sk/o.gguf.tmp.99999998.gpt2-staging true || break; sleep 0.05; done
"$GPT2" export --model $T/big.bin --out $T/sk/o.gguf --format gguf --tokenizer $TOK_DIR >/dev/null 2>$T/sk.again.err
check "the next export removes what the killed one staged, and says so" \
    bash -c "test ! -e $killed && test ! -e $killed.gpt2-staging && grep -q 'note: removed .*o.gguf.tmp.$pid, left by a gpt2' $T/sk.again.err"
check "... and a dead writer's staged file whose pid is reused" test ! -e $T/sk/o.gguf.tmp.$$ -a ! -e $T/sk/o.gguf.tmp.$$.gpt2-staging
check "... but not a user's file of such a name" test "$(cat $T/sk/o.gguf.tmp.99999999)" = mine
check "... nor a user's whole GGUF of such a name" test -s $T/sk/o.gguf.tmp.99999996
check "... nor one beside a mark not filled (a writer fills its mark before it stages)" \
    test "$(cat $T/sk/o.gguf.tmp.99999997)" = mine
check "... nor a live writer's" test -e $T/sk/o.gguf.tmp.99999998 -a -e $T/sk/o.gguf.tmp.99999998.gpt2-staging
kill $holder; wait_bounded $holder 30
rm $T/sk/o.gguf.tmp.9999999*
before=$(sum $T/sk/o.gguf)
for sig in INT TERM; do
    start_until "$T/sk/o.gguf.tmp.*[0-9]" "$GPT2" export --model $T/big.bin --out $T/sk/o.gguf --format gguf --dtype f16 --tokenizer $TOK_DIR
    kill -$sig $pid; wait_bounded $pid 60
    rc=$?
    check "SIG$sig during export --format gguf: exit $((128 + $(kill -l $sig))), one line, nothing staged left, the old file kept" \
        bash -c "test $rc -eq $((128 + $(kill -l $sig))) && test \"\$(cat $T/sk.err)\" = 'interrupted by SIG$sig: export stopped; $T/sk/o.gguf is as it was' &&
                 test \"\$(ls $T/sk)\" = o.gguf && test '$(sum $T/sk/o.gguf)' = '$before'"
    start_until "$T/sk/h.saving.*" "$GPT2" export --model $T/big.bin --out $T/sk/h --format hf
    kill -$sig $pid; wait_bounded $pid 60
    rc=$?
    check "SIG$sig during export --format hf: exit $((128 + $(kill -l $sig))), one line, no staging directory left" \
        bash -c "test $rc -eq $((128 + $(kill -l $sig))) && grep -qx 'interrupted by SIG$sig: export stopped; $T/sk/h is as it was' $T/sk.err &&
                 test \"\$(ls $T/sk)\" = o.gguf"
done
# 120,000 tokens, scored far longer than the second before the signal (a Zen 5 scored the fixture's 3,000 in less)
repeat_tokens $TOK 40 >$T/long_tokens.bin
"$GPT2" eval --model $T/big.bin --data $T/long_tokens.bin -B 8 -T 64 --batches all >$T/sk.out 2>$T/sk.err &
pid=$!
sleep 1  # loading, or scoring
kill -INT $pid; wait_bounded $pid 60
rc=$?
check "SIGINT during eval: exit 130 and one line saying so" \
    bash -c "test $rc -eq 130 && grep -qx 'interrupted by SIGINT: eval stopped before its end; no loss' $T/sk.err"
rm -f $T/big.bin $T/long_tokens.bin

# what the two-rename fallback leaves when killed between its renames: the marked old checkpoint only
cp -r $T/ck $T/fallback && mark_staging $T/fallback && mv $T/fallback $T/fallback.old.99999999
check "resume restores a checkpoint left as DIR.old.PID by a save killed between two renames" \
    bash -c "'$GPT2' train --resume $T/fallback --steps 12 2>&1 | grep -q 'restored $T/fallback'"

# --- 10. one run per output directory ---------------------------------------------------------------------
"$GPT2" train $tiny --steps 1000000 --val-every 0 --out $T/busy >$T/busy.log 2>&1 &
pid=$!
for _ in $(seq 100); do grep -q '^step' $T/busy.log && break; sleep 0.1; done
check_error "a second run on the same --out is refused" "output in use (--out $T/busy): another gpt2 process (pid $pid)" \
    "$GPT2" train $tiny --steps 2 --out $T/busy
kill -INT $pid; wait_bounded $pid 120
check "the lock file goes with the run" test ! -e $T/busy.lock
check "SIGINT: one line says the run was interrupted and saved, and how to continue" \
    test "$(grep -c "saved $T/busy" $T/busy.log) $(grep -c "^interrupted at step [0-9]* by SIGINT, saved $T/busy; continue with: $GPT2 train --resume $T/busy$" $T/busy.log)" = "1 1"

# --- 11. strict readers and range-checked flags -----------------------------------------------------------
cp -r $TRAINED $T/dupcfg && sed -i 's/"n_layer"/"n_head": 2, "n_layer"/' $T/dupcfg/config.json
check_error "config.json with a duplicate key" "duplicate key \"n_head\"" "$GPT2" info --model $T/dupcfg
cp -r $TRAINED $T/dupst && st_meta $T/dupst/model.safetensors format 'pt","format":"pt'
check_error "safetensors header with a duplicate key" "duplicate key \"format\"" "$GPT2" info --model $T/dupst
cp -r $TRAINED $T/hole && printf '\0\0\0\0' >>$T/hole/model.safetensors
check_error "safetensors with bytes after the last tensor" "bytes after the last tensor" "$GPT2" info --model $T/hole
check_error "eval --data /dev/zero" "not a regular file (/dev/zero)" "$GPT2" eval --model $FIX/model --data /dev/zero -T 16
cp $FIX/dump.safetensors $T/dump.safetensors
st_empty $T/dump.safetensors loss
check_error "compare with an empty loss tensor" "bad tensor loss .*expected one value, got 0" "$GPT2" compare --model $FIX/model --ref $T/dump.safetensors
check_error "--heads 4294967298 is out of range, not 2" "expected 0..65536, got 4294967298" "$GPT2" info --model $FIX/model --heads 4294967298
check_error "--heads -5 is out of range, not the default" "expected 0..65536, got -5" "$GPT2" eval --model $FIX/model --data $TOK --heads -5
check_error "--seed 18446744073709551615 (past long long) is out of range, not 'not an integer'" \
    "bad value for --seed (train): expected 0..9223372036854775807, got 18446744073709551615" "$GPT2" train --seed 18446744073709551615
check_error "--steps -99999999999999999999 is out of range too" "bad value for --steps (train): expected 0\.\..*, got -99999999999999999999" \
    "$GPT2" train --steps -99999999999999999999
# Hints name the binary as the user ran it (argv[0]: ./gpt2, not gpt2, which the shell may not find).
check_error "an unknown command's hint names the binary as run" "unknown command 'trian'" "$GPT2" trian
check "... did you mean \`$GPT2 train\`?" grep -qxF "hint: did you mean \`$GPT2 train\`?" $TEST_TMP/err
check_error "an unknown flag's error names the binary as run" "unknown flag --nope (train): see \`$GPT2 train --help\`" \
    "$GPT2" train --nope 1
# --- a red-team pass: names that only look like ours, locks, pipes, early signals, config fields -------------
mkdir -p $T/rt && echo notes >$T/rt/run.old.99990 && mkdir $T/rt/thesis.old.99991 && echo mine >$T/rt/thesis.old.99991/a.txt
check "an interrupted-save name on a user's file is not restored over --out" "$GPT2" train $tiny --steps 2 --out $T/rt/run
check "... and the user's file is untouched" test "$(cat $T/rt/run.old.99990)" = notes
check "... nor a user's folder of that form" bash -c "'$GPT2' train $tiny --steps 2 --out $T/rt/thesis >/dev/null 2>&1; test \"\$(cat $T/rt/thesis.old.99991/a.txt)\" = mine"
cp -r $T/ck $T/rt/ck && mkdir $T/rt/ck.saving.99992 && for f in model.safetensors config.json README; do echo mine >$T/rt/ck.saving.99992/$f; done
"$GPT2" train --resume $T/rt/ck --steps 12 >/dev/null 2>&1
check "a user's folder named like a dead run's staging is left alone" test "$(cat $T/rt/ck.saving.99992/model.safetensors $T/rt/ck.saving.99992/config.json)" = "$(printf 'mine\nmine')"
echo notes >$T/rt/ck.lock
check_error "a user's file at DIR.lock is refused, not overwritten" "ck.lock exists and is not a gpt2 lock file" "$GPT2" train --resume $T/rt/ck --steps 13
check "... and keeps its content" test "$(cat $T/rt/ck.lock)" = notes
rm $T/rt/ck.lock && echo data >$T/rt/victim.txt && ln -s victim.txt $T/rt/ck.lock
check_error "a symbolic link at DIR.lock is refused, not followed" "not a gpt2 lock file" "$GPT2" train --resume $T/rt/ck --steps 13
check "... and its target keeps its content" test "$(cat $T/rt/victim.txt)" = data
rm $T/rt/ck.lock
cp $TOK $T/rt/data.bin
check_error "--log naming the training data is refused" "is not a JSON-lines log" "$GPT2" train $tiny --train $T/rt/data.bin --steps 2 --log $T/rt/data.bin
check "... and the data is untouched" cmp $TOK $T/rt/data.bin
check_error "--eps 0 (0/0 on the padded vocabulary) is refused" "bad value for --eps (train): expected > 0" "$GPT2" train $tiny --steps 2 --eps 0
check_error "a failed run removes the directories it made for --out" "does not exist" "$GPT2" train $tiny --steps 2 --out $T/rt/a/b/ck --plot $T/rt/nodir/p.png
check "... so none are left" test ! -e $T/rt/a
cp -r $TRAINED $T/rt/relu && sed -i 's/"gelu_new"/"relu"/' $T/rt/relu/config.json
check_error "config.json with an activation gpt2 does not compute" "unsupported value for \"activation_function\"" "$GPT2" eval --model $T/rt/relu --data $TOK -B 2 -T 16
cp -r $TRAINED $T/rt/eps && sed -i 's/"layer_norm_epsilon": [0-9e.-]*/"layer_norm_epsilon": 1e999/' $T/rt/eps/config.json
check_error "config.json with a number past double" "number out of range" "$GPT2" info --model $T/rt/eps
cp $FIX/dump.safetensors $T/rt/d1.safetensors && st_meta $T/rt/d1.safetensors lr nan
check_error "compare refuses a dump with lr nan" "bad metadata \"lr\"" "$GPT2" compare --model $FIX/model --ref $T/rt/d1.safetensors
cp $FIX/dump.safetensors $T/rt/d2.safetensors && st_empty $T/rt/d2.safetensors losses
check_error "compare refuses a dump without AdamW losses" "bad tensor losses" "$GPT2" compare --model $FIX/model --ref $T/rt/d2.safetensors
check_error "gpt2 without a command" "missing command" "$GPT2"
# a closed pipe: train still saves, then reports; generate stops at the failed write
"$GPT2" train $tiny --steps 300 --val-every 0 --out $T/rt/pipe 2>$T/rt/pipe.err | head -1 >/dev/null
rc=${PIPESTATUS[0]}
check "train into a closed pipe exits 1 with one error line" bash -c "test $rc -eq 1 && grep -q '^error: cannot write standard output' $T/rt/pipe.err"
check "... having saved its checkpoint and released its lock" test -f $T/rt/pipe/model.safetensors -a ! -e $T/rt/pipe.lock
"$GPT2" generate --model $T/long --prompt-ids 1 --ids --max-tokens 3000 2>$T/rt/gen.err | head -c 1 >/dev/null
rc=${PIPESTATUS[0]}
check "generate into a closed pipe exits 1 with one error line" bash -c "test $rc -eq 1 && grep -q '^error: cannot write standard output' $T/rt/gen.err"
# SIGTERM early in a run (while the 60 MB of data are mapped and checked, or at the first steps: since the
# loader maps shards, loading is too quick to aim at; --steps is large so the run cannot end first)
perl -e 'my $n = 30000000; print pack("l<256", 20240520, 1, $n, (0) x 253) . ("\0" x (2 * $n))' >$T/rt/big.bin
"$GPT2" train $tiny --train $T/rt/big.bin --val '' --steps 10000000 --out $T/rt/early >$T/rt/early.log 2>&1 &
pid=$!
sleep 0.2
kill -TERM $pid
wait_bounded $pid 120
rc=$?
check "SIGTERM early in a run exits 143 and says so" bash -c "test $rc -eq 143 && grep -q '^interrupted at step .* by SIGTERM' $T/rt/early.log"
check "... leaving no lock file" test ! -e $T/rt/early.lock
rm -f $T/rt/big.bin
# kill -9 at random moments while saving every step: a file the user put in the checkpoint stays in it
"$GPT2" train $tiny --steps 100000 --val-every 0 --save-every 1 --stop-after 1 --out $T/rt/k9 >/dev/null 2>&1
echo mine >$T/rt/k9/NOTES.md
for delay in 0.05 0.1 0.15 0.2 0.25 0.3 0.35 0.4 0.45 0.5 0.55 0.6; do
    "$GPT2" train --resume $T/rt/k9 --save-every 1 >/dev/null 2>&1 &
    pid=$!
    sleep $delay
    kill -9 $pid
    wait_bounded $pid 30 2>/dev/null
done
"$GPT2" train --resume $T/rt/k9 --stop-after 1 >/dev/null 2>&1
check "after 12 kill -9 during saves, the user's file is back in the checkpoint" test "$(cat $T/rt/k9/NOTES.md 2>/dev/null)" = mine
check "... and no staging directory is left" test -z "$(ls -d $T/rt/k9.saving.* 2>/dev/null)"
# what that loop once left (1 CI run in 6): a marker killed between its creation and its text is empty. A dead
# run's staging that carries one is still its staging, and a checkpoint that carries one loses it on a save.
cp -r $T/ck $T/rt/em && mkdir $T/rt/em.saving.3999998 && cp $T/ck/* $T/rt/em.saving.3999998/ &&
    : >$T/rt/em.saving.3999998/.gpt2-staging && echo mine >$T/rt/em.saving.3999998/NOTES.md
"$GPT2" train --resume $T/rt/em --steps 12 >/dev/null 2>&1
check "a dead save's staging with an empty marker is cleared, the user's file moved back" \
    bash -c "test \"\$(cat $T/rt/em/NOTES.md 2>/dev/null)\" = mine && test ! -e $T/rt/em.saving.3999998"
cp -r $T/ck $T/rt/em2 && printf 'gpt2.cpp st' >$T/rt/em2/.gpt2-staging
"$GPT2" train --resume $T/rt/em2 --steps 12 >/dev/null 2>&1
check "a checkpoint holding a killed marker's first bytes is saved without it" \
    bash -c "test -f $T/rt/em2/model.safetensors && test ! -e $T/rt/em2/.gpt2-staging && test -z \"\$(ls -d $T/rt/em2.* 2>/dev/null)\""
# --- a review pass: a plot inside --out, a fallback replacement's leftovers, an unmovable entry, lock files ---
cp -r $T/ck $T/rv && rm -f $T/rv/NOTES.md
check_error "--plot inside --out is refused (every save would swap it out)" "is inside --out" \
    "$GPT2" train --resume $T/rv --steps 13 --plot $T/rv/loss.png
cp -r $T/rv $T/rv.old.3999999 && mark_staging $T/rv.old.3999999 && echo mine >$T/rv.old.3999999/notes.txt
"$GPT2" train --resume $T/rv --steps 13 >/dev/null 2>&1
check "the old half of a killed two-rename save is cleared, the user's file moved back" \
    bash -c "test \"\$(cat $T/rv/notes.txt 2>/dev/null)\" = mine && test ! -e $T/rv.old.3999999"
mv $T/rv/config.json $T/rv-target && ln -s $T/rv-target $T/rv/config.json && before=$(sum $T/rv-target)
check "an entry a save cannot move back does not stop the next save" "$GPT2" train --resume $T/rv --steps 16 --save-every 1
check "... and the user's link target is untouched" test "$(sum $T/rv-target)" = "$before"
printf 12345 >$T/rv2.lock
check_error "a digits-only file at DIR.lock without the lock's newline is refused" "not a gpt2 lock file" \
    "$GPT2" train $tiny --steps 2 --out $T/rv2
# --- a read-only checkpoint continues into --out NEW (its lock beside it cannot be made) -------------------
# A read-only bind mount in a mount namespace of the test's own (unshare -m): gone when the command ends.
ro_run() { unshare -m sh -c 'mount --bind "$1" "$2" && mount -o remount,bind,ro "$2" && shift 2 && exec "$@"' ro_run "$@"; }
mkdir -p $T/ro_src $T/ro && cp -r $T/ck $T/ro_src/run
if ro_run $T/ro_src $T/ro touch $T/ro/x 2>/dev/null || ! ro_run $T/ro_src $T/ro true 2>/dev/null; then
    skip "read-only checkpoint: no read-only bind mount here (needs root and unshare -m)"
else
    ro_run $T/ro_src $T/ro "$GPT2" train --resume $T/ro/run --out $T/ro_new --steps 12 >$T/ro.out 2>&1
    check "train --resume RO_DIR --out NEW continues a read-only checkpoint (the lock beside it cannot be made)" \
        grep -q "^saved $T/ro_new at step 12" $T/ro.out
    sed 's/^/    /' $T/ro.out | grep -E '^    (error|hint)' | head -3
    check_error "... and --resume RO_DIR alone (saving into it) is refused before a step, with --out NEW as the way" \
        "cannot create lock file $T/ro/run.lock (--resume): Read-only file system" \
        ro_run $T/ro_src $T/ro "$GPT2" train --resume $T/ro/run --steps 12
    check "... saying how: --out NEW_DIR" grep -q "^hint: .*--out NEW_DIR" $T/err
fi
# A run continued into another --out leaves the run it came from as it was, its --log too.
"$GPT2" train $tiny --steps 4 --log $T/lg.jsonl --out $T/lg >/dev/null 2>&1
before=$(sum $T/lg.jsonl)
"$GPT2" train --resume $T/lg --out $T/lg_new --steps 6 >$T/lg_new.out 2>&1
check "train --resume RUN --out NEW does not append to RUN's --log, and says so" \
    eval '[ "$(sum $T/lg.jsonl)" = "$before" ] && grep -q "^note: not logging: $T/lg.s log $T/lg.jsonl stays as it was" $T/lg_new.out && grep -q "^saved $T/lg_new at step 6" $T/lg_new.out'

# --- red team round 2 (issue 56) ---------------------------------------------------------------------------
# nohup: a SIGHUP ignored when the run starts stays ignored, so closing the terminal does not stop it.
hup_under_nohup $T/nohup.log "$GPT2" train $tiny --val-every 0 --steps 400 --out $T/nohup
rc=$?
check "under nohup (SIGHUP ignored at start) a SIGHUP leaves train running to its end (exit $rc)" \
    eval '[ $rc = 0 ] && grep -q "^saved $T/nohup at step 400" $T/nohup.log'
# A token file written in place during the run (same length, valid ids): the run stops at its next read, naming
# it, with the state before that step saved; a touch (its mtime moved, its tokens the same) goes on.
live_run() {  # live_run NAME EDIT...: a long run on a copy of TOK, EDIT applied to the copy once steps are seen
    local name=$1; shift
    cp $TOK $T/$name.bin
    "$GPT2" train ${tiny/--train $TOK/--train $T/$name.bin} --val '' --steps 100000 --out $T/$name >$T/$name.log 2>&1 &
    local pid=$!
    for _ in $(seq 200); do grep -q '^step  *3/' $T/$name.log && break; sleep 0.1; done
    "$@"
    sleep 1
    kill -TERM $pid 2>/dev/null  # a run the edit did not stop is stopped here (exit 143)
    wait_bounded $pid 120
}
live_run edited bash -c "printf '\x05\x00\x06\x00' | dd of=$T/edited.bin bs=1 seek=2048 conv=notrunc status=none"
rc=$?
check "a token file written in place during the run stops it at the next read, naming it (exit $rc)" \
    eval '[ $rc = 1 ] && grep -q "^error: token file changed during the run ($T/edited.bin): it no longer holds the tokens" $T/edited.log'
live_run touched touch $T/touched.bin
rc=$?
check "... while a touch (same tokens, a new mtime) leaves it training (exit $rc: stopped by SIGTERM)" \
    eval '[ $rc = 143 ] && ! grep -q "changed during the run" $T/touched.log'
# info on a run whose train state is cut short names it, rather than passing over it as a plain model
cp -r $T/lg $T/cut && truncate -s 1000 $T/cut/train_state.safetensors
check_error "info on a run whose train_state.safetensors is truncated names it" "$T/cut/train_state.safetensors" \
    "$GPT2" info --model $T/cut
check_error "a --steps behind a resumed run is refused, not noted and then nothing done" \
    "bad value for --steps (train): the run $T/lg is at step 4 already, got 2" "$GPT2" train --resume $T/lg --steps 2
check_error "a number with a leading space is malformed, as one with a trailing space is" \
    "malformed value for --steps (train): expected an integer, got ' 5'" "$GPT2" train $tiny --steps ' 5'
summary
