#!/usr/bin/env bash
# mpi.sh (make test-mpi, part of make check): data-parallel training under OpenMPI with the MPI=1 build
# ($GPT2_MPI), one OpenMP thread per rank:
#   * 2 ranks x B=2 give the losses (train and val) of 1 process x B=4 for 20 steps within 1e-5 relative,
#     and saved models that agree to the same tolerance (but for the keys' bias, see st_rel);
#   * a 2-rank run stopped at step 10 and resumed under mpirun continues exactly (same losses, same model);
#   * rank 0 alone writes: the log and the checkpoint, once;
#   * SIGTERM to one rank stops both after the same step, with rank 0's save;
#   * a NaN on one rank only (a model whose embedding of one token overflows, and a token file in which that
#     token appears only in rank 1's first windows) stops both with one error line and keeps the last good
#     checkpoint; a rank killed mid-run ends the job with a non-zero exit and the last checkpoint still loads;
#   * ranks started with different flags or data stop with an error saying they disagree, never hang;
#   * LoRA (the adapter's gradients summed) and loss masks (the scored targets counted over the ranks) give one
#     process's losses, and the same adapter, within 1e-5;
#   * a checkpoint resumes under another rank count keeping its global batch (2 -> 1, 2 -> 3, 3 -> 2,
#     ZeRO-1 too): the uninterrupted run's losses within 1e-6; one it cannot keep is refused, naming a
#     shape that would.
source "$(dirname "$0")/lib.sh"
MPIRUN=(mpirun --allow-run-as-root --oversubscribe -x OMP_NUM_THREADS=1)
export OMP_NUM_THREADS=1
if ! command -v mpirun >/dev/null; then
    fail "mpirun not found: install openmpi-bin libopenmpi-dev (bash scripts/install_deps.sh test)"
    summary; exit 1
fi
TOK=tests/fixtures/tokens_v1000.bin
TRAINED=tests/fixtures/trained_tiny
A=(train --model $TRAINED --train $TOK --val $TOK --val-every 10 --val-batches 4 -T 16 --sample-tokens 0
   --lr 3e-3 --warmup 2)
W=$TEST_TMP

# max |a - b| / max |b| over two safetensors files' data (the logs': rel_close in lib.sh)
# Model agreement, leaving out the keys' third of every c_attn.bias: its true gradient is zero (a bias on
# the keys adds the same q.b to every score of a query, which softmax ignores), so what it holds is
# rounding noise scaled up by Adam to +-lr steps, in any implementation: the same run in 1 and 2 threads
# agrees bit for bit, but 2 ranks (another summation order) move those 64 values by up to 5e-3 of the
# tensor's max while every other weight stays within 1e-5.
st_rel() {
    perl -e 'sub data { open(my $f, "<", $_[0]) or die "$_[0]"; binmode $f; local $/; my $b = <$f>;
                 my $n = unpack("Q<", substr($b, 0, 8)); return (substr($b, 8, $n), substr($b, 8 + $n)); }
             my ($ha, $da) = data($ARGV[0]); my ($hb, $db) = data($ARGV[1]);
             die "different tensors\n" if $ha ne $hb;
             my @a = unpack("f<*", $da); my @b = unpack("f<*", $db); my ($md, $mr, $skipped) = (0, 0, 0);
             my %skip;  # float indices of the keys third of each c_attn.bias
             while ($ha =~ /"[^"]*c_attn\.bias":\{"dtype":"F32","shape":\[(\d+)\],"data_offsets":\[(\d+),/g) {
                 my ($n3, $at) = ($1, $2 / 4); $skip{$_} = 1 for $at + $n3 / 3 .. $at + 2 * $n3 / 3 - 1; }
             for my $i (0 .. $#a) { if ($skip{$i}) { $skipped++; next; }
                 my $d = abs($a[$i] - $b[$i]); $md = $d if $d > $md; $mr = abs($b[$i]) if abs($b[$i]) > $mr; }
             printf("%d weights (%d key-bias values left out), max |a - b| / max |b| = %.3g\n", scalar(@a) - $skipped,
                    $skipped, $md / $mr); exit !(($skipped > 0 || $ENV{NO_KEY_BIAS}) && $md / $mr <= ($ENV{REL_TOL} || 1e-5));' "$1" "$2"
}

