#!/usr/bin/env bash
# cli_plot.sh: `gpt2 plot` draws several runs' --log files on one PNG: two tiny runs trained here and
# hand-written logs (train points only, val points only), checked by decoding the PNG (perl's
# Compress::Zlib) and counting each run's colour; --x tokens, --smooth, --log-y and two identical runs, by
# where and in which colour their curves are drawn; then every bad input ends in one error line and leaves
# no PNG, and an existing PNG untouched.
source "$(dirname "$0")/lib.sh"
TOK=tests/fixtures/tokens_v1000.bin
T=$TEST_TMP
tiny="--train $TOK --val $TOK --vocab 1000 --layers 2 --heads 2 --channels 32 --seq-len 32 -B 4 -T 16 --val-every 5 --sample-tokens 0 --steps 10"

# png_size FILE: "WIDTHxHEIGHT" from a PNG's IHDR (empty when FILE is not a PNG).
png_size() {
    perl -e 'open(my $h, "<:raw", $ARGV[0]) or exit; local $/; my $d = <$h>;
        substr($d, 0, 16) eq "\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR" or exit;
        my ($w, $h2) = unpack("NN", substr($d, 16, 8)); print "${w}x$h2";' "$1"
}
# png_scan FILE R G B [YMIN]: "COUNT XMIN XMAX" of the pixels of exactly that colour in an 8-bit RGB PNG
# (all five row filters undone), in rows YMIN and below (default 0: all).
png_scan() {
    perl -MCompress::Zlib -e 'my ($f, $r, $g, $b, $ymin) = @ARGV; $ymin //= 0;
        open(my $h, "<:raw", $f) or die; local $/; my $d = <$h>;
        my ($w, $hh, $depth, $type) = unpack("NNCC", substr($d, 16, 10));
        die "not 8-bit RGB\n" unless $depth == 8 && $type == 2;
        my ($pos, $z) = (8, "");
        while ($pos < length($d)) {
            my ($n, $t) = unpack("Na4", substr($d, $pos, 8));
            $z .= substr($d, $pos + 8, $n) if $t eq "IDAT"; $pos += 12 + $n;
        }
        my $raw = uncompress($z); die "bad zlib data\n" unless defined $raw;
        my ($stride, $count, $x0, $x1, @prev) = ($w * 3, 0, -1, -1, (0) x ($w * 3));
        for my $y (0 .. $hh - 1) {
            my $filter = ord(substr($raw, $y * ($stride + 1), 1));
            my @cur = unpack("C*", substr($raw, $y * ($stride + 1) + 1, $stride));
            for my $i (0 .. $stride - 1) {
                my $a = $i >= 3 ? $cur[$i - 3] : 0; my $b = $prev[$i]; my $c = $i >= 3 ? $prev[$i - 3] : 0;
                my $p;
                if ($filter == 0) { $p = 0 } elsif ($filter == 1) { $p = $a } elsif ($filter == 2) { $p = $b }
                elsif ($filter == 3) { $p = int(($a + $b) / 2) }
                else { my $e = $a + $b - $c; my ($pa, $pb, $pc) = (abs($e - $a), abs($e - $b), abs($e - $c));
                       $p = ($pa <= $pb && $pa <= $pc) ? $a : ($pb <= $pc ? $b : $c); }
                $cur[$i] = ($cur[$i] + $p) & 255;
            }
            for (my $i = 0; $y >= $ymin && $i < $stride; $i += 3) {
                next unless $cur[$i] == $r && $cur[$i + 1] == $g && $cur[$i + 2] == $b;
                my $x = $i / 3; $count++;
                $x0 = $x if $x0 < 0 || $x < $x0; $x1 = $x if $x > $x1;
            }
            @prev = @cur;
        }
        print "$count $x0 $x1";' "$@"
}
# png_count FILE R G B: pixels of exactly that colour.
png_count() { png_scan "$@" | cut -d" " -f1; }
# at_least N FILE R G B: FILE has at least N pixels of colour R G B.
at_least() { local n=$1; shift; test "$(png_count "$@")" -ge "$n"; }
none_of() { shift; test "$(png_count "$@")" -eq 0; }
if ! perl -MCompress::Zlib -e 1 2>/dev/null; then  # full perl, not only perl-base
    fail "perl's Compress::Zlib not found: install perl (bash scripts/install_deps.sh test)"; summary; exit
