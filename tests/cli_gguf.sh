#!/usr/bin/env bash
# cli_gguf.sh: GGUF end to end on the committed tiny model (no Python, no llama.cpp; tests/ref_gguf.sh runs
# the files in the real llama.cpp): export at every dtype, info, generate and eval from the file equal to
# the source at f32, a GGUF -> HuggingFace round trip byte for byte, fine-tuning from a GGUF, and the
# one-line errors for bad dtypes, files that are not GPT-2, broken headers and outputs gpt2 did not write.
source "$(dirname "$0")/lib.sh"
SRC=tests/fixtures/trained_tiny
TOK=tests/fixtures/tokens_v1000.bin
T=$TEST_TMP

# A 40-byte file whose header claims 16,777,215 tensors: every command that reads a GGUF header refuses it
# at once with one line, in bounded memory (400 MB of address space; it used to take 1.3 GB).
printf 'GGUF\003\000\000\000\377\377\377\000\000\000\000\000' >$T/claims.gguf && head -c 24 /dev/zero >>$T/claims.gguf
cp $T/claims.gguf $T/claims.orig
vlimit="ulimit -v 400000;"
under_asan && vlimit=""  # AddressSanitizer reserves more address space than any limit allows
claims="corrupt GGUF file ($T/claims.gguf): header claims 16777215 tensors, expected at most 0 in the 16 bytes"
check_error "info on a 40-byte GGUF claiming 16777215 tensors" "$claims" \
    bash -c "$vlimit exec timeout 20 '$GPT2' info --model $T/claims.gguf"
check_error "generate on it" "$claims" bash -c "$vlimit exec timeout 20 '$GPT2' generate --model $T/claims.gguf --prompt-ids 1"
check_error "export --out over it (its header is read to see who wrote it)" "$T/claims.gguf exists and is not a model GGUF gpt2 wrote" \
    bash -c "$vlimit exec timeout 20 '$GPT2' export --model $SRC --format gguf --out $T/claims.gguf"
check "... which is untouched" cmp $T/claims.gguf $T/claims.orig

TOKDIR=${GPT2_DATA_DIR:-data}/gpt2
if [ ! -f "$TOKDIR/encoder.json" ]; then
    skip "GGUF export stores GPT-2's tokenizer: set GPT2_DATA_DIR to the directory holding gpt2/"; summary; exit
fi

for d in f32 f16 bf16 q8_0; do
    check "export --format gguf --dtype $d" "$GPT2" export --model $SRC --format gguf --dtype $d --out $T/m_$d.gguf
done
check "info reads a GGUF (format, geometry)" \
    bash -c "'$GPT2' info --model $T/m_q8_0.gguf | grep -qx 'format: gguf v3' && '$GPT2' info --model $T/m_q8_0.gguf | grep -q 'vocab 1000 (padded 1024)'"
check "... and names its dtype" bash -c "'$GPT2' info --model $T/m_q8_0.gguf | grep -qx 'dtype: Q8_0, 1-D tensors F32 (fp32 in memory)'"
check "the q8_0 file is under half the f32 one (the tokenizer's 40 KB included)" \
    test $(($(stat -c %s $T/m_q8_0.gguf) * 2)) -le $(stat -c %s $T/m_f32.gguf)

