#!/usr/bin/env bash
# cli_shards.sh: --train/--val as a list or glob of llm.c token-file shards: training on a glob, the same
# tokens as one file or as shards give the same losses in order, a seeded shuffle, exact resume across
# shards and epochs, a changed shard set refused on resume, bad shards named, and format 2 train states
# (one file, hashed whole) still resumed. Shards are cut from a fixture with perl, so no Python is needed.
source "$(dirname "$0")/lib.sh"
TOK=tests/fixtures/tokens_v1000.bin
T=$TEST_TMP
tiny="--vocab 1000 --layers 2 --heads 2 --channels 32 --seq-len 32 -B 4 -T 16 --lr 3e-3 --warmup 5 --sample-tokens 0"
losses() { grep -o 'step *[0-9]*/[0-9]* | loss [0-9.]*' "$1"; }
# same_losses N A B / other_losses N A B: both logs hold N step losses, identical / not identical.
same_losses() { [ "$(losses "$2" | wc -l)" = "$1" ] && [ "$(losses "$3" | wc -l)" = "$1" ] && diff <(losses "$2") <(losses "$3"); }
export -f losses same_losses
other_losses() { [ "$(losses "$2" | wc -l)" = "$1" ] && [ "$(losses "$3" | wc -l)" = "$1" ] && ! diff -q <(losses "$2") <(losses "$3") >/dev/null; }

# slice IN OUT START COUNT: a token file of IN's tokens [START, START + COUNT).
slice() {
    perl -e 'my ($in, $out, $start, $count) = @ARGV; open(my $h, "<:raw", $in) or die; local $/; my $d = <$h>;
        my $tok = substr($d, 1024 + 2 * $start, 2 * $count); length($tok) == 2 * $count or die "short\n";
        open(my $o, ">:raw", $out) or die; print $o pack("l<3", 20240520, 1, $count) . ("\0" x 1012) . $tok;' "$@"
}
# Shards that share their edge token, as consecutive windows do: shard k holds tokens [960k, 960k + 960],
# so the 3 shards hold exactly the 180 windows of T=16 (45 batches of B=4) that one.bin holds.
slice $TOK $T/one.bin 0 2881
mkdir -p $T/set
for k in 0 1 2; do slice $TOK $T/set/data_train_00000$k.bin $((960 * k)) 961; done
glob="$T/set/data_train_*.bin"

# --- a glob trains; the same tokens in order give the same losses as one file --------------------------
"$GPT2" train $tiny --train "$glob" --val "$glob" --val-every 10 --steps 20 >$T/glob.log 2>&1
check "a quoted glob of 3 shards trains (and validates)" grep -q 'step *20/20 | val loss' $T/glob.log
check "... and says how many shards it read" grep -q 'data: 2883 train tokens in 3 shards' $T/glob.log
"$GPT2" train $tiny --train $T/one.bin --val-every 0 --steps 50 --no-shuffle >$T/one.log 2>&1
"$GPT2" train $tiny --train "$glob" --val-every 0 --steps 50 --no-shuffle >$T/sh.log 2>&1
check "--no-shuffle: one file and the same tokens as 3 shards give identical losses (50 steps, past an epoch)" \
    same_losses 50 $T/one.log $T/sh.log
"$GPT2" train $tiny --train $T/one.bin --val-every 0 --steps 50 >$T/one_shuf.log 2>&1
check "... and shuffling changes them" other_losses 50 $T/one.log $T/one_shuf.log
list="$T/set/data_train_000000.bin,$T/set/data_train_000001.bin,$T/set/data_train_000002.bin"
"$GPT2" train $tiny --train "$list" --val-every 0 --steps 50 --no-shuffle >$T/list.log 2>&1
check "a comma list of the shards reads as the glob does" same_losses 50 $T/sh.log $T/list.log
"$GPT2" train $tiny --train "$glob" --val-every 0 --steps 50 >$T/s1.log 2>&1
"$GPT2" train $tiny --train "$glob" --val-every 0 --steps 50 >$T/s2.log 2>&1
"$GPT2" train $tiny --train "$glob" --val-every 0 --steps 50 --seed 7 >$T/s3.log 2>&1
check "the shuffle is deterministic from --seed" same_losses 50 $T/s1.log $T/s2.log
check "... and another seed gives another order" other_losses 50 $T/s1.log $T/s3.log
"$GPT2" eval --model tests/fixtures/trained_tiny --data $T/one.bin -B 4 -T 16 >$T/e1.out 2>&1
"$GPT2" eval --model tests/fixtures/trained_tiny --data "$glob" -B 4 -T 16 >$T/e2.out 2>&1
check "eval --batches all on the shards equals eval on the one file" \
    bash -c "grep -q '^loss' $T/e1.out && [ \"\$(tail -1 $T/e1.out)\" = \"\$(tail -1 $T/e2.out)\" ] && grep -q '^tokens 2880 ' $T/e2.out"