fi
BLUE="31 119 180" ORANGE="230 97 1" GREEN="40 150 40"  # kPlotPalette[0..2] (the single-run train, val)

# --- two tiny runs trained here, plotted together ------------------------------------------------------------
"$GPT2" train $tiny --lr 3e-3 --log $T/fast.jsonl >/dev/null 2>&1
"$GPT2" train $tiny --lr 3e-4 --log $T/slow.jsonl >/dev/null 2>&1
check "the two runs wrote logs with train and val points" \
    test "$(grep -c '"loss"' $T/fast.jsonl) $(grep -c '"val_loss"' $T/slow.jsonl)" = "10 2"
check "plot two runs" "$GPT2" plot --out $T/cmp.png $T/fast.jsonl $T/slow.jsonl
check "... prints what it wrote" bash -c "'$GPT2' plot --out $T/cmp2.png $T/fast.jsonl $T/slow.jsonl | grep -qx 'wrote $T/cmp2.png (800x500, 2 runs, 24 points)'"
check "... a PNG of 800x500" test "$(png_size $T/cmp.png)" = 800x500
check "... run 1 in blue" at_least 500 $T/cmp.png $BLUE
check "... run 2 in orange" at_least 500 $T/cmp.png $ORANGE
check "... no third colour" none_of x $T/cmp.png $GREEN
check "... no temporary left beside it" test "$(ls $T | grep -c '\.tmp\.')" -eq 0
"$GPT2" plot --out $T/one.png --labels fp32 $T/fast.jsonl >/dev/null
check "one run keeps the trainer's colours: train blue" at_least 500 $T/one.png $BLUE
check "... val orange" at_least 100 $T/one.png $ORANGE
check "--width and --height size the image" "$GPT2" plot --width 400 --height 250 --out $T/small.png $T/fast.jsonl $T/slow.jsonl
check "... to 400x250" test "$(png_size $T/small.png)" = 400x250

# --- hand-written logs: train points only, val points only, a third run -----------------------------------------
printf '{"step":1,"loss":6.0}\n{"step":2,"loss":5.0}\n{"step":3,"loss":4.5}\n{"step":4,"loss":4.2}\n' >$T/train_only.jsonl
printf '{"step":2,"val_loss":5.5}\n\n{"step":4,"val_loss":4.8}\n' >$T/val_only.jsonl
printf '{"step":1,"loss":5.0}\n{"step":4,"loss":3.0}\n' >$T/train_only2.jsonl
check "two logs with train points only" "$GPT2" plot --out $T/trains.png $T/train_only.jsonl $T/train_only2.jsonl
check "... the first run in blue" at_least 200 $T/trains.png $BLUE
check "... the second in orange, not in the single run's train blue" at_least 200 $T/trains.png $ORANGE
check "a log with only train points and one with only val points plot" \
    "$GPT2" plot --out $T/hand.png --labels a,b,c $T/train_only.jsonl $T/val_only.jsonl $T/fast.jsonl
check "... run a (train only) in blue" at_least 200 $T/hand.png $BLUE
check "... run b (val only) in orange" at_least 200 $T/hand.png $ORANGE
check "... run c in green" at_least 200 $T/hand.png $GREEN
check "plot --help lists --labels" bash -c "'$GPT2' plot --help | grep -q -- '--labels'"
check "gpt2 --help lists plot" bash -c "'$GPT2' --help | grep -q '^  plot '"