gen() { "$GPT2" generate --model "$1" --prompt-ids 1,2,3 --max-tokens 24 --seed 5 --ids "${@:2}" 2>/dev/null; }
gen8() { gen "$1" --temperature 0 --precision int8; }
check "generate from the f32 GGUF gives the source's tokens" eval '[ -n "$(gen $T/m_f32.gguf)" ] && [ "$(gen $T/m_f32.gguf)" = "$(gen $SRC)" ]'
ev() { "$GPT2" eval --model "$1" --data $TOK -T 32 2>/dev/null | grep -o 'loss [0-9.]*'; }
check "eval on the f32 GGUF gives the source's loss" eval '[ -n "$(ev $SRC)" ] && [ "$(ev $T/m_f32.gguf)" = "$(ev $SRC)" ]'
# --precision int8 quantizes the weights as q8_0 export does, and rounds each product's input to q8_0 blocks as
# llama.cpp does: the same on the model and on its q8_0 file (rounding q8_0's values again changes none), not
# the q8_0 file's loss at fp32 (inputs kept fp32), and close to fp32's
ev8() { "$GPT2" eval --model "$1" --data $TOK -T 32 --precision int8 2>/dev/null | grep -o 'loss [0-9.]*'; }
check "eval --precision int8 gives the same loss on the model and on its q8_0 GGUF" \
    eval '[ -n "$(ev8 $SRC)" ] && [ "$(ev8 $SRC)" = "$(ev8 $T/m_q8_0.gguf)" ]'
check "... not the q8_0 GGUF's at fp32, nor fp32's (the inputs are rounded to q8_0 blocks too)" \
    eval '[ "$(ev8 $SRC)" != "$(ev $T/m_q8_0.gguf)" ] && [ "$(ev8 $SRC)" != "$(ev $SRC)" ]'
check "... within 1% of the fp32 loss" \
    awk -v a="$(ev8 $SRC | cut -d' ' -f2)" -v b="$(ev $SRC | cut -d' ' -f2)" 'BEGIN { d = a - b; exit !(a > 0 && (d < 0 ? -d : d) <= 0.01 * b) }'
check "generate --precision int8 says what it quantized" \
    bash -c "'$GPT2' generate --model $SRC --prompt-ids 1,2,3 --max-tokens 4 --ids --precision int8 2>&1 >/dev/null | grep -q 'precision: int8, 10 of 10 weight matrices in q8_0 blocks.*their inputs rounded to q8_0 blocks too'"
check "... and gives the same greedy tokens from the model and from its q8_0 GGUF" \
    eval '[ -n "$(gen8 $SRC)" ] && [ "$(gen8 $SRC)" = "$(gen8 $T/m_q8_0.gguf)" ]'
check_error "train --precision int8" "bad value for --precision (train): expected fp32 or bf16, got 'int8'" \
    "$GPT2" train --train $TOK --val $TOK --precision int8 --steps 1 --out $T/never8
check_error "generate --precision int4" "bad value for --precision (generate): expected fp32, bf16 or int8, got 'int4'" \
    "$GPT2" generate --model $SRC --precision int4 --prompt-ids 1
"$GPT2" export --model $SRC --out $T/hf_direct >/dev/null
"$GPT2" export --model $T/m_f32.gguf --out $T/hf_via_gguf >/dev/null
check "HuggingFace -> GGUF f32 -> HuggingFace gives the same model.safetensors, byte for byte" \
    cmp $T/hf_direct/model.safetensors $T/hf_via_gguf/model.safetensors
check "train --model FILE.gguf fine-tunes from it" "$GPT2" train --model $T/m_bf16.gguf --train $TOK --val $TOK -B 2 -T 16 \
    --steps 2 --val-every 2 --sample-tokens 0 --out $T/tuned
check "... and saves a checkpoint that loads" "$GPT2" info --model $T/tuned

check_error "--dtype q8_0 with --format hf" "q8_0 is for --format gguf" \
    "$GPT2" export --model $SRC --format hf --dtype q8_0 --out $T/never
check_error "--dtype q4_0" "bad value for --dtype (export): expected f32, f16, bf16 or q8_0" \
    "$GPT2" export --model $SRC --format gguf --dtype q4_0 --out $T/never.gguf
check_error "--tokenizer with --format llmc" "--tokenizer is for --format gguf" \
    "$GPT2" export --model $SRC --format llmc --tokenizer $T --out $T/never.bin
check "... and nothing was written" test ! -e $T/never -a ! -e $T/never.gguf -a ! -e $T/never.bin

