#!/usr/bin/env bash
# cli_instruct.sh: instruction data end to end: tokenize --instructions's three JSONL shapes (the exact ids and
# loss mask of each template), the mask file's header, packing into -T windows, every error a bad line or flag
# gets, the loader's checks of a mask against its token file, and train/eval with and without masks
# (--loss-on all equals the same files without masks, bit for bit). Needs "$GPT2" and the tokenizer files
# (GPT2_DATA_DIR or data/gpt2); no Python.
source "$(dirname "$0")/lib.sh"

FIX=tests/fixtures/instruct
need_tokenizer
T=$TEST_TMP
EOT=50256

# tokens_of FILE, mask_of FILE: a token file's ids, a mask's bytes, space-separated on one line.
tokens_of() { od -An -v -t u2 -j 1024 "$1" | tr -s ' \n' ' ' | sed 's/^ //; s/ $//'; }
mask_of() { od -An -v -t u1 -j 1024 "$1" | tr -s ' \n' ' ' | sed 's/^ //; s/ $//'; }
# ids TEXT: the ids of TEXT encoded on its own (tokenize --ids of a raw file: no <|endoftext|>).
ids() { printf '%s' "$1" >"$T/seg.txt" && "$GPT2" tokenize --ids "$T/seg.txt"; }
# repeat N X: X N times, space-separated.
repeat() { local i out=""; for ((i = 0; i < $1; i++)); do out+="$2 "; done; echo "${out% }"; }
# seg SCORED TEXT: appends TEXT's ids to WANT_TOK and SCORED (0 or 1) per id to WANT_MASK.
seg() {
    local s
    s=$(ids "$2")
    WANT_TOK+=" $s"
    WANT_MASK+=" $(repeat "$(wc -w <<<"$s")" "$1")"
}
# expect_train NAME JSONL_LINE -T N: tokenizes the line (a second, val line follows) and checks the train
# file and its mask against WANT_TOK/WANT_MASK, closed by the scored <|endoftext|>, padded to N, plus the
# file's last token.
expect_train() {
    local name=$1 line=$2 n=$3
    printf '%s\n{"prompt": "v", "completion": "w"}\n' "$line" >"$T/one.jsonl"
    "$GPT2" tokenize --instructions -T "$n" --val-examples 1 -o "$T/one/x" "$T/one.jsonl" >/dev/null 2>"$T/pack.err" || return 1
    local tok mask count
    tok="$EOT $(echo $WANT_TOK) $EOT"
    mask="0 $(echo $WANT_MASK) 1"
    count=$(wc -w <<<"$tok")
    tok+=" $(repeat $((n - count + 1)) $EOT)"
    mask+=" $(repeat $((n - count + 1)) 0)"
    [ "$(tokens_of "$T/one/x_train.bin")" = "$tok" ] || { echo "tokens: $(tokens_of "$T/one/x_train.bin")"; echo "wanted: $tok"; return 1; }
    [ "$(mask_of "$T/one/x_train.mask")" = "$mask" ] || { echo "mask: $(mask_of "$T/one/x_train.mask")"; echo "wanted: $mask"; return 1; }
}

WANT_TOK="" WANT_MASK=""
seg 0 "What is 2+2?"
seg 1 " 4."
check "prompt/completion: the prompt unscored, the completion and <|endoftext|> scored" \
    expect_train pc '{"prompt": "What is 2+2?", "completion": " 4."}' 32

WANT_TOK="" WANT_MASK=""
seg 0 $'Below is an instruction that describes a task, paired with an input that provides further context. Write a response that appropriately completes the request.\n\n### Instruction:\nAdd them.\n\n### Input:\n1 and 2\n\n### Response:'
seg 1 "3"
check "Alpaca with input: Stanford's template with ### Input:, the output scored" \
    expect_train alpaca '{"instruction": "Add them.", "input": "1 and 2", "output": "3"}' 64

WANT_TOK="" WANT_MASK=""
seg 0 $'Below is an instruction that describes a task. Write a response that appropriately completes the request.\n\n### Instruction:\nSay hi.\n\n### Response:'
seg 1 "Hi!"
check "Alpaca without input (empty or absent): the template without ### Input:" \
    expect_train alpaca0 '{"instruction": "Say hi.", "input": "", "output": "Hi!"}' 64
check "... the same with no \"input\" key" \
    expect_train alpaca1 '{"instruction": "Say hi.", "output": "Hi!"}' 64

WANT_TOK="" WANT_MASK=""
seg 0 $'System: Be brief.\n'
seg 0 $'User: Hello\n'
seg 0 "Assistant:"
seg 1 $' Hi.\n'
seg 0 $'User: Bye\n'
seg 0 "Assistant:"
seg 1 " Bye."
check "chat: System:/User:/Assistant: lines, the assistant's content scored, <|endoftext|> in place of its last newline" \
    expect_train chat '{"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hello"}, {"role": "assistant", "content": "Hi."}, {"role": "user", "content": "Bye"}, {"role": "assistant", "content": "Bye."}], "id": 7}' 64

