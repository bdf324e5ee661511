#!/usr/bin/env bash
# cli_serve_red_team.sh: `gpt2 serve` under hostile clients and operators (issue 58), on a tiny model, over loopback:
#   * requests (tests/node/serve_red_team.mjs, raw sockets): malformed and hostile JSON, every field with a wrong
#     type, every bound on both sides, stop strings, logprobs and echo as lm-eval-harness sends them, the API key's
#     header in every shape, Host headers of other sites (DNS rebinding), methods and paths, HTTP abuse (slow
#     clients, floods past --max-connections, pipelining, clients leaving a stream at every moment): each answered
#     with its status and OpenAI's error object naming the field, the server answering after each group, its memory
#     and descriptors bounded;
#   * signals: SIGINT, SIGTERM and SIGHUP while streams run stop the server within seconds, each client answered
#     (a stream ended by an error event and [DONE], a waiting request by a 503), exit 128 + the signal;
#   * flags: --host, --api-key and --allow-unauthenticated together, and every bad value, refused in one line.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/serve_lib.sh"
T=$TEST_TMP
need_tokenizer
serve_model $T/m || fail "training the tiny model"

# --- 1. hostile requests -----------------------------------------------------------------------------------------
why=$(node_missing)
if [ -n "$why" ]; then
    skip "hostile requests to gpt2 serve: $why"
else
    # a model whose likeliest tokens are bytes that are not UTF-8 on their own (trained on such bytes alone)
    perl -e 'srand(1); print join("", map { chr(0x80 + int(rand(128))) } 1..20000)' >$T/bytes.txt
    "$GPT2" tokenize $T/bytes.txt -o $T/bytes --val-tokens 256 >/dev/null 2>&1 &&
        "$GPT2" train --layers 1 --heads 2 --channels 32 --seq-len 32 -B 8 -T 32 --steps 30 --lr 5e-2 --warmup 0 \
            --train $T/bytes_train.bin --val '' --sample-tokens 0 --out $T/bytes >/dev/null 2>&1 ||
        fail "training the model of bytes"
    KEY=sk-red-$RANDOM$RANDOM
    serve_start open --model $T/m --port 0 --parallel 2 && URL=$SERVE_URL PID=$SERVE_PID &&
        serve_start keyed --model $T/m --port 0 --api-key $KEY && KEYED=$SERVE_URL &&
        serve_start small --model $T/m --port 0 --parallel 1 --max-queue 4 --max-connections 4 --timeout 1 \
            --max-body 4096 && SMALL=$SERVE_URL &&
        serve_start bytes --model $T/bytes --port 0 && BYTES=$SERVE_URL || fail "starting the servers"
    if [ -n "${BYTES:-}" ]; then
        node_checks "" timeout 450 node tests/node/serve_red_team.mjs $URL $KEYED $KEY $SMALL $BYTES $PID 64 \
            $(under_asan && echo asan)
        check "the four servers still run after every hostile request" kill -0 "${SERVE_PIDS[@]}"
        # a clean stop after it all (under make test SAN=1: LeakSanitizer's report at exit, if any, is on stderr)
        for name in open keyed small bytes; do
            serve_stop "${SERVE_PIDS[0]}"
            rc=$?
            SERVE_PIDS=("${SERVE_PIDS[@]:1}")
            check "... then SIGTERM stops the $name server: exit 143 (got $rc), no sanitizer report" \
                eval "test $rc = 143 && ! grep -E 'Sanitizer|runtime error' $T/$name.err"
        done
    fi
    serve_kill_all
fi

# --- 1b. a reply's last bytes -------------------------------------------------------------------------------------
# A model trained on <|endoftext|> and the byte 0xE2 in turn: greedy, it answers 0xE2 (the first byte of a character
# that never comes), then <|endoftext|>. generate prints the byte; the reply must keep it too (U+FFFD in JSON).
perl -e 'print pack("l<3", 20240520, 1, 2000) . ("\0" x 1012) . pack("S<*", (50256, 158) x 1000)' >$T/eot.bin
"$GPT2" train --layers 1 --heads 2 --channels 32 --seq-len 32 -B 8 -T 32 --steps 30 --lr 5e-2 --warmup 0 \
    --train $T/eot.bin --val '' --sample-tokens 0 --out $T/eot >/dev/null 2>&1 || fail "training the model of 0xE2"