# The tokenizer travels with the model: away from the repository, with GPT2_DATA_DIR unset, a GGUF's own
# tokenizer (this one: the first 1000 of GPT-2's tokens) serves generate, eval --hellaswag and train's samples,
# and export --format hf stores it (vocab.json + merges.txt) for the export to serve the same.
mkdir -p $T/away
ABS=$(cd "$(dirname "$GPT2")" && pwd)/$(basename "$GPT2")
away() { (cd $T/away && env -u GPT2_DATA_DIR timeout 300 "$ABS" "$@"); }
text() { away generate --model "$1" --prompt "To be, or not" --max-tokens 12 --seed 3; }
text $T/m_f32.gguf >$T/own.out 2>$T/own.err
check "generate --prompt from a GGUF, away from data/gpt2, with its own tokenizer" grep -q '^To be, or not' $T/own.out
check "... and says so in one line" grep -qx "tokenizer: $T/m_f32.gguf (the model's own)" $T/own.err
away eval --model $T/m_f32.gguf --hellaswag $(pwd)/tests/fixtures/hellaswag/mini.jsonl >$T/hs.out 2>&1  # context 32: too short
check "eval --hellaswag on a GGUF, away from data/gpt2, encodes with its tokenizer" \
    grep -qx "tokenizer: $T/m_f32.gguf (the model's own)" $T/hs.out
away train --model $T/m_f32.gguf --train $(pwd)/$TOK --val '' -B 2 -T 16 --steps 1 --sample-tokens 4 --out $T/away/s \
    >$T/train.out 2>&1
rc=$?
check "train --model FILE.gguf samples with the file's tokenizer (its 1000 tokens hold no <|endoftext|>), exit $rc" \
    bash -c "test $rc = 0 && grep -qx 'tokenizer: $T/m_f32.gguf (the model'\''s own)' $T/train.out && grep -q '^---- sample ----' $T/train.out"
mv $T/m_f32.gguf $T/m_moved.gguf  # a resume reads its own checkpoint, not the --model it began from
away train --resume $T/away/s --steps 2 >$T/resume.out 2>&1
check "... and its --resume goes on after that file has moved" grep -q "^saved $T/away/s at step 2" $T/resume.out
mv $T/m_moved.gguf $T/m_f32.gguf
away export --model $T/m_f32.gguf --out $T/hf_tok >/dev/null 2>&1
check "export --format hf from a GGUF, away from data/gpt2, stores its tokenizer" test "$(ls $T/hf_tok | tr '\n' ' ')" = \
    "config.json merges.txt model.safetensors special_tokens_map.json tokenizer_config.json vocab.json "
text $T/hf_tok >$T/hf.out 2>$T/hf.err
check "... which generate reads back from the export alone, to the same text" \
    bash -c "grep -q '^To be, or not' $T/hf.out && cmp $T/hf.out $T/own.out"
check "... saying whose tokenizer it used" grep -qx "tokenizer: $T/hf_tok (the model's own)" $T/hf.err
cp -r $T/hf_tok $T/hf_half && rm $T/hf_half/merges.txt
check_error "an HF directory with vocab.json but no merges.txt, away from data/gpt2, names the missing file" \
    "tokenizer merges not found ($T/hf_half/merges.txt)" away generate --model $T/hf_half --prompt hi --max-tokens 2
"$GPT2" generate --model $T/hf_tok --prompt hi --max-tokens 2 2>$T/wins.err >/dev/null
check "the model's own tokenizer wins over GPT2_DATA_DIR's (50257 tokens; the model has 1000)" \
    grep -qx "tokenizer: $T/hf_tok (the model's own)" $T/wins.err
check_error "an explicit --tokenizer wins over the model's own" \
    "tokenizer and model disagree ($TOKDIR): tokenizer has 50257 tokens, model 1000" \
    "$GPT2" generate --model $T/m_f32.gguf --tokenizer $TOKDIR --prompt hi
