#!/usr/bin/env bash
# cli_red_team.sh: the defects of a red-team pass, one section each, every test seen failing before its fix:
# outputs that replace only what gpt2 wrote and never follow a link planted at their staging name, one
# tokenize per -o prefix, training data changed under a running train, bounded interactive prompts, strict
# numbers in logs, labels and JSON lines, resume under another process's lock, tokenize's cleanup after a
# failure or kill -9, Ctrl-C during a sample. (The write rule that keeps them fixed: tests/cli_rules.sh.)
# Needs the tokenizer files; no Python.
source "$(dirname "$0")/lib.sh"
FIX=tests/fixtures/ref_tiny
TOK=$(pwd)/tests/fixtures/tokens_v1000.bin
T=$TEST_TMP
if [ -n "${GPT2_DATA_DIR:-}" ]; then TOK_DIR=$GPT2_DATA_DIR/gpt2; else TOK_DIR=data/gpt2; fi
if [ ! -f "$TOK_DIR/encoder.json" ] && [ ! -f "$TOK_DIR/vocab.json" ]; then
    fail "tokenizer files not found in $TOK_DIR: set GPT2_DATA_DIR or run \`make data\`"
    summary
    exit 1
fi
tiny="--train $TOK --val $TOK --vocab 1000 --layers 2 --heads 2 --channels 32 --seq-len 32 -B 4 -T 16 --lr 3e-3 --val-every 5 --sample-tokens 0"
sum() { cksum <"$1"; }

# run CMD...: runs it with stdout in $T/run.out and stderr in $T/run.err; sets rc and err (its error: lines).
run() { "$@" >"$T/run.out" 2>"$T/run.err"; rc=$?; err=$(grep '^error: ' "$T/run.err"); }
# error_is NAME TEXT...: the last run exited 1 with exactly one error: line, containing each TEXT (a fixed
# string) and none of those written !TEXT.
error_is() {
    local name=$1 s ok=1
    shift
    [ "$rc" -eq 1 ] && [ "$(grep -c '^error: ' "$T/run.err")" -eq 1 ] || ok=0
    for s in "$@"; do
        case $s in
        '!'*) grep -qF -- "${s#!}" <<<"$err" && ok=0 ;;
        *) grep -qF -- "$s" <<<"$err" || ok=0 ;;
        esac
    done
    if [ $ok = 1 ]; then pass "$name"; else fail "$name (exit $rc, wanted 1 and one error line with: $*)"; sed 's/^/    /' "$T/run.err" | tail -5; fi
}
# bounded_wait PID: wait_bounded (lib.sh) at most 120 s, setting rc.
bounded_wait() {
    wait_bounded "$1" 120 2>/dev/null
    rc=$?
}
# wait_for CMD...: polls CMD every 0.1 s until it succeeds, at most 120 s (a hang guard, not a time limit:
# a sanitizer build on a loaded machine takes its time).
wait_for() { for _ in $(seq 1200); do "$@" && return 0; sleep 0.1; done; return 1; }
steps_at_least() { [ "$(grep -c '^step' "$1" 2>/dev/null)" -ge "$2" ]; }
# whole FILE: an llm.c token file whose size matches its header's token count.
whole() {
    [ -f "$1" ] && [ "$(od -An -t d4 -N 4 "$1" | tr -d ' ')" = 20240520 ] &&
        [ "$(stat -c %s "$1")" -eq $((1024 + 2 * $(od -An -t d4 -j 8 -N 4 "$1" | tr -d ' '))) ]
}

"$GPT2" train $tiny --steps 10 --out $T/ck >/dev/null 2>&1
# a random full-vocabulary model (context 96: every HellaSwag fixture candidate fits) for text commands
"$GPT2" train --train $TOK --val "" --vocab 50257 --layers 1 --heads 2 --channels 16 --seq-len 96 -T 16 --steps 0 \
    --sample-tokens 0 --out $T/hm >/dev/null
