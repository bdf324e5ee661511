#!/usr/bin/env bash
# cli_lora_formats.sh: LoRA adapters in and out of `gpt2 export` on committed fixtures: tests/fixtures/peft_tiny
# (PEFT's directory as scripts/peft_adapter.py writes it: r 4, alpha 8, c_attn, c_proj and c_fc, B non-zero) over
# tests/fixtures/trained_tiny (2 layers, 32 channels). The round trip to the same bytes, the GGUF adapter, the merge
# into every format export writes, and one error line naming the file or flag for every defect of the adapter's
# files and every misuse of the flags. tests/ref_lora.sh checks the numbers against PyTorch and llama.cpp.
source "$(dirname "$0")/lib.sh"
T=$TEST_TMP
BASE=tests/fixtures/trained_tiny
FIX=tests/fixtures/peft_tiny
TOK=${GPT2_DATA_DIR:-data}/gpt2
export_ad() { "$GPT2" export --model $BASE --lora-from "$@"; }

# ---- what works
export_ad $FIX --format peft --out $T/rt >/dev/null
check "PEFT's directory read and written again: adapter_config.json has the same bytes" \
    cmp $FIX/adapter_config.json $T/rt/adapter_config.json
check "... and adapter_model.safetensors has the same bytes" cmp $FIX/adapter_model.safetensors $T/rt/adapter_model.safetensors
check "export --lora-from --format gguf writes a GGUF adapter" export_ad $FIX --format gguf --out $T/ad.gguf
check "... and replaces a GGUF adapter it wrote" export_ad $FIX --format gguf --out $T/ad.gguf
check_error "... which is not a model: info says so" "not a model ($T/ad.gguf): a LoRA adapter" \
    "$GPT2" info --model $T/ad.gguf

check_error "an adapter directory given as --model: the error says what it is" \
    "not a model ($FIX): a PEFT adapter directory" "$GPT2" export --model $FIX --format gguf --out $T/x.gguf

# The merge, into each format: the same merged model (eval's loss equal to the digit), not the base.
loss() { "$GPT2" eval --model "$1" --data tests/fixtures/tokens_v1000.bin -B 1 -T 31 --batches 2 2>/dev/null | sed -n 's/^loss //p'; }
export_ad $FIX --merge-lora --out $T/m_hf >/dev/null
export_ad $FIX --merge-lora --format llmc --out $T/m.bin >/dev/null
if [ -f "$TOK/encoder.json" ]; then
    export_ad $FIX --merge-lora --format gguf --tokenizer "$TOK" --out $T/m.gguf >/dev/null
fi
merged_agree() {  # $1 "gguf": the GGUF too
    local hf llmc gguf base
    hf=$(loss $T/m_hf) llmc=$(loss $T/m.bin) base=$(loss $BASE)
    gguf=$([ "${1:-}" = gguf ] && loss $T/m.gguf)
    echo "merged: hf $hf, llmc $llmc, gguf ${gguf:-not written}; base $base"
    [ -n "$hf" ] && [ "$hf" = "$llmc" ] && [ "$hf" != "$base" ] && { [ "${1:-}" != gguf ] || [ "$hf" = "$gguf" ]; }
}
if [ -f "$TOK/encoder.json" ]; then
    check "export --merge-lora to hf, llmc and gguf: the same merged model (eval's losses equal), not the base" \
        merged_agree gguf
else
    check "export --merge-lora to hf and llmc: the same merged model (eval's losses equal), not the base" merged_agree
    skip "export --merge-lora to gguf (no tokenizer at $TOK/encoder.json)"