# The mask's header: magic, version, count, the token file's fingerprint (two ints), -T; then a byte per token.
mask_header() {
    local m=$T/one/x_train.mask n
    n=$(($(wc -c <"$T/one/x_train.bin") / 2 - 512))
    read -r magic version count _ _ t <<<"$(od -An -t d4 -N 24 "$m" | tr -s ' \n' ' ')"
    echo "header: $magic $version $count T=$t, $n tokens, $(wc -c <"$m") bytes"
    [ "$magic $version $count $t" = "20261126 1 $n 64" ] && [ "$(wc -c <"$m")" -eq $((1024 + n)) ]
}
check "the mask file: magic 20261126, version 1, the token count, -T, one byte per token" mask_header
check "the token file beside it is llm.c's, unchanged (magic 20240520, version 1)" \
    bash -c "[ \"\$(od -An -t d4 -N 8 '$T/one/x_train.bin' | tr -s ' ')\" = ' 20240520 1' ]"

# Packing the fixture set: every window starts with an unscored <|endoftext|>, no example is split, the
# utilisation is reported, and the mask's scored count is the one reported.
pack_fixture() {
    "$GPT2" tokenize --instructions -T 128 -o "$T/fx/ft" $FIX/*.jsonl >"$T/pack.out" 2>"$T/pack.err" || return 1
    cat "$T/pack.out" "$T/pack.err"
    grep -q "tokenized 60 examples (20 prompt/completion, 20 Alpaca, 20 chat): 6 val" "$T/pack.out" || return 1
    grep -q "^packed train: 54 examples into [0-9]* windows of -T 128: [0-9]* of [0-9]* tokens used ([0-9.]*%), [0-9]* scored" "$T/pack.err" || return 1
    ! grep -q split "$T/pack.err" || return 1
    local part tok mask scored
    for part in val train; do
        read -r -a tok <<<"$(tokens_of "$T/fx/ft_$part.bin")"
        read -r -a mask <<<"$(mask_of "$T/fx/ft_$part.mask")"
        [ $(((${#tok[@]} - 1) % 128)) -eq 0 ] || { echo "$part: ${#tok[@]} tokens, not windows of 128 + 1"; return 1; }
        for ((i = 0; i < ${#tok[@]}; i += 128)); do
            [ "${tok[i]}" = $EOT ] && [ "${mask[i]}" = 0 ] || { echo "$part: window start $i is ${tok[i]}/${mask[i]}"; return 1; }
        done
        scored=$(tr ' ' '\n' <<<"${mask[*]}" | grep -c 1)
        grep -q "^packed $part: .* $scored scored" "$T/pack.err" || { echo "$part: $scored scored in the mask"; return 1; }
    done
}
check "packing the fixture set into -T 128 windows: whole examples, each window led by an unscored <|endoftext|>" pack_fixture
utilisation=$(grep -o "^packed train: .*" "$T/pack.err")
echo "    ($utilisation)"

# An example longer than T tokens is split across windows, and said so; its tokens stay in order.
long_split() {
    printf '{"prompt": "%s", "completion": " yes"}\n{"prompt": "a", "completion": "b"}\n{"prompt": "c", "completion": "d"}\n' \
        "$(repeat 40 word)" >"$T/long.jsonl"
    "$GPT2" tokenize --instructions -T 16 --val-examples 1 -o "$T/long/x" "$T/long.jsonl" >/dev/null 2>"$T/long.err" || return 1
    cat "$T/long.err"
    grep -q "^packed train: 2 examples .*; 1 longer than 16 tokens split across windows" "$T/long.err" || return 1
    WANT_TOK="" WANT_MASK=""
    seg 0 "$(repeat 40 word)"
    tokens_of "$T/long/x_train.bin" | grep -q -- "$EOT $(echo $WANT_TOK) $(ids " yes") $EOT"
}
check "an example longer than -T is split across windows, in order, and reported" long_split
# An example of exactly T tokens fills one window's T targets: its closing <|endoftext|> (scored) is the next
# window's first token. It is not split, and no window of padding follows it (red team D5).
exact_window() {
    printf '{"prompt": "%s", "completion": " y"}\n' "$(repeat 13 x)" "$(repeat 14 x)" "$(repeat 12 x)" >"$T/exact.jsonl"
    "$GPT2" tokenize --instructions -T 16 --val-examples 1 -o "$T/exact/x" "$T/exact.jsonl" >/dev/null 2>"$T/exact.err" || return 1
    cat "$T/exact.err"
    grep -q "^packed train: 2 examples into 2 windows of -T 16: 31 of 32 tokens used" "$T/exact.err" || return 1
    ! grep -q split "$T/exact.err" || return 1
    local x13 x14 y
    x13=$(ids "$(repeat 13 x)") x14=$(ids "$(repeat 14 x)") y=$(ids " y")
    [ "$(tokens_of "$T/exact/x_train.bin")" = "$(echo $EOT $x13 $y $EOT $EOT $x14 $y $EOT)" ] || return 1
    [ "$(mask_of "$T/exact/x_train.mask")" = "$(echo 0 $(repeat 13 0) 1 1 0 $(repeat 14 0) 1 1)" ]
}
check "an example of exactly -T tokens takes one window: not split, no padding window after it" exact_window

# Val is spread over the examples in input order: every (examples / N)-th, so with several files it is not all the
# last one's.
val_spread() {
    printf '{"prompt": "q", "completion": " %s"}\n' red green blue >"$T/s1.jsonl"
    printf '{"prompt": "q", "completion": " %s"}\n' cat dog cow >"$T/s2.jsonl"
    printf '{"prompt": "q", "completion": " %s"}\n' one two three >"$T/s3.jsonl"
    "$GPT2" tokenize --instructions -T 16 --val-examples 3 -o "$T/s/x" "$T/s1.jsonl" "$T/s2.jsonl" "$T/s3.jsonl" >/dev/null 2>&1 || return 1
    local val train w
    val=" $(tokens_of "$T/s/x_val.bin") " train=" $(tokens_of "$T/s/x_train.bin") "
    for w in blue cow three; do
        grep -q -- " $(ids " $w") $EOT " <<<"$val" || { echo "val lacks $w: $val"; return 1; }
    done
    for w in red green cat dog one two; do
        grep -q -- " $(ids " $w") $EOT " <<<"$train" || { echo "train lacks $w: $train"; return 1; }
    done
}
check "--val-examples 3 of 9 examples in 3 files: val is every third (blue, cow, three), train the rest" val_spread
# The help says what the split does, no more: every (examples / N)-th example in input order, which can miss a
# file shorter than that stride, not "every input's shapes" (red team D4).
val_help() {
    "$GPT2" tokenize --help >"$T/help.out" 2>&1 || return 1
    grep -q "spread evenly over the examples in input order" "$T/help.out" || return 1
    grep -q "may have none in val" "$T/help.out" || return 1
    ! grep -q "spread evenly over the inputs" "$T/help.out" && ! grep -rq "every input.*shapes" src
}
check "tokenize --help: val is every (examples / N)-th example in input order; a short input may have none" val_help

# Outputs are checked and published together: a user's file at one of the four paths stops the run before any
# is written, so no token file is ever left without its mask.
mkdir -p "$T/u"
echo "my notes" >"$T/u/x_train.mask"
printf '{"prompt": "a", "completion": "b"}\n{"prompt": "c", "completion": "d"}\n' >"$T/two.jsonl"
check_error "a user's file at X_train.mask is not replaced" "bad value for --output (tokenize): $T/u/x_train.mask exists and is not a loss mask" \
    "$GPT2" tokenize --instructions -o "$T/u/x" "$T/two.jsonl"
check "... and nothing else was written (no val pair, no train.bin without its mask)" \
    bash -c "[ \"\$(ls '$T/u')\" = x_train.mask ] && [ \"\$(cat '$T/u/x_train.mask')\" = 'my notes' ]"

# Ctrl-C while tokenizing: "interrupted by SIGINT", exit 130, nothing written (not a token file without its mask,
# not the directory made for the outputs); a signal that comes only after all four are published changes nothing.
interrupted() {
    local i
    for ((i = 0; i < 3000; i++)); do cat $FIX/*.jsonl; done >"$T/int.jsonl"
    "$GPT2" tokenize --instructions -o "$T/int/x" "$T/int.jsonl" >"$T/int.out" 2>&1 &
    local pid=$!
    sleep 0.3
    kill -INT $pid
    wait $pid
    local rc=$?
    cat "$T/int.out"
    if [ $rc = 0 ]; then  # finished first: all four there
        [ "$(ls "$T/int")" = "$(printf 'x_train.bin\nx_train.mask\nx_val.bin\nx_val.mask')" ]
    else
        [ $rc = 130 ] && grep -q "^interrupted by SIGINT: tokenize --instructions: nothing written" "$T/int.out" &&
            [ ! -e "$T/int" ]
    fi
}
check "SIGINT during tokenize --instructions: exit 130, a line saying so, no outputs" interrupted

# Errors: one line naming the file and line (or the flag).
printf '{"prompt": "a", "completion": "b"}\n' >"$T/ok.jsonl"
bad() { printf '{"prompt": "a", "completion": "b"}\n\n%s\n' "$1" >"$T/bad.jsonl"; }
bad '{"text": "plain"}'
check_error "a line of no known shape names the file and line and the shapes" \
    "bad instruction example ($T/bad.jsonl line 3): expected {\"prompt\", \"completion\"}, Alpaca's .* got keys \"text\"" \
    "$GPT2" tokenize --instructions -o "$T/e/x" "$T/bad.jsonl"
bad '{"prompt": "a", "completion": "b", "messages": []}'
check_error "keys of two shapes" "bad instruction example ($T/bad.jsonl line 3): expected the keys of one shape" \
    "$GPT2" tokenize --instructions -o "$T/e/x" "$T/bad.jsonl"
bad '{"prompt": "a", "completion": 5}'
check_error "a field that is not a string" "line 3): expected \"completion\" to be a string, got a number" \
    "$GPT2" tokenize --instructions -o "$T/e/x" "$T/bad.jsonl"
bad '{"instruction": "a", "input": null, "output": "b"}'
check_error "Alpaca's input that is not a string" "line 3): expected \"input\" to be a string, got null" \
    "$GPT2" tokenize --instructions -o "$T/e/x" "$T/bad.jsonl"
bad '{"instruction": "a"}'
check_error "Alpaca without output" "line 3): expected a field \"output\", got none" \
    "$GPT2" tokenize --instructions -o "$T/e/x" "$T/bad.jsonl"
bad '{"messages": [{"content": "hi"}, {"role": "assistant", "content": "x"}]}'
check_error "a chat message without role" "line 3): expected a field \"role\" in message 1, got none" \
    "$GPT2" tokenize --instructions -o "$T/e/x" "$T/bad.jsonl"
bad '{"messages": [{"role": "user"}, {"role": "assistant", "content": "x"}]}'
check_error "a chat message without content" "line 3): expected a field \"content\" in message 1, got none" \
    "$GPT2" tokenize --instructions -o "$T/e/x" "$T/bad.jsonl"
bad '{"messages": [{"role": "bot", "content": "hi"}]}'
check_error "an unknown role" "line 3): expected the role in message 1 to be system, user or assistant, got \"bot\"" \
    "$GPT2" tokenize --instructions -o "$T/e/x" "$T/bad.jsonl"
bad '{"messages": [{"role": "user", "content": "hi"}, {"role": "system", "content": "x"}, {"role": "assistant", "content": "x"}]}'
check_error "a system message after the first" "line 3): expected the role in message 2 to be user or assistant (system comes first only)" \
    "$GPT2" tokenize --instructions -o "$T/e/x" "$T/bad.jsonl"
bad '{"messages": [{"role": "assistant", "content": "hi"}, {"role": "user", "content": "x"}]}'
check_error "a chat not ending with the assistant" "line 3): expected the last message to be the assistant's" \
    "$GPT2" tokenize --instructions -o "$T/e/x" "$T/bad.jsonl"
bad '{"messages": "hi"}'
check_error "messages that are not an array" "line 3): expected \"messages\" to be a non-empty array" \
    "$GPT2" tokenize --instructions -o "$T/e/x" "$T/bad.jsonl"
bad '["prompt", "completion"]'
check_error "a line that is not an object" "line 3): expected a JSON object, got an array" \
    "$GPT2" tokenize --instructions -o "$T/e/x" "$T/bad.jsonl"
bad '{"prompt": "a", '
check_error "malformed JSON" "malformed JSON ($T/bad.jsonl line 3)" \
    "$GPT2" tokenize --instructions -o "$T/e/x" "$T/bad.jsonl"
printf '{"prompt": "%s", "completion": "b"}\n{"prompt": "a", "completion": "b"}\n' "$(repeat 100 word)" >"$T/longline.jsonl"
check_error "a JSON line longer than --max-unsplit-bytes (memory is bounded by it)" \
    "line too long ($T/longline.jsonl) at line 1: expected JSON lines of at most 300 bytes, got 532" \
    "$GPT2" tokenize --instructions --max-unsplit-bytes 300 -o "$T/e/x" "$T/longline.jsonl"
# Every example is held in memory until the split: 1 GiB of input in all, files checked by size before any is read
# (sparse files: nothing is read, nothing is allocated).
truncate -s 600M "$T/half1.jsonl" "$T/half2.jsonl"
check_error "more than 1 GiB of examples across the inputs: the file that crosses it named" \
    "input too large ($T/half2.jsonl): expected at most 1073741824 bytes of examples in all, got 1258291200 with it" \
    "$GPT2" tokenize --instructions -o "$T/e/x" "$T/half1.jsonl" "$T/half2.jsonl"
check "... with a hint" grep -q "^hint: tokenize --instructions reads at most 1 GiB of examples in all" "$T/err"
rm -f "$T/half1.jsonl" "$T/half2.jsonl"
check_error "-T without --instructions" "flag --tokens needs --instructions (tokenize): expected --instructions with it" \
    "$GPT2" tokenize -T 64 -o "$T/e/x" "$T/ok.jsonl"
check_error "--instructions with --jsonl-field" "conflicting flags --instructions and --jsonl-field (tokenize)" \
    "$GPT2" tokenize --instructions --jsonl-field text -o "$T/e/x" "$T/ok.jsonl"
check_error "--instructions without -o" "missing output (tokenize): --instructions writes token files" \
    "$GPT2" tokenize --instructions "$T/ok.jsonl"
check_error "too few examples for a val and a train part" "too few examples ($T/ok.jsonl): expected at least 2" \
    "$GPT2" tokenize --instructions -o "$T/e/x" "$T/ok.jsonl"
check_error "-T below 2" "bad value for --tokens (tokenize)" \
    "$GPT2" tokenize --instructions -T 1 -o "$T/e/x" "$T/ok.jsonl"
check "errors leave no outputs behind" bash -c "[ ! -e '$T/e' ]"

# Training and evaluation on the fixture set (from scratch, a tiny model).
MODEL=(--layers 1 --channels 32 --heads 2 -B 1 -T 128 --steps 3 --val-every 3 --val-batches 1 --sample-tokens 0 --lr 1e-2)
mkdir -p "$T/plain"
cp "$T/fx/ft_train.bin" "$T/fx/ft_val.bin" "$T/plain/"
step_losses() { grep -o 'loss [0-9][0-9.]*' "$1"; }
train_runs() {
    "$GPT2" train --train "$T/fx/ft_train.bin" --val "$T/fx/ft_val.bin" "${MODEL[@]}" >"$T/masked.out" 2>&1 || { cat "$T/masked.out"; return 1; }
    "$GPT2" train --train "$T/fx/ft_train.bin" --val "$T/fx/ft_val.bin" "${MODEL[@]}" --loss-on all >"$T/all.out" 2>&1 || return 1
    "$GPT2" train --train "$T/plain/ft_train.bin" --val "$T/plain/ft_val.bin" "${MODEL[@]}" >"$T/plain.out" 2>&1 || return 1
    grep -q "^loss: on the answers only, as the loss masks of 1 of 1 train shards" "$T/masked.out"
}
check "train on masked shards, with --loss-on all, and on the same token files without masks" train_runs
check "... the masked run's losses differ from every token's" bash -c "! cmp -s <(grep -o 'loss [0-9][0-9.]*' '$T/masked.out') <(grep -o 'loss [0-9][0-9.]*' '$T/all.out')"
check "... --loss-on all equals the run without mask files, bit for bit" \
    cmp <(step_losses "$T/all.out") <(step_losses "$T/plain.out")
check "... and prints no loss line without masks" bash -c "! grep -q '^loss: on the answers' '$T/plain.out' '$T/all.out'"
# A mask packed for another -T still trains, with one note (its header keeps the -T; 0, unknown, gives none).
other_T() {
    "$GPT2" train --train "$T/fx/ft_train.bin" --val "" --layers 1 --channels 32 --heads 2 -B 1 -T 64 --steps 1 \
        --sample-tokens 0 >"$T/t64.out" 2>&1 || { cat "$T/t64.out"; return 1; }
    mkdir -p "$T/t0" && cp "$T/fx/ft_train.bin" "$T/fx/ft_train.mask" "$T/t0/"
    printf '\0\0\0\0' | dd of="$T/t0/ft_train.mask" bs=1 seek=20 conv=notrunc 2>/dev/null  # header[5]: the -T
    "$GPT2" train --train "$T/t0/ft_train.bin" --val "" --layers 1 --channels 32 --heads 2 -B 1 -T 64 --steps 1 \
        --sample-tokens 0 >"$T/t0.out" 2>&1 || { cat "$T/t0.out"; return 1; }
    grep "^note: the loss mask" "$T/t64.out"
    [ "$(grep -c '^note: the loss mask' "$T/t64.out")" = 1 ] &&
        grep -q "^note: the loss mask of $T/fx/ft_train.bin was packed for -T 128, this run has -T 64: examples are split" \
            "$T/t64.out" && ! grep -q "^note: the loss mask" "$T/masked.out" "$T/t0.out"
}
check "train with another -T than the mask's: one note naming both; none at the same -T or with -T 0 (unknown)" other_T

# The val line says how many of its tokens were scored: those the mask marks in the first --val-batches windows.
val_line_scored() {
    local scored
    scored=$(mask_of "$T/fx/ft_val.mask" | cut -d' ' -f2-129 | tr ' ' '\n' | grep -c 1)
    grep "val loss" "$T/masked.out"
    grep -q "^step     3/3 | val loss [0-9.]* on 128 tokens, $scored of them scored (the answers" "$T/masked.out" &&
        grep -q "^step     3/3 | val loss [0-9.]* on 128 tokens\$" "$T/all.out"
}
check "train's val line: on 128 tokens, N of them scored (N counted in the mask); --loss-on all: no count" val_line_scored

# The masked train loss is the mean over the scored targets: a step's loss (--lr 0: the model saved is the one
# it was computed with; --no-shuffle: the file's first windows) is eval's on the same windows with the mask.
train_is_eval() {
    "$GPT2" train --train "$T/fx/ft_train.bin" --val "" --layers 1 --channels 32 --heads 2 -B 2 -T 64 --steps 1 \
        --lr 0 --no-shuffle --sample-tokens 0 --out "$T/m0" >"$T/m0.out" 2>&1 || { cat "$T/m0.out"; return 1; }
    "$GPT2" eval --model "$T/m0" --data "$T/fx/ft_train.bin" -B 2 -T 64 --batches 1 >"$T/m0e.out" 2>"$T/m0e.err" || return 1
    local train eval
    train=$(sed -n 's/^step *1\/1 | loss \([0-9.]*\) .*/\1/p' "$T/m0.out") eval=$(sed -n 's/^loss //p' "$T/m0e.out")
    echo "train step 1: $train, eval --batches 1: $eval"
    [ -n "$train" ] && [ "$train" = "$eval" ] && grep -q "^scored [0-9]* of them" "$T/m0e.out"
}
check "train's step loss on masked windows equals eval's on the same windows (-B 2 -T 64, --batches 1)" train_is_eval
# ... however the windows fall into micro-batches: -B 1 --grad-accum 2 takes the same two windows as -B 2 (their
# scored counts differ), so the same loss and gradient norm, to rounding (a per-micro-batch mean gave 10.831644
# against 10.839855 at -T 64).
accum_is_batch() {
    local b
    for b in "-B 2" "-B 1 --grad-accum 2"; do
        "$GPT2" train --train "$T/fx/ft_train.bin" --val "" --layers 1 --channels 32 --heads 2 $b -T 128 --steps 1 \
            --lr 0 --no-shuffle --sample-tokens 0 >"$T/acc.out" 2>&1 || { cat "$T/acc.out"; return 1; }
        grep -o '^step *1/1 | loss [0-9.]* | lr [0-9.e+-]* | norm [0-9.]*' "$T/acc.out" | tr -s ' ' >>"$T/acc.steps"
    done
    cat "$T/acc.steps"
    awk 'NR == 1 { l = $5; n = $11 } NR == 2 { d1 = l - $5; d2 = n - $11 }
         END { exit !(NR == 2 && d1 * d1 < 1e-10 * l * l && d2 * d2 < 1e-8 * n * n) }' "$T/acc.steps"
}
check "... and -B 1 --grad-accum 2 gives -B 2's step: the mean over the step's scored targets" accum_is_batch
# eval: masked, the mean over the scored tokens it counts; --loss-on all, the loss of the file without its mask.
eval_masked() {
    "$GPT2" train --train "$T/fx/ft_train.bin" --val "" --layers 1 --channels 32 --heads 2 -B 1 -T 128 --steps 1 \
        --sample-tokens 0 --out "$T/m" >/dev/null 2>&1 || return 1
    "$GPT2" eval --model "$T/m" --data "$T/fx/ft_val.bin" -B 1 -T 128 >"$T/e1.out" 2>&1 || return 1
    "$GPT2" eval --model "$T/m" --data "$T/fx/ft_val.bin" -B 1 -T 128 --loss-on all >"$T/e2.out" 2>&1 || return 1
    "$GPT2" eval --model "$T/m" --data "$T/plain/ft_val.bin" -B 1 -T 128 >"$T/e3.out" 2>&1 || return 1
    cat "$T/e1.out" "$T/e2.out"
    local scored
    scored=$(tr ' ' '\n' <<<"$(mask_of "$T/fx/ft_val.mask" | cut -d' ' -f2-)" | grep -c 1)
    grep -q "^scored $scored of them" "$T/e1.out" && cmp -s <(grep ^loss "$T/e2.out") <(grep ^loss "$T/e3.out") &&
        ! cmp -s <(grep ^loss "$T/e1.out") <(grep ^loss "$T/e2.out")
}
check "eval: the masked loss over the scored tokens (counted), --loss-on all equals the file without a mask" eval_masked
# Window i's target t is token i*T + t + 1, and the mask's byte for that token decides it: a mask scoring one
# token j (in window 1) gives that token's loss, recomputed without masks from files cut at the window's start
# s: j - s tokens predicted by a -T (j - s) file, less the j - s - 1 of the file one shorter.
# cut FROM TO OUT: an llm.c token file of the val file's tokens FROM..TO.
cut_tokens() {
    perl -e 'open(my $i, "<:raw", $ARGV[0]) or die; local $/; my $d = <$i>; my ($a, $b) = @ARGV[1, 2];
        open(my $o, ">:raw", $ARGV[3]) or die; print $o pack("l<3", 20240520, 1, $b - $a + 1), "\0" x 1012,
        substr($d, 1024 + 2 * $a, 2 * ($b - $a + 1));' "$T/fx/ft_val.bin" "$@"
}
one_target() {
    local mask j s k lj lk lo want got
    read -r -a mask <<<"$(mask_of "$T/fx/ft_val.mask")"
    for ((j = 130; j < ${#mask[@]} && mask[j] == 0; j++)); do :; done
    s=128 k=$((j - 128))
    mkdir -p "$T/one1"
    cp "$T/fx/ft_val.bin" "$T/one1/"
    cp "$T/fx/ft_val.mask" "$T/one1/"
    perl -e 'open(my $h, "+<:raw", $ARGV[0]) or die; my $n = (-s $ARGV[0]) - 1024; seek($h, 1024, 0);
        print $h chr(0) x $n; seek($h, 1024 + $ARGV[1], 0); print $h chr(1);' "$T/one1/ft_val.mask" "$j"
    "$GPT2" eval --model "$T/m" --data "$T/one1/ft_val.bin" -B 1 -T 128 --batches 2 >"$T/one1/m.out" 2>&1 || return 1
    cut_tokens $s $j "$T/one1/a.bin" && cut_tokens $s $((j - 1)) "$T/one1/b.bin" && cut_tokens $s $((j + 1)) "$T/one1/c.bin" || return 1
    lj=$("$GPT2" eval --model "$T/m" --data "$T/one1/a.bin" -B 1 -T $k --batches 1 2>/dev/null | sed -n 's/^loss //p')
    lo=$("$GPT2" eval --model "$T/m" --data "$T/one1/b.bin" -B 1 -T $((k - 1)) --batches 1 2>/dev/null | sed -n 's/^loss //p')
    lk=$("$GPT2" eval --model "$T/m" --data "$T/one1/c.bin" -B 1 -T $((k + 1)) --batches 1 2>/dev/null | sed -n 's/^loss //p')
    got=$(sed -n 's/^loss //p' "$T/one1/m.out")
    grep -q "^scored 1 of them" "$T/one1/m.out" || return 1
    awk -v j=$k -v a="$lj" -v b="$lo" -v c="$lk" -v got="$got" 'BEGIN {
        want = j * a - (j - 1) * b; next_one = (j + 1) * c - j * a; d = got - want; d = d < 0 ? -d : d
        e = got - next_one; e = e < 0 ? -e : e
        printf "window 1, token %d: masked loss %s, recomputed %.6f (the next token: %.6f)\n", j, got, want, next_one
        exit !(d < 2e-3 && e > 1e-2) }' | tee "$T/one1/numbers"
    [ "${PIPESTATUS[0]}" = 0 ]
}
check "a mask scoring one token of window 1: its loss equals that token's loss recomputed without masks" one_target
echo "    ($(cat "$T/one1/numbers" 2>/dev/null))"

check_error "--loss-on takes answer or all" "bad value for --loss-on (eval): expected answer or all, got 'prompt'" \
    "$GPT2" eval --model "$T/m" --data "$T/fx/ft_val.bin" -B 1 -T 128 --loss-on prompt

# A mask that does not match its token file: one line naming the mask; --loss-on all ignores it.
mkdir -p "$T/mm"
cp "$T/fx/ft_train.bin" "$T/fx/ft_train.mask" "$T/mm/"
cp "$T/fx/ft_val.bin" "$T/mm/ft_train.bin"  # the token file written again, its old mask left
check_error "a mask left from another token file is refused, naming it" \
    "loss mask does not match its token file ($T/mm/ft_train.mask): expected " \
    "$GPT2" train --train "$T/mm/ft_train.bin" --val "" "${MODEL[@]}"
check "... and --loss-on all ignores it" "$GPT2" train --train "$T/mm/ft_train.bin" --val "" "${MODEL[@]}" --loss-on all
cp "$T/fx/ft_train.bin" "$T/mm/ft_train.bin"
# one id changed in place (the same length): the fingerprint the mask holds no longer matches
perl -e 'open(my $h, "+<:raw", $ARGV[0]) or die; seek($h, 1026, 0); print $h pack("v", 42);' "$T/mm/ft_train.bin"
check_error "a mask whose token file changed in place (same length) is refused by its fingerprint" \
    "loss mask does not match its token file ($T/mm/ft_train.mask): expected the token file's fingerprint" \
    "$GPT2" eval --model "$T/m" --data "$T/mm/ft_train.bin" -B 1 -T 128
cp "$T/fx/ft_train.bin" "$T/mm/ft_train.bin"
cp "$T/fx/ft_train.mask" "$T/mm/good.mask"
head -c 2000 "$T/mm/good.mask" >"$T/mm/ft_train.mask"
check_error "a mask of another length" "loss mask does not match its token file ($T/mm/ft_train.mask): expected [0-9]* tokens" \
    "$GPT2" train --train "$T/mm/ft_train.bin" --val "" "${MODEL[@]}"
{ printf 'XXXX'; tail -c +5 "$T/mm/good.mask"; } >"$T/mm/ft_train.mask"
check_error "a mask with a bad magic" "bad magic in loss mask ($T/mm/ft_train.mask) at offset 0: expected 20261126" \
    "$GPT2" eval --model "$T/m" --data "$T/mm/ft_train.bin" -B 1 -T 128
{ head -c 1030 "$T/mm/good.mask"; printf '\002'; tail -c +1032 "$T/mm/good.mask"; } >"$T/mm/ft_train.mask"
check_error "a mask byte other than 0 or 1" "bad byte in loss mask ($T/mm/ft_train.mask) at byte offset 1030: expected 0 or 1, got 2" \
    "$GPT2" eval --model "$T/m" --data "$T/mm/ft_train.bin" -B 1 -T 128
{ head -c 1024 "$T/mm/good.mask"; tail -c +1025 "$T/mm/good.mask" | tr '\001' '\000'; } >"$T/mm/ft_train.mask"
check_error "eval on a mask that scores nothing" "no scored tokens ($T/mm/ft_train.bin): expected some answers, got loss masks that score none" \
    "$GPT2" eval --model "$T/m" --data "$T/mm/ft_train.bin" -B 1 -T 128

check_error "train on masks that score nothing (every step a loss of 0)" "no scored tokens in $T/mm/ft_train.bin: the loss masks score none" \
    "$GPT2" train --train "$T/mm/ft_train.bin" --val "" "${MODEL[@]}"
check_error "train's val on a mask that scores nothing" "no scored tokens in the val batches ($T/mm/ft_train.bin)" \
    "$GPT2" train --train "$T/fx/ft_train.bin" --val "$T/mm/ft_train.bin" "${MODEL[@]}"
check_error "eval --batches N on a mask that scores nothing" "no scored tokens in the first 2 batches ($T/mm/ft_train.bin): expected some answers" \
    "$GPT2" eval --model "$T/m" --data "$T/mm/ft_train.bin" -B 1 -T 128 --batches 2

# A batch that scores nothing is left out of the mean, not counted as a loss of 0: two identical windows (one
# example each), the first's mask zeroed, give the loss of one of them.
empty_batch() {
    local i
    for i in 1 2 3; do printf '{"prompt": "%s", "completion": " yes"}\n' "$(repeat 80 word)"; done >"$T/same.jsonl"
    "$GPT2" tokenize --instructions -T 128 --val-examples 1 -o "$T/same/x" "$T/same.jsonl" >/dev/null 2>&1 || return 1
    "$GPT2" eval --model "$T/m" --data "$T/same/x_train.bin" -B 1 -T 128 --batches 1 >"$T/b1.out" 2>&1 || return 1
    perl -e 'open(my $h, "+<:raw", $ARGV[0]) or die; seek($h, 1024, 0); print $h chr(0) x 129;' "$T/same/x_train.mask"
    "$GPT2" eval --model "$T/m" --data "$T/same/x_train.bin" -B 1 -T 128 --batches 2 >"$T/b2.out" 2>&1 || return 1
    grep ^loss "$T/b1.out" "$T/b2.out"
    [ "$(grep ^loss "$T/b1.out")" = "$(grep ^loss "$T/b2.out")" ]
}
check "eval --batches 2 with the first batch unscored: the second's loss, not half of it" empty_batch

# Whatever sits at X.mask is the mask: a directory or a link to nowhere is refused, not read as "no mask".
mkdir -p "$T/odd"
cp "$T/fx/ft_train.bin" "$T/odd/"
mkdir "$T/odd/ft_train.mask"
check_error "a directory at X.mask" "not a regular file ($T/odd/ft_train.mask): expected a loss mask" \
    "$GPT2" train --train "$T/odd/ft_train.bin" --val "" "${MODEL[@]}"
rmdir "$T/odd/ft_train.mask"
ln -s "$T/odd/nowhere" "$T/odd/ft_train.mask"
check_error "a link to nowhere at X.mask" "cannot open $T/odd/ft_train.mask" \
    "$GPT2" train --train "$T/odd/ft_train.bin" --val "" "${MODEL[@]}"

# A mask truncated under a running train faults in the read (SIGBUS, guarded): one line naming the mask.
mask_truncated() {
    local i
    mkdir -p "$T/tr"
    for i in 1 2 3 4 5 6 7 8 9 10; do cat $FIX/*.jsonl; done >"$T/tr/big.jsonl"
    "$GPT2" tokenize --instructions -T 64 -o "$T/tr/x" "$T/tr/big.jsonl" >/dev/null 2>&1 || return 1
    timeout 120 "$GPT2" train --train "$T/tr/x_train.bin" --val "" --layers 1 --channels 32 --heads 2 -B 1 -T 64 \
        --steps 1000000 --sample-tokens 0 >"$T/tr/out" 2>&1 &
    local pid=$!
    for ((i = 0; i < 600; i++)); do grep -q "^step " "$T/tr/out" && break; sleep 0.1; done
    truncate -s 1100 "$T/tr/x_train.mask"
    wait $pid
    local rc=$?
    tail -2 "$T/tr/out"
    # the read's size check says how many bytes it holds now; a fault in the mapping first says it is shorter
    [ $rc = 1 ] && grep -Eq "^error: loss mask changed during the run \($T/tr/x_train.mask\): it (is shorter|now holds 1100 bytes)" "$T/tr/out"
}
check "a mask truncated while train runs: an error naming the mask, exit 1" mask_truncated

# Resume: the data fingerprint covers the masks, and --loss-on stays the run's.
resume_runs() {
    mkdir -p "$T/r"
    cp "$T/fx/ft_train.bin" "$T/fx/ft_train.mask" "$T/r/"
    "$GPT2" train --train "$T/r/ft_train.bin" --val "" "${MODEL[@]}" --steps 4 --stop-after 2 --out "$T/r/ck" >/dev/null 2>&1 &&
        "$GPT2" train --resume "$T/r/ck" --stop-after 1 >"$T/r/out" 2>&1
}
check "a masked run resumes" resume_runs
check_error "a resume with --loss-on changed is refused" "bad value for --loss-on (train): a resumed run keeps --loss-on answer, got all" \
    "$GPT2" train --resume "$T/r/ck" --loss-on all
# flip one body byte (0 <-> 1) of the mask: the token file is unchanged
perl -e 'open(my $h, "+<:raw", $ARGV[0]) or die; seek($h, 1100, 0); read($h, my $b, 1); seek($h, 1100, 0); print $h chr(1 - ord($b));' "$T/r/ft_train.mask"
check_error "a resume on a changed mask is refused as a changed shard" "training data changed ($T/r/ck" \
    "$GPT2" train --resume "$T/r/ck"

summary