"$GPT2" generate --model $T/eot --prompt-ids 50256 --temperature 0 --max-tokens 5 --no-prompt >$T/eot.gen 2>/dev/null
check "(the model of 0xE2: generate answers the byte, then <|endoftext|>)" test "$(od -An -tx1 $T/eot.gen | tr -d ' ')" = e20a
if serve_start eot --model $T/eot --port 0; then
    for stream in false true; do
        curl -s -m 10 $SERVE_URL/v1/completions -d "{\"prompt\": [50256], \"max_tokens\": 5, \"temperature\": 0, \"stream\": $stream}" |
            grep -o '"text":"[^"]*"\|"finish_reason":"[a-z]*"' | tr '\n' ' ' >$T/eot.$stream
        check "a reply of a lone 0xE2, then <|endoftext|> (stream $stream): the byte kept, as generate prints it ($(cat $T/eot.$stream))" \
            grep -qx '"text":"\\ufffd" "finish_reason":"stop" *' $T/eot.$stream
    done
    serve_kill_all
else
    fail "starting the server of the model of 0xE2"
fi

# --- 2. signals while streams run ----------------------------------------------------------------------------
# A model slow enough (4 layers of 512 channels; under AddressSanitizer, itself 10 times slower, 2 of 256) that 16
# choices of 60 tokens on one stream take seconds: a client streams them, and once its first event has come another
# waits for 16 more (queued behind). The signal comes then: the server stops within seconds, the stream ends with an
# error event and [DONE] (a whole answer to curl), the waiting client gets a 503, and the exit status is 128 + the
# signal, as every command's (platform/signals.h).
SLOW=(--layers 4 --heads 4 --channels 512)
under_asan && SLOW=(--layers 2 --heads 4 --channels 256)
"$GPT2" train "${SLOW[@]}" --seq-len 64 -B 4 -T 64 --steps 1 --train $T/prose_train.bin --val '' --sample-tokens 0 \
    --out $T/slow >/dev/null 2>&1 || fail "training the slow model"