fi
sed 's/^/    /' $T/out
zero_b() {  # an adapter whose B is zero merges to the base exactly (PEFT's init: a no-op)
    mkdir -p $T/zero && cp $FIX/adapter_config.json $T/zero/
    "$GPT2" export --model $BASE --lora-from $FIX --format peft --out $T/zero_src >/dev/null
    # zero every lora_B's bytes: the data of each tensor whose name has lora_B (offsets from the header)
    local n hdr
    n=$(od -An -tu8 -N8 $FIX/adapter_model.safetensors | tr -d ' ')
    hdr=$(dd if=$FIX/adapter_model.safetensors bs=1 skip=8 count=$n 2>/dev/null)
    cp $FIX/adapter_model.safetensors $T/zero/
    grep -o '"[^"]*lora_B[^"]*":{[^}]*}' <<<"$hdr" | grep -o 'data_offsets":\[[0-9]*,[0-9]*' | grep -o '[0-9]*,[0-9]*' |
        while IFS=, read b e; do
            dd if=/dev/zero of=$T/zero/adapter_model.safetensors bs=1 seek=$((8 + n + b)) count=$((e - b)) conv=notrunc 2>/dev/null
        done
    "$GPT2" export --model $BASE --lora-from $T/zero --merge-lora --format llmc --out $T/zero.bin >/dev/null &&
        "$GPT2" export --model $BASE --format llmc --out $T/base.bin >/dev/null && cmp $T/zero.bin $T/base.bin
}
check "an adapter whose B is zero merges to the base, byte for byte" zero_b

# ---- the adapter's files: one error line naming the file
# broken NAME SED: a copy of the fixture with SED applied to its adapter_config.json, in $T/NAME
broken() {
    rm -rf "$T/$1" && cp -r $FIX "$T/$1" && sed -i "$2" "$T/$1/adapter_config.json"
}
check_error "--lora-from a missing directory" "adapter not found ($T/none)" export_ad $T/none --format gguf --out $T/x.gguf
broken noconf 's/x/x/' && rm $T/noconf/adapter_config.json
check_error "no adapter_config.json" "missing $T/noconf/adapter_config.json" export_ad $T/noconf --format gguf --out $T/x.gguf
broken nost 's/x/x/' && rm $T/nost/adapter_model.safetensors
check_error "no adapter_model.safetensors" "missing $T/nost/adapter_model.safetensors" \
    export_ad $T/nost --format gguf --out $T/x.gguf
broken badjson 's/"r": 4,/"r": 4/'
check_error "malformed JSON" "malformed JSON in $T/badjson/adapter_config.json" export_ad $T/badjson --format gguf --out $T/x.gguf
broken latin1 's/"gpt2"/"caf\xe9"/'
check_error "a config that is not UTF-8" "bad adapter config ($T/latin1/adapter_config.json): byte [0-9]* is not UTF-8" \
    export_ad $T/latin1 --format gguf --out $T/x.gguf
broken loha 's/"peft_type": "LORA"/"peft_type": "LOHA"/'
check_error "peft_type other than LORA" 'peft_type is "LOHA", expected "LORA"' export_ad $T/loha --format gguf --out $T/x.gguf
broken bigr 's/"r": 4,/"r": 40,/'
check_error "a rank larger than the base's matrices" "bad value for key r in $T/bigr/adapter_config.json: 40, expected at most 32" \
    export_ad $T/bigr --format gguf --out $T/x.gguf
broken r2 's/"r": 4,/"r": 2,/'
check_error "a rank the tensors do not have" "shape mismatch for tensor .* in $T/r2/adapter_model.safetensors: expected \[2, 32\]" \
    export_ad $T/r2 --format gguf --out $T/x.gguf
