#!/usr/bin/env bash
# ref_model.sh (make test-ref): regenerates reference models and dumps with PyTorch (scripts/reference.py)
# and checks `gpt2 compare` and `gpt2 eval` against them:
#   * tiny geometry, full 50257 vocabulary: logits, loss, every gradient and all 10 AdamW losses;
#   * the same tiny reference in llm.c's debug-state format with an llm.c model: compare passes, and the
#     10 AdamW losses it prints equal PyTorch's;
#   * 1,400 rows, more than the head takes at a time (1,024: core/model.h), with a loss mask: logits and
#     dlogits of the rows the head keeps, loss, every gradient and 2 AdamW losses;
#   * the full 124M geometry (12 layers, 768 channels, 12 heads, B=4, T=64): logits, loss, every gradient
#     and 3 AdamW losses (the reference computes no more). Later steps are not asserted at 1e-5: the trajectory is
#     ill-conditioned there: on this dump PyTorch's own fp32 run departs from the float64 reference by
#     1.3e-5 .. 7.5e-5 at steps 3..9, and perturbing the float64 gradients by 5e-7 of each tensor's max
#     (the size of any fp32 implementation's error) moves those losses by up to 1.9e-4. Adam turns each
#     near-zero gradient element into a full +-lr step whose sign is decided below fp32 resolution.
#     The 124M reference also passes in llm.c's format (gpt2_124M_debug_state.bin with gpt2_124M.bin), and
#     with --precision bf16 against the bf16 bars (compare_cmd.cpp) on a CPU with AVX512_BF16.
#   * eval loss of a HuggingFace-layout checkpoint against the PyTorch model, within 1e-5, over 8 batches
#     and over every token of the file (--batches all);
#   * greedy generation past the context against PyTorch's cropped-window continuation;
#   * a NO_OMP=1 build (at -O1) builds and passes compare too.
source "$(dirname "$0")/lib.sh"
PY=${PYTHON:-/usr/bin/python3}
REF="$PY scripts/reference.py"
W=${GPT2_REF_DIR:-$TEST_TMP}

$REF --layers 2 --heads 4 --channels 64 --vocab 50257 --seq-len 64 -B 2 -T 16 --seed 3 \
    --model-out "$W/tiny/model" --dump-out "$W/tiny/dump.safetensors" \
    --llmc-dump-out "$W/tiny/state.bin" --llmc-model-out "$W/tiny/model.bin" >/dev/null
check "tiny full-vocab config: compare (all 10 AdamW steps)" "$GPT2" compare --model "$W/tiny/model" --ref "$W/tiny/dump.safetensors"
cat "$TEST_TMP/out" | grep -E '^(logits|loss|adamw.loss\[9\])'
# The same reference in llm.c's debug-state format, with the llm.c model: compare passes, and --steps 10
# prints the 10 AdamW losses of the safetensors dump (PyTorch's torch.optim.AdamW) within 1e-5.
llmc_steps() {
    "$GPT2" compare --model "$W/tiny/model.bin" --ref "$W/tiny/state.bin" --steps 10 >"$TEST_TMP/llmc" || return 1
    sed -n 's/^step \([0-9]*\): loss \(.*\)$/\2/p' "$TEST_TMP/llmc" >"$TEST_TMP/ours"
    "$PY" -c 'import sys; sys.path.insert(0, "scripts"); import safetensors_io
for v in safetensors_io.read(sys.argv[1])[0]["losses"]: print(repr(float(v)))' "$W/tiny/dump.safetensors" >"$TEST_TMP/theirs"
    paste "$TEST_TMP/ours" "$TEST_TMP/theirs"
    [ "$(wc -l <"$TEST_TMP/ours")" = 10 ] && awk '{ d = $1 - $2; if (d < 0) d = -d; if (d > 1e-5) bad = 1 } END { exit bad }' \
        <(paste "$TEST_TMP/ours" "$TEST_TMP/theirs")
}
check "tiny, llm.c dump and model: compare passes and prints PyTorch's 10 AdamW losses" llmc_steps

# 1,400 rows go through the head as 1,024 + 376; compare reads the last 376 rows' logits
$REF --layers 2 --heads 2 --channels 64 --vocab 300 --seq-len 1024 -B 2 -T 700 --seed 5 --steps 2 --masked \
    --model-out "$W/rows/model" --dump-out "$W/rows/dump.safetensors" >/dev/null
check "1,400 rows (the head's 1,024 at a time), masked: compare (logits, loss, every gradient, 2 AdamW steps)" \
    "$GPT2" compare --model "$W/rows/model" --ref "$W/rows/dump.safetensors" --steps 2
grep -E '^(logits|dlogits|grad.wte)' "$TEST_TMP/out"
rm -rf "$W/rows"

$REF --layers 12 --heads 12 --channels 768 --vocab 50257 --seq-len 1024 -B 4 -T 64 --seed 0 --steps 3 \
    --model-out "$W/124m/model" --dump-out "$W/124m/dump.safetensors" \
    --llmc-dump-out "$W/124m/state.bin" --llmc-model-out "$W/124m/model.bin" >/dev/null