head -2 tests/fixtures/hellaswag/mini.jsonl >$T/hs.jsonl
hs() { "$GPT2" eval --model $T/hm --tokenizer "$TOK_DIR" --hellaswag $T/hs.jsonl "$@"; }
echo "To be, or not to be: that is the question." >$T/text.txt
printf '{"step":1,"loss":6.0}\n{"step":2,"loss":5.0}\n' >$T/ok.jsonl
# text for the tokenize runs: the valid-UTF-8 tokenizer fixtures 60 times, 148 KB, 86k tokens; a run reading it
# from a FIFO held open in parts of 4 KB (--chunk-bytes) has published shards of 5000 tokens and
# staged one when it waits for more
fixture_text 60 >$T/fx.txt

# --- D3: eval --hellaswag-scores replaces only a scores file gpt2 wrote ------------------------------------
run hs --hellaswag-scores $T/scores.jsonl
check "eval --hellaswag-scores writes a new scores file" test "$rc" -eq 0 -a "$(wc -l <$T/scores.jsonl)" -eq 2
echo "my notes" >$T/notes.txt
cp -r $T/hm $T/ckpt
mknod $T/dev c 1 3 2>/dev/null || skip "the device node case: mknod needs root"
ln -s notes.txt $T/link_notes.jsonl
cp $T/scores.jsonl $T/old_scores.jsonl && ln -s old_scores.jsonl $T/link_scores.jsonl
# refuse_scores NAME PHRASE PATH [FILE [INPUT]]: scoring INPUT (hs.jsonl) into PATH is refused before scoring
# (nothing on stdout), the error naming PATH; FILE (PATH, or a link's target) unchanged
refuse_scores() {
    local name=$1 phrase=$2 path=$3 file=${4:-$3} input=${5:-$T/hs.jsonl}
    local before
    before=$(sum "$file")
    run "$GPT2" eval --model $T/hm --tokenizer "$TOK_DIR" --hellaswag "$input" --hellaswag-scores "$path"
    error_is "$name" "$phrase" "$path"
    check "... before scoring, leaving it unchanged" test ! -s $T/run.out -a "$(sum "$file")" = "$before"
}
refuse_scores "--hellaswag-scores over a user's notes is refused" "exists and is not" $T/notes.txt
cp $T/hs.jsonl $T/input.jsonl
refuse_scores "--hellaswag-scores over its own input JSONL is refused" "is an input of this run" $T/input.jsonl \
    $T/input.jsonl $T/input.jsonl
refuse_scores "--hellaswag-scores over a checkpoint's model.safetensors is refused" "exists and is not" \
    $T/ckpt/model.safetensors
if [ -c $T/dev ]; then
    run hs --hellaswag-scores $T/dev
    error_is "--hellaswag-scores over a device node is refused" "not a regular file" "$T/dev"
    check "... and it is still a character device" test -c $T/dev
fi
refuse_scores "--hellaswag-scores over a symbolic link to notes is refused" "symbolic link" $T/link_notes.jsonl $T/notes.txt
refuse_scores "--hellaswag-scores over a symbolic link to a scores file is refused" "symbolic link" \
    $T/link_scores.jsonl $T/old_scores.jsonl
check "--hellaswag-scores replaces a scores file it wrote" hs --hellaswag-scores $T/scores.jsonl
check "... which holds the new scores" test "$(wc -l <$T/scores.jsonl)" -eq 2

# --- D2: a symbolic link planted at an output's staging name NAME.tmp.PID is never followed -----------------
# plant OUT TARGET CMD...: runs CMD with a link to TARGET at OUT.tmp.<CMD's pid> (exec keeps bash's pid)
plant() { bash -c 'ln -s "$1" "$2.tmp.$$" && shift 2 && exec "$@"' _ "$2" "$1" "${@:3}"; }
mkdir -p $T/st
planted() {  # planted NAME OUT CMD...
    local name=$1 out=$2
    shift 2
    echo "victim of $name" >$T/st/victim && cp $T/st/victim $T/st/victim.was
    run plant "$out" $T/st/victim "$@"
    error_is "$name" "$out.tmp."
    check "... and the link's target is unchanged" cmp $T/st/victim $T/st/victim.was
    rm -f "$out".tmp.*
}
planted "export --format llmc with a link at its staging name" $T/st/x.bin \
    "$GPT2" export --model $FIX/model --out $T/st/x.bin --format llmc
