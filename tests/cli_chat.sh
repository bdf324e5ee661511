#!/usr/bin/env bash
# cli_chat.sh: gpt2 chat (issue 58), a conversation in the chat template tokenize --instructions trains on,
# checked against the template's own ids and against generate:
#   * each turn prefills only what it adds (the first turn the head too, and again after /reset), counted from
#     the template; greedy replies equal generate --temperature 0 over the same ids, turn after turn, with
#     --system, --max-tokens, --lora-from and --precision int8;
#   * the context filling: the fewest oldest turns leave, said in one line, and the conversation goes on; a
#     message too long for it is one error line and the session goes on;
#   * --draft int8 and --draft-model: the same greedy replies and prefills as plain decoding's, the draft's cache
#     following the conversation (its oldest turns leaving, /reset, replies ending at a kept draft, Ctrl-C);
#   * /reset, /quit, the end of input; Ctrl-C during a reply stops it (the program goes on), at the prompt it ends
#     the program (130); SIGTERM and SIGHUP end it;
#   * the red team's cases: hostile flags, files and input lines, signals at each moment, closed pipes.
# The models are tiny random inits (greedy replies then hang on every token of the context) of a 1000-token
# vocabulary (no <|endoftext|>: replies never end early), exported with their tokenizer; a slower one with a
# context of 2048 gives the signals a reply to land in. Every child is bounded in time (a stall fails).
source "$(dirname "$0")/lib.sh"
T=$TEST_TMP
need_tokenizer
TOKENS=tests/fixtures/tokens_v1000.bin

# model NAME SEQ LAYERS CHANNELS [SEED]: a random init of the 1000-token vocabulary with context SEQ, exported to
# $T/NAME (a HuggingFace directory with the tokenizer's first 1000 tokens).
model() {
    "$GPT2" train --train $TOKENS --val '' --vocab 1000 --layers $3 --heads 2 --channels $4 --seq-len $2 -B 1 \
        -T $(($2 < 16 ? $2 : 16)) --steps 0 --sample-tokens 0 --seed ${5:-1337} --out $T/$1.run >/dev/null 2>&1 &&
        "$GPT2" export --model $T/$1.run --out $T/$1 --tokenizer "$TOK_DIR" >/dev/null 2>&1
}
model m 64 2 32 && model m2 64 2 32 7 && model s 32 2 32 && model c1 1 1 32 && model c2 2 1 32 && model c8 8 1 32 &&
    model big 2048 6 384
M=$T/m S=$T/s BIG=$T/big
"$GPT2" train --model $M --lora 4 --steps 2 --train $TOKENS --val '' -B 1 -T 16 --sample-tokens 0 --out $T/ad \
    >/dev/null 2>&1
check "(the fixtures: seven models and a LoRA adapter)" test -s $BIG/model.safetensors -a -s $T/ad/adapter_config.json