# --- as loss plots are read: smoothed, on a log scale, against tokens, identical runs both visible ---------------
"$GPT2" train ${tiny/-B 4/-B 2} --lr 3e-3 --log $T/half.jsonl >/dev/null 2>&1  # half the tokens per step
FAINT_BLUE="187 214 232"  # BLUE mixed with 70% white: a smoothed run's raw curve
# xspan FILE R G B: the width in pixels of that colour's curves, below the legend of two runs.
xspan() { png_scan "$@" 62 | awk '{ print $3 - $2 }'; }
# ratio A B: A / B to two decimals.
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
check "--x tokens" "$GPT2" plot --x tokens --out $T/tokens.png $T/fast.jsonl $T/half.jsonl
r=$(ratio "$(xspan $T/tokens.png $ORANGE)" "$(xspan $T/tokens.png $BLUE)")
check "... a run of half the tokens per step spans half the width ($r)" awk -v r=$r 'BEGIN { exit !(r >= 0.47 && r <= 0.53) }'
"$GPT2" plot --out $T/steps.png $T/fast.jsonl $T/half.jsonl >/dev/null
r=$(ratio "$(xspan $T/steps.png $ORANGE)" "$(xspan $T/steps.png $BLUE)")
check "... against the step, the same width ($r)" awk -v r=$r 'BEGIN { exit !(r >= 0.97 && r <= 1.03) }'
check "... the x axis is named tokens" bash -c "'$GPT2' plot --help | grep -q -- '--x X .*tokens'"
check "--smooth 0.9" "$GPT2" plot --smooth 0.9 --out $T/smooth.png $T/fast.jsonl
check "... draws the raw train curve faint under the smoothed one" at_least 200 $T/smooth.png $FAINT_BLUE
check "... which stays in the train colour" at_least 200 $T/smooth.png $BLUE
check "without --smooth there is no faint curve" none_of x $T/one.png $FAINT_BLUE
printf '{"step":1,"loss":100}\n{"step":2,"loss":10}\n{"step":3,"loss":1}\n' >$T/decades.jsonl
check "--log-y" bash -c "'$GPT2' plot --log-y --out $T/log.png $T/decades.jsonl | grep -q '^wrote $T/log.png'"
check "two identical runs" "$GPT2" plot --labels fp32,bf16 --out $T/same.png $T/fast.jsonl $T/fast.jsonl
check "... the first still shows along its curves, under the second's gaps" \
    test "$(png_count $T/same.png $BLUE 62)" -ge 300 -a "$(png_count $T/same.png $ORANGE 62)" -ge 300

# --- bad input: one error line, no PNG, an existing PNG untouched -----------------------------------------------
printf '{"step":1,"loss":6.0}\n{"step":2,"loss":5.0}\nstep 3 loss 4.0\n' >$T/notjson.jsonl
printf '{"step":1,"loss":6.0}\n{"step":2,"lr":1e-3}\n' >$T/nofield.jsonl
printf '{"loss":6.0}\n' >$T/nostep.jsonl
printf '{"step":1,"loss":"6.0"}\n' >$T/strloss.jsonl
printf '{"step":1.5,"loss":6.0}\n' >$T/fracstep.jsonl
printf '[1, 2]\n' >$T/array.jsonl
: >$T/empty.jsonl
printf '\n  \n' >$T/blank.jsonl
mkdir -p $T/r1 $T/r2 && cp $T/fast.jsonl $T/r1/log.jsonl && cp $T/slow.jsonl $T/r2/log.jsonl
echo "my notes" >$T/notes.txt
bad() {  # bad NAME PATTERN ARGS...: plot fails with an error matching PATTERN and writes no $T/bad.png
    local name=$1 pattern=$2; shift 2
    check_error "$name" "$pattern" "$GPT2" plot --out $T/bad.png "$@"
    check "... and writes no PNG" test ! -e $T/bad.png
    rm -f $T/bad.png
}
bad "a missing log" "cannot open $T/nope.jsonl" $T/fast.jsonl $T/nope.jsonl
bad "a line that is not JSON names the file and line" "malformed JSON ($T/notjson.jsonl line 3)" $T/fast.jsonl $T/notjson.jsonl
bad "a line without loss or val_loss" "missing field ($T/nofield.jsonl line 2): expected \"loss\" or \"val_loss\"" $T/nofield.jsonl
bad "a line without step" "missing field ($T/nostep.jsonl line 1): expected \"step\"" $T/nostep.jsonl
bad "a loss that is a string" "bad field \"loss\" ($T/strloss.jsonl line 1): expected a number, got a string" $T/strloss.jsonl
bad "a fractional step" "bad field \"step\" ($T/fracstep.jsonl line 1): expected an integer" $T/fracstep.jsonl
bad "a line that is not an object" "bad log line ($T/array.jsonl line 1): expected a JSON object, got an array" $T/array.jsonl
bad "an empty log" "no loss points in $T/empty.jsonl" $T/fast.jsonl $T/empty.jsonl
bad "a log of blank lines" "no loss points in $T/blank.jsonl" $T/blank.jsonl
bad "a directory as a log" "not a regular file ($T/r1)" $T/r1
bad "no log at all" "missing log file (plot)"
bad "labels not one per log" "expected 2 comma-separated labels, one per log, got 3" --labels a,b,c $T/fast.jsonl $T/slow.jsonl
bad "an empty label" "label 2 is empty" --labels a, $T/fast.jsonl $T/slow.jsonl
bad "two logs with the same name" "two runs are labelled 'log'" $T/r1/log.jsonl $T/r2/log.jsonl
bad "more runs than colours" "too many logs (plot): expected at most 8, got 9" $(for i in 1 2 3 4 5 6 7 8 9; do echo $T/fast.jsonl; done)
printf '{"step":1,"loss":0.5}\n{"step":2,"loss":0}\n' >$T/zero.jsonl
printf '{"step":1,"loss":5,"tokens":-3}\n' >$T/negtokens.jsonl
bad "--x tokens on a log without tokens names its first such line" \
    "missing field \"tokens\" ($T/train_only.jsonl line 1): expected the tokens trained on, for --x tokens" \
    --x tokens $T/fast.jsonl $T/train_only.jsonl