planted "tokenize -o with a link at the staged val file" $T/st/p_val.bin \
    "$GPT2" tokenize --tokenizer "$TOK_DIR" --val-tokens 2 -o $T/st/p $T/text.txt
planted "plot --out with a link at its staging name" $T/st/p.png "$GPT2" plot --out $T/st/p.png $T/ok.jsonl
planted "eval --hellaswag-scores with a link at its staging name" $T/st/s.jsonl \
    "$GPT2" eval --model $T/hm --tokenizer "$TOK_DIR" --hellaswag $T/hs.jsonl --hellaswag-scores $T/st/s.jsonl

# --- D11: two tokenize runs on one -o prefix: the second fails at once, the first completes -------------------
# busy_prefix PREFIX LOCK: a first run reads stdin from a FIFO this shell holds open, so it is still running
# (its last shard staged) when a second run on PREFIX starts; then the FIFO is closed and the first finishes.
busy_prefix() {
    local prefix=$1 lock=$2 pid
    rm -f $T/fifo && mkfifo $T/fifo
    "$GPT2" tokenize --chunk-bytes 4096 --tokenizer "$TOK_DIR" - -o "$prefix" --shard-tokens 5000 <$T/fifo >$T/first.out 2>&1 &
    pid=$!
    exec 3>$T/fifo
    cat $T/fx.txt >&3
    wait_for test -e "$lock" || echo "    (no $lock after 20 s)"
    run "$GPT2" tokenize --tokenizer "$TOK_DIR" $T/fx.txt -o "$prefix" --shard-tokens 5000 3>&-
    exec 3>&-
    error_is "a second tokenize on -o $prefix fails at once" "in use"
    bounded_wait $pid
    check "... and the first one completes" test "$rc" -eq 0
    check "... with every shard it reports" reported_shards $T/first.out
}
# reported_shards LOG: the val shard and the N train shards tokenize's summary line names are whole files
reported_shards() {
    local line val first n i
    line=$(grep '^tokenized' "$1") || return 1
    echo "$line"
    val=$(sed -n 's/.* val tokens -> \([^,]*\), .*/\1/p' <<<"$line")
    first=$(sed -n 's/.* shards -> \([^ ]*_000001\.bin\) .*/\1/p' <<<"$line")
    n=$(sed -n 's/.* in \([0-9]*\) shards .*/\1/p' <<<"$line")
    [ -n "$val" ] && [ -n "$first" ] && [ -n "$n" ] && whole "$val" || return 1
    for i in $(seq "$n"); do whole "${first%000001.bin}$(printf %06d "$i").bin" || return 1; done
}
busy_prefix $T/cc/p $T/cc/p_.lock
busy_prefix $T/cd/ $T/cd.lock

