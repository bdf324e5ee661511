#!/usr/bin/env bash
# ref_lora.sh (make test-ref): LoRA adapters against PyTorch and llama.cpp. A random base (2 layers, 64 channels,
# context 128, GPT-2's vocabulary; scripts/random_checkpoint.py) and adapters written as PEFT writes them
# (scripts/peft_adapter.py: every key of PEFT's config, tensors by name; r 4 on c_attn, c_proj and c_fc, that is
# all four Conv1D layers, with B drawn non-zero).
# Checks:
#   * PEFT's directory read and written again by `gpt2 export --format peft` has the same bytes;
#   * `export --merge-lora` equals a float64 PyTorch merge of the same directory, max|ours-ref|/max|ref| per
#     merged tensor within 1e-6 (measured 5e-8: float32 rounding of the sum), for alpha / r and for rslora, and
#     for adapters stored F16 and BF16;
#   * llama.cpp (node-llama-cpp, tests/node/llama_oracle.mjs --lora) with our base GGUF plus our GGUF adapter gives
#     the greedy tokens and the per-token losses of llama.cpp on our merged GGUF, and of gpt2 on the merged model,
#     within ref_gguf.sh's f32 bar (1e-5 of the mean loss; measured 1.3e-6 per token), rslora too; and the base alone
#     does not (the check can tell).
source "$(dirname "$0")/lib.sh"
PY=${PYTHON:-/usr/bin/python3}
ORACLE=(node tests/node/llama_oracle.mjs)
if [ -n "${GPT2_DATA_DIR:-}" ]; then DATA=$GPT2_DATA_DIR; else DATA=data; fi
T=$TEST_TMP
missing=""
if [ ! -f tests/node/node_modules/node-llama-cpp/package.json ]; then
    missing="npm package node-llama-cpp missing from tests/node/node_modules: run \`make node-deps\`"
elif ! "$PY" -c 'import numpy, torch' 2>/dev/null; then
    missing="$PY cannot import numpy and torch"
elif [ ! -f "$DATA/gpt2/encoder.json" ] || [ ! -f "$DATA/tinyshakespeare.txt" ]; then
    missing="tokenizer files or tiny shakespeare not found: set GPT2_DATA_DIR and run \`make data\`"
fi
if [ -n "$missing" ]; then
    fail "$missing"
    summary; exit 1
fi
export GPT2_DATA_DIR=$DATA

"$PY" scripts/random_checkpoint.py --layers 2 --heads 2 --channels 64 --seq-len 128 --seed 3 --out $T/base >/dev/null
"$PY" scripts/peft_adapter.py make $T/ad --base $T/base --r 4 --alpha 8 --targets c_attn,c_proj,c_fc >/dev/null
"$PY" scripts/peft_adapter.py make $T/rs --base $T/base --r 4 --alpha 8 --targets c_attn,c_proj,c_fc --rslora --seed 2 >/dev/null
for d in f16 bf16; do  # stored narrower, read through the safetensors hooks (widened exactly)
    "$PY" scripts/peft_adapter.py make $T/$d --base $T/base --r 8 --alpha 16 --targets c_attn,mlp.c_proj --dtype $d --seed 4 >/dev/null
done

# The round trip, on the directory PyTorch wrote.
"$GPT2" export --model $T/base --lora-from $T/ad --format peft --out $T/ad_rt >/dev/null
check "PEFT directory written by PyTorch, read and written again: adapter_config.json has the same bytes" \
    cmp $T/ad/adapter_config.json $T/ad_rt/adapter_config.json
check "... and adapter_model.safetensors has the same bytes" \
    cmp $T/ad/adapter_model.safetensors $T/ad_rt/adapter_model.safetensors

# The merge against PyTorch's, in float64.
for a in ad rs f16 bf16; do
    "$GPT2" export --model $T/base --lora-from $T/$a --merge-lora --out $T/${a}_merged >/dev/null
    check "export --merge-lora ($a): every merged tensor within 1e-6 of a float64 PyTorch merge, the rest unchanged" \
        "$PY" scripts/peft_adapter.py merge-check $T/base $T/$a $T/${a}_merged --bar 1e-6
    sed 's/^/    /' $TEST_TMP/out | tail -3
done

