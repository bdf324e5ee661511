#!/usr/bin/env bash
# cli_generate.sh: generated text a reader can follow: the prompt before its continuation (or not, with
# --no-prompt), the prompt's ids with --ids-with-prompt, answers and samples set apart, and --ignore-eos
# going on past <|endoftext|> to exactly --max-tokens. A tiny model trained in seconds on a text of short
# documents, so that <|endoftext|> is what it predicts most.
source "$(dirname "$0")/lib.sh"
if [ ! -f "${GPT2_DATA_DIR:-data}/gpt2/encoder.json" ]; then
    skip "generate tests: no tokenizer files (set GPT2_DATA_DIR)"
    summary
    exit
fi
for i in $(seq 400); do printf 'the cat\n\nthe dog\n\n'; done >"$TEST_TMP/docs.txt"
"$GPT2" tokenize --split-on-blank-lines "$TEST_TMP/docs.txt" -o "$TEST_TMP/docs" --val-tokens 200 >/dev/null 2>&1
M=$TEST_TMP/m
"$GPT2" train --layers 1 --heads 2 --channels 32 --seq-len 32 -B 4 -T 32 --steps 60 --lr 1e-2 --warmup 0 \
    --train "$TEST_TMP/docs_train.bin" --val '' --sample-tokens 0 --out $M >/dev/null 2>&1 ||
    fail "training the tiny model"
G=("$GPT2" generate --model $M --temperature 0)

"${G[@]}" --prompt "the cat" --max-tokens 3 >"$TEST_TMP/echo" 2>/dev/null
check "the prompt's text comes first" test "$(head -c 7 "$TEST_TMP/echo")" = "the cat"
"${G[@]}" --prompt "the cat" --max-tokens 3 --no-prompt >"$TEST_TMP/noecho" 2>/dev/null
check "--no-prompt prints the continuation alone" test "the cat$(cat "$TEST_TMP/noecho")" = "$(cat "$TEST_TMP/echo")"
printf 'the cat' >"$TEST_TMP/prompt.txt"
want=$("$GPT2" tokenize --ids "$TEST_TMP/prompt.txt")
got=$("${G[@]}" --prompt "the cat" --max-tokens 3 --ids --ids-with-prompt 2>/dev/null)
new=$("${G[@]}" --prompt "the cat" --max-tokens 3 --ids 2>/dev/null)
check "--ids-with-prompt: the prompt's ids, then the new ones ($got)" test "$got" = "$want $new"
check_error "--ids-with-prompt without --ids" "needs --ids" "${G[@]}" --prompt x --ids-with-prompt
printf 'ab\0cd' >"$TEST_TMP/nul.txt"  # a NUL is a byte of text like any other: printed, not an end
"${G[@]}" --prompt-file "$TEST_TMP/nul.txt" --max-tokens 1 >"$TEST_TMP/nul.out" 2>/dev/null
check "a prompt holding a NUL byte is echoed whole (ab NUL cd)" \
    test "$(head -c 5 "$TEST_TMP/nul.out" | od -An -tx1 | tr -d ' \n')" = 6162006364
# The prompt's pass is timed apart from decoding and shown as a time, not a rate: a short prompt's pass is
# latency (and the process's first parallel work), so a rate of it reads as a slow decode.
"${G[@]}" --prompt "the cat" --max-tokens 3 --ignore-eos >/dev/null 2>"$TEST_TMP/speed"
check "the speed line: the prompt's tokens in ms, then the new tokens with their rate" \
    grep -Eqx 'prompt: 2 tokens in [0-9]+ ms; 3 new tokens, the last 2 decoded in [0-9]+\.[0-9]{3} s \([0-9]+\.[0-9] tok/s\)' "$TEST_TMP/speed"
check "... and no other line gives a rate" test "$(grep -c 'tok/s' "$TEST_TMP/speed")" = 1
# One new token comes from the prompt's pass alone: no decoding forward ran, so there is no rate to give.
"${G[@]}" --prompt "the cat" --max-tokens 1 --ignore-eos >/dev/null 2>"$TEST_TMP/speed1"
check "one new token: said to need no decoding pass, with no rate" \
    grep -Eqx 'prompt: 2 tokens in [0-9]+ ms; 1 new token, no decoding pass' "$TEST_TMP/speed1"

# <|endoftext|> follows every document: greedy decoding stops at it, unless --ignore-eos
n_stop=$("${G[@]}" --prompt "the" --max-tokens 40 --ids 2>/dev/null | wc -w)
"${G[@]}" --prompt "the" --max-tokens 40 --ids --ignore-eos >"$TEST_TMP/ign" 2>/dev/null
n_ign=$(wc -w <"$TEST_TMP/ign")
if [ "$n_stop" -lt 40 ] && [ "$n_ign" = 40 ] && grep -qw 50256 "$TEST_TMP/ign"; then
    pass "--ignore-eos goes past <|endoftext|> to --max-tokens ($n_stop tokens without it, $n_ign with)"