# ids TEXT: TEXT's ids under the models' tokenizer, space-separated.
ids() {
    printf '%s' "$1" >$T/ids.txt
    "$GPT2" tokenize --ids --tokenizer $M $T/ids.txt 2>/dev/null
}
count() { echo $#; }
# run NAME INPUT FLAGS...: chat with INPUT on stdin; stdout, stderr and the exit code in $T/NAME.{out,err,rc}.
run() {
    local name=$1 input=$2
    shift 2
    printf '%s' "$input" | timeout -k 5 120 "$GPT2" chat "$@" >$T/$name.out 2>$T/$name.err
    echo $? >$T/$name.rc
}
rc() { cat $T/$1.rc; }
# turns NAME: the turns answered (each says on stderr what it prefilled).
turns() { grep -c '^([0-9]* tokens prefilled in ' $T/$1.err; }
# prefills NAME, replies NAME: each turn's tokens prefilled, and its reply's tokens, from the turns' stderr lines.
prefills() { sed -n 's/^(\([0-9]*\) tokens prefilled in .*/\1/p' $T/$1.err | tr '\n' ' ' | sed 's/ $//'; }
replies() { sed -n 's/^([0-9]* tokens prefilled in [0-9]* ms; \([0-9]*\) tokens\{0,1\} at .*/\1/p' $T/$1.err | tr '\n' ' ' |
    sed 's/ $//'; }
# gen_text IDS N FLAGS..., gen_ids IDS N FLAGS...: generate's greedy continuation of IDS (N tokens) on $M, as
# text then a newline (as chat prints a reply), or as ids.
gen_text() { "$GPT2" generate --model $M --temperature 0 --no-prompt --prompt-ids "$1" --max-tokens $2 "${@:3}" 2>/dev/null; }
gen_ids() { "$GPT2" generate --model $M --temperature 0 --ids --prompt-ids "$1" --max-tokens $2 "${@:3}" 2>/dev/null; }
# same NAME FILE: the chat's stdout is FILE's bytes.
same() { cmp $T/$1.out "$2"; }

H=$(ids $'\n')  # the head of a vocabulary without <|endoftext|>: some start, "\n"
NL=$H
A=$(ids 'Assistant:')
U1="$(ids $'User: hello there\n') $A" U2="$(ids $'User: how are you\n') $A"
S1=$(ids $'System: be brief\n')

# --- 1. a conversation from a pipe: what each turn prefills, and generate's greedy replies ----------------------
run two $'hello there\nhow are you\n' --model $M --temperature 0 --max-tokens 5
R1=$(gen_ids "$H $U1" 5)
{ gen_text "$H $U1" 5; gen_text "$H $U1 $R1 $NL $U2" 5; } >$T/two.want
check "two turns from a pipe: exit 0, one line on stderr per turn" test "$(rc two) $(turns two)" = "0 2"
check "turn 1 prefills the head and its turn ($(count $H) + $(count $U1) template tokens), turn 2 only what it adds: the \
\"\\n\" ending reply 1, reply 1's last token (--max-tokens cut it before it was fed) and its turn ($(count $U2))" \
    test "$(prefills two)" = "$(($(count $H) + $(count $U1))) $(($(count $U2) + 2))"
check "... each reply 5 tokens (--max-tokens)" test "$(replies two)" = "5 5"
check "... greedy replies equal generate --temperature 0 over the template's ids, turn 1 and turn 2" same two $T/two.want
run sys $'hello there\nhow are you\n' --model $M --temperature 0 --max-tokens 5 --system "be brief"
R1=$(gen_ids "$S1 $U1" 5)
{ gen_text "$S1 $U1" 5; gen_text "$S1 $U1 $R1 $NL $U2" 5; } >$T/sys.want
check "--system: turn 1 prefills \"System: be brief\\n\" ($(count $S1) tokens: the head, without <|endoftext|> to \
start from) and its turn" test "$(prefills sys)" = "$(($(count $S1) + $(count $U1))) $(($(count $U2) + 2))"
check "... and the replies are generate's over those ids" same sys $T/sys.want

# --- 2. /reset, /quit, the end of input ----------------------------------------------------------------------
run reset $'hello there\n/reset\nhello there\n' --model $M --temperature 0 --max-tokens 5 --system "be brief"
{ gen_text "$S1 $U1" 5; gen_text "$S1 $U1" 5; } >$T/reset.want
check "/reset: said on stderr, and the next turn prefills the head (the system message) again" \
    test "$(grep -c '^(conversation reset)$' $T/reset.err) $(prefills reset)" = \
    "1 $(($(count $S1) + $(count $U1))) $(($(count $S1) + $(count $U1)))"
check "... and answers as the first turn did (greedy)" same reset $T/reset.want
for quit in /quit /exit; do
    run quit $'hello there\n'$quit$'\nhow are you\n' --model $M --max-tokens 3
    check "$quit ends the session: exit 0, the lines after it not read as turns" \
        test "$(rc quit) $(turns quit)" = "0 1"
done
run eoi 'hello there' --model $M --max-tokens 3
check "the end of input ends the session (exit 0), a last line without a newline answered" \
    test "$(rc eoi) $(replies eoi)" = "0 3"
run empty '' --model $M
check "... and empty input is a session of no turns: exit 0, nothing on stdout" test "$(rc empty)" = 0 -a ! -s $T/empty.out
run blank $'\n\n\r\n' --model $M --max-tokens 3
check "blank lines (a CR alone too) are no turns" test "$(rc blank) $(turns blank)" = "0 0"

# --- 3. the context: full, the oldest turns leave; a message longer than it -----------------------------------
# context 32, --max-tokens 4 (4 tokens kept for each reply), each turn "User: a\n" "Assistant:" (11 tokens), a reply
# of 4 and its "\n": turn 2 still fits (1 + 16 + 11 + 4 = 32); turn 3 needs turn 1 gone, and no more
Ua="$(ids $'User: a\n') $A" Ub="$(ids $'User: b\n') $A" Uc="$(ids $'User: c\n') $A" Ud="$(ids $'User: d\n') $A"
check "(the scenario: each message 'a'..'d' is 11 tokens of the template)" \
    test "$(count $Ua) $(count $Ub) $(count $Uc) $(count $Ud)" = "11 11 11 11"
run full $'a\nb\nc\nd\n' --model $S --temperature 0 --max-tokens 4
Ra=$("$GPT2" generate --model $S --temperature 0 --ids --prompt-ids "$H $Ua" --max-tokens 4 2>/dev/null)
Rb=$("$GPT2" generate --model $S --temperature 0 --ids --prompt-ids "$H $Ua $Ra $NL $Ub" --max-tokens 4 2>/dev/null)
Rc=$("$GPT2" generate --model $S --temperature 0 --ids --prompt-ids "$H $Ub $Rb $NL $Uc" --max-tokens 4 2>/dev/null)
check "a full context: turns 3 and 4 each say in one line that the oldest turn left, and the session goes on" \
    test "$(rc full) $(grep -c '^(context of 32 full: the oldest 1 turn left the conversation)$' $T/full.err) \
$(replies full)" = "0 2 4 4 4 4"
check "... only as many turns leave as must (one): turn 3 prefills the head, turn 2 and its own again (1 + 16 + 11)" \
    test "$(prefills full)" = "12 13 28 28"
{ for p in "$H $Ua" "$H $Ua $Ra $NL $Ub" "$H $Ub $Rb $NL $Uc" "$H $Uc $Rc $NL $Ud"; do
    "$GPT2" generate --model $S --temperature 0 --no-prompt --prompt-ids "$p" --max-tokens 4 2>/dev/null; done; } >$T/full.want
check "... and each reply is generate's over the turns kept" same full $T/full.want
# without --max-tokens a reply may take the rest of the context: it ends there, and says so
run fill $'hello there\nhow are you\n' --model $M --temperature 0
n1=$((64 - $(count $H) - $(count $U1) + 1)) n2=$((64 - $(count $H) - $(count $U2) + 1))
{ gen_text "$H $U1" $n1; gen_text "$H $U2" $n2; } >$T/fill.want
check "a reply that fills the context ($n1 tokens, its last one not fed) ends there, said on its line" \
    test "$(replies fill) $(grep -c '; the context is full)$' $T/fill.err)" = "$n1 $n2 2"
check "... the next turn starts over from the head without it (one turn left), and both are generate's replies" \
    bash -c "grep -q '^(context of 64 full: the oldest 1 turn left' $T/fill.err && cmp $T/fill.out $T/fill.want"
long=$(yes 'x y' | head -80 | tr '\n' ' ')
run long "$long"$'\nhello there\n' --model $M --max-tokens 3
check "a message longer than the context: one error line naming the tokens and the context, and the session goes on" \
    test "$(rc long) $(grep -c '^error: message too long: its turn is [0-9]* tokens, expected at most 60 (the context of 64, less 1 for the head and 3 kept for the reply)$' $T/long.err) $(replies long)" = "0 1 3"
head -c $((16 << 20)) /dev/zero | tr '\0' a >$T/huge.txt
printf '\nhello there\n' >>$T/huge.txt
if [ -x /usr/bin/time ]; then
    /usr/bin/time -f 'peak %M KiB' timeout -k 5 120 "$GPT2" chat --model $M --max-tokens 3 <$T/huge.txt >$T/huge.out \
        2>$T/huge.err
    echo $? >$T/huge.rc
    peak=$(sed -n 's/^peak \([0-9]*\) KiB$/\1/p' $T/huge.err)
    check "a 16 MiB line is refused as it is read (more bytes than the context could hold), in bounded memory \
(peak ${peak:-?} KiB < 64 MiB), and the session goes on" \
        test "$(rc huge) $(grep -c "^error: message too long: more than [0-9]* bytes" $T/huge.err) $(replies huge)" = \
        "0 1 3" -a "${peak:-999999}" -lt 65536
else skip "a 16 MiB line in bounded memory: /usr/bin/time not installed"; fi

# a prefill of more than 256 positions runs in passes of 256 (a stop signal is seen between two): the same numbers
msg=$(yes 'the quick brown fox' | head -70 | tr '\n' ' ')
run parts "$msg"$'\nhello there\n' --model $BIG --temperature 0 --max-tokens 3
Up="$(ids "User: $msg"$'\n') $A"
Rp=$("$GPT2" generate --model $BIG --temperature 0 --ids --prompt-ids "$H $Up" --max-tokens 3 2>/dev/null)
{ for p in "$H $Up" "$H $Up $Rp $NL $U1"; do
    "$GPT2" generate --model $BIG --temperature 0 --no-prompt --prompt-ids "$p" --max-tokens 3 2>/dev/null; done; } >$T/parts.want
check "a turn of $(count $Up) tokens, prefilled in passes of 256: the replies are generate's (one pass)" \
    bash -c "test '$(prefills parts | cut -d' ' -f1)' = $((1 + $(count $Up))) && cmp $T/parts.out $T/parts.want"

# --- 4. precision and adapters: accepted, and the replies are generate's under the same flags -------------------
for flags in "--precision int8" "--lora-from $T/ad" "--precision int8 --lora-from $T/ad" "--precision bf16"; do
    run prec $'hello there\nhow are you\n' --model $M --temperature 0 --max-tokens 4 $flags
    R1=$(gen_ids "$H $U1" 4 $flags)
    { gen_text "$H $U1" 4 $flags; gen_text "$H $U1 $R1 $NL $U2" 4 $flags; } >$T/prec.want
    check "$flags: accepted, and both replies are generate $flags's" \
        bash -c "test $(rc prec) = 0 && cmp $T/prec.out $T/prec.want"
done

# --- 4b. speculative decoding (--draft int8, --draft-model): the same greedy replies, turn after turn -----------
# drafted: NAME's drafted tokens over all its turns, from the turns' lines ("; K of D drafted kept").
drafted() { sed -n 's/.*; [0-9]* of \([0-9]*\) drafted kept.*/\1/p' $T/$1.err | awk '{ n += $1 } END { print n + 0 }'; }
# (m2, a random model of the same size, disagrees with m and costs as much: drafting never pays and k stays 0 but for
# --draft-min; c8's context of 8 is outgrown by the first turn: decoding stays plain)
for d in "--draft int8" "--draft-model $T/m2 --draft-min 2" "--draft int8 --draft-max 1" "--draft-model $T/c8"; do
    for case in "two|hello there\nhow are you\n|--model $M --max-tokens 5" \
        "reset|hello there\n/reset\nhello there\n|--model $M --max-tokens 5 --system be_brief" \
        "full|a\nb\nc\nd\n|--model $S --max-tokens 4" "fill|hello there\nhow are you\n|--model $M"; do
        IFS='|' read -r name input flags <<<"$case"
        [ $name = reset ] && [ ! -s $T/plain_reset.rc ] && run plain_reset "$(printf "$input")"$'\n' $flags --temperature 0
        run spec "$(printf "$input")"$'\n' $flags --temperature 0 $d
        base=$name && [ $name = reset ] && base=plain_reset
        [ "$d $name" = "--draft int8 fill" ] &&
            check "... its draft's cache follows the conversation when the oldest turn leaves: each turn keeps 3 in 4 \
drafted at least ($(sed -n 's/.*; \([0-9]* of [0-9]*\) drafted kept.*/\1/p' $T/spec.err | tr '\n' ','))" \
                test "$(sed -n 's/.*; \([0-9]*\) of \([0-9]*\) drafted kept.*/\1 \2/p' $T/spec.err |
                    awk '4 * $1 < 3 * $2 { bad++ } END { print NR, bad + 0 }')" = "2 0"
        some=-gt && [[ $d = *c8 ]] && some=-eq
        check "$d, $name: exit 0, the same replies as plain decoding's, the same prefills, tokens drafted ($some 0)" \
            bash -c "test '$(rc spec) $(prefills spec) / $(replies spec)' = '0 $(prefills $base) / $(replies $base)' \
-a $(drafted spec) $some 0 && cmp $T/spec.out $T/$base.out"
    done
