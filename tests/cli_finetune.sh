#!/usr/bin/env bash
# cli_finetune.sh: scripts/finetune.sh, README's fine-tuning example, runs as written: in a scratch tree (this
# gpt2, tests/fixtures/instruct, the tokenizer, a stand-in for make) on a random full-vocabulary base, it
# tokenizes the instruction set with loss masks, prints the base's answer, trains a LoRA adapter that leaves
# the base's file untouched, prints the adapted answer, writes the PEFT directory and the GGUF adapter, and
# run again continues the adapter's run; without a base it stops with one error line.
source "$(dirname "$0")/lib.sh"
TOK_DIR=${GPT2_DATA_DIR:-data}/gpt2
if [ ! -f $TOK_DIR/encoder.json ] || [ ! -f data/tinyshakespeare/train.bin ]; then
    skip "scripts/finetune.sh: no tokenizer in $TOK_DIR or no data/tinyshakespeare (make data)"
    summary; exit
fi
F=$TEST_TMP/ft
mkdir -p $F/scripts $F/bin $F/data $F/tests/fixtures
cp scripts/finetune.sh $F/scripts/ && cp -r tests/fixtures/instruct $F/tests/fixtures/
printf '#!/bin/sh\n' >$F/bin/make && chmod +x $F/bin/make
ln -s "$(cd "$(dirname "$GPT2")" && pwd)/$(basename "$GPT2")" $F/gpt2
ln -s "$(cd $TOK_DIR && pwd)" $F/data/gpt2
"$GPT2" train --train data/tinyshakespeare/train.bin --val "" --layers 2 --heads 2 --channels 64 --seq-len 128 \
    --steps 0 --sample-tokens 0 --out $F/base >/dev/null 2>&1
cp $F/base/model.safetensors $TEST_TMP/base_before.safetensors
finetune() { (cd $F && PATH=$F/bin:$PATH exec timeout -k 10 900 env BASE=base STEPS=${1:-6} bash scripts/finetune.sh) >$F/log 2>&1; }
check "scripts/finetune.sh runs (exit 0)" finetune
grep -v '^step' $F/log | tail -4 | sed 's/^/    /'
check "... tokenizes the instruction set with a loss mask beside each token file" \
    test -s $F/out/finetune/sft_train.mask -a -s $F/out/finetune/sft_val.mask
check "... prints the base's answer, then the adapted one" \
    eval 'grep -q "^---- before" $F/log && grep -A30 "^---- after" $F/log | grep -q "^lora: out/finetune/adapter"'
check "... trains only the adapter (the loss masks on, the base frozen)" \
    eval 'grep -q "^loss: on the answers only" $F/log && grep -q "^lora: rank 16, alpha 32" $F/log'
check "... leaves the base's weights as they were, byte for byte" cmp $F/base/model.safetensors $TEST_TMP/base_before.safetensors
check "... writes the adapter in PEFT's layout and as llama.cpp's GGUF adapter" test -s $F/out/finetune/adapter/adapter_config.json \
    -a -s $F/out/finetune/adapter/adapter_model.safetensors -a -s $F/out/finetune/adapter.gguf
check "run again with more steps, it continues the adapter's run" finetune 8
check "... and says so" grep -q "^finetune: out/finetune/adapter holds an earlier run: continuing it" $F/log
check "... to the new step count" grep -q "^saved out/finetune/adapter at step 8, the last" $F/log
check "... says whether val loss rose or fell, with both values (the log holds two runs' validations)" \
    grep -Eq "^finetune: val loss (rose|fell or held), [0-9.]+ -> [0-9.]+" $F/log
question=$(grep -A3 "^---- before" $F/log | sed -n 's/^User: //p')
check "... asks a question the instruction set does not hold ($question)" \
    eval '[ -n "$question" ] && ! grep -qF "$question" $F/tests/fixtures/instruct/*.jsonl'
cp -r $F/base $F/base2 && cp $F/out/finetune/adapter/adapter_model.safetensors $TEST_TMP/adapter_before
(cd $F && PATH=$F/bin:$PATH exec timeout -k 10 300 env BASE=base2 STEPS=10 bash scripts/finetune.sh) >$F/log 2>&1
rc=$?
check "run again with another BASE on the same OUT, it stops with one error line naming OUT and both bases" \
    eval '[ $rc = 1 ] && [ "$(grep -c "^error: out/finetune holds an adapter trained on $F/base, not on BASE=base2" $F/log)" = 1 ]'
check "... and leaves the adapter as it was" cmp $F/out/finetune/adapter/adapter_model.safetensors $TEST_TMP/adapter_before
rm -rf $F/out
(cd $F && PATH=$F/bin:$PATH exec timeout -k 10 300 env BASE=nowhere bash scripts/finetune.sh) >$F/log 2>&1
rc=$?
check "without a base model it stops with exit 1 and one error line naming BASE" \
    eval '[ $rc = 1 ] && [ "$(grep -c "^error: no base model at nowhere (BASE)" $F/log)" = 1 ]'
# data/gpt2 holds the tokenizer alone (make data puts it there): without BASE, not taken for a model.
(cd $F && PATH=$F/bin:$PATH exec timeout -k 10 300 env -u BASE bash scripts/finetune.sh) >$F/log 2>&1
rc=$?
check "without BASE, a data/gpt2 of tokenizer files alone is no base: one error line, with the quick start as the way" \
    eval '[ $rc = 1 ] && [ "$(grep -c "^error: no base model: data/gpt2 holds no checkpoint" $F/log)" = 1 ] && grep -q "^hint: .*quickstart.sh" $F/log'
