#!/usr/bin/env bash
# cli_serve.sh: `gpt2 serve` checked by real clients (issue 58), on a tiny model trained here, over loopback:
#   * OpenAI's official client (npm openai, tests/node/openai_client.mjs): completions and chat, streamed and not,
#     usage, n > 1, stop strings, 400/401/404, and greedy decoding equal to `gpt2 generate --temperature 0` for
#     the same prompt ids, several prompts streaming at once (batched), in fp32 and int8;
#   * headless Chromium (tests/node/chat_page.mjs): the chat page sends a message and shows the streamed reply,
#     equal to the API's own answer; a screenshot kept; no request leaves the server;
#   * a bounded load (tests/node/serve_load.mjs): 500 requests 16 at a time, some streamed, some dropped
#     mid-stream, a small --max-queue: 200s and the expected 503s only, the memory flat, the server answering after;
#     and again with a draft;
#   * with --draft int8 and --draft-model: the client's checks again, plain decoding's answers and usage saying how
#     many drafted tokens were kept; the draft flags' errors.
# Skips (counted, with the reason) only what needs node, the npm package or chromium when they are missing.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/serve_lib.sh"
T=$TEST_TMP
need_tokenizer
serve_model $T/m || fail "training the tiny model"
MAX=20  # new tokens per prompt: within the context of 64 for every prompt below

# --- 1. OpenAI's client ----------------------------------------------------------------------------------------
# generate's greedy continuation of each prompt (ids), the oracle of the same-tokens checks
PROMPTS=("464" "15496 11" "40 716" "1212 318 257" "6894" "262 3290" "50256")
gen_oracle() {  # gen_oracle DIR [FLAGS...]: generate's text and ids for each prompt into DIR
    local dir=$1 i
    shift
    mkdir -p $dir
    for i in "${!PROMPTS[@]}"; do
        echo "${PROMPTS[$i]}" >$dir/$i.prompt
        "$GPT2" generate --model $T/m --prompt-ids "${PROMPTS[$i]}" --temperature 0 --max-tokens $MAX --no-prompt \
            "$@" >$dir/$i.txt 2>/dev/null || return 1
        "$GPT2" generate --model $T/m --prompt-ids "${PROMPTS[$i]}" --temperature 0 --max-tokens $MAX --ids \
            "$@" >$dir/$i.ids 2>/dev/null || return 1
    done
}
why=$(node_missing openai)
if [ -n "$why" ]; then
    skip "OpenAI's client against gpt2 serve: $why"