done
run spec_a $'hello there\nhow are you\n' --model $M --max-tokens 8 --temperature 0.9 --draft-model $T/m2
run spec_b $'hello there\nhow are you\n' --model $M --max-tokens 8 --temperature 0.9 --draft-model $T/m2
check "sampling through a draft repeats from its seed (exit 0, the same replies)" \
    bash -c "test '$(rc spec_a) $(rc spec_b) $(replies spec_a)' = '0 0 8 8' && cmp $T/spec_a.out $T/spec_b.out"

# --- 5. signals: Ctrl-C stops the reply, at the prompt it ends the program; SIGTERM and SIGHUP end it -------------
# start NAME FLAGS...: chat on the slow model in the background (its signals' default actions as a terminal's
# program has them), reading the FIFO $T/NAME.in, which fd 3 holds open; CHAT is its pid.
start() {
    local name=$1
    shift
    rm -f $T/$name.in && mkfifo $T/$name.in
    env --default-signal "$GPT2" chat --model $BIG "$@" <$T/$name.in >$T/$name.out 2>$T/$name.err &
    CHAT=$!
    exec 3>$T/$name.in
}
# wait_for FILE PATTERN [N]: until N lines (1 unless given) of FILE match PATTERN (grep -E), at most 60 s, or
# chat has ended; false if they do not.
wait_for() {
    local i
    for ((i = 0; i < 1200; i++)); do
        [ "$(grep -Ec -- "$2" "$1" 2>/dev/null)" -ge "${3:-1}" ] && return 0
        kill -0 $CHAT 2>/dev/null || break
        sleep 0.05
    done
    [ "$(grep -Ec -- "$2" "$1" 2>/dev/null)" -ge "${3:-1}" ]
}
# wait_grow FILE BYTES: until FILE holds more than BYTES bytes, at most 60 s, or chat has ended.
wait_grow() {
    local i
    for ((i = 0; i < 1200; i++)); do
        [ "$(stat -c %s "$1")" -gt "$2" ] && return 0
        kill -0 $CHAT 2>/dev/null || break
        sleep 0.05
    done
    [ "$(stat -c %s "$1")" -gt "$2" ]
}
# finish: closes the FIFO and sets CODE to chat's exit code (wait_bounded: 60 s, then killed and 124).
finish() {
    exec 3>&-
    wait_bounded $CHAT 60
    CODE=$?
}
yes 'the quick brown fox' | head -220 | tr '\n' ' ' >$T/pre.txt
trap '' PIPE  # a write to the FIFO of a chat that has ended fails here, not the suite
# two_stops NAME FLAGS...: chat's first two replies each stopped by Ctrl-C, then a third turn (from what the cache
# holds: prefill checks it) stopped too once it answers, then /quit.
two_stops() {
    local name=$1 n
    start "$@"
    echo 'hello there' >&3
    wait_for $T/$name.out . && kill -INT $CHAT
    wait_for $T/$name.err '^\(.*; stopped\)$'
    n=$(stat -c %s $T/$name.out)
    echo 'how are you' >&3
    wait_grow $T/$name.out $n && kill -INT $CHAT
    wait_for $T/$name.err '^\(.*; stopped\)$' 2
    n=$(stat -c %s $T/$name.out)
    echo 'hello there' >&3
    wait_grow $T/$name.out $n && kill -INT $CHAT
    wait_for $T/$name.err '^\(.*; stopped\)$' 3
    echo /quit >&3
    finish
}
two_stops int
check "Ctrl-C during a long reply stops it (said on its line), the program goes on to the next turns; /quit: exit 0" \
    test "$CODE $(grep -c '; stopped)$' $T/int.err) $(turns int)" = "0 3 3"