else fail "--ignore-eos goes past <|endoftext|> to --max-tokens ($n_stop without, $n_ign with)"; fi
"${G[@]}" --prompt "the" --max-tokens 40 --ignore-eos >"$TEST_TMP/ign_text" 2>/dev/null
check "... and its text shows <|endoftext|>" grep -q '<|endoftext|>' "$TEST_TMP/ign_text"

# several samples end with ---; each --interactive answer, off a terminal, with ===
"$GPT2" generate --model $M --prompt "the" --max-tokens 4 --num-samples 3 >"$TEST_TMP/samples" 2>/dev/null
check "3 samples, each ended by ---" test "$(grep -cx -- '---' "$TEST_TMP/samples")" = 3
printf 'the cat\nthe dog\n' | "${G[@]}" --interactive --max-tokens 4 >"$TEST_TMP/inter" 2>/dev/null
if [ "$(grep -cx '===' "$TEST_TMP/inter")" = 2 ] && head -1 "$TEST_TMP/inter" | grep -q '^the cat' &&
    sed -n '/^===$/{n;p;q}' "$TEST_TMP/inter" | grep -q '^the dog'; then
    pass "--interactive on a pipe: 2 answers, each starting with its prompt and ended by ==="
else fail "--interactive on a pipe: 2 answers, each starting with its prompt and ended by ==="; cat "$TEST_TMP/inter"; fi
# --- sampling's flags, as a red team found them: numbers as typed, ids out of range, prompts bounded ------
check_error "--temperature past its range shows the value as typed" "expected 0..1e+06, got 1000001$" \
    "${G[@]}" --prompt-ids 1 --temperature 1000001
check_error "--top-p just over 1: one range, the value as typed" "expected 0 < p <= 1, got 1.0000001$" \
    "${G[@]}" --prompt-ids 1 --top-p 1.0000001
check_error "... and 1.5 the same range" "expected 0 < p <= 1, got 1.5$" "${G[@]}" --prompt-ids 1 --top-p 1.5
check_error "--prompt-ids -1 is a token id out of range, not malformed" "token id -1 out of range (--prompt-ids): expected 0..50256" \
    "${G[@]}" --prompt-ids 5,-1
check_error "... and so is one past 2^30" "token id 1073741825 out of range (--prompt-ids): expected 0..50256" \
    "${G[@]}" --prompt-ids 1073741825
check_error "... and one past what a long holds" "token id 99999999999999999999 out of range" \
    "${G[@]}" --prompt-ids 99999999999999999999
check_error "... while '5x' is malformed" "malformed value for --prompt-ids" "${G[@]}" --prompt-ids 5x
# The model's context is 32 tokens, GPT-2's longest token 128 bytes: a longer text cannot fit.
head -c 5000 /dev/zero | tr '\0' a >"$TEST_TMP/long.txt"
check_error "--prompt-file longer than could fit the context is refused before it is tokenized" \
    "input too large ($TEST_TMP/long.txt): expected at most 4096 bytes" "${G[@]}" --prompt-file "$TEST_TMP/long.txt"
check_error "... and so is such a --prompt" "prompt too long (--prompt): more than 4096 bytes" \
    "${G[@]}" --prompt "$(cat "$TEST_TMP/long.txt")"
(yes the | head -40 | tr '\n' ' '; echo; echo the cat) | "${G[@]}" --interactive --max-tokens 1 >/dev/null 2>"$TEST_TMP/ierr"
check "--interactive names the line of a prompt with too many tokens" \
    grep -q "^error: prompt too long: [0-9]* tokens, .* (--interactive, line 1 skipped)" "$TEST_TMP/ierr"
# Speculative decoding: greedy output is the plain run's token for token, with the model's own int8 copy drafting,
# with the model itself and with another model (of the same vocabulary) that agrees with little; each sample says
# how many drafted tokens it kept.
"$GPT2" train --layers 1 --heads 2 --channels 32 --seq-len 16 -B 2 -T 16 --steps 2 --lr 1e-2 --warmup 0 \
    --train "$TEST_TMP/docs_train.bin" --val '' --sample-tokens 0 --out "$TEST_TMP/other" >/dev/null 2>&1 ||
    fail "training the other model"