bad "tokens below 0" "bad field \"tokens\" ($T/negtokens.jsonl line 1): expected an integer >= 0" $T/negtokens.jsonl
bad "an x axis that is neither step nor tokens" "bad value for --x (plot): expected step or tokens, got 'epochs'" --x epochs $T/fast.jsonl
bad "--smooth of 1" "bad value for --smooth (plot)" --smooth 1 $T/fast.jsonl
bad "--log-y with a loss of 0" "bad loss for --log-y ($T/zero.jsonl, step 2): expected a loss above 0" --log-y $T/zero.jsonl
bad "a width out of range" "bad value for --width (plot)" --width 50 $T/fast.jsonl
check_error "--out missing" "missing flag --out" "$GPT2" plot $T/fast.jsonl
check "--out in a missing directory makes it, as train --out does" "$GPT2" plot --out $T/runs/cmp.png $T/fast.jsonl
check "... and the PNG is in it" test -s $T/runs/cmp.png
check_error "--out in missing directories, with a bad log" "malformed JSON" "$GPT2" plot --out $T/nodir/sub/p.png $T/fast.jsonl $T/notjson.jsonl
check "... leaves none of the directories it made" test ! -e $T/nodir
check_error "--out under a file" "$T/notes.txt" "$GPT2" plot --out $T/notes.txt/p.png $T/fast.jsonl
check_error "--out over a file that is not a PNG" "$T/notes.txt exists and is not a PNG" "$GPT2" plot --out $T/notes.txt $T/fast.jsonl
check "... which is untouched" test "$(cat $T/notes.txt)" = "my notes"
check_error "--out over a log given as input" "exists and is not a PNG" "$GPT2" plot --out $T/fast.jsonl $T/fast.jsonl
cp $T/cmp.png $T/keep.png
check_error "a bad log after a good one" "malformed JSON" "$GPT2" plot --out $T/keep.png $T/fast.jsonl $T/notjson.jsonl
check "... leaves the existing PNG untouched" cmp $T/cmp.png $T/keep.png
check "... and no temporary beside it" test "$(ls $T | grep -c '\.tmp\.')" -eq 0

# A signal ends plot at once (it has no step to finish): what it made for --out goes, the directories too.
"$GPT2" plot --width 16384 --height 16384 --out $T/sig/a/x.png $T/fast.jsonl >$T/sig.log 2>&1 &
pid=$!
for _ in $(seq 100); do [ -e $T/sig/a/x.png.lock ] && break; sleep 0.05; done
sleep 0.2
kill -INT $pid
wait_bounded $pid 60
rc=$?
check "SIGINT during a plot: exit 130 (exit $rc), and no directory it made for --out is left ($(ls -R $T/sig 2>&1 | head -3 | tr '\n' ' '))" \
    test $rc = 130 -a ! -e $T/sig
summary