"$GPT2_MPI" "${A[@]}" -B 4 --steps 20 --log $W/one.jsonl --out $W/one >$W/one.out 2>&1
"${MPIRUN[@]}" -np 2 "$GPT2_MPI" "${A[@]}" -B 2 --steps 20 --log $W/two.jsonl --out $W/two >$W/two.out 2>&1
check "2 ranks x B=2: training exits 0" test -f $W/two/model.safetensors
log_losses $W/one.jsonl >$W/l1; log_losses $W/two.jsonl >$W/l2
check "2 ranks x B=2 give the 20 train and 2 val losses of 1 x B=4 (1e-5 relative)" \
    eval '[ $(wc -l <$W/l1) = 22 ] && [ $(wc -l <$W/l2) = 22 ] && rel_close $W/l1 $W/l2'
cat $TEST_TMP/out
check "... and save models that agree to 1e-5" st_rel $W/two/model.safetensors $W/one/model.safetensors
cat $TEST_TMP/out
check "the 2-rank log states the global batch (64 tokens)" grep -Eq 'steps of 64 tokens \(.* x 2 ranks\)' $W/two.out
check "... and plain step lines with tok/s and ETA, no carriage returns" \
    bash -c "grep -Eq '^step +[0-9]+/[0-9]+ \| loss .* tok/s \| ETA ' $W/two.out && ! grep -q \$'\\r' $W/two.out"
check "rank 0 alone prints: one 'saved' line" test "$(grep -c '^saved ' $W/two.out)" = 1

# LoRA: the adapter's gradients are summed over the ranks (the base has none): 2 ranks x B=2 train the adapter of
# 1 x B=4. And loss masks: a step's loss is the mean over all its scored targets, their counts summed over the
# ranks (rank 0's window and rank 1's score different numbers of answer tokens).
# --eps 1e-6: B starts at zero, so step 2 is A's first AdamW step, g / (|g| + eps) for each weight, and with the
# default 1e-8 a gradient that sums to within a few eps of zero turns the order of the ranks' sums into up to 1e-3
# of that step. Measured on a Zen 5 (the adapters' max |a - b| / max |b|): 5.3e-9 after step 1; after step 2
# 2.3e-5 with eps 1e-8 (one weight of h.1.mlp.c_fc.lora_A), 5.7e-7 with 1e-6; after 12, 1.9e-5 and 5.6e-7.
L=("${A[@]}" --steps 12 --lora 4 --lora-targets c_attn,c_fc --lr 1e-2 --eps 1e-6)
timeout -k 10 300 "$GPT2_MPI" "${L[@]}" -B 4 --log $W/lora1.jsonl --out $W/lora1 >$W/lora1.out 2>&1
timeout -k 10 300 "${MPIRUN[@]}" -np 2 "$GPT2_MPI" "${L[@]}" -B 2 --log $W/lora2.jsonl --out $W/lora2 >$W/lora2.out 2>&1
log_losses $W/lora1.jsonl >$W/ll1; log_losses $W/lora2.jsonl >$W/ll2
check "LoRA, 2 ranks x B=2: the 12 train and 2 val losses of 1 x B=4 (1e-5 relative)" \
    eval '[ $(wc -l <$W/ll1) = 14 ] && [ $(wc -l <$W/ll2) = 14 ] && rel_close $W/ll1 $W/ll2'
cat $TEST_TMP/out
# The gradient norms (before clipping): the summed gradients' own scale, which AdamW's normalisation and the clipping
# mostly hide from the losses and the adapter.
grep -o '"norm":[-0-9.enan]*' $W/lora1.jsonl | cut -d: -f2 >$W/ln1
grep -o '"norm":[-0-9.enan]*' $W/lora2.jsonl | cut -d: -f2 >$W/ln2
check "... and the 12 gradient norms of 1 x B=4 (1e-5 relative)" \
    eval '[ $(wc -l <$W/ln1) = 12 ] && [ $(wc -l <$W/ln2) = 12 ] && rel_close $W/ln1 $W/ln2'