# llama.cpp: the base GGUF plus our adapter against the merged GGUF.
head -c 1500 "$DATA/tinyshakespeare.txt" >$T/val.txt
"$GPT2" tokenize --ids $T/val.txt | cut -d' ' -f1-128 >$T/ids
"$GPT2" tokenize $T/val.txt -o $T/v --val-tokens 128 >/dev/null 2>&1
PROMPT=$(cut -d' ' -f1-8 $T/ids | tr ' ' ,)
"$GPT2" export --model $T/base --format gguf --out $T/base.gguf >/dev/null
for a in ad rs; do
    "$GPT2" export --model $T/base --lora-from $T/$a --format gguf --out $T/$a.gguf >/dev/null
    "$GPT2" export --model $T/base --lora-from $T/$a --merge-lora --format gguf --out $T/${a}_merged.gguf >/dev/null
    [ -n "$(llama_oracle_unusable)" ] && continue
    "${ORACLE[@]}" eval $T/base.gguf --ids-file $T/ids --lora $T/$a.gguf >$T/$a.llama_adapter.json
    "${ORACLE[@]}" eval $T/${a}_merged.gguf --ids-file $T/ids >$T/$a.llama_merged.json
done
[ -n "$(llama_oracle_unusable)" ] || "${ORACLE[@]}" eval $T/base.gguf --ids-file $T/ids >$T/base.llama.json

# per_token A.json B.json BAR: the per-token losses agree, max_t |a_t - b_t| / mean loss <= BAR (printed).
per_token() {
    node -e '
        const [a, b] = [process.argv[1], process.argv[2]].map((f) => JSON.parse(require("fs").readFileSync(f)));
        let d = 0;
        a.nll.forEach((x, t) => { d = Math.max(d, Math.abs(x - b.nll[t])); });
        const r = d / b.mean_nll;
        console.log(`${a.nll.length} positions: max |diff| ${d.toExponential(2)}, / mean loss ${b.mean_nll.toFixed(6)} = ${r.toExponential(2)} (bar ${process.argv[3]})`);
        process.exit(a.nll.length === b.nll.length && a.nll.length > 100 && r <= Number(process.argv[3]) ? 0 : 1);' "$@"
}
for a in ad rs; do
    oracle_check "llama.cpp, base + our $a.gguf adapter: per-token losses within 1e-5 of llama.cpp on our merged GGUF" \
        per_token $T/$a.llama_adapter.json $T/$a.llama_merged.json 1e-5
    sed 's/^/    /' $TEST_TMP/out
done
oracle_check "... and the base alone is not (the check can tell: over 1e-2)" \
    eval '! per_token $T/base.llama.json $T/ad.llama_merged.json 1e-2'
sed 's/^/    /' $TEST_TMP/out
close_to_ours() {
    local ours theirs
    ours=$("$GPT2" eval --model $T/ad_merged.gguf --data $T/v_val.bin -B 1 -T 127 --batches 1 2>/dev/null | sed -n 's/^loss //p')
    theirs=$(grep -o '"mean_nll":[-0-9.e]*' $T/ad.llama_adapter.json | cut -d: -f2)
    awk -v a="$ours" -v b="$theirs" 'BEGIN { if (a == "" || b == "") exit 1; d = (a - b) / a; if (d < 0) d = -d;
        printf "gpt2 %.6f, llama.cpp + adapter %.6f: |diff| / loss = %.2e (bar 1e-5)\n", a, b, d; exit !(d <= 1e-5) }'
}
oracle_check "gpt2 eval of the merged model: mean loss within 1e-5 of llama.cpp's with the adapter" close_to_ours
sed 's/^/    /' $TEST_TMP/out

greedy_agree() {
    local ours adapter merged base
    ours=$("$GPT2" generate --model $T/ad_merged.gguf --prompt-ids $PROMPT --max-tokens 32 --temperature 0 --ids --ignore-eos 2>/dev/null)
    adapter=$("${ORACLE[@]}" generate $T/base.gguf --prompt-ids $PROMPT --n 32 --lora $T/ad.gguf)
    merged=$("${ORACLE[@]}" generate $T/ad_merged.gguf --prompt-ids $PROMPT --n 32)
    base=$("${ORACLE[@]}" generate $T/base.gguf --prompt-ids $PROMPT --n 32)
    echo "gpt2, merged:          $ours"
    echo "llama.cpp, + adapter:  $adapter"
    echo "llama.cpp, merged:     $merged"
    echo "llama.cpp, base alone: $base"
    [ "$(wc -w <<<"$ours")" = 32 ] && [ "$ours" = "$adapter" ] && [ "$ours" = "$merged" ] && [ "$ours" != "$base" ]
}
oracle_check "greedy tokens: llama.cpp with the adapter = llama.cpp on the merged GGUF = gpt2 on the merged model (not the base's)" \
    greedy_agree
sed 's/^/    /' $TEST_TMP/out
summary