check "... each reply cut short (fewer than the 2,000 tokens the context left it)" \
    test "$(replies int | tr ' ' '\n' | awk '$1 < 1000' | wc -l)" = 3
two_stops intd --draft int8
check "--draft int8: Ctrl-C stops a speculative reply too, three times, each turn going on from what the cache holds; \
exit 0" test "$CODE $(grep -c '; stopped)$' $T/intd.err) $(turns intd)" = "0 3 3"
start prompt
wait_for $T/prompt.err '^tokenizer:' && sleep 0.3 && kill -INT $CHAT
finish
check "Ctrl-C at the prompt ends the program: exit 130" test "$CODE" = 130
for sig in TERM HUP; do
    start $sig
    echo 'hello there' >&3
    wait_for $T/$sig.out . && kill -$sig $CHAT
    finish
    want=$((128 + $(kill -l $sig)))
    check "SIG$sig during a reply ends the program once the reply stops: exit $want, said in one line" \
        test "$CODE $(grep -c "^interrupted by SIG$sig" $T/$sig.err)" = "$want 1"
    start ${sig}p
    wait_for $T/${sig}p.err '^tokenizer:' && sleep 0.3 && kill -$sig $CHAT
    finish
    check "... and at the prompt: exit $want" test "$CODE" = $want
done
# a message of about 2,000 tokens: its prefill takes the slow model a second or so; Ctrl-C during it stops the
# turn before any reply, and the program goes on (the next turn prefills the rest with its own)
start pre --max-tokens 2
wait_for $T/pre.err '^tokenizer:'
cat $T/pre.txt >&3 && echo >&3
wait_for $T/pre.err '^\(prefilling [0-9]+ tokens' && kill -INT $CHAT
wait_for $T/pre.err '^\(.*; stopped\)$'
echo 'hello there' >&3
wait_for $T/pre.err '^\(.* tok/s' 2
echo /quit >&3
finish
all=$((1 + $(count $(ids "User: $(cat $T/pre.txt)"$'\n')) + $(count $A)))
p1=$(prefills pre | cut -d' ' -f1) p2=$(prefills pre | cut -d' ' -f2)
check "Ctrl-C during a long prefill: the turn stops before its reply (0 tokens), the program goes on, exit 0" \
    test "$CODE $(replies pre) $(grep -c '; stopped)$' $T/pre.err)" = "0 0 2 1"
