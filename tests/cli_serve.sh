#!/usr/bin/env bash
# cli_serve.sh: `gpt2 serve` checked by real clients (issue 58), on a tiny model trained here, over loopback:
#   * OpenAI's official client (npm openai, tests/node/openai_client.mjs): completions and chat, streamed and not,
#     usage, n > 1, stop strings, 400/401/404, and greedy decoding equal to `gpt2 generate --temperature 0` for
#     the same prompt ids, several prompts streaming at once (batched), in fp32 and int8;
#   * headless Chromium (tests/node/chat_page.mjs): the chat page sends a message and shows the streamed reply,
#     equal to the API's own answer; a screenshot kept; no request leaves the server;
#   * a bounded load (tests/node/serve_load.mjs): 500 requests 16 at a time, some streamed, some dropped
#     mid-stream, a small --max-queue: 200s and the expected 503s only, the memory flat, the server answering after.
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
    for precision in fp32 int8; do
        if ! gen_oracle $T/gen_$precision --precision $precision; then
            fail "generate's greedy text for the oracle ($precision)"
            continue
        fi
        serve_start open_$precision --model $T/m --port 0 --parallel 4 --precision $precision &&
            URL=$SERVE_URL PID=$SERVE_PID &&
            serve_start keyed_$precision --model $T/m --port 0 --api-key $KEY --precision $precision &&
            KEYED=$SERVE_URL KPID=$SERVE_PID || { fail "starting the servers ($precision)"; continue; }
        echo "# $precision: $URL, and $KEYED with --api-key"
        node_checks "OpenAI's client ($precision)" timeout 200 node tests/node/openai_client.mjs $URL $KEYED $KEY m \
            $T/gen_$precision $MAX
        check "... the servers ($precision) still run after the client's checks" kill -0 $PID $KPID
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
why=$(node_missing)
if [ -n "$why" ]; then
    skip "the load test: $why"
elif serve_start load --model $T/m --port 0 --parallel 4 --max-queue 12; then
    echo "# CPU:$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2), $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
    node_checks "load" timeout 320 node tests/node/serve_load.mjs $SERVE_URL $SERVE_PID 500 16 $(under_asan && echo 0 || echo 4096)
    check "... the server still runs after the load" kill -0 $SERVE_PID
    serve_kill_all
else
    fail "starting the server for the load test"
fi

summary