check "124M geometry: compare (logits, loss, every gradient, 3 AdamW steps)" \
    "$GPT2" compare --model "$W/124m/model" --ref "$W/124m/dump.safetensors" --steps 3
sort -k3 -g "$TEST_TMP/out" | grep ' rel ' | tail -3
check "124M geometry, llm.c's dump format and an llm.c model (gpt2_124M.bin's layout): compare" \
    "$GPT2" compare --model "$W/124m/model.bin" --ref "$W/124m/state.bin"
sort -k3 -g "$TEST_TMP/out" | grep ' rel ' | tail -2
# bf16 matmuls against the same float64 reference: every gradient at cosine >= 0.999, losses within 5e-3
if grep -q avx512_bf16 /proc/cpuinfo; then
    check "124M geometry, --precision bf16: compare (cosine >= 0.999, losses within 5e-3, 3 AdamW steps)" \
        "$GPT2" compare --model "$W/124m/model" --ref "$W/124m/dump.safetensors" --steps 3 --precision bf16
    sort -k3 -g "$TEST_TMP/out" | grep ' cos ' | head -3
    grep -E '^(loss|adamw)' "$TEST_TMP/out"
else
    skip "124M --precision bf16: this CPU has no AVX512_BF16"
fi
rm -rf "$W/124m"

# eval on real text when the data is there (make data), else on a Markov-chain token file
if [ -f data/tinyshakespeare/val.bin ]; then DATA=data/tinyshakespeare/val.bin; else
    DATA="$W/markov.bin"
    $REF --vocab 50257 --markov-tokens 20000 --tokens-out "$DATA" >/dev/null
fi
want=$($REF --layers 2 --heads 4 --channels 64 --vocab 50257 --seq-len 64 -B 4 -T 64 --seed 3 \
    --model-out "$W/tiny/model" --eval-data "$DATA" --eval-batches 8 | grep -o 'loss [0-9.]*' | cut -d' ' -f2)
got=$("$GPT2" eval --model "$W/tiny/model" --data "$DATA" -B 4 -T 64 --batches 8 | tail -1 | cut -d' ' -f2)
check "eval matches PyTorch within 1e-5 on $DATA ($got vs $want)" \
    awk -v a="$got" -v b="$want" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a != "" && d <= 1e-5) }'

# eval --batches all: every token of the file, against the reference's windows of T (the last one shorter),
# on the file's first 5,000 tokens (a file of its own: all of val.bin cost 40 s for the same check)
"$PY" -c 'import sys; sys.path.insert(0, "scripts"); import reference as r
r.write_tokens(sys.argv[2], r.read_tokens(sys.argv[1])[:5000])' "$DATA" "$W/first5000.bin"
want=$($REF --layers 2 --heads 4 --channels 64 --vocab 50257 --seq-len 64 -T 64 --seed 3 \
    --model-out "$W/tiny/model" --eval-data "$W/first5000.bin" --eval-batches 0 |
    grep -o 'loss [0-9.]*' | cut -d' ' -f2)
got=$("$GPT2" eval --model "$W/tiny/model" --data "$W/first5000.bin" -B 4 -T 64 --batches all | tail -1 | cut -d' ' -f2)
check "eval --batches all matches PyTorch within 1e-5 on all of $DATA's first 5,000 tokens ($got vs $want)" \
    awk -v a="$got" -v b="$want" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a != "" && d <= 1e-5) }'

# Generation past the context: PyTorch's greedy continuation, each pass on the last maxT tokens (nanoGPT's
# crop), regenerated; it must equal ours and the committed fixture cli_model.sh uses.
$REF --model-in tests/fixtures/trained_tiny --layers 2 --heads 2 --channels 32 --vocab 1000 --seq-len 32 \
    --greedy-prompt 0 --greedy-tokens 200 --greedy-out "$W/greedy_slide.txt" >/dev/null
check "greedy past the context: the reference regenerates greedy_slide.txt" cmp "$W/greedy_slide.txt" tests/fixtures/trained_tiny/greedy_slide.txt
check "greedy past the context equals PyTorch's cropped-window continuation (200 tokens, context 32)" \
    cmp <("$GPT2" generate --model tests/fixtures/trained_tiny --prompt-ids 0 --temperature 0 --max-tokens 200 --ids 2>/dev/null) "$W/greedy_slide.txt"

# A build without OpenMP (tests/tests.mk's build-noomp-test), at -O1: two thirds of -O3's compile time, and
# compare holds it to the same bars. No jobserver reaches a suite: its own -j.
noomp_compare() {
    make -s -j"${JOBS:-$(nproc)}" build-noomp-test &&
        build/noomp-test/gpt2 compare --model "$W/tiny/model" --ref "$W/tiny/dump.safetensors"
}
check "NO_OMP=1 build (-O1) builds and passes compare" noomp_compare
summary