# --- exact resume mid-epoch, across shards and an epoch boundary ---------------------------------------------
common="$tiny --val-every 10 --steps 60"
"$GPT2" train $common --train "$glob" --val "$glob" --out $T/A >$T/a.log 2>&1
"$GPT2" train $common --train "$glob" --val "$glob" --out $T/B --stop-after 25 >$T/b1.log 2>&1
"$GPT2" train --resume $T/B >$T/b2.log 2>&1
check "resumed glob run starts at step 25" grep -q "resumed $T/B at step 25" $T/b2.log
tail_losses() { losses "$1" | tail -"$2" >"$1.tail"; }
tail_losses $T/a.log 35
check "60 steps straight == 25 + resume + 35: same losses" same_losses 35 $T/a.log.tail $T/b2.log
check "... and the same parameters" cmp $T/A/model.safetensors $T/B/model.safetensors
# A shard past 65,536 windows keeps no order list (its order is computed from a key in the train state):
# resume is exact there too. T=1 makes 70,000 windows of 70,001 tokens (the fixture's, repeated).
perl -e 'open(my $h, "<:raw", $ARGV[0]) or die; local $/; my $d = <$h>; my $t = substr($d, 1024);
    my $n = 70001; my $all = ($t x (int($n / (length($t) / 2)) + 1)); open(my $o, ">:raw", $ARGV[1]) or die;
    print $o pack("l<3", 20240520, 1, $n) . ("\0" x 1012) . substr($all, 0, 2 * $n);' $TOK $T/large.bin
big="--vocab 1000 --layers 1 --heads 2 --channels 16 --seq-len 8 -B 4 -T 1 --lr 3e-3 --sample-tokens 0 --val '' --steps 40"
eval "\"$GPT2\" train $big --train $T/large.bin --out $T/L1" >$T/l1.log 2>&1
eval "\"$GPT2\" train $big --train $T/large.bin --out $T/L2 --stop-after 15" >/dev/null 2>&1
"$GPT2" train --resume $T/L2 >$T/l2.log 2>&1
tail_losses $T/l1.log 25
check "a 70,000-window shard (computed order): 40 straight == 15 + resume + 25" same_losses 25 $T/l1.log.tail $T/l2.log
check "... and the same parameters" cmp $T/L1/model.safetensors $T/L2/model.safetensors
check_error "resume refuses --no-shuffle on a shuffled run" "a resumed run keeps its shuffled data order" \
    "$GPT2" train --resume $T/B --no-shuffle

# --- a changed shard set is refused on resume ------------------------------------------------------------
"$GPT2" train $common --train "$glob" --val "$glob" --out $T/C --stop-after 5 >/dev/null 2>&1
cp $T/set/data_train_000001.bin $T/set/data_train_000003.bin
check_error "resume refuses an added shard" "training data changed .*trained on 3 shards, .* names 4" "$GPT2" train --resume $T/C
rm $T/set/data_train_000003.bin
mv $T/set/data_train_000002.bin $T/removed.bin
check_error "resume refuses a removed shard" "training data changed .*trained on 3 shards, .* names 2" "$GPT2" train --resume $T/C
mv $T/removed.bin $T/set/data_train_000002.bin
cp $T/set/data_train_000001.bin $T/keep.bin
printf '\x07\x00' | dd of=$T/set/data_train_000001.bin bs=1 seek=1500 conv=notrunc status=none
check_error "resume refuses a shard modified in place, naming it" \
    "training data changed ($T/C.*): $T/set/data_train_000001.bin holds other tokens than the run trained on" \
    "$GPT2" train --resume $T/C
cp $T/keep.bin $T/set/data_train_000001.bin
printf '\x01' | dd of=$T/set/data_train_000001.bin bs=1 seek=100 conv=notrunc status=none  # a reserved header byte
check_error "... and one whose header alone changed, by its fingerprint" "training data changed .*fingerprint to" \
    "$GPT2" train --resume $T/C
cp $T/keep.bin $T/set/data_train_000001.bin
check "... and resumes once the shards are back" "$GPT2" train --resume $T/C --stop-after 1
# A same-length edit inside a shard past 2 MiB (its fingerprint reads the first and last MiB): "data.content"
# holds every token, so the resume names the shard. 1,200,000 tokens of the fixture's, repeated.
perl -e 'open(my $h, "<:raw", $ARGV[0]) or die; local $/; my $d = <$h>; my $t = substr($d, 1024);
    my $n = 1200000; my $all = ($t x (int($n / (length($t) / 2)) + 1)); open(my $o, ">:raw", $ARGV[1]) or die;
    print $o pack("l<3", 20240520, 1, $n) . ("\0" x 1012) . substr($all, 0, 2 * $n);' $TOK $T/mid.bin
