#!/usr/bin/env bash
# cli_hellaswag.sh: `gpt2 eval --hellaswag` end to end without Python: the output lines, acc / acc_norm
# agreeing with the per-example scores file, the same scores whatever the batch size, the progress lines,
# and one-line errors naming the file and line for malformed input (not JSON, missing field, endings not 4
# strings, bad label, empty ctx, empty file), a candidate longer than the context and bad flags or
# tokenizer. The losses themselves are checked against PyTorch in ref_hellaswag.sh. Needs the tokenizer
# files (GPT2_DATA_DIR or data/gpt2).
source "$(dirname "$0")/lib.sh"
FIX=tests/fixtures/hellaswag/mini.jsonl
TOK=tests/fixtures/tokens_v1000.bin
need_tokenizer

# Random full-vocabulary models (0 training steps): context 96 fits every fixture candidate (the longest is
# 65 tokens), context 64 does not.
make_model() {
    "$GPT2" train --train $TOK --val "" --vocab 50257 --layers 1 --heads 2 --channels 16 --seq-len "$2" -T 16 \
        --steps 0 --sample-tokens 0 --out "$1" >/dev/null
}
make_model "$TEST_TMP/m96" 96
make_model "$TEST_TMP/m64" 64
M=$TEST_TMP/m96
hs() { "$GPT2" eval --model "$M" --tokenizer "$TOK_DIR" "$@"; }

hs --hellaswag $FIX --hellaswag-batch 4 --hellaswag-scores "$TEST_TMP/s4.jsonl" >"$TEST_TMP/out4" 2>"$TEST_TMP/err4"
check "eval --hellaswag exits 0" test $? -eq 0
check "prints the example count, acc and acc_norm" \
    grep -Pzq '^hellaswag 21 examples\nacc 0\.[0-9]{4} \([0-9]+/21\)\nacc_norm 0\.[0-9]{4} \([0-9]+/21\)\n$' "$TEST_TMP/out4"
check "the scores file has one line per example" test "$(wc -l <"$TEST_TMP/s4.jsonl")" -eq 21
# acc and acc_norm recounted from the per-example choices and labels
counts=$(perl -ne '/"label":(\d).*"pred":(\d),"pred_norm":(\d)/ or die; $a += $1 == $2; $n += $1 == $3;
    END { printf "acc %.4f (%d/21) acc_norm %.4f (%d/21)", $a / 21, $a, $n / 21, $n }' "$TEST_TMP/s4.jsonl")
check "acc and acc_norm count the choices in the scores file ($counts)" \
    test "$(tr '\n' ' ' <"$TEST_TMP/out4" | sed 's/^hellaswag 21 examples //; s/ $//')" = "$counts"
# each choice is the lowest loss of its example
check "pred and pred_norm are the lowest summed and mean losses" perl -ne '
    /"sum":\[([^\]]*)\],"mean":\[([^\]]*)\],"pred":(\d),"pred_norm":(\d)/ or die;
    my @s = split /,/, $1; my @m = split /,/, $2;
    for my $j (0..3) { exit 1 if $s[$j] < $s[$3] || $m[$j] < $m[$4] } $n++; END { $? = 1 if $n != 21 }' \
    "$TEST_TMP/s4.jsonl"
check "progress lines on stderr end at 21/21" grep -q '^hellaswag 21/21 | acc 0\.[0-9]* | acc_norm' "$TEST_TMP/err4"

