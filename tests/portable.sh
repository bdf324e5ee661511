#!/usr/bin/env bash
# portable.sh (make test-portable, part of make check): the x86-64 build that picks its kernels at run time
# (ARCH=portable, core/isa.h), built by the caller ($GPT2_PORTABLE and $PORTABLE_TESTS):
#   * --version names the set it chose (the best this CPU runs, from /proc/cpuinfo), or the one GPT2_ISA
#     forces; a GPT2_ISA it cannot honour is one error line, as is GPT2_ISA given to a build without dispatch;
#   * the unit tests pass under each set forced in turn (light runs, GPT2_TEST_LIGHT, then the products with a C
#     of 4M floats the light runs skip), and a tiny training run gives the native build's
#     losses (to 1e-5 relative; measured: equal to the 6 decimals the log keeps);
#   * under qemu-x86_64 emulating CPUs without AVX-512 (Haswell: AVX2) and without AVX (qemu64: SSE2), the
#     binary chooses those sets by itself, and a training run and generation (fp32, int8, int8 drafting for
#     fp32) run there: an instruction of a higher set anywhere on those paths would stop them with SIGILL. (The
#     unit tests under qemu64 took 5 minutes of CI; GPT2_ISA=baseline above runs them natively on the same
#     kernels.)
source "$(dirname "$0")/lib.sh"
P=${GPT2_PORTABLE:?set GPT2_PORTABLE to the ARCH=portable gpt2}
UNIT=${PORTABLE_TESTS:?set PORTABLE_TESTS to the ARCH=portable run_tests}
TOK=tests/fixtures/tokens_v1000.bin
W=$TEST_TMP
tiny=(--train $TOK --val $TOK --vocab 1000 --layers 2 --heads 2 --channels 64 --seq-len 32 -B 4 -T 32
      --val-every 10 --sample-tokens 0 --steps 20)
# under qemu, 2 steps and one validation batch: qemu's AVX2 takes 12-20 s a step of this model
qtiny=("${tiny[@]}" --steps 2 --val-every 2 --val-batches 1)
if [ "$(uname -m)" != x86_64 ]; then
    skip "run-time kernel dispatch is built on x86-64 only (this is $(uname -m))"; summary; exit
fi

# The set this CPU should get: what -march=x86-64-v4 and -v3 need, from the kernel's flags.
flags=" $(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2) "
has() { for f in "$@"; do [[ "$flags" == *" $f "* ]] || return 1; done; }
best=baseline
has avx2 fma bmi1 bmi2 && best=avx2
has avx512f avx512bw avx512cd avx512dq avx512vl && best=avx512
sets="baseline"
[ $best != baseline ] && sets="avx2 $sets"
[ $best = avx512 ] && sets="avx512 $sets"

check "--version names the set this CPU runs best ($best), chosen at run time" \
    bash -c "env -u GPT2_ISA '$P' --version | grep -q 'kernels: $best, chosen at run time'"
for isa in $sets; do
    check "GPT2_ISA=$isa forces the $isa kernels" bash -c "GPT2_ISA=$isa '$P' --version | grep -q 'kernels: $isa, forced by GPT2_ISA'"
done
check_error "GPT2_ISA naming no set" "bad value for GPT2_ISA: expected avx512, avx2 or baseline" env GPT2_ISA=sse4 "$P" --version
check_error "... stops before any work" "bad value for GPT2_ISA" env GPT2_ISA=sse4 "$P" train "${tiny[@]}" --out $W/never
check "... and writes nothing" test ! -e $W/never
check_error "GPT2_ISA given to a build without dispatch" "this build has one kernel set" env GPT2_ISA=avx2 "$GPT2" --version

# unit_check NAME WANT CMD...: runs unit tests (CMD) and checks "NAME: their last line" against the glob WANT;
# the failing tests' lines are printed
unit_check() {
    local name=$1 want=$2 line
    shift 2
    "$@" >$W/unit.out 2>&1
    line=$(tail -1 $W/unit.out)
    check "$name: $line" eval '[[ "$line" == $want ]]'
    grep -E '^FAIL|CHECK failed' $W/unit.out | sed 's/^/    /'
}

env -u GPT2_ISA "$GPT2" train "${tiny[@]}" --log $W/native.jsonl >/dev/null 2>&1
for isa in $sets; do
    unit_check "unit tests with GPT2_ISA=$isa" "* 0 failed*" env GPT2_ISA=$isa GPT2_TEST_LIGHT=1 "$UNIT"
    # the products the light run skips: gemm's deep blocking (K whole, C of 4M floats) is compiled per set too
    unit_check "... and those with a C of 4M floats" "4 passed, 0 failed, 0 skipped" env GPT2_ISA=$isa "$UNIT" c_of_4m_floats
    GPT2_ISA=$isa "$P" train "${tiny[@]}" --log $W/$isa.jsonl >/dev/null 2>&1
    check "a tiny run with GPT2_ISA=$isa gives the native build's losses" logs_close $W/$isa.jsonl $W/native.jsonl
done

# Emulated CPUs without AVX-512 and without AVX.
if ! command -v qemu-x86_64 >/dev/null; then
    skip "qemu-x86_64 not found (bash scripts/install_deps.sh test installs qemu-user): no emulated older CPU"
    summary; exit
fi
env -u GPT2_ISA "$GPT2" train "${qtiny[@]}" --log $W/native_q.jsonl >/dev/null 2>&1
for cpu in Haswell:avx2 qemu64:baseline; do
    model=${cpu%:*} isa=${cpu#*:}
    Q=(qemu-x86_64 -cpu $model)
    check "on an emulated $model, --version chooses $isa by itself" \
        bash -c "env -u GPT2_ISA ${Q[*]} '$P' --version 2>/dev/null | grep -q 'kernels: $isa, chosen at run time'"
    [ $isa = avx2 ] && check_error "... and refuses GPT2_ISA=avx512 there" "this CPU cannot run the avx512 kernels" \
        env GPT2_ISA=avx512 "${Q[@]}" "$P" --version
    env -u GPT2_ISA "${Q[@]}" "$P" train "${qtiny[@]}" --out $W/q_$isa --log $W/q_$isa.jsonl >$W/q_$isa.out 2>&1
    check "... a tiny run trains there (exit 0, no SIGILL)" grep -q "val loss" $W/q_$isa.out
    check "... and gives the native build's losses" logs_close $W/q_$isa.jsonl $W/native_q.jsonl 3
    for how in "" "--precision int8" "--draft int8"; do
        check "... generate ${how:-(fp32)} runs there" bash -c "env -u GPT2_ISA ${Q[*]} '$P' generate --model $W/q_$isa \
            --prompt-ids 1,2,3 --max-tokens 8 --ids $how >/dev/null 2>&1"
    done
done
summary