signal_stops() {  # signal_stops SIG CODE
    local sig=$1 code=$2 i rc t0 ms url pid stream whole
    serve_start sig_$sig --model $T/slow --port 0 --parallel 1 || { fail "starting the server for SIG$sig"; return; }
    url=$SERVE_URL pid=$SERVE_PID
    curl -sN -m 60 $url/v1/completions -d '{"prompt": "a", "n": 16, "max_tokens": 60, "stream": true}' \
        >$T/sig_stream_$sig.out 2>&1 &
    stream=$!
    for ((i = 0; i < 300; i++)); do grep -q '^data: ' $T/sig_stream_$sig.out 2>/dev/null && break; sleep 0.1; done
    curl -s -m 60 -w '\n%{http_code}' $url/v1/completions -d '{"prompt": "b", "n": 16, "max_tokens": 60}' \
        >$T/sig_whole.out 2>&1 &
    whole=$!
    sleep 0.5
    t0=$(date +%s%N)
    kill -$sig $pid
    wait_bounded $pid 20
    rc=$?
    ms=$((($(date +%s%N) - t0) / 1000000))
    check "SIG$sig while streams run: exit $code (got $rc) within 5 s (took $ms ms)" test $rc = $code -a $ms -lt 5000
    check "... saying so on stderr" grep -q "^stopped by SIG$sig: 2 requests under way told so" $T/sig_$sig.err
    wait_bounded $stream 10
    check "... the stream ends whole (curl exit $?): an error event saying the server stops, then [DONE]" \
        eval "grep -q 'server is stopping' $T/sig_stream_$sig.out && grep -v '^$' $T/sig_stream_$sig.out | tail -1 | grep -qx 'data: \[DONE\]'"
    wait_bounded $whole 10
    check "... the request waiting for its whole answer gets a 503 saying so (curl exit $?)" \
        eval "tail -1 $T/sig_whole.out | grep -qx 503 && grep -q 'server is stopping' $T/sig_whole.out"
}
signal_stops INT 130
signal_stops TERM 143
signal_stops HUP 129
if serve_start idle --model $T/m --port 0; then
    exec 7<>/dev/tcp/127.0.0.1/${SERVE_URL##*:}  # a client holding a connection open, sending nothing
    t0=$(date +%s%N)
    kill -TERM $SERVE_PID
    wait_bounded $SERVE_PID 20
    rc=$?
    exec 7<&-
    check "SIGTERM with a client holding an idle connection: exit 143 (got $rc) within 2 s" \
        test $rc = 143 -a $((($(date +%s%N) - t0) / 1000000)) -lt 2000
fi

# --- 3. flags ----------------------------------------------------------------------------------------------------
S=(timeout 20 "$GPT2" serve --model $T/m --port 0)  # bounded: a server that starts where it should not fails the test
for host in 0.0.0.0 192.168.0.1 10.1.2.3; do
    check_error "--host $host without --api-key is refused" \
        "bad value for --host (serve): $host is reachable from other machines, and no --api-key was given" "${S[@]}" --host $host
done
for host in ::1 "" 127.1 localhost.example.com 127.0.0.256 "0.0.0.0 " 1.2.3.4.5; do
    check_error "--host '$host' is refused: not localhost or an IPv4 address" \
        "bad value for --host (serve): expected localhost or an IPv4 address (a.b.c.d), got '$host'" "${S[@]}" --host "$host"
done
for flag in "--port -1" "--port 65536" "--parallel 0" "--parallel 65" "--max-queue 0" "--max-queue 65537" "--max-body 1023" \
    "--max-body 1073741825" "--max-connections 0" "--max-connections 65537" "--timeout 0" "--timeout -1" "--timeout 86401"; do
    check_error "$flag is refused" "bad value for ${flag% *} (serve): expected " "${S[@]}" $flag
done
for flag in "--port x" "--port 1.5" "--parallel two" "--timeout nan" "--timeout inf" "--max-body 1e6"; do
    check_error "$flag is refused" "malformed value for ${flag% *} (serve)" "${S[@]}" $flag
done
check_error "--api-key '' is refused" "empty value for --api-key (serve)" "${S[@]}" --api-key ""
for k in "k " " k" "a b" $'k\n' $'k\t' "ké"; do
    check_error "--api-key $(printf %q "$k") is refused: no request could send it" \
        "bad value for --api-key (serve): expected printable ASCII without spaces" "${S[@]}" --api-key "$k"
done
check_error "--allow-unauthenticated=1 is refused" "takes no value" "${S[@]}" --allow-unauthenticated=1
check_error "an unknown flag is refused" "unknown flag --frobnicate (serve)" "${S[@]}" --frobnicate
check_error "a --model that does not exist is refused" "checkpoint not found (/nonexistent" timeout 20 "$GPT2" serve --model /nonexistent
check_error "a --tokenizer that does not exist is refused" "tokenizer directory not found" "${S[@]}" --tokenizer /nonexistent
check_error "no --model is refused" "--model" timeout 20 "$GPT2" serve --port 0
if serve_start busy --model $T/m --port 0; then
    check_error "a --port in use is refused, naming it" "cannot listen on 127.0.0.1:${SERVE_URL##*:}: Address already in use" \
        timeout 20 "$GPT2" serve --model $T/m --port ${SERVE_URL##*:}
    serve_kill_all
fi
for host in localhost 127.0.0.2; do
    if serve_start host_$host --model $T/m --port 0 --host $host; then
        check "--host $host (loopback) serves without a key" eval "curl -s -m 10 $SERVE_URL/health | grep -q ok"
    else fail "--host $host (loopback) serves without a key"; fi
    serve_kill_all
done
# Every address (0.0.0.0) only inside a network namespace of its own, whose one interface is its loopback: the test
# stays on loopback whatever it binds. $T/netns.sh: starts the server there, asks /v1/models without and with a key.
netns() { unshare -n bash -c 'ip link set lo up && "$@"' netns "$@"; }
if ! netns true 2>/dev/null; then
    skip "--host 0.0.0.0 with --api-key or --allow-unauthenticated: no network namespace here (unshare -n needs root)"
else
    printf '%s\n' 'out=$2.$$.out' 'timeout 30 "$1" serve --model "$2" --port 0 --host 0.0.0.0 "${@:3}" >$out 2>&1 &' \
        'for ((i = 0; i < 300; i++)); do url=$(grep -o "http://0.0.0.0:[0-9]*" $out) && break; sleep 0.1; done' \
        'curl -s -m 10 -o /dev/null -w "%{http_code} " "${url/0.0.0.0/127.0.0.1}/v1/models"' \
        'curl -s -m 10 -o /dev/null -w "%{http_code}\n" -H "Authorization: Bearer k1" "${url/0.0.0.0/127.0.0.1}/v1/models"' \
        'kill %1; wait' >$T/netns.sh
    check "--host 0.0.0.0 --api-key k1: 401 without the key, 200 with it" \
        eval "netns timeout 60 bash $T/netns.sh '$GPT2' $T/m --api-key k1 | grep -qx '401 200'"
    check "--host 0.0.0.0 --allow-unauthenticated: 200 without a key" \
        eval "netns timeout 60 bash $T/netns.sh '$GPT2' $T/m --allow-unauthenticated | grep -qx '200 200'"
fi

summary