check "... the prefill cut short ($p1 of $all tokens), the next turn prefills the rest with its own" \
    test "$p1" -lt $all -a $((p1 + p2)) = $((all + 1 + $(count $U1)))
start load
for ((i = 0; i < 200; i++)); do [ "$(cat /proc/$CHAT/comm 2>/dev/null)" = gpt2 ] && break; sleep 0.01; done
kill -INT $CHAT
finish
check "Ctrl-C while the model loads ends the program: exit 130" test "$CODE" = 130
trap - PIPE

# --- 6. pipes and files: closed stdout, stdin a directory ----------------------------------------------------
# 2,000 turns: more than a pipe holds, so chat is still writing when head has gone
yes 'hello there' | head -2000 | timeout -k 5 60 "$GPT2" chat --model $M 2>$T/head.err | head -c 10 >/dev/null
check "chat | head -c 10: one error line (the pipe closed), exit 1" \
    test "${PIPESTATUS[2]} $(grep -c '^error: cannot write standard output' $T/head.err)" = "1 1"
check_error "stdin a directory: one error line, exit 1" "cannot read standard input (chat): Is a directory" \
    timeout -k 5 60 "$GPT2" chat --model $M <$T

# --- 7. red team: flags -------------------------------------------------------------------------------------
E=(timeout -k 5 60 "$GPT2" chat)
check_error "no --model" "missing flag --model (chat)" "${E[@]}"
check_error "--model without a value" "missing value for flag --model (chat)" "${E[@]}" --model
check_error "an unknown flag" "unknown flag --bogus (chat)" "${E[@]}" --model $M --bogus
check_error "an argument that is no flag" "unexpected argument 'extra' (chat)" "${E[@]}" --model $M extra
check_error "--system without a value" "missing value for flag --system (chat)" "${E[@]}" --model $M --system
for v in 0 1.5 1.0000001 -1; do
    check_error "--top-p $v: generate's range, the value as typed" \
        "bad value for --top-p (chat): expected 0 < p <= 1, got $v$" "${E[@]}" --model $M --top-p $v
done
for v in -1 1000001; do
    check_error "--temperature $v: generate's range" "bad value for --temperature (chat): expected 0..1e+06, got $v$" \
        "${E[@]}" --model $M --temperature $v
done
for flag in temperature top-p; do
    for v in nan inf 1x ''; do
        check_error "--$flag '$v' is malformed" "malformed value for --$flag (chat)" "${E[@]}" --model $M --$flag "$v"
    done
done
check_error "--top-k -1" "bad value for --top-k (chat)" "${E[@]}" --model $M --top-k -1
check_error "--top-k 1e3 (not an integer)" "malformed value for --top-k (chat)" "${E[@]}" --model $M --top-k 1e3
check_error "--max-tokens -5" "bad value for --max-tokens (chat): expected 0..1048576, got -5" "${E[@]}" --model $M --max-tokens -5
check_error "--max-tokens 2000000" "bad value for --max-tokens (chat)" "${E[@]}" --model $M --max-tokens 2000000
check_error "--max-tokens 0x10" "malformed value for --max-tokens (chat)" "${E[@]}" --model $M --max-tokens 0x10
check_error "--seed -1" "bad value for --seed (chat)" "${E[@]}" --model $M --seed -1
check_error "--seed past a long long" "bad value for --seed (chat): expected 0..9223372036854775807, got 18446744073709551615" \
    "${E[@]}" --model $M --seed 18446744073709551615
check_error "--precision int4" "bad value for --precision (chat): expected fp32, bf16 or int8, got 'int4'" \
    "${E[@]}" --model $M --precision int4
check_error "--draft takes int8 alone" "bad value for --draft (chat): expected int8" "${E[@]}" --model $M --draft fp32
check_error "--draft int8 with --precision int8" "conflicting flags (chat): --draft int8 drafts for an fp32 or bf16" \
    "${E[@]}" --model $M --draft int8 --precision int8
check_error "--draft int8 with --lora-from" "conflicting flags (chat): --draft int8 copies the model's fp32 weights" \
    "${E[@]}" --model $M --draft int8 --lora-from $T/ad
check_error "--draft with --draft-model" "conflicting flags (chat): give one of --draft" \
    "${E[@]}" --model $M --draft int8 --draft-model $T/m2
check_error "--draft-min without a draft" "flag --draft-min (chat) needs --draft int8 or --draft-model" \
    "${E[@]}" --model $M --draft-min 2
check_error "--draft-min above --draft-max" "conflicting flags (chat): --draft-min 5 is more than --draft-max 4" \
    "${E[@]}" --model $M --draft int8 --draft-min 5 --draft-max 4
check_error "--draft-model that is not there" "$T/none" "${E[@]}" --model $M --draft-model $T/none
check_error "--draft-model an adapter directory" "not a model ($T/ad)" "${E[@]}" --model $M --draft-model $T/ad
check_error "a missing --draft-model is said before the model is read (a missing --model too)" \
    "checkpoint not found ($T/none2)" "${E[@]}" --model $T/none --draft-model $T/none2
check_error "a bare .safetensors draft whose head count cannot be inferred: named as --draft-model's, not --heads" \
    "bad value for --draft-model (chat): cannot infer the head count of $M/model.safetensors" \
    "${E[@]}" --model $M --heads 2 --draft-model $M/model.safetensors