broken rzero 's/"r": 4,/"r": 0,/'
check_error "rank 0" "bad value for key r in $T/rzero/adapter_config.json: expected an integer in \[1, 1.*\], got 0" export_ad $T/rzero --format gguf --out $T/x.gguf
for rule in 's/"bias": "none"/"bias": "all"/:bias' 's/"modules_to_save": null/"modules_to_save": ["lm_head"]/:modules_to_save' \
    's/"use_dora": false/"use_dora": true/:use_dora' 's/"rank_pattern": {}/"rank_pattern": {"c_attn": 8}/:rank_pattern' \
    's/"alpha_pattern": {}/"alpha_pattern": {"c_attn": 8}/:alpha_pattern' 's/"lora_bias": false/"lora_bias": true/:lora_bias' \
    's/"layers_to_transform": null/"layers_to_transform": [0]/:layers_to_transform' \
    's/"init_lora_weights": true/"init_lora_weights": "pissa"/:init_lora_weights'; do
    broken "${rule##*:}" "${rule%:*}"
    check_error "${rule##*:} that changes the math is refused" "unsupported value for key ${rule##*:} in $T/${rule##*:}/adapter_config.json: expected .*, got " \
        export_ad $T/${rule##*:} --format gguf --out $T/x.gguf
done
check_error "... naming the value found" 'key modules_to_save in .*: expected null (no fully trained modules), got \["lm_head"\]$' \
    export_ad $T/modules_to_save --format gguf --out $T/x.gguf
broken fifo 's/"fan_in_fan_out": true/"fan_in_fan_out": false/'
check "fan_in_fan_out false is read as PEFT reads it (set true for Conv1D): the same adapter" \
    export_ad $T/fifo --format gguf --out $T/fifo.gguf
broken lmhead 's/"c_fc"/"lm_head"/'
check_error "a target gpt2 cannot adapt (lm_head)" '"lm_head" selects lm_head, expected only attn.c_attn' \
    export_ad $T/lmhead --format gguf --out $T/x.gguf
broken onelayer 's/"c_fc"/"h.0.mlp.c_fc"/'
check_error "a target in some layers only" '"h.0.mlp.c_fc" selects mlp.c_fc in 1 of 2 layers, expected every layer' \
    export_ad $T/onelayer --format gguf --out $T/x.gguf
broken layers 's/"c_fc"/"h.0.mlp.c_fc", "h.1.mlp.c_fc"/'
check "targets naming every layer one by one (their union is every layer, as PEFT adapts it): the same adapter" \
    export_ad $T/layers --format gguf --out $T/layers.gguf
broken regex ':a;N;$!ba;s/"target_modules": \[[^]]*\]/"target_modules": ".*c_attn"/'
check_error "target_modules as a regular expression" "target_modules in $T/regex/adapter_config.json: a regular expression" \
    export_ad $T/regex --format gguf --out $T/x.gguf
broken nomatch ':a;N;$!ba;s/"target_modules": \[[^]]*\]/"target_modules": ["q_proj"]/'
check_error "targets that match no layer" "target_modules in $T/nomatch/adapter_config.json: expected names of GPT-2's" \
    export_ad $T/nomatch --format gguf --out $T/x.gguf
broken extra ':a;N;$!ba;s/"target_modules": \[[^]]*\]/"target_modules": ["c_attn"]/'
check_error "a tensor the config does not target" "unexpected tensor base_model.model.transformer.h.0.attn.c_proj.lora_A.weight in $T/extra/adapter_model.safetensors" \
    export_ad $T/extra --format gguf --out $T/x.gguf
"$GPT2" train --layers 3 --heads 2 --channels 32 --seq-len 32 --vocab 1000 -T 16 -B 1 --steps 0 \
    --train tests/fixtures/tokens_v1000.bin --out $T/base3 >/dev/null 2>&1
check_error "an adapter of fewer layers than the base" "missing tensor base_model.model.transformer.h.2.attn.c_attn.lora_A.weight in $FIX/adapter_model.safetensors: expected \[4, 32\]" \
    "$GPT2" export --model $T/base3 --lora-from $FIX --format gguf --out $T/x.gguf
"$GPT2" train --layers 2 --heads 2 --channels 64 --seq-len 32 --vocab 1000 -T 16 -B 1 --steps 0 \
    --train tests/fixtures/tokens_v1000.bin --out $T/base64 >/dev/null 2>&1
check_error "an adapter of another width" "shape mismatch for tensor base_model.model.transformer.h.0.attn.c_attn.lora_A.weight in $FIX/adapter_model.safetensors: expected \[4, 64\]" \
    "$GPT2" export --model $T/base64 --lora-from $FIX --format gguf --out $T/x.gguf
broken i32 's/x/x/' && sed -i '0,/"dtype":"F32"/s//"dtype":"I32"/' $T/i32/adapter_model.safetensors
check_error "a dtype other than F32, F16 or BF16" "unsupported dtype for tensor .* ($T/i32/adapter_model.safetensors): expected F32, F16 or BF16, got I32" \
    export_ad $T/i32 --format gguf --out $T/x.gguf
broken nan 's/x/x/'
printf '\x00\x00\xc0\x7f' | dd of=$T/nan/adapter_model.safetensors bs=1 seek=$(($(stat -c %s $FIX/adapter_model.safetensors) - 4)) conv=notrunc 2>/dev/null
check_error "a NaN in the weights" "non-finite value in $T/nan/adapter_model.safetensors: .*lora_B.weight\[.*\] is nan" \
    export_ad $T/nan --format gguf --out $T/x.gguf
broken short 's/x/x/' && truncate -s -4 $T/short/adapter_model.safetensors
check_error "a truncated adapter_model.safetensors" "corrupt safetensors file ($T/short/adapter_model.safetensors)" \
    export_ad $T/short --format gguf --out $T/x.gguf
broken alpha0 's/"lora_alpha": 8,/"lora_alpha": 0,/'
check_error "alpha 0 (a scale of 0; llama.cpp would read it as scale 1) is refused, as train refuses it" \
    "bad value for key lora_alpha in $T/alpha0/adapter_config.json: expected a number above 0" \
    export_ad $T/alpha0 --format gguf --out $T/alpha0.gguf

# ---- the flags
check_error "--merge-lora without --lora-from" "missing flag --lora-from (export)" \
    "$GPT2" export --model $BASE --merge-lora --out $T/y
check_error "--lora-from without --model" "missing flag --model (export): .*with --lora-from, the base the adapter fits" \
    "$GPT2" export --lora-from $FIX --format gguf --out $T/x.gguf
check_error "... with --format peft too" "missing flag --model (export)" "$GPT2" export --lora-from $FIX --format peft --out $T/y
check_error "--lora-from with --format hf and no --merge-lora" "bad value for --format (export): hf with --lora-from" \
    export_ad $FIX --out $T/y
check_error "--format peft without --lora-from" "bad value for --format (export): expected hf, llmc or gguf (peft: with --lora-from)" \
    "$GPT2" export --model $BASE --format peft --out $T/y
check_error "--merge-lora with --format peft" "bad value for --format (export): expected hf, llmc or gguf" \
    export_ad $FIX --merge-lora --format peft --out $T/y
check_error "an adapter at --dtype f16" "bad value for --dtype (export): expected f32 for an adapter, got f16" \
    export_ad $FIX --format gguf --dtype f16 --out $T/x.gguf
check_error "--tokenizer with an adapter" "conflicting flags (export): expected no --tokenizer with an adapter (it stores none), got --tokenizer $T" \
    export_ad $FIX --format gguf --tokenizer $T --out $T/x.gguf
echo mine >$T/user.gguf
check_error "a GGUF adapter never replaces a file gpt2 did not write" "$T/user.gguf exists and is not a GGUF adapter gpt2 wrote" \
    export_ad $FIX --format gguf --out $T/user.gguf
check "... which stays as it was" grep -qx mine $T/user.gguf
if [ -f $T/m.gguf ]; then
    check_error "... nor a model GGUF gpt2 wrote" "$T/m.gguf exists and is not a GGUF adapter gpt2 wrote" \
        export_ad $FIX --format gguf --out $T/m.gguf
fi
cp $T/ad.gguf $T/ad_before.gguf
check_error "a model GGUF never replaces a GGUF adapter gpt2 wrote" "$T/ad.gguf exists and is not a model GGUF gpt2 wrote" \
    "$GPT2" export --model $BASE --format gguf --out $T/ad.gguf
check "... which stays as it was" cmp $T/ad_before.gguf $T/ad.gguf
check_error "--format peft never replaces a directory (PEFT's files do not say who wrote them)" \
    "bad value for --out (export): $T/rt holds adapter_config.json, expected a new or empty directory" \
    export_ad $FIX --format peft --out $T/rt
check "... which stays as it was" cmp $FIX/adapter_model.safetensors $T/rt/adapter_model.safetensors
summary