# Padding and batching do not change any loss: batches of 1 (no padding across examples) and 5 (a partial
# last batch) give the scores of batches of 4 within 1e-6 of the largest loss.
same_scores() {
    perl -e 'open(A, $ARGV[0]) or die; open(B, $ARGV[1]) or die; my ($d, $mx, $n) = (0, 0, 0);
        while (my $a = <A>) { my $b = <B> // exit 1; $n++;
            my @x = $a =~ /(-?[\d.]+(?:e[-+]\d+)?)/g; my @y = $b =~ /(-?[\d.]+(?:e[-+]\d+)?)/g;
            exit 1 if @x != @y;
            for my $i (0..$#x) { $d = abs($x[$i] - $y[$i]) if abs($x[$i] - $y[$i]) > $d; $mx = abs($y[$i]) if abs($y[$i]) > $mx } }
        exit 1 if <B> || $n == 0; exit !($d <= 1e-6 * $mx)' "$1" "$2"
}
for per in 1 5; do
    hs --hellaswag $FIX --hellaswag-batch $per --hellaswag-scores "$TEST_TMP/s$per.jsonl" >/dev/null 2>&1
    check "--hellaswag-batch $per gives the scores of --hellaswag-batch 4" same_scores "$TEST_TMP/s$per.jsonl" "$TEST_TMP/s4.jsonl"
done
# CRLF line ends and blank lines read the same
sed '5a\\' $FIX | sed 's/$/\r/' >"$TEST_TMP/crlf.jsonl"
hs --hellaswag "$TEST_TMP/crlf.jsonl" --hellaswag-scores "$TEST_TMP/crlf_scores.jsonl" >"$TEST_TMP/crlf_out" 2>/dev/null
check "CRLF and a blank line: same acc lines" \
    bash -c "grep -q '^hellaswag 21 examples$' '$TEST_TMP/crlf_out' && diff '$TEST_TMP/crlf_out' '$TEST_TMP/out4'"
check "CRLF and a blank line: same scores (file line numbers count the blank line)" \
    same_scores <(sed 's/"line":\([0-9]*\)/"line":L/' "$TEST_TMP/crlf_scores.jsonl") <(sed 's/"line":\([0-9]*\)/"line":L/' "$TEST_TMP/s4.jsonl")

# Malformed input: one line `error:` naming the file and the line number.
ok_line='{"ctx": "A cat sits.", "endings": ["It purrs.", "It naps.", "It eats.", "It runs."], "label": 1}'
bad() {  # bad NAME PATTERN LINE: the file holds a good line, then LINE, then a good line
    printf '%s\n%s\n%s\n' "$ok_line" "$3" "$ok_line" >"$TEST_TMP/bad.jsonl"
    check_error "$1" "$2" hs --hellaswag "$TEST_TMP/bad.jsonl"
}
bad "a line that is not JSON" 'malformed JSON (.*bad.jsonl line 2): ' '{"ctx": "x", "endings": ['
bad "a line that is a JSON array" 'bad HellaSwag example (.*bad.jsonl line 2): expected a JSON object, got an array' '[1, 2]'
bad "missing endings" 'missing field (.*bad.jsonl line 2): expected "endings"' '{"ctx": "A dog.", "label": 0}'
bad "missing ctx" 'missing field (.*bad.jsonl line 2): expected "ctx"' '{"endings": ["a", "b", "c", "d"], "label": 0}'
bad "missing label" 'missing field (.*bad.jsonl line 2): expected "label"' '{"ctx": "A dog.", "endings": ["a", "b", "c", "d"]}'
bad "three endings" 'bad field "endings" (.*bad.jsonl line 2): expected 4 strings, got 3' '{"ctx": "A dog.", "endings": ["a", "b", "c"], "label": 0}'
bad "five endings" 'bad field "endings" (.*bad.jsonl line 2): expected 4 strings, got 5' '{"ctx": "A dog.", "endings": ["a", "b", "c", "d", "e"], "label": 0}'
bad "an ending that is a number" 'bad field "endings" (.*bad.jsonl line 2): expected 4 strings, got a number at index 2' '{"ctx": "A dog.", "endings": ["a", "b", 7, "d"], "label": 0}'
bad "endings that are a string" 'bad field "endings" (.*bad.jsonl line 2): expected an array of 4 strings, got a string' '{"ctx": "A dog.", "endings": "abcd", "label": 0}'
bad "ctx that is not a string" 'bad field "ctx" (.*bad.jsonl line 2): expected a string, got null' '{"ctx": null, "endings": ["a", "b", "c", "d"], "label": 0}'
bad "an empty ctx" 'bad field "ctx" (.*bad.jsonl line 2): expected text before the endings' '{"ctx": "", "endings": ["a", "b", "c", "d"], "label": 0}'
bad "label 4" 'bad field "label" (.*bad.jsonl line 2): expected 0..3, got 4' '{"ctx": "A dog.", "endings": ["a", "b", "c", "d"], "label": 4}'
bad "label -1" 'bad field "label" (.*bad.jsonl line 2): expected 0..3, got -1' '{"ctx": "A dog.", "endings": ["a", "b", "c", "d"], "label": -1}'
bad "label as a string" 'bad field "label" (.*bad.jsonl line 2): expected an integer 0..3, got a string' '{"ctx": "A dog.", "endings": ["a", "b", "c", "d"], "label": "1"}'
bad "label 1.5" 'bad field "label" (.*bad.jsonl line 2): expected a plain integer 0..3, got 1.5' '{"ctx": "A dog.", "endings": ["a", "b", "c", "d"], "label": 1.5}'
: >"$TEST_TMP/empty.jsonl"
check_error "an empty file" 'no examples in .*empty.jsonl' hs --hellaswag "$TEST_TMP/empty.jsonl"
printf '\n  \n\n' >"$TEST_TMP/blank.jsonl"
check_error "a file of blank lines" 'no examples in .*blank.jsonl' hs --hellaswag "$TEST_TMP/blank.jsonl"
check_error "a missing file" "cannot open .*nonexistent.jsonl" hs --hellaswag "$TEST_TMP/nonexistent.jsonl"
check_error "a directory" "not a regular file (.*)" hs --hellaswag "$TEST_TMP"

# The model, the tokenizer and the flags.
check_error "a candidate longer than the context" \
    'candidate too long (.*mini.jsonl line 4): ctx + ending 2 is 65 tokens, expected <= 64 (the model'"'"'s context)' \
    "$GPT2" eval --model "$TEST_TMP/m64" --tokenizer "$TOK_DIR" --hellaswag $FIX
check_error "a missing tokenizer directory" "tokenizer directory not found (.*no_tokenizer)" \
    "$GPT2" eval --model "$M" --tokenizer "$TEST_TMP/no_tokenizer" --hellaswag $FIX
check_error "the default tokenizer missing" "tokenizer directory not found (.*no_data/gpt2)" \
    env GPT2_DATA_DIR="$TEST_TMP/no_data" "$GPT2" eval --model "$M" --hellaswag $FIX
check_error "a model whose vocabulary is not the tokenizer's" "tokenizer and model disagree" \
    "$GPT2" eval --model tests/fixtures/ref_tiny/model --tokenizer "$TOK_DIR" --hellaswag $FIX
check_error "--data with --hellaswag" "conflicting flags (eval): --data and --hellaswag; expected one of them" hs --hellaswag $FIX --data $TOK
check_error "-T with --hellaswag" "conflicting flags (eval): --tokens" hs --hellaswag $FIX -T 16
check_error "--tokenizer without --hellaswag" "flag --tokenizer (eval) needs --hellaswag" hs --data $TOK -B 2 -T 16
check_error "--hellaswag-batch 0" "bad value for --hellaswag-batch (eval): expected 1.." hs --hellaswag $FIX --hellaswag-batch 0
check_error "--hellaswag-scores in a missing directory" "bad value for --hellaswag-scores (eval): directory .*nodir does not exist" \
    hs --hellaswag $FIX --hellaswag-scores "$TEST_TMP/nodir/s.jsonl"
# Ctrl-C while scoring: exit 130, one line saying so, no scores file
# 420 examples, scored for several seconds (five copies took 2.0-3.6 s on a loaded Zen 5: too close to the signal),
# not through hs(): the signal must reach gpt2, not a subshell
for _ in $(seq 20); do cat $FIX; done >"$TEST_TMP/many.jsonl"
"$GPT2" eval --model "$M" --tokenizer "$TOK_DIR" --hellaswag "$TEST_TMP/many.jsonl" \
    --hellaswag-scores "$TEST_TMP/int.jsonl" >/dev/null 2>"$TEST_TMP/int.err" &
pid=$!
sleep 0.5
kill -INT $pid
wait_bounded $pid 120
rc=$?
check "SIGINT during HellaSwag: exit 130, one line saying so, no scores file" \
    bash -c "test $rc = 130 && grep -qx 'interrupted by SIGINT: HellaSwag stopped before its end' '$TEST_TMP/int.err' &&
             test ! -e '$TEST_TMP/int.jsonl' && test -z \"\$(ls '$TEST_TMP' | grep 'int.jsonl.')\""

summary