check_error "--heads against the model's config" "conflicting head count (--heads 3)" "${E[@]}" --model $M --heads 3
check_error "--force-base without --lora-from" "flag --force-base (chat) needs --lora-from" "${E[@]}" --model $M --force-base
check_error "--lora-from a directory that does not exist" "adapter not found (/nonexistent" \
    "${E[@]}" --model $M --lora-from /nonexistent
check_error "--lora-from a model checkpoint" "not a LoRA adapter (--lora-from $S)" "${E[@]}" --model $M --lora-from $S
check_error "--lora-from an adapter of another geometry" "ad" "${E[@]}" --model $S --lora-from $T/ad
check_error "--tokenizer that does not exist" "tokenizer directory not found (/nonexistent)" \
    "${E[@]}" --model $M --tokenizer /nonexistent
check_error "--tokenizer of another vocabulary" "tokenizer and model disagree ($TOK_DIR): tokenizer has 50257 tokens, model 1000" \
    "${E[@]}" --model $M --tokenizer "$TOK_DIR"

# --- 8. red team: the model's and the tokenizer's files -----------------------------------------------------
# broken CHANGE: a copy of $M at $T/broken with CHANGE (a shell command) run in it.
broken() { rm -rf $T/broken && cp -r $M $T/broken && (cd $T/broken && eval "$1"); }
broken 'truncate -s 1000 model.safetensors'
check_error "a truncated model.safetensors" "corrupt safetensors file ($T/broken/model.safetensors)" "${E[@]}" --model $T/broken
broken ': >model.safetensors'
check_error "an empty model.safetensors" "corrupt safetensors file ($T/broken/model.safetensors)" "${E[@]}" --model $T/broken
broken 'rm model.safetensors && mkdir model.safetensors'
check_error "model.safetensors a directory" "not a regular file ($T/broken/model.safetensors)" "${E[@]}" --model $T/broken
broken 'echo "{" >config.json'
check_error "a malformed config.json" "malformed JSON in $T/broken/config.json" "${E[@]}" --model $T/broken
broken 'rm config.json'
check_error "no config.json" "missing $T/broken/config.json" "${E[@]}" --model $T/broken
for v in 0 -5 1000000000; do
    broken "sed -i 's/\"n_positions\": 64/\"n_positions\": $v/' config.json"
    check_error "n_positions $v" "bad value for \"n_positions\" in $T/broken/config.json" "${E[@]}" --model $T/broken
done
broken "sed -i 's/\"n_embd\": 32/\"n_embd\": 64/' config.json"
check_error "a config whose n_embd disagrees with the weights" "shape mismatch for tensor wte.weight" "${E[@]}" --model $T/broken
broken 'echo "{\"a\": 1}" >vocab.json'
check_error "a vocab.json of the wrong ids" "vocab.json" "${E[@]}" --model $T/broken
broken 'echo garbage >merges.txt'
check_error "a malformed merges.txt" "malformed merge ($T/broken/merges.txt) at line 1" "${E[@]}" --model $T/broken
broken 'rm vocab.json merges.txt'
check_error "no tokenizer of its own: the default one, of another vocabulary, is named" \
    "tokenizer and model disagree ($TOK_DIR)" "${E[@]}" --model $T/broken
broken 'st_fill model.safetensors h.0.mlp.c_fc.weight 7F'
run nan $'hello there\nhow are you\n' --model $T/broken --max-tokens 3
check "weights that overflow: one error line naming the non-finite logits, exit 1, no reply printed from them" \
    test "$(rc nan) $(grep -c '^error: non-finite logits at position [0-9]*: logit [0-9]* is' $T/nan.err) $(wc -c <$T/nan.out)" = "1 1 0"
mkfifo $T/fifo_model
for path in /dev/null $T/fifo_model $T/ids.txt; do
    check_error "--model $path (no checkpoint)" "checkpoint" "${E[@]}" --model $path
done

# --- 9. red team: what a user types ---------------------------------------------------------------------------
run nul $'a\0b\n' --model $M --temperature 0 --max-tokens 4
printf 'User: a\0b\n' >$T/nul.txt
NULU="$("$GPT2" tokenize --ids --tokenizer $M $T/nul.txt 2>/dev/null) $A"
gen_text "$H $NULU" 4 >$T/nul.want
check "a line holding a NUL byte is one message, the NUL a byte of it (as tokenize reads it)" same nul $T/nul.want
run bad8 $'caf\xc3 \xff\xfe \xc0\xaf\n' --model $M --temperature 0 --max-tokens 4
printf 'User: caf\xc3 \xff\xfe \xc0\xaf\n' >$T/bad8.txt
B8="$("$GPT2" tokenize --ids --tokenizer $M $T/bad8.txt 2>/dev/null) $A"
gen_text "$H $B8" 4 >$T/bad8.want
check "invalid UTF-8 is a message of those bytes" same bad8 $T/bad8.want
run crlf $'hello there\r\nhow are you\r\n' --model $M --temperature 0 --max-tokens 5
check "CRLF line ends are line ends: the same turns as LF's" bash -c "cmp $T/crlf.out $T/two.want && test '$(prefills crlf)' = '$(prefills two)'"
run ws $' \t \nhello there\n   \n' --model $M --max-tokens 3
check "a line of spaces and tabs is no turn" test "$(rc ws) $(turns ws)" = "0 1"
for quit in '/quit  ' ' /quit' '/QUIT' $'/Quit\r' $'\t/exit '; do
    run q "hello there"$'\n'"$quit"$'\nhow are you\n' --model $M --max-tokens 3
    check "'$quit' ends the session as /quit does (spaces around it and case ignored)" \
        test "$(rc q) $(turns q)" = "0 1"