mkdir -p $F/out && cp -r $F/base $F/out/shakespeare
(cd $F && PATH=$F/bin:$PATH exec timeout -k 10 900 env -u BASE STEPS=4 bash scripts/finetune.sh) >$F/log 2>&1
rc=$?
check "... and with the quick start's out/shakespeare there, it fine-tunes that, saying so" \
    eval '[ $rc = 0 ] && grep -q "^finetune: no GPT-2 checkpoint in data/gpt2, so the base is out/shakespeare" $F/log'
# A run that fails before training ties OUT to no base: the next run, on another base, goes on.
rm -rf $F/out
(cd $F && PATH=$F/bin:$PATH exec timeout -k 10 300 env BASE=base2 DATA='nothing/*.jsonl' bash scripts/finetune.sh) >$F/log 2>&1
rc=$?
check "DATA matching no file: one error line naming DATA" \
    eval '[ $rc = 1 ] && [ "$(grep -c "^error: no file matches nothing/\*.jsonl (DATA)" $F/log)" = 1 ]'
mkdir -p "$F/my data" && cp $F/tests/fixtures/instruct/*.jsonl "$F/my data/" && ln -s base $F/baselink
(cd $F && PATH=$F/bin:$PATH exec timeout -k 10 900 env BASE=base DATA='my data/*.jsonl' STEPS=2 bash scripts/finetune.sh) >$F/log 2>&1
rc=$?
check "... and the same OUT then fine-tunes another base, from a DATA glob with a space in it" \
    eval '[ $rc = 0 ] && grep -q "^tokenized 60 examples" $F/log'
(cd $F && PATH=$F/bin:$PATH exec timeout -k 10 900 env BASE=baselink STEPS=3 bash scripts/finetune.sh) >$F/log 2>&1
check "a link to the same base is the same base: the adapter's run goes on" grep -q "holds an earlier run: continuing it" $F/log
printf 'notes\n' >$F/notes.txt
(cd $F && PATH=$F/bin:$PATH exec timeout -k 10 300 env BASE=notes.txt OUT=out/n bash scripts/finetune.sh) >$F/log 2>&1
check "a text file is no base model" grep -q "^error: no base model at notes.txt (BASE)" $F/log
# ---- red team rt_lora (its numbers): DATA changed in one OUT, relative paths, a short base, OUT a file
ft() { local dir=$1; shift; (cd "$dir" && PATH=$F/bin:$PATH exec timeout -k 10 900 env "$@" bash $F/scripts/finetune.sh) >$F/log 2>&1; }
mkdir -p $F/dA $F/dB && cp $F/tests/fixtures/instruct/alpaca.jsonl $F/dA/ && cp $F/tests/fixtures/instruct/{alpaca,chat}.jsonl $F/dB/
ft $F BASE=base OUT=out/d DATA='dA/*.jsonl' STEPS=1
check "4: (a run on DATA A: 20 examples)" grep -q "^tokenized 20 examples" $F/log
rm -rf $F/out/d/adapter*  # start over, as the script says
ft $F BASE=base OUT=out/d DATA='dB/*.jsonl' STEPS=1
check "4: run again in that OUT on another DATA, it tokenizes the new DATA, saying so (not the old set's tokens)" \
    eval 'grep -q "^finetune: DATA=dB/\*.jsonl is not what .* was tokenized from" $F/log && grep -q "^tokenized 40 examples" $F/log'
ft $F BASE=base OUT=out/d DATA='dA/*.jsonl' STEPS=2
rc=$?
check "4: ... and with OUT/adapter trained on it, another DATA is refused, one error line naming OUT's adapter and DATA" \
    eval '[ $rc = 1 ] && [ "$(grep -c "^error: $F/out/d/adapter holds a run trained on other data than DATA=dA/\*.jsonl" $F/log)" = 1 ]'
mkdir -p $F/cwd && cp -r $F/base $F/cwd/b && cp -r $F/dA $F/cwd/dA
ft $F/cwd BASE=b OUT=o DATA='dA/*.jsonl' STEPS=1
rc=$?
check "10: relative BASE, OUT and DATA are read from the directory the script is run in" \
    eval '[ $rc = 0 ] && test -s $F/cwd/o/adapter/adapter_model.safetensors -a ! -e $F/o'
"$GPT2" train --train data/tinyshakespeare/train.bin --val "" --layers 2 --heads 2 --channels 64 --seq-len 64 \
    --steps 0 --sample-tokens 0 --out $F/base64 >/dev/null 2>&1
ft $F BASE=base64 OUT=out/c64 STEPS=1
rc=$?
check "11: a base of context 64 (below the script's -T 128): one error line naming BASE and both numbers" \
    eval '[ $rc = 1 ] && [ "$(grep -c "^error: BASE=base64 has a context of 64 tokens: .*-T 128" $F/log)" = 1 ] && [ "$(grep -c "^error" $F/log)" = 1 ]'
printf 'mine\n' >$F/ofile
ft $F BASE=base OUT=ofile STEPS=1
rc=$?
check "11: OUT an existing file: one error line naming OUT, and the file left as it was" \
    eval '[ $rc = 1 ] && [ "$(grep -c "^error: OUT=$F/ofile exists and is not a directory" $F/log)" = 1 ] && [ "$(cat $F/ofile)" = mine ]'
summary