cat $TEST_TMP/out
export NO_KEY_BIAS=1  # an adapter has no c_attn.bias
check "... and adapters that agree to 1e-5" st_rel $W/lora2/adapter_model.safetensors $W/lora1/adapter_model.safetensors
unset NO_KEY_BIAS
cat $TEST_TMP/out
"$GPT2_MPI" tokenize --instructions -T 32 -o $W/sft/ft tests/fixtures/instruct/*.jsonl >/dev/null 2>&1
M=(train --train $W/sft/ft_train.bin --val "" --layers 1 --channels 32 --heads 2 -T 32 --steps 6 --no-shuffle
   --sample-tokens 0 --lr 1e-2 --warmup 0)
timeout -k 10 300 "$GPT2_MPI" "${M[@]}" -B 2 --log $W/mask1.jsonl >$W/mask1.out 2>&1
timeout -k 10 300 "${MPIRUN[@]}" -np 2 "$GPT2_MPI" "${M[@]}" -B 1 --log $W/mask2.jsonl >$W/mask2.out 2>&1
log_losses $W/mask1.jsonl >$W/lm1; log_losses $W/mask2.jsonl >$W/lm2
check "loss masks, 2 ranks x B=1: the 6 losses of 1 x B=2, the mean over the step's scored targets (1e-5)" \
    eval 'grep -q "^loss: on the answers only" $W/mask2.out && [ $(wc -l <$W/lm1) = 6 ] && rel_close $W/lm1 $W/lm2'
cat $TEST_TMP/out

# Resume under MPI: 10 steps, then 10 more from the checkpoint, equal the straight 20.
"${MPIRUN[@]}" -np 2 "$GPT2_MPI" "${A[@]}" -B 2 --steps 20 --stop-after 10 --log $W/r.jsonl --out $W/r >$W/r10.out 2>&1
check "the 2-rank save says how to resume: the mpirun line" \
    grep -qx "saved $W/r at step 10; continue with: mpirun -np 2 ./gpt2-mpi train --resume $W/r" $W/r10.out
"${MPIRUN[@]}" -np 2 "$GPT2_MPI" train --resume $W/r --log $W/r.jsonl >$W/r.out 2>&1
log_losses $W/r.jsonl >$W/lr
check "2 ranks: stopped at 10 and resumed under mpirun, the same 22 losses as straight through" cmp $W/lr $W/l2
check "... and the same model" cmp $W/r/model.safetensors $W/two/model.safetensors

# A NaN on rank 1 only, from the inputs: poison_nan SRC DST TOKENS DST_TOKENS copies the model SRC to DST with
# token X's embedding at FLT_MAX in channel 0 and every position's at 1e32 there, so the embedding of X alone
# overflows to inf (and the LayerNorm after it makes NaN); ln_f passes 0 in channel 0 (X's logit stays finite)
# and 1 in channel 1, where X's embedding is -1e4 (its probability is 0, so no huge gradient reaches the
# others). The token file is TOKENS with X = the smallest id not among its first 33 tokens written at token
# 40 and removed elsewhere: without shuffling, -B 2 -T 16 on 2 ranks gives rank 0 windows 0-1 (tokens 0-32)
# and rank 1 windows 2-3 (tokens 32-64) in the first step.
poison_nan() {
    mkdir -p "$2" && cp "$1/config.json" "$2/" &&
    perl -e 'my ($src, $dst, $tin, $tout) = @ARGV;
        open(my $f, "<", $src) or die "$src"; binmode $f; local $/; my $b = <$f>; close $f;
        my $n = unpack("Q<", substr($b, 0, 8)); my $h = substr($b, 8, $n);
        my $at = sub { $h =~ /"\Q$_[0]\E":\{"dtype":"F32","shape":\[([\d,]+)\],"data_offsets":\[(\d+),/ or die "$_[0]";
                       my @s = split /,/, $1; return (8 + $n + $2, @s); };
        my $set = sub { substr($b, $_[0], 4) = pack("f<", $_[1]); };
        my ($wte, $V, $C) = $at->("wte.weight"); my ($wpe, $P) = $at->("wpe.weight");
        my ($lw) = $at->("ln_f.weight"); my ($lb) = $at->("ln_f.bias");
        open($f, "<", $tin) or die "$tin"; binmode $f; my $t = <$f>; close $f;
        my @ids = unpack("v*", substr($t, 1024)); my %seen; $seen{$_} = 1 for @ids[0 .. 32];
        my $x = 1; $x++ while $seen{$x};
        $_ = ($_ == $x ? 0 : $_) for @ids; $ids[40] = $x;
        substr($t, 1024) = pack("v*", @ids);
        $set->($wte + 4 * $x * $C, unpack("f<", pack("L<", 0x7f7fffff)));
        $set->($wpe + 4 * $_ * $C, 1e32) for 0 .. $P - 1;
        $set->($lw, 0); $set->($lb, 0); $set->($lw + 4, 0); $set->($lb + 4, 1);
        $set->($wte + 4 * ($x * $C + 1), -1e4);
        open($f, ">", $tout) or die "$tout"; binmode $f; print $f $t; close $f;
        open($f, ">", $dst) or die "$dst"; binmode $f; print $f $b; close $f;' \
        "$1/model.safetensors" "$2/model.safetensors" "$3" "$4"
}
poison_nan $TRAINED $W/nanmodel $TOK $W/nan.bin
check "the poisoned model's loss is finite on rank 0's first windows (0-1)" \
    "$GPT2_MPI" eval --model $W/nanmodel --data $W/nan.bin -B 2 -T 16 --batches 1
check "... and NaN with rank 1's (2-3)" bash -c "'$GPT2_MPI' eval --model $W/nanmodel --data $W/nan.bin -B 2 -T 16 \
    --batches 2 2>&1 | grep -q 'error: loss is -*nan on'"
B=(train --train $W/nan.bin --no-shuffle -T 16 -B 2 --steps 5 --sample-tokens 0 --val "" --model $W/nanmodel)
cp -r $W/two $W/good && before=$(cksum <$W/good/model.safetensors)
timeout -k 10 300 "${MPIRUN[@]}" -np 2 "$GPT2_MPI" "${B[@]}" --out $W/good --overwrite >$W/nan.out 2>$W/nan.err
rc=$?
cat $W/nan.err | grep -v '^ *$' | head -5
# every rank that speaks says the same (the summed loss): not rank 0 its gradient norm and rank 1 its loss
check "a NaN on one rank stops both with one error line naming the step (exit $rc)" \
    eval '[ $rc != 0 ] && [ "$(grep "^error: " $W/nan.err | sort -u | wc -l)" = 1 ] &&
          grep -q "^error: loss is -*nan at step 1: training diverged" $W/nan.err'
check "... and the last good checkpoint is kept" test "$(cksum <$W/good/model.safetensors)" = "$before"

# A rank killed mid-run (SIGKILL, as a crashed or lost machine): the job ends with a non-zero exit, and the
# checkpoint saved before it still loads. The test waits for the first save, however long it takes.
"${MPIRUN[@]}" -np 2 "$GPT2_MPI" "${A[@]}" -B 2 --steps 100000 --save-every 5 --out $W/kill >$W/kill.out 2>&1 &
job=$!
for _ in $(seq 6000); do [ -f $W/kill/model.safetensors ] && break; kill -0 $job 2>/dev/null || break; sleep 0.1; done
victim=""
for p in $(pgrep -f "gpt2.* train .*--out $W/kill"); do
    tr '\0' '\n' </proc/$p/environ 2>/dev/null | grep -qx 'OMPI_COMM_WORLD_RANK=1' && victim=$p
done
# no victim found (the job ended, or pgrep is missing): the job is ended, and the check below fails
if [ -n "$victim" ]; then kill -9 "$victim"; else kill -TERM $job 2>/dev/null; fi
wait_bounded $job 300
rc=$?
check "killing rank 1 ends the job with a non-zero exit (exit $rc)" bash -c "[ -n '$victim' ] && [ $rc != 0 ]"
check "... and the last checkpoint loads" "$GPT2_MPI" eval --model $W/kill --data $TOK -B 2 -T 16 --batches 2

# SIGTERM to one rank (mpirun's own Ctrl-C kills the ranks without a save): the stop is summed with the
# loss, so both ranks stop after the same step, rank 0 saves there, and the job exits 128 + 15.
"${MPIRUN[@]}" -np 2 "$GPT2_MPI" "${A[@]}" -B 2 --steps 100000 --save-every 1000 --out $W/term >$W/term.out 2>&1 &
job=$!
for _ in $(seq 6000); do grep -q 'step .*tok/s' $W/term.out 2>/dev/null && break; kill -0 $job 2>/dev/null || break; sleep 0.1; done
victim=""
for p in $(pgrep -f "gpt2.* train .*--out $W/term"); do
    tr '\0' '\n' </proc/$p/environ 2>/dev/null | grep -qx 'OMPI_COMM_WORLD_RANK=1' && victim=$p
done
if [ -n "$victim" ]; then kill -TERM "$victim"; else kill -TERM $job 2>/dev/null; fi
wait_bounded $job 300
rc=$?
check "SIGTERM to rank 1: the job exits 143 after rank 0 saved, saying so with the mpirun line (exit $rc)" \
    eval '[ -n "$victim" ] && [ $rc = 143 ] &&
        grep -qx "interrupted at step [0-9]* by SIGTERM, saved $W/term; continue with: mpirun -np 2 ./gpt2-mpi train --resume $W/term" $W/term.out'
check "... and the run resumes from there" "$GPT2_MPI" eval --model $W/term --data $TOK -B 2 -T 16 --batches 2
check "... and no rank claims nothing was saved" bash -c "! grep -q 'nothing saved' $W/term.out"

# Ranks started with different flags or data (mpirun's colon form gives each rank its own command line) stop
# with an error saying they disagree, never hang: timeout is only a guard.
cp $TOK $W/other.bin && printf '\x07\x00' | dd of=$W/other.bin bs=1 seek=2000 conv=notrunc status=none
G=(train --vocab 1000 --layers 2 --heads 2 --seq-len 32 -T 16 --val "" --sample-tokens 0)
disagree() {  # disagree WHAT RANK0_FLAGS RANK1_FLAGS
    timeout -k 10 120 "${MPIRUN[@]}" -np 1 "$GPT2_MPI" "${G[@]}" $2 : -np 1 "$GPT2_MPI" "${G[@]}" $3 >$W/dis.out 2>&1
    local rc=$?
    if [ $rc != 0 ] && [ $rc != 124 ] && grep -q "^error: .*disagree" $W/dis.out; then
        pass "ranks given different $1 stop with an error saying they disagree (exit $rc)"
    else
        fail "ranks given different $1 stop with an error saying they disagree (exit $rc)"
        grep -v "^ *$" $W/dis.out | tail -3 | sed "s/^/    /"
    fi
}
same="--train $TOK --channels 32 -B 2 --steps 5 --seed 1"
disagree --steps "$same" "--train $TOK --channels 32 -B 2 --steps 6 --seed 1"
disagree --channels "$same" "--train $TOK --channels 16 -B 2 --steps 5 --seed 1"
disagree -B "$same" "--train $TOK --channels 32 -B 4 --steps 5 --seed 1"
disagree --seed "$same" "--train $TOK --channels 32 -B 2 --steps 5 --seed 2"
disagree "--train data" "$same" "--train $W/other.bin --channels 32 -B 2 --steps 5 --seed 1"

# ZeRO-1 (--zero 1): each rank keeps its slice of AdamW's state. 2 and 3 ranks (3 splits the parameters
# unevenly) against the same ranks unsharded, 20 steps: losses and weights within 1e-6.
for n in 2 3; do
    "${MPIRUN[@]}" -np $n "$GPT2_MPI" "${A[@]}" -B 2 --steps 20 --log $W/u$n.jsonl --out $W/u$n >$W/u$n.out 2>&1
    "${MPIRUN[@]}" -np $n "$GPT2_MPI" "${A[@]}" -B 2 --steps 20 --zero 1 --log $W/z$n.jsonl --out $W/z$n >$W/z$n.out 2>&1
    log_losses $W/u$n.jsonl >$W/lu; log_losses $W/z$n.jsonl >$W/lz
    check "ZeRO-1 on $n ranks: the unsharded run's 22 losses within 1e-6" \
        eval '[ $(wc -l <$W/lz) = 22 ] && REL_TOL=1e-6 rel_close $W/lz $W/lu'
    cat $TEST_TMP/out
    check "... and its saved weights within 1e-6" env REL_TOL=1e-6 bash -c "$(declare -f st_rel); st_rel $W/z$n/model.safetensors $W/u$n/model.safetensors"
    cat $TEST_TMP/out
    grep '^zero:' $W/z$n.out
done
check "3 ranks: the slices are uneven (the parameters are not a multiple of 3 x 64)" \
    bash -c "grep '^zero: .* 3 ranks' $W/z3.out | grep -Eo '[0-9]+, [0-9]+, [0-9]+' | awk -F', ' '{ exit !(\$1 != \$2 || \$2 != \$3) }'"
"${MPIRUN[@]}" -np 2 "$GPT2_MPI" "${A[@]}" -B 2 --steps 20 --zero 1 --stop-after 10 --out $W/zr >/dev/null 2>&1
"${MPIRUN[@]}" -np 2 "$GPT2_MPI" train --resume $W/zr >/dev/null 2>&1
check "ZeRO-1: stopped at 10 and resumed under 2 ranks, the straight run's model bit for bit" \
    cmp $W/zr/model.safetensors $W/z2/model.safetensors
"${MPIRUN[@]}" -np 2 "$GPT2_MPI" "${A[@]}" -B 2 --steps 20 --zero 1 --optimizer-state bf16 --out $W/zb >/dev/null 2>&1
"${MPIRUN[@]}" -np 2 "$GPT2_MPI" "${A[@]}" -B 2 --steps 20 --optimizer-state bf16 --out $W/ub >/dev/null 2>&1
check "ZeRO-1 with bf16 moments: the unsharded bf16 run's weights within 1e-5" \
    env REL_TOL=1e-5 bash -c "$(declare -f st_rel); st_rel $W/zb/model.safetensors $W/ub/model.safetensors"
cat $TEST_TMP/out
# ZeRO-1 with 8-bit moments (a model of n_embd 64: blocks of 64 parameters, slices starting on one; with 2
# ranks the slices meet inside h.0.attn.c_proj.weight, with 3 inside wte and h.0.mlp.c_proj.weight). Two ranks
# sum each gradient in one order, sharded or not: the same weights and the same saved state, bit for bit
# (the state's data after its header, which names the flags), so the slices' codes and steps were gathered
# in place. Stopped and resumed under 2 ranks: bit for bit; under 3 and 1, whose sums run in another order,
# the losses within 1e-6 of the straight run's.
Q=(train --train $TOK --val $TOK --vocab 1000 --layers 2 --heads 2 --channels 64 --seq-len 32 -T 16 --val-every 10
   --val-batches 6 --sample-tokens 0 --lr 3e-3 --warmup 2 -B 1 --grad-accum 3 --steps 20 --optimizer-state 8bit)
"${MPIRUN[@]}" -np 2 "$GPT2_MPI" "${Q[@]}" --zero 1 --log $W/q8z.jsonl --out $W/q8z >$W/q8z.out 2>&1
"${MPIRUN[@]}" -np 2 "$GPT2_MPI" "${Q[@]}" --out $W/q8u >/dev/null 2>&1
state_data() { perl -e 'open(my $f, "<", $ARGV[0]) or die; binmode $f; local $/; my $b = <$f>;
                        print substr($b, 8 + unpack("Q<", substr($b, 0, 8)));' "$1"; }
check "ZeRO-1 with 8-bit moments on 2 ranks: the unsharded run's weights and train state, bit for bit" \
    eval "grep -q '^zero: .* 2 ranks' $W/q8z.out && cmp $W/q8z/model.safetensors $W/q8u/model.safetensors &&
          cmp <(state_data $W/q8z/train_state.safetensors) <(state_data $W/q8u/train_state.safetensors)"
for to in 2 3 1; do
    "${MPIRUN[@]}" -np 2 "$GPT2_MPI" "${Q[@]}" --zero 1 --stop-after 10 --log $W/q8r$to.jsonl --out $W/q8r$to \
        >/dev/null 2>&1
    if [ $to = 1 ]; then timeout -k 10 300 "$GPT2_MPI" train --resume $W/q8r$to --log $W/q8r$to.jsonl >/dev/null 2>&1
    else timeout -k 10 300 "${MPIRUN[@]}" -np $to "$GPT2_MPI" train --resume $W/q8r$to --log $W/q8r$to.jsonl \
        >/dev/null 2>&1; fi
    if [ $to = 2 ]; then
        check "... stopped at 10 and resumed under 2 ranks: the straight run's model bit for bit" \
            cmp $W/q8r$to/model.safetensors $W/q8z/model.safetensors
    else
        log_losses $W/q8r$to.jsonl >$W/lq8r; log_losses $W/q8z.jsonl >$W/lq8z
        check "... resumed under $to rank(s): the straight run's 22 losses within 1e-6" \
            eval '[ $(wc -l <$W/lq8r) = 22 ] && REL_TOL=1e-6 rel_close $W/lq8r $W/lq8z'
        cat $TEST_TMP/out
    fi
done

# Rank 0's measured peak memory with and without ZeRO-1 on a model whose fp32 moments are 124 MiB: the
# saving is that of (N - 1) / N of the moments, within 15%.
M=(train --train $TOK --val "" --vocab 50257 --layers 4 --heads 4 --channels 256 --seq-len 64 -B 2 -T 16 --steps 2
   --sample-tokens 0)
for n in 2 3; do
    "${MPIRUN[@]}" -np $n "$GPT2_MPI" "${M[@]}" >$W/mu.out 2>&1
    "${MPIRUN[@]}" -np $n "$GPT2_MPI" "${M[@]}" --zero 1 >$W/mz.out 2>&1
    moments=$(grep -o 'AdamW state [0-9]*' $W/mu.out | cut -d' ' -f3)
    check "ZeRO-1 on $n ranks: rank 0's peak memory falls by (N-1)/N of the moments ($moments MiB), within 15%" \
        awk -v a="$(grep -o '^peak memory: [0-9]*' $W/mu.out | cut -d' ' -f3)" -v b="$(grep -o '^peak memory: [0-9]*' $W/mz.out | cut -d' ' -f3)" \
            -v m="${moments:-0}" -v n=$n 'BEGIN { want = m * (n - 1) / n; d = (a - b - want) / want; if (d < 0) d = -d;
            printf("peak %d MiB unsharded, %d MiB sharded: %d MiB less, %.0f expected\n", a, b, a - b, want);
            exit !(m > 0 && b > 0 && d <= 0.15) }'
    cat $TEST_TMP/out
done

# Resume on another rank count: the run keeps its global batch (-B x --grad-accum x ranks sequences per step,
# --grad-accum fitted) and so its windows per step, across the epoch's end (214 windows of T=14: 4 are left
# for step 36, which a step of micro-batches of 1, 2 or 3 windows must not take). 40 steps of 6 sequences,
# stopped at 20 and resumed under 1, 3 and 2 ranks: the uninterrupted run's 44 losses within 1e-6 (another
# rank count sums in another order: not bit for bit).
C=("${A[@]}" -T 14 --val-batches 6 -B 1 --steps 40)
"${MPIRUN[@]}" -np 2 "$GPT2_MPI" "${C[@]}" --grad-accum 3 --log $W/g2.jsonl --out $W/g2 >/dev/null 2>&1
"${MPIRUN[@]}" -np 3 "$GPT2_MPI" "${C[@]}" --grad-accum 2 --log $W/g3.jsonl --out $W/g3 >/dev/null 2>&1
log_losses $W/g2.jsonl >$W/lg2; log_losses $W/g3.jsonl >$W/lg3
resume_ranks() {  # resume_ranks FROM TO [FLAGS]: stopped at 20 under FROM ranks, resumed under TO
    local from=$1 to=$2 d=$W/rr$1$2${3:-}; shift 2
    "${MPIRUN[@]}" -np $from "$GPT2_MPI" "${C[@]}" --grad-accum $((6 / from)) --stop-after 20 --log $d.jsonl --out $d "$@" \
        >/dev/null 2>&1
    if [ $to = 1 ]; then timeout -k 10 300 "$GPT2_MPI" train --resume $d --log $d.jsonl >$d.out 2>&1
    else timeout -k 10 300 "${MPIRUN[@]}" -np $to "$GPT2_MPI" train --resume $d --log $d.jsonl >$d.out 2>&1; fi
    log_losses $d.jsonl >$d.l
    local flags=${*:+ with $*}
    check "$from ranks -> $to$flags: --grad-accum $((6 / to)), the uninterrupted run's 44 losses within 1e-6" \
        eval "grep -q 'note: -B 1 x --grad-accum $((6 / to)) x $to rank' $d.out && [ \$(wc -l <$d.l) = 44 ] &&
              REL_TOL=1e-6 rel_close $d.l $W/lg$from"
    cat $TEST_TMP/out
}
resume_ranks 2 1
resume_ranks 2 3
resume_ranks 3 2
check "... and the log counts 84 tokens a step on" grep -q '"step":40,.*"tokens":3360}' $W/rr23.jsonl
check "info on the 3-rank checkpoint: its tokens and the mpirun line to go on" \
    eval "$GPT2_MPI info --model $W/rr23 >$W/info.out && grep -q 'tokens read (84 per step)' $W/info.out &&
          grep -q 'train on with: mpirun -np 3 ./gpt2-mpi train --resume $W/rr23' $W/info.out"
# ZeRO-1's moments are saved whole and split again for the ranks that load them.
"${MPIRUN[@]}" -np 2 "$GPT2_MPI" "${C[@]}" --grad-accum 3 --zero 1 --log $W/gz.jsonl --out $W/gz >/dev/null 2>&1
log_losses $W/gz.jsonl >$W/lgz
for to in 3 1; do
    resume_ranks 2 $to --zero 1
    check "... and the model within 1e-6 of the uninterrupted ZeRO-1 run's" \
        env REL_TOL=1e-6 bash -c "$(declare -f st_rel); st_rel $W/rr2$to--zero/model.safetensors $W/gz/model.safetensors"
    cat $TEST_TMP/out
done

# When the global batch cannot be kept: one error (on every rank) saying what would keep it.
refused() {  # refused NAME PATTERN RANKS ARGS...
    local name=$1 pattern=$2 n=$3; shift 3
    timeout -k 10 120 "${MPIRUN[@]}" -np $n "$GPT2_MPI" "$@" >$W/ref.out 2>&1
    local rc=$?
    if [ $rc != 0 ] && [ $rc != 124 ] && [ "$(grep '^error: ' $W/ref.out | sort -u | wc -l)" = 1 ] &&
        grep -q -- "$pattern" $W/ref.out; then pass "$name (exit $rc)"
    else fail "$name (exit $rc)"; grep -E '^(error|hint):' $W/ref.out | sort -u | sed 's/^/    /'; fi
}
cp -r $W/r $W/r1  # 2 ranks x B=2: 4 sequences per step
refused "4 sequences per step resumed by 3 ranks: refused, naming the rank counts that keep them" \
    'expected a rank count that divides 4, got 3 ranks' 3 train --resume $W/r1 --steps 25
grep -q '^hint: resume with mpirun -np 2 or -np 4$' $W/ref.out && pass "... with the hint -np 2 or -np 4" ||
    fail "... with the hint -np 2 or -np 4"
D=("${C[@]}" -B 3 --val-batches 2)
"${MPIRUN[@]}" -np 2 "$GPT2_MPI" "${D[@]}" --log $W/b3s.jsonl --out $W/b3s >/dev/null 2>&1
"${MPIRUN[@]}" -np 2 "$GPT2_MPI" "${D[@]}" --stop-after 20 --log $W/b3.jsonl --out $W/b3 >/dev/null 2>&1
refused "-B 3 x 2 ranks resumed by 3: refused, naming the -B and --grad-accum that keep 6 sequences" \
    'keeps 6 sequences per step, its global batch (-B 3 x --grad-accum 1 x 2 ranks), expected -B 2 --grad-accum 1 on 3 ranks' \
    3 train --resume $W/b3
timeout -k 10 300 "${MPIRUN[@]}" -np 3 "$GPT2_MPI" train --resume $W/b3 -B 2 --log $W/b3.jsonl >/dev/null 2>&1
log_losses $W/b3.jsonl >$W/lb3; log_losses $W/b3s.jsonl >$W/lb3s
check "... and resumed with that -B 2, the uninterrupted run's losses within 1e-6" \
    eval '[ $(wc -l <$W/lb3) = 44 ] && REL_TOL=1e-6 rel_close $W/lb3 $W/lb3s'
cat $TEST_TMP/out
summary