"$GPT2" train --train $TOK --val '' --vocab 50304 --layers 1 --heads 1 --channels 8 --seq-len 16 -T 16 --steps 0 \
    --sample-tokens 0 --out $T/v50304 >/dev/null 2>&1
"$GPT2" export --model $T/v50304 --out $T/v50304_hf >$T/v50304.out 2>&1
check "export --format hf of a model with more tokens than the default tokenizer: the weights alone, with a note" \
    bash -c "grep -q 'has 50257 tokens, the model 50304: exporting without tokenizer files' $T/v50304.out &&
             test \"\$(ls $T/v50304_hf | tr '\n' ' ')\" = 'config.json model.safetensors '"

# Broken and foreign files, made from a good one by replacing bytes of the same length (perl -pe on raw bytes).
patch() { perl -0777 -pe "s/$2/$3/" "$1"; }
patch $T/m_f32.gguf 'general.architecture\x08\x00\x00\x00\x04\x00\x00\x00\x00\x00\x00\x00gpt2' \
    'general.architecture\x08\x00\x00\x00\x04\x00\x00\x00\x00\x00\x00\x00gptj' >$T/gptj.gguf
check_error "a GGUF of another architecture" "not a GPT-2 model ($T/gptj.gguf): general.architecture is \"gptj\"" \
    "$GPT2" info --model $T/gptj.gguf
patch $T/m_f32.gguf 'gpt2.block_count' 'gpt2.block_cnt__' >$T/nokey.gguf
check_error "a GGUF without gpt2.block_count" "missing key gpt2.block_count in $T/nokey.gguf" \
    "$GPT2" generate --model $T/nokey.gguf --prompt-ids 1 --max-tokens 1
head -c $(($(stat -c %s $T/m_f32.gguf) - 100)) $T/m_f32.gguf >$T/cut.gguf
check_error "a truncated GGUF" "corrupt GGUF file ($T/cut.gguf): tensor output_norm.bias's data lies past the end" \
    "$GPT2" eval --model $T/cut.gguf --data $TOK
patch $T/m_f32.gguf 'attn_qkv.weight' 'attn_qkv.wEIGHT' >$T/unknown.gguf
check_error "a GGUF with a tensor GPT-2 does not have" "missing tensor blk.0.attn_qkv.weight in $T/unknown.gguf" \
    "$GPT2" info --model $T/unknown.gguf

# Outputs: only a GGUF gpt2 wrote is replaced.
printf 'my notes\n' >$T/notes.gguf
check_error "export over a file that is not a GGUF" "exists and is not a model GGUF gpt2 wrote" \
    "$GPT2" export --model $SRC --format gguf --out $T/notes.gguf
check "... which is untouched" grep -qx 'my notes' $T/notes.gguf
perl -0777 -pe 's/gpt2cpp\.writer\x08\x00\x00\x00\x08\x00\x00\x00\x00\x00\x00\x00gpt2\.cpp/gpt2cpp.writer\x08\x00\x00\x00\x08\x00\x00\x00\x00\x00\x00\x00llama.cp/' \
    $T/m_f32.gguf >$T/theirs.gguf
cp $T/theirs.gguf $T/theirs.orig
check_error "export over a GGUF another tool wrote" "exists and is not a model GGUF gpt2 wrote" \
    "$GPT2" export --model $SRC --format gguf --out $T/theirs.gguf
check "... which is untouched" cmp $T/theirs.gguf $T/theirs.orig
check "export over its own GGUF replaces it" "$GPT2" export --model $SRC --format gguf --dtype q8_0 --out $T/m_f32.gguf
check "... now q8_0" bash -c "'$GPT2' info --model $T/m_f32.gguf | grep -q 'dtype: Q8_0'"
check_error "export onto the GGUF it reads" "input" "$GPT2" export --model $T/m_q8_0.gguf --format gguf --out $T/m_q8_0.gguf
summary