done
run rs $'hello there\n  /RESET \nhello there\n' --model $M --max-tokens 3
check "'  /RESET ' resets" test "$(grep -c '^(conversation reset)$' $T/rs.err) $(prefills rs | tr ' ' '\n' | sort -u | wc -l)" = "1 1"
run unk $'/rest\nhello there\n' --model $M --max-tokens 3
check "an unknown command is one error line naming it and the commands, no turn; the session goes on" \
    test "$(rc unk) $(grep -c "^error: unknown command '/rest': expected /reset or /quit" $T/unk.err) $(turns unk)" = "0 1 1"
run path $'/etc/passwd is a file\n' --model $M --max-tokens 3
check "a line starting with a path is a message, not a command" test "$(rc path) $(turns path)" = "0 1"
yes a | head -3000 >$T/many.txt
timeout -k 5 300 "$GPT2" chat --model $S --max-tokens 1 <$T/many.txt >$T/many.out 2>$T/many.err
code=$?
check "3,000 turns on a context of 32: each answered, exit 0" test "$code $(turns many)" = "0 3000"
for c in c1 c2 c8; do
    check_error "a context of ${c#c} cannot hold the template and a reply: refused at the start, naming the model" \
        "context too small for a conversation (--model $T/$c)" "${E[@]}" --model $T/$c
done
check_error "a --system longer than the context is refused (not an assertion)" \
    "system message too long (--system): " "${E[@]}" --model $M --system "$(yes word | head -100 | tr '\n' ' ')"
check_error "... and one leaving no room for a turn" "system message too long (--system): " \
    "${E[@]}" --model $S --system "$(yes word | head -12 | tr '\n' ' ')"
printf 'hello there\n' | timeout -k 5 60 "$GPT2" chat --model $M >&- 2>$T/closed.err
code=$?
check "stdout closed: one error line, exit 1" test "$code $(grep -c '^error: cannot write standard output' $T/closed.err)" = "1 1"
timeout -k 5 60 "$GPT2" chat --model $M <&- >/dev/null 2>$T/closed_in.err
code=$?
check "stdin closed: one error line, exit 1" test "$code $(grep -c '^error: cannot read standard input (chat)' $T/closed_in.err)" = "1 1"

# --- 10. a model trained on chat data (tests/fixtures/instruct): GPT-2's vocabulary, replies ending at <|endoftext|>
"$GPT2" tokenize --instructions -T 64 -o $T/chatdata tests/fixtures/instruct/chat.jsonl >/dev/null 2>&1
"$GPT2" train --train $T/chatdata_train.bin --val '' --layers 1 --heads 2 --channels 32 --seq-len 64 -B 4 -T 64 \
    --steps 40 --lr 2e-2 --warmup 0 --sample-tokens 0 --out $T/chat >/dev/null 2>&1
C=$T/chat
# gids TEXT: TEXT's ids under GPT-2's tokenizer; cgen IDS N FLAGS...: generate's greedy text on $C after IDS.
gids() {
    printf '%s' "$1" >$T/ids.txt
    "$GPT2" tokenize --ids --tokenizer "$TOK_DIR" $T/ids.txt 2>/dev/null
}
cgen() { "$GPT2" generate --model $C --temperature 0 --no-prompt --prompt-ids "$1" --max-tokens $2 "${@:3}" 2>/dev/null; }
EOT=50256 GA=$(gids 'Assistant:') GNL=$(gids $'\n')
G1="$(gids $'User: Hi, who are you?\n') $GA" G2="$(gids $'User: Tell me a fruit.\n') $GA"
run eot $'Hi, who are you?\nTell me a fruit.\n' --model $C --temperature 0 --max-tokens 30
GR1=$("$GPT2" generate --model $C --temperature 0 --ids --prompt-ids "$EOT $G1" --max-tokens 30 2>/dev/null)
{ cgen "$EOT $G1" 30; cgen "$EOT $G1 ${GR1% $EOT} $GNL $G2" 30; } >$T/eot.want
check "a model that learned <|endoftext|>: each reply ends there, before --max-tokens, and it is not printed" \
    bash -c "test $(rc eot) = 0 && test '${GR1##* }' = $EOT && test $(replies eot | tr ' ' '\n' | awk '$1 < 30' | wc -l) = 2 \
&& ! grep -q endoftext $T/eot.out"
check "... turn 1 prefills <|endoftext|> and its turn, turn 2 only the \"\\n\" ending reply 1 and its own" \
    test "$(prefills eot)" = "$((1 + $(count $G1))) $((1 + $(count $G2)))"
check "... and the replies are generate's, which stops there too" same eot $T/eot.want
check "... a reply of one token says \"1 token\"" \
    bash -c "grep -q '; 1 token at' $T/*.err && ! grep -q '; 1 tokens at' $T/*.err"
GS=$(gids $'System: You answer briefly.\n') G5="$(gids $'User: What is 5 + 5?\n') $GA"
run esys $'What is 5 + 5?\n' --model $C --temperature 0 --max-tokens 30 --system "You answer briefly."
cgen "$EOT $GS $G5" 30 >$T/esys.want
check "--system after <|endoftext|>: prefilled with turn 1, and the reply is generate's" \
    bash -c "test '$(prefills esys)' = $((1 + $(count $GS) + $(count $G5))) && cmp $T/esys.out $T/esys.want"
run lit $'<|endoftext|>\n' --model $C --temperature 0 --max-tokens 30
GL="$(gids $'User: <|endoftext|>\n') $GA"
cgen "$EOT $GL" 30 >$T/lit.want
check "a message '<|endoftext|>' is text, not the special token (as tokenize reads it)" \
    bash -c "test '$(prefills lit)' = $((1 + $(count $GL))) && cmp $T/lit.out $T/lit.want"