"$GPT2" train $tiny --train $T/mid.bin --val '' --steps 10 --stop-after 2 --out $T/M >/dev/null 2>&1
printf '\x07\x00' | dd of=$T/mid.bin bs=1 seek=$((1024 + 1200000)) conv=notrunc status=none
check_error "resume refuses a same-length edit in the middle of a 2.4 MB shard, naming it" \
    "training data changed ($T/M.*): $T/mid.bin holds other tokens than the run trained on" "$GPT2" train --resume $T/M

# --- bad shards are named; a glob matching nothing names the pattern --------------------------------------------
mkdir -p $T/bad && cp $T/set/*.bin $T/bad/
printf 'XXXX' | dd of=$T/bad/data_train_000001.bin bs=1 conv=notrunc status=none
check_error "a shard with a bad magic is named" "bad magic in token file ($T/bad/data_train_000001.bin)" \
    "$GPT2" train $tiny --train "$T/bad/*.bin" --steps 1
cp $T/set/data_train_000001.bin $T/bad/ && truncate -s 2000 $T/bad/data_train_000002.bin
check_error "a truncated shard is named" "token count mismatch in token file ($T/bad/data_train_000002.bin)" \
    "$GPT2" train $tiny --train "$T/bad/*.bin" --steps 1
slice $TOK $T/bad/data_train_000002.bin 0 40
check_error "a shard too small for one batch is named" "too few tokens in $T/bad/data_train_000002.bin" \
    "$GPT2" train $tiny --train "$T/bad/*.bin" --steps 1
check_error "a glob matching nothing is an error naming the pattern" "no file matches --train '$T/set/nothing_\*.bin'" \
    "$GPT2" train $tiny --train "$T/set/nothing_*.bin" --steps 1
check_error "so is a --val glob" "no file matches --val '$T/nothing_\*.bin'" \
    "$GPT2" train $tiny --train "$glob" --val "$T/nothing_*.bin" --steps 1

# --- a format 2 train state (one file, hashed whole, no shard order) still resumes exactly -------------------
# fnv64 FILE: format 2's data hash: FNV-1a over the file's tokens, in 32-bit halves so plain perl needs no
# big integers.
fnv64() {
    perl -e 'open(my $h, "<:raw", $ARGV[0]) or die; local $/; my $d = substr(<$h>, 1024);
        my ($hi, $lo) = (0x14650fb0, 0x739d0383);  # 1469598103934665603, the basis train_state.cpp has used since format 2
        for my $c (unpack("C*", $d)) { $lo ^= $c; my $l = $lo * 0x1b3;
            $hi = ($hi * 0x1b3 + $lo * 0x100 + ($l >> 32)) & 0xffffffff; $lo = $l & 0xffffffff; }
        printf("%08x%08x", $hi, $lo);' "$1"
}
one="$tiny --train $T/one.bin --val-every 0 --steps 30"
"$GPT2" train $one --out $T/D >$T/d.log 2>&1
"$GPT2" train $one --out $T/E --stop-after 12 >/dev/null 2>&1
st=$T/E/train_state.safetensors
# what format 2 wrote: no shard metadata, the whole-file hash under data.fnv1a
perl -e 'my ($f, $hash) = @ARGV; open(my $h, "+<:raw", $f) or die; local $/; my $d = <$h>;
    my $n = unpack("Q<", substr($d, 0, 8)); my $j = substr($d, 8, $n); my $rest = substr($d, 8 + $n);
    $j =~ s/\s+$//; $j =~ s/"gpt2\.cpp train state 3"/"gpt2.cpp train state 2"/ or die;
    $j =~ s/"data\.fingerprint":"\w+"/"data.fnv1a":"$hash"/ or die; $j =~ s/"data\.shards":"1",// or die;
    $j =~ s/"loader\.shard_pos":"0",//;
    $j .= " " x ((8 - length($j) % 8) % 8);
    seek($h, 0, 0); truncate($h, 0); print $h pack("Q<", length($j)) . $j . $rest;' $st "$(fnv64 $T/one.bin)"
st_empty $st loader.shard_order
cp -r $T/E $T/E2
"$GPT2" train --resume $T/E >$T/e.log 2>&1
tail_losses $T/d.log 18
check "a format 2 train state resumes at its step" grep -q "resumed $T/E at step 12" $T/e.log
check "... and continues bit for bit" \
    bash -c "same_losses 18 $T/d.log.tail $T/e.log && cmp $T/D/model.safetensors $T/E/model.safetensors"
printf '\x07\x00' | dd of=$T/one.bin bs=1 seek=3000 conv=notrunc status=none
check_error "... and still refuses its file changed in place" "training data changed .*hashes to" "$GPT2" train --resume $T/E2

summary