for prompt in "the cat" "the dog the dog the"; do
    for n in 1 2 9 40; do
        plain=$("${G[@]}" --prompt "$prompt" --max-tokens $n --ids --ignore-eos 2>/dev/null)
        for draft in "--draft int8" "--draft int8 --draft-min 3 --draft-max 3" "--draft-model $M --draft-min 1" \
            "--draft-model $TEST_TMP/other" "--draft-model $TEST_TMP/other --draft-min 2"; do
            fast=$("${G[@]}" --prompt "$prompt" --max-tokens $n --ids --ignore-eos $draft 2>"$TEST_TMP/draft.err")
            check "greedy with ${draft/$TEST_TMP\//}, '$prompt', $n tokens: plain decoding's ($plain)" test "$fast" = "$plain"
        done
    done
done
check "... and the sample says how many drafted tokens it kept" \
    grep -Eqx 'draft: [0-9]+ of [0-9]+ drafted tokens kept \([0-9.]+%\) in [0-9]+ checks of [0-9.]+ tokens on average' \
    "$TEST_TMP/draft.err"
"${G[@]}" --prompt "the cat" --max-tokens 40 --ids --ignore-eos --draft-model $M --draft-min 1 2>"$TEST_TMP/self.err" \
    >/dev/null
kept=$(sed -n 's/^draft: \([0-9]*\) of \([0-9]*\) drafted.*/\1 \2/p' "$TEST_TMP/self.err")
check "a model drafting for itself has every draft kept ($kept)" test -n "$kept" -a "${kept% *}" -gt 0 -a "${kept% *}" = "${kept#* }"
a=$("${G[@]}" --prompt "the cat" --max-tokens 30 --ids --temperature 0.9 --seed 5 --draft int8 2>/dev/null)
b=$("${G[@]}" --prompt "the cat" --max-tokens 30 --ids --temperature 0.9 --seed 5 --draft int8 2>/dev/null)
check "sampling with a draft: the same seed, the same tokens" test -n "$a" -a "$a" = "$b"
check_error "--draft takes int8 alone" "bad value for --draft (generate): expected int8" "${G[@]}" --draft fp32
check_error "--draft int8 with --precision int8" "conflicting flags (generate): --draft int8" \
    "${G[@]}" --draft int8 --precision int8
check_error "--draft with --draft-model" "conflicting flags (generate): give one of --draft" \
    "${G[@]}" --draft int8 --draft-model $M
check_error "--draft-model that is not there" "$TEST_TMP/none" "${G[@]}" --draft-model "$TEST_TMP/none"
"${G[@]}" --prompt "the cat" --max-tokens 5 --draft int8 --draft-max 3 2>"$TEST_TMP/max.err" >/dev/null
check "the draft's first line gives --draft-max" grep -q "^draft: the model's own int8 copy (q8_0), up to 3 tokens a check" \
    "$TEST_TMP/max.err"
check_error "--draft-max without a draft" "flag --draft-max (generate) needs --draft int8 or --draft-model" \
    "$GPT2" generate --model "$TEST_TMP/none" --draft-max 4
check_error "--draft-max past 8" "bad value for --draft-max" "$GPT2" generate --model "$TEST_TMP/none" --draft int8 \
    --draft-max 9
check_error "--draft-min above --draft-max" "--draft-min 5 is more than --draft-max 4" \
    "$GPT2" generate --model "$TEST_TMP/none" --draft int8 --draft-min 5 --draft-max 4
check_error "--draft int8 with --precision int8 is refused before any model is read" \
    "conflicting flags (generate): --draft int8" "$GPT2" generate --model "$TEST_TMP/none" --draft int8 --precision int8
check_error "... and so is --draft with --draft-model" "give one of --draft" \
    "$GPT2" generate --model "$TEST_TMP/none" --draft int8 --draft-model "$TEST_TMP/none"
# a prompt longer than the draft's context (16) leaves it nothing to draft: plain decoding, and the line says so
prompt20=$(yes the | head -20 | tr '\n' ' ')
plain=$("${G[@]}" --prompt "$prompt20" --max-tokens 5 --ids --ignore-eos 2>/dev/null)
fast=$("${G[@]}" --prompt "$prompt20" --max-tokens 5 --ids --ignore-eos --draft-model "$TEST_TMP/other" 2>"$TEST_TMP/none.err")
check "a prompt past the draft's context: plain decoding's tokens" test -n "$plain" -a "$fast" = "$plain"
check "... and the line says that no token was drafted" grep -q "^draft: no token drafted" "$TEST_TMP/none.err"
check_error "--draft-model of another vocabulary" "has a vocabulary of 1000 tokens, expected the model's 50257" \
    "${G[@]}" --draft-model tests/fixtures/trained_tiny
summary