else
    KEY=sk-test-$RANDOM$RANDOM
    # with a draft, plain decoding's answers (the oracle is generate's without one): the model's int8 copy; the
    # model itself, forced to draft 3 tokens a step (each kept); a random model of another shape, forced to draft
    "$GPT2" train --layers 1 --heads 1 --channels 32 --seq-len 64 --steps 0 --train "$T/prose_train.bin" --val '' \
        --sample-tokens 0 --out $T/d >/dev/null 2>&1 || fail "a random draft"
    for conf in "fp32" "int8" "fp32 --draft int8" "fp32 --draft-model $T/m --draft-min 3" \
        "fp32 --draft-model $T/d --draft-min 2"; do
        precision=${conf%% *} flags=(${conf#$precision}) name=$(echo "$conf" | tr -c 'a-z0-9\n' _)
        drafts=${flags:+drafts} conf=${conf//$T/\$T}
        [ "${flags[1]:-}" = $T/m ] && drafts=drafts-all-kept
        if [ ! -d $T/gen_$precision ] && ! gen_oracle $T/gen_$precision --precision $precision; then
            fail "generate's greedy text for the oracle ($precision)"
            continue
        fi
        serve_start open_$name --model $T/m --port 0 --parallel 4 --precision $precision "${flags[@]}" &&
            URL=$SERVE_URL PID=$SERVE_PID &&
            serve_start keyed_$name --model $T/m --port 0 --api-key $KEY --precision $precision "${flags[@]}" &&
            KEYED=$SERVE_URL KPID=$SERVE_PID || { fail "starting the servers ($conf)"; continue; }
        echo "# $conf: $URL, and $KEYED with --api-key"
        node_checks "OpenAI's client ($conf)" timeout 200 node tests/node/openai_client.mjs $URL $KEYED $KEY m \
            $T/gen_$precision $MAX $drafts
        check "... the servers ($conf) still run after the client's checks" kill -0 $PID $KPID
        serve_kill_all
    done
fi

# --- 2. the chat page in headless Chromium ----------------------------------------------------------------------
CHROMIUM=${CHROMIUM:-chromium}
why=$(node_missing)
command -v "$CHROMIUM" >/dev/null || why=${why:-"$CHROMIUM not found: install Debian's chromium (bash scripts/install_deps.sh test)"}
if [ -n "$why" ]; then
    skip "the chat page in headless Chromium: $why"
elif serve_start page --model $T/m --port 0; then
    node_checks "the chat page" timeout 120 node tests/node/chat_page.mjs $SERVE_URL m $T/chat_page.png "$CHROMIUM"
    serve_kill_all
else
    fail "starting the server for the chat page"
fi

# --- 3. a bounded load ------------------------------------------------------------------------------------------
# 16 clients on 4 streams and 12 places in the queue: the n = 2 requests and the streams whose clients left (until
# the server sees them go) overflow it now and then, so some requests get 503. The memory bound: a stream's KV
# cache here is 64 KiB, so a leak of one per request left early (about 130 of them) would pass 4 MiB twice over.
# Again with a draft (the model's int8 copy): each stream's draft cache comes and goes with it.
why=$(node_missing)
for draft in "" "--draft int8"; do
    if [ -n "$why" ]; then
        skip "the load test${draft:+ ($draft)}: $why"
    elif serve_start load --model $T/m --port 0 --parallel 4 --max-queue 12 $draft; then
        echo "# CPU:$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2), $(nproc) CPUs, load average" \
            "$(cut -d' ' -f1-3 /proc/loadavg)"
        node_checks "load${draft:+ ($draft)}" timeout 320 node tests/node/serve_load.mjs $SERVE_URL $SERVE_PID 500 16 \
            $(under_asan && echo 0 || echo 4096)
        check "... the server still runs after the load${draft:+ ($draft)}" kill -0 $SERVE_PID
        serve_kill_all
    else
        fail "starting the server for the load test${draft:+ ($draft)}"
    fi
done

# --- 4. the draft's flags ---------------------------------------------------------------------------------------
E=(timeout -k 5 60 "$GPT2" serve --port 0)
check_error "--draft takes int8 alone" "bad value for --draft (serve): expected int8" "${E[@]}" --model $T/m --draft q4
check_error "--draft int8 with --precision int8" "conflicting flags (serve): --draft int8 drafts for an fp32 or bf16" \
    "${E[@]}" --model $T/m --draft int8 --precision int8
check_error "--draft with --draft-model" "conflicting flags (serve): give one of --draft" \
    "${E[@]}" --model $T/m --draft int8 --draft-model $T/d
check_error "--draft-max without a draft" "flag --draft-max (serve) needs --draft int8 or --draft-model" \
    "${E[@]}" --model $T/m --draft-max 2
check_error "--draft-min above --draft-max" "conflicting flags (serve): --draft-min 3 is more than --draft-max 2" \
    "${E[@]}" --model $T/m --draft int8 --draft-min 3 --draft-max 2
check_error "--draft-max past 8" "bad value for --draft-max (serve)" "${E[@]}" --model $T/m --draft int8 --draft-max 9
check_error "a missing --draft-model is said before the model is read (a missing --model too)" \
    "checkpoint not found ($T/none2)" "${E[@]}" --model $T/none --draft-model $T/none2
fixture_vocab=tests/fixtures/trained_tiny
check_error "--draft-model of another vocabulary" \
    "bad value for --draft-model (serve): $fixture_vocab has a vocabulary of 1000 tokens, expected the model's 50257" \
    "${E[@]}" --model $T/m --draft-model $fixture_vocab

summary