for fmt in gguf llmc; do
    "$GPT2" export --model $C --format $fmt --out $T/chat.$fmt >/dev/null 2>&1
    run fmt $'Hi, who are you?\nTell me a fruit.\n' --model $T/chat.$fmt --temperature 0 --max-tokens 30
    check "the same model as a $fmt file: the same replies" cmp $T/fmt.out $T/eot.out
done

check_error "--draft-model of another vocabulary" \
    "bad value for --draft-model (chat): $C has a vocabulary of 50257 tokens, expected the model's 1000" \
    "${E[@]}" --model $M --draft-model $C
for d in "--draft int8" "--draft int8 --draft-min 8"; do
    run eot_spec $'Hi, who are you?\nTell me a fruit.\nHi, who are you?\n' --model $C --temperature 0 --max-tokens 30 $d
    run eot_plain $'Hi, who are you?\nTell me a fruit.\nHi, who are you?\n' --model $C --temperature 0 --max-tokens 30
    check "$d: replies that end at <|endoftext|> a kept draft (drafted $(drafted eot_spec)): the same replies and \
prefills as plain decoding's, turn after turn" bash -c "test '$(rc eot_spec) $(prefills eot_spec) $(replies eot_spec)' = \
'0 $(prefills eot_plain) $(replies eot_plain)' -a $(drafted eot_spec) -gt 0 && cmp $T/eot_spec.out $T/eot_plain.out"
done

# --- 11. red team, continued: sampling, boundaries, other bases, hostile streams, a terminal ---------------------
run samp $'hello there\n' --model $M --temperature 0.9 --top-k 40 --top-p 0.95 --seed 5 --max-tokens 8
gen_text "$H $U1" 8 --temperature 0.9 --top-k 40 --top-p 0.95 --seed 5 >$T/samp.want
check "sampled (--temperature 0.9 --top-k 40 --top-p 0.95 --seed 5): turn 1 is generate's sample of the same seed" \
    same samp $T/samp.want
run samp2 $'hello there\nhow are you\n' --model $M --temperature 0.9 --seed 5 --max-tokens 8
run samp3 $'hello there\nhow are you\n' --model $M --temperature 0.9 --seed 5 --max-tokens 8
check "... and a session is the same again with the same seed" cmp $T/samp2.out $T/samp3.out
# context 32, --max-tokens 4: a turn of 27 tokens is the longest let in (1 + 27 + 4 = 32): 17 words "a" make it
a17=$(yes a | head -17 | tr '\n' ' ' | sed 's/ $//')
check "(the boundary: \"User: $a17\\n\" \"Assistant:\" is 27 tokens)" test $(($(count $(ids "User: $a17"$'\n')) + $(count $A))) = 27
run edge "$a17"$'\n'"$a17 a"$'\n' --model $S --temperature 0 --max-tokens 4
check "... it is answered, and one token more is refused in one line" \
    test "$(rc edge) $(replies edge) $(grep -c '^error: message too long: its turn is 28 tokens, expected at most 27' $T/edge.err)" = "0 4 1"
check_error "--lora-from an adapter trained on another base is refused, naming both" "base model mismatch (--lora-from $T/ad)" \
    "${E[@]}" --model $T/m2 --lora-from $T/ad
run force $'hello there\n' --model $T/m2 --lora-from $T/ad --force-base --max-tokens 3
check "... and --force-base applies it anyway, with a note" \
    test "$(rc force) $(replies force) $(grep -c '^note: --lora-from .* applied to it anyway (--force-base)$' $T/force.err)" = "0 3 1"
check_error "--model an adapter directory" "not a model ($T/ad)" "${E[@]}" --model $T/ad
perl -e 'srand(1); print map { chr(int(rand(256))) } 1 .. 300000' >$T/random.bin
timeout -k 5 120 "$GPT2" chat --model $M --max-tokens 2 <$T/random.bin >$T/random.out 2>$T/random.err
code=$?
check "300 KB of random bytes: lines answered or refused in one line each, exit 0" \
    test "$code" = 0 -a "$(turns random)" -gt 0 -a "$(grep -c '^error: message too long' $T/random.err)" -gt 0 \
    -a "$(grep -vc '^error: message too long\|^(\|^tokenizer' $T/random.err)" = 0
"$GPT2" chat --model $M </dev/zero >/dev/null 2>$T/zero.err &
CHAT=$!
sleep 2
rss=$(awk '/^VmRSS/ {print $2}' /proc/$CHAT/status 2>/dev/null)
kill -INT $CHAT
wait_bounded $CHAT 30
code=$?
check "stdin /dev/zero (a line that never ends): memory bounded (${rss:-?} KiB), Ctrl-C ends it (130)" \
    test "$code" = 130 -a "${rss:-999999}" -lt 65536
printf 'hello there\n' | timeout -k 5 60 "$GPT2" chat --model $M --max-tokens 3 >$T/noerr.out 2>&-
code=$?
check "stderr closed: the conversation goes on (exit 0, the reply on stdout)" test "$code" = 0 -a -s $T/noerr.out
if command -v script >/dev/null; then
    (sleep 1; printf 'hello there\r'; sleep 2; printf '/quit\r'; sleep 1) |
        timeout -k 5 30 script -qec "$GPT2 chat --model $M --max-tokens 4" /dev/null >$T/pty.out 2>&1
    check "on a terminal: the prompt '> ' before each line, the reply, /quit" \
        bash -c "test \$(tr -d '\r' <$T/pty.out | grep -c '^> ') = 2 && tr -d '\r' <$T/pty.out | grep -q '^(.* 4 tokens at'"
else skip "chat on a terminal: no script(1) here"; fi

summary