# --- D1, D15: a shard changed under a running train: one error naming it, the checkpoint saved ---------------
repeat_tokens $TOK 20 >$T/big.bin
# changed_under NAME OUT EDIT...: trains on a private copy of big.bin into OUT, runs EDIT on the copy after a few steps
changed_under() {
    local name=$1 out=$2 pid
    shift 2
    mkdir -p $T/$name && cp $T/big.bin $T/$name/big.bin
    rm -f $T/run.out $T/run.err  # the last run's step lines would end the wait below at once
    "$GPT2" train --train $T/$name/big.bin --val '' --vocab 1000 --layers 2 --heads 2 --channels 32 --seq-len 32 \
        -B 4 -T 16 --val-every 0 --sample-tokens 0 --steps 100000 --save-every 1000 --out "$out" \
        >$T/run.out 2>$T/run.err &
    pid=$!
    wait_for steps_at_least $T/run.out 3
    "$@" $T/$name/big.bin
    bounded_wait $pid
    err=$(grep '^error: ' $T/run.err)
}
changed_under d1 $T/d1ck truncate -s 1024
error_is "a shard truncated during training ends the run with one error" "changed" "$T/d1/big.bin"
check "... having saved the checkpoint" test -f $T/d1ck/train_state.safetensors
check "... and released the lock" test ! -e $T/d1ck.lock
cp $T/big.bin $T/d1/big.bin  # the data as it was, so that the resume's data check passes
saved=$(sed -n 's/^saved .* at step \([0-9]*\).*/\1/p' $T/run.out | tail -1)
check "... which resumes (from step ${saved:-none})" "$GPT2" train --resume $T/d1ck --steps $((${saved:-0} + 1))
ff() { perl -e 'open(my $h, "+<:raw", $ARGV[0]) or die; seek($h, 1024, 0); print $h "\xff" x ((-s $ARGV[0]) - 1024);
    close($h) or die' "$1"; }
changed_under d15 $T/d15ck ff
error_is "a shard rewritten in place (same size, ids out of range) during training" "changed" "$T/d15/big.bin"

# --- D4: generate --interactive refuses an over-long line in bounded memory and answers the next one ----------
if under_asan; then
    skip "generate --interactive under ulimit -v: AddressSanitizer reserves more address space than any limit allows"
else
    { head -c 300000000 /dev/zero | tr '\0' a; echo; echo hello; } |
        (ulimit -v 4000000; exec timeout 300 "$GPT2" generate --model $T/hm --tokenizer "$TOK_DIR" --interactive --max-tokens 5) \
            >$T/long.out 2>$T/long.err
    rc=$?
    check "a 300 MB line in 4 GB of address space is refused as too long" grep -q '^error: .*too long' $T/long.err
    check "... and the next line is answered" test "$(grep -c . $T/long.out)" -ge 1
    check "... ending with exit 1 (a line was skipped), not a crash (exit $rc)" test "$rc" -eq 1
fi

# --- D7: plot refuses a loss past float's range -----------------------------------------------------------------
for big in 1e39 1e308; do
    printf '{"step":1,"loss":%s}\n' $big >$T/huge.jsonl
    run "$GPT2" plot --out $T/huge.png $T/huge.jsonl
    error_is "plot refuses a loss of $big" "$T/huge.jsonl" "line 1"
    check "... and writes no PNG" test ! -e $T/huge.png
done

# --- D14: tokenize of a directory into itself does not read its own shards back as text -----------------------
mkdir -p $T/self $T/self.first
head -c 3000 $T/fx.txt >$T/self/a.txt && tail -c 3000 $T/fx.txt >$T/self/b.txt && echo "Hello world." >$T/self/c.txt
"$GPT2" tokenize --tokenizer "$TOK_DIR" $T/self -o $T/self/ --shard-tokens 300 >$T/self1.out 2>&1
cp $T/self/*.bin $T/self.first/
"$GPT2" tokenize --tokenizer "$TOK_DIR" $T/self -o $T/self/ --shard-tokens 300 >$T/self2.out 2>&1
same_shards() {
    local f
    [ "$(cd $T/self && ls *.bin)" = "$(cd $T/self.first && ls)" ] || return 1
    for f in $T/self.first/*; do cmp "$f" "$T/self/$(basename "$f")" || return 1; done
}
check "tokenize DIR -o DIR/ twice: the second run writes the same shards" same_shards
check "... and reports the same token counts" \
    test "$(sed -n 's/^tokenized .*): //p' $T/self2.out)" = "$(sed -n 's/^tokenized .*): //p' $T/self1.out)"

# --- D10: resume while another process holds the checkpoint's lock -------------------------------------------
# hold_lock LOCK [PIDLINE]: a process holding flock on LOCK (writing its pid in it with PIDLINE), in $holder
hold_lock() {
    rm -f $T/held
    perl -e 'open(my $f, ">>", $ARGV[0]) or die; flock($f, 2) or die;
        if ($ARGV[2]) { truncate($f, 0); print $f "$$\n"; $f->flush; } open(my $r, ">", $ARGV[1]); close($r); sleep 300' \
        "$1" $T/held "${2:-}" &
    holder=$!
    wait_for test -e $T/held
}
release_lock() { kill $holder; wait_bounded $holder 30 2>/dev/null; rm -f "$1"; }
cp -r $T/ck $T/ck10
hold_lock $T/ck10.lock
run "$GPT2" train --resume $T/ck10 --steps 12
error_is "resume while another process holds the lock (empty lock file)" "in use" "!does not belong"
release_lock $T/ck10.lock
hold_lock $T/ck10.lock pid
run "$GPT2" train --resume $T/ck10 --steps 12
error_is "resume while another process holds the lock (a pid line)" "in use" "!does not belong"
release_lock $T/ck10.lock
# what a reader sees in the middle of the holder's save: a model from a later save than the train state
cp -r $T/ck $T/ck12 && "$GPT2" train --resume $T/ck12 --steps 12 >/dev/null 2>&1 && cp $T/ck12/model.safetensors $T/ck10/
hold_lock $T/ck10.lock pid
run "$GPT2" train --resume $T/ck10 --steps 14
error_is "resume during the holder's save (model and state from two saves) says in use" "in use" "!does not belong"
release_lock $T/ck10.lock
# ... or between the two renames of a save where the file system cannot exchange: nothing at the name yet
hold_lock $T/ck10.lock pid
mark_staging $T/ck10 && mv $T/ck10 $T/ck10.old.$holder
run "$GPT2" train --resume $T/ck10 --steps 14
error_is "resume between the holder's two renames says in use" "in use"
check "... and leaves the holder's directories as they were" test -d $T/ck10.old.$holder -a ! -e $T/ck10
release_lock $T/ck10.lock

# --- D5: a failed tokenize removes the directories it created ---------------------------------------------------
run "$GPT2" tokenize --tokenizer "$TOK_DIR" --val-tokens 100000000 -o $T/new/sub/x $T/text.txt
error_is "tokenize -o into new directories with too few tokens fails" "$T/text.txt"
check "... leaving no directory behind" test ! -e $T/new

# --- D6: the staged shard of a tokenize killed with kill -9 is removed by the next run on the prefix -------------
mkdir -p $T/k9 && rm -f $T/fifo && mkfifo $T/fifo
"$GPT2" tokenize --chunk-bytes 4096 --tokenizer "$TOK_DIR" - -o $T/k9/s --shard-tokens 5000 <$T/fifo >/dev/null 2>&1 &
pid=$!
exec 3>$T/fifo
cat $T/fx.txt >&3
staged() { ls $T/k9 | grep -q '\.tmp\.'; }
# the same staged file for a second: the run has used up its input and waits (killed between publishing a
# shard and staging the next, it would leave none)
staged_still() { local a; a=$(ls $T/k9 | grep '\.tmp\.') && sleep 1 && [ "$(ls $T/k9 | grep '\.tmp\.')" = "$a" ]; }
wait_for staged_still
kill -9 $pid
wait_bounded $pid 30 2>/dev/null
exec 3>&-
check "kill -9 in the middle of a shard leaves its staged file" staged
check "the next tokenize on the prefix completes" "$GPT2" tokenize --tokenizer "$TOK_DIR" $T/fx.txt -o $T/k9/s --shard-tokens 5000
check "... and removes the dead run's staged file" bash -c "! ls $T/k9 | grep '\.tmp\.'"

# --- D12: JSON lines: a byte order mark, and lines that are not JSON, get errors that say so ----------------------
printf '\xef\xbb\xbf{"text": "a"}\n' >$T/bom.jsonl
run "$GPT2" tokenize --tokenizer "$TOK_DIR" --jsonl-field text $T/bom.jsonl -o $T/jl/p
error_is "a JSONL file starting with a UTF-8 byte order mark" "byte order mark" "$T/bom.jsonl"
bad_line() {  # bad_line NAME LINE: the file holds a good line, then LINE
    printf '{"text": "a"}\n%s\n' "$2" >$T/bad.jsonl
    run "$GPT2" tokenize --tokenizer "$TOK_DIR" --jsonl-field text $T/bad.jsonl -o $T/jl/p
    error_is "a JSONL line that is $1: the error names the file and line, not a digit" "$T/bad.jsonl" "line 2" "!expected digit"
}
bad_line "NaN" 'NaN'
bad_line "binary bytes" $'\x01\x02\xfe\xff'
bad_line "plain text" 'just some text'

# --- D13: a HellaSwag label that is a number but not a small integer ------------------------------------------
for label in 1.0 1e0 12345678901234567890; do
    printf '{"ctx": "A dog.", "endings": ["a", "b", "c", "d"], "label": %s}\n' $label >$T/label.jsonl
    run "$GPT2" eval --model $T/hm --tokenizer "$TOK_DIR" --hellaswag $T/label.jsonl
    error_is "HellaSwag label $label is refused as not an integer 0..3, not as a fraction" "$T/label.jsonl" "integer" "!fraction"
done

# --- leftovers: Ctrl-C during a long sample, a user's .gpt2-staging, fixed flags compared as numbers ------------
"$GPT2" train --train $TOK --val '' --vocab 50257 --layers 1 --heads 2 --channels 16 --seq-len 32 -B 1 -T 16 \
    --steps 1000 --sample-every 2 --sample-tokens 200000 >$T/sample.out 2>&1 &
pid=$!
wait_for grep -q '^---- sample' $T/sample.out
kill -INT $pid 2>/dev/null
bounded_wait $pid
check "SIGINT while a 200000-token sample prints exits 130 (exit $rc)" test "$rc" -eq 130
check "... stopping the sample ($(stat -c %s $T/sample.out) bytes printed)" test "$(stat -c %s $T/sample.out)" -lt 200000
cp -r $T/ck $T/ckst && echo mine >$T/ckst/.gpt2-staging
"$GPT2" train --resume $T/ckst --steps 12 >/dev/null 2>&1
check "a user's file named .gpt2-staging in a checkpoint survives a save" test "$(cat $T/ckst/.gpt2-staging 2>/dev/null)" = mine
cp -r $T/ck $T/ckb
check "resume -B 04 of a run trained with -B 4 is accepted" "$GPT2" train --resume $T/ckb --steps 12 -B 04
run "$GPT2" train --resume $T/ckb --steps 14 -B 5
error_is "resume -B 5 of a run trained with -B 4 is refused" "batch"

# --- a second red-team pass, on the fixed binary ------------------------------------------------------------
# --log appends only to a JSON-lines log: a text of the user's whose first line is JSON is not one
printf '{"step":1,"loss":2}\nmy notes\n' >$T/mixed.txt && before=$(sum $T/mixed.txt)
run "$GPT2" train $tiny --steps 1 --log $T/mixed.txt
error_is "--log refuses a text whose first line only is JSON" "mixed.txt exists and is not a JSON-lines log"
check "... and the text is untouched" test "$(sum $T/mixed.txt)" = "$before"
# export hf never replaces the model it reads
"$GPT2" export --model $FIX/model --out $T/ex >/dev/null && before=$(sum $T/ex/model.safetensors)
run "$GPT2" export --model $T/ex --out $T/ex --dtype bf16
error_is "export --out over its own --model is refused" "which this export reads (--model)"
run "$GPT2" export --model $T/ex/model.safetensors --heads 2 --out $T/ex
error_is "export --out over the directory of its bare --model file is refused" "which this export reads (--model)"
check "... and the export is untouched" test "$(sum $T/ex/model.safetensors)" = "$before"
# files read whole have a size bound: a 20 GB sparse file is refused before it is read (memory stays small:
# 4 GB of address space, except under AddressSanitizer, which reserves more than any limit allows)
truncate -s 20G $T/huge.jsonl
vlimit="ulimit -v 4000000;"
under_asan && vlimit=""
run bash -c "$vlimit exec '$GPT2' plot --out $T/huge.png $T/huge.jsonl"
error_is "plot refuses a 20 GB log before reading it" "file too large ($T/huge.jsonl)"
run bash -c "$vlimit exec '$GPT2' eval --model $T/hm --tokenizer '$TOK_DIR' --hellaswag $T/huge.jsonl"
error_is "eval --hellaswag refuses a 20 GB file before reading it" "file too large ($T/huge.jsonl)"
cp -r $FIX/model $T/hugecfg && truncate -s 20G $T/hugecfg/config.json
run bash -c "$vlimit exec '$GPT2' info --model $T/hugecfg"
error_is "a 20 GB config.json is refused before it is read" "file too large ($T/hugecfg/config.json)"
mkdir -p $T/hugetok && cp "$TOK_DIR/vocab.bpe" $T/hugetok/ && truncate -s 20G $T/hugetok/encoder.json
run bash -c "$vlimit exec '$GPT2' tokenize --tokenizer $T/hugetok --ids $T/text.txt"
error_is "a 20 GB encoder.json is refused before it is read" "file too large ($T/hugetok/encoder.json)"

# a directory output named '.' or '..' cannot be swapped in whole: refused before the first step
mkdir -p $T/here
GPT2_ABS=$(cd "$(dirname "$GPT2")" && pwd)/$(basename "$GPT2")
run bash -c "cd $T/here && exec '$GPT2_ABS' train $tiny --steps 2 --out ."
error_is "train --out . is refused before training" "names a directory by '.'"
check "... having trained nothing and left no marker" test "$(grep -c '^step' $T/run.out)" = 0 -a ! -e $T/here/.gpt2-staging
run bash -c "cd $T/here && exec '$GPT2_ABS' export --model '$(pwd)/$FIX/model' --out ."
error_is "export --out . is refused" "names a directory by '.'"
# one path for two outputs of the same run is named as such, not as another process
run "$GPT2" train $tiny --steps 1 --log $T/both --plot $T/both
error_is "--log and --plot on one path: said to be two outputs of this run" "already an output of this run"
# a command ended by a signal it does not catch leaves no lock file behind
printf '{"step":1,"loss":6}\n{"step":2,"loss":5}\n' >$T/big.jsonl
"$GPT2" plot --out $T/big.png --width 16384 --height 16384 $T/big.jsonl >/dev/null 2>&1 &
pid=$!
wait_for test -s $T/big.png.lock && kill -TERM $pid  # -s: its pid written, so the lock is the run's
bounded_wait $pid
check "plot killed by SIGTERM while drawing exits 143 (exit $rc)" test "$rc" -eq 143
check "... and leaves no lock file" test ! -e $T/big.png.lock

# train --model X --out X would replace a resumable run with a new one
run "$GPT2" train --model $T/ck --out $T/ck --train $TOK --val "" -B 4 -T 16 --steps 1 --sample-tokens 0
error_is "train --out over the checkpoint its --model comes from is refused" "holds the --model this run starts from"
# tokenize removes stale shards of its own, never a link of the user's at such a name
printf 'To be, or not to be, that is the question.\n' >$T/short.txt
"$GPT2" tokenize --tokenizer "$TOK_DIR" $T/short.txt -o $T/st/s --shard-tokens 2 >/dev/null 2>&1
last=$(ls $T/st/s_train_*.bin | tail -1)
cp $TOK $T/mine.bin && rm $last && ln -s $T/mine.bin $last  # the last shard's name: stale after a run of fewer
"$GPT2" tokenize --tokenizer "$TOK_DIR" $T/short.txt -o $T/st/s --shard-tokens 6 >$T/run.out 2>&1
check "tokenize removes its own stale shards but leaves a user's link at a shard name" \
    bash -c "test -L $last -a -f $T/mine.bin && grep -q 'removed .* shard' $T/run.out"
# compare refuses a reference holding NaN (it would compare as no error)
cp tests/fixtures/ref_tiny/dump.safetensors $T/nan_dump.safetensors && st_fill $T/nan_dump.safetensors logits ff
run "$GPT2" compare --model tests/fixtures/ref_tiny/model --ref $T/nan_dump.safetensors
error_is "compare refuses a reference dump with NaN logits" "non-finite value in $T/nan_dump.safetensors (logits)"
# eval without data says so, not that the default -T is wrong
run "$GPT2" eval --model tests/fixtures/trained_tiny
error_is "eval without --data says it is missing" "missing flag --data or --hellaswag"
# train --tokenizer names a directory: a missing one is an error, not a note
run "$GPT2" train $tiny --steps 1 --sample-tokens 4 --tokenizer $T/no_such_dir
error_is "train --tokenizer with a missing directory is an error" "no_such_dir"

# --- a third pass (the re-check of the second) -----------------------------------------------------------------
run "$GPT2" train $tiny --steps 30 --plot $T/new.png/ --out $T/ck30
error_is "--plot ending in '/' is refused before training" "new.png/ ends with '/'"
printf '{"text":"a line of a dataset"}\n' >$T/data.jsonl && before=$(sum $T/data.jsonl)
run "$GPT2" train $tiny --steps 1 --log $T/data.jsonl
error_is "--log refuses a JSON-lines dataset (lines without \"step\")" "data.jsonl exists and is not a JSON-lines log"
check "... and the dataset is untouched" test "$(sum $T/data.jsonl)" = "$before"
run "$GPT2" train --train $T/no_such.bin --val "" --vocab 1000 --layers 2 --heads 2 --channels 32 --seq-len 32 \
    -B 4 -T 16 --sample-tokens 0 --log $T/logdir/sub/new.jsonl
error_is "train failing before its first step ..." "no_such.bin"
check "... leaves neither the empty --log it created nor its directories" test ! -e $T/logdir
printf 'The\0 cat\nsat\n' | "$GPT2" generate --model $T/hm --tokenizer "$TOK_DIR" --interactive --max-tokens 2 --ids >$T/run.out 2>$T/run.err
check "generate --interactive keeps a NUL inside a line: two lines, two answers" test "$(grep -cvx -e "===" -e "" $T/run.out)" -eq 2

# --- a fourth pass (issue 56) ------------------------------------------------------------------------------------
# A FIFO where a file would go is refused in plain words, whatever kind of file the output is.
rm -f $T/out.fifo && mkfifo $T/out.fifo
run timeout 60 "$GPT2" export --model $FIX/model --format gguf --out $T/out.fifo
error_is "export over a FIFO: a plain sentence naming a regular file" "$T/out.fifo exists and is not a regular file" \
    "expected a regular file path (a new path, or a model GGUF gpt2 wrote)"
run timeout 60 "$GPT2" export --model $FIX/model --format llmc --out $T/out.fifo
error_is "... the same for an llm.c checkpoint" "expected a regular file path (a new path, or an llm.c checkpoint)"
# A save on a disk with room for one checkpoint: the later save cannot write its second copy. One error
# naming the output, a hint saying a save needs room for one more checkpoint, nothing staged left, and the
# earlier checkpoint whole. A small tmpfs makes the disk (mounting needs root: skipped where not allowed).
mkdir -p $T/small
if mount -t tmpfs -o size=1m tmpfs $T/small 2>/dev/null; then
    at_exit 'umount "$T/small" 2>/dev/null; rm -rf "$TEST_TMP"'
    run "$GPT2" train $tiny --val '' --steps 4 --save-every 2 --out $T/small/ck
    error_is "a save on a full disk: one error naming the output" "cannot save $T/small/ck: no space left on the device"
    check "... a hint: a save needs free space for one more checkpoint, in bytes" \
        grep -Eq '^hint: a save writes a complete new copy beside the old one before swapping them, so it needs free space for one more checkpoint \(about [0-9]+ bytes' $T/run.err
    check "... no staging left beside it" test "$(ls $T/small)" = ck
    check "... and the step-2 checkpoint resumes" bash -c "'$GPT2' info --model $T/small/ck | grep -q '^run: step 2 of 4'"
    umount $T/small
else
    skip "a save on a full disk: cannot mount a tmpfs here (needs root and CAP_SYS_ADMIN)"
fi
# The same with the inodes run out, not the bytes (a tmpfs of 9, mounted in a private mount namespace that
# goes with the run): the later save cannot create its files. The same error and hint as a full disk's.
mkdir -p $T/few
if unshare -m mount -t tmpfs -o size=10m,nr_inodes=9 tmpfs $T/few 2>/dev/null; then
    run unshare -m bash -c "mount -t tmpfs -o size=10m,nr_inodes=9 tmpfs $T/few && { '$GPT2' train $tiny --val '' \
        --steps 4 --save-every 2 --out $T/few/ck; rc=\$?; ls $T/few >$T/few.ls; exit \$rc; }"
    error_is "a save with no inode left: one error naming the output" "cannot save $T/few/ck: no space left on the device"
    check "... the same hint as a full disk's" grep -q '^hint: a save writes a complete new copy beside the old one' $T/run.err
    check "... and no staging left beside it" test "$(cat $T/few.ls)" = ck
else
    skip "a save with no inode left: cannot mount a tmpfs in a private mount namespace here (unshare -m)"
fi

summary
