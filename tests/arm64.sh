#!/usr/bin/env bash
# arm64.sh (make test-arm64, part of make check): the aarch64 build of Debian's cross compiler
# (g++-aarch64-linux-gnu; ARCH=portable: ARMv8-A, NEON), run under qemu-aarch64 with the cross
# toolchain's libraries ($QEMU_LD_PREFIX, default /usr/aarch64-linux-gnu). Built by the caller
# ($GPT2_ARM64 and $ARM64_TESTS):
#   * the binaries are aarch64 ELF files, and --version names the NEON kernels;
#   * the unit tests pass there, a light run (bf16 tests skip: its kernels are AVX512_BF16's; so do the four
#     products with a C of 4M floats, GPT2_TEST_LIGHT: minutes each under qemu, where the smaller shapes run the
#     same NEON kernels);
#   * a tiny training run gives the native x86-64 build's losses to 1e-5 relative (other kernels, other
#     summation orders; measured: equal to the 6 decimals the log keeps), a run stopped at step 10 and
#     resumed equals it exactly, and generate continues a prompt.
# qemu shows correctness only: it says nothing of speed on real ARM hardware.
source "$(dirname "$0")/lib.sh"
A=${GPT2_ARM64:?set GPT2_ARM64 to the aarch64 gpt2}
UNIT=${ARM64_TESTS:?set ARM64_TESTS to the aarch64 run_tests}
TOK=tests/fixtures/tokens_v1000.bin
W=$TEST_TMP
tiny=(--train $TOK --val $TOK --vocab 1000 --layers 2 --heads 2 --channels 64 --seq-len 32 -B 4 -T 32
      --val-every 10 --sample-tokens 0 --steps 20)
if ! command -v qemu-aarch64 >/dev/null; then
    skip "qemu-aarch64 not found (bash scripts/install_deps.sh test installs qemu-user): the aarch64 build cannot run"
    summary; exit
fi
export QEMU_LD_PREFIX=${QEMU_LD_PREFIX:-/usr/aarch64-linux-gnu}
Q=qemu-aarch64

# e_machine, the 16-bit field at byte 18 of an ELF header: 183 is EM_AARCH64.
elf_machine() { od -An -tu2 -j18 -N2 "$1" | tr -d ' '; }
check "gpt2 and run_tests are aarch64 ELF files" eval '[ "$(elf_machine $A)" = 183 ] && [ "$(elf_machine $UNIT)" = 183 ]'
check "--version names the NEON kernels" bash -c "$Q '$A' --version | grep -q 'kernels: neon, fixed at build time'"

out=$(GPT2_TEST_LIGHT=1 $Q "$UNIT" 2>&1 | tail -1)
check "the unit tests pass under qemu-aarch64: $out" eval '[[ "$out" == *" 0 failed"* ]]'

"$GPT2" train "${tiny[@]}" --log $W/native.jsonl >/dev/null 2>&1
$Q "$A" train "${tiny[@]}" --log $W/arm.jsonl --out $W/arm >$W/arm.out 2>&1
check "a tiny run trains under qemu-aarch64 (exit 0)" grep -q "val loss" $W/arm.out
check "... and gives the native build's losses" logs_close $W/arm.jsonl $W/native.jsonl
cat $TEST_TMP/out
$Q "$A" train "${tiny[@]}" --stop-after 10 --log $W/resumed.jsonl --out $W/resumed >/dev/null 2>&1
$Q "$A" train --resume $W/resumed --log $W/resumed.jsonl >/dev/null 2>&1
check "... stopped at step 10 and resumed, the same losses and model as straight through" \
    eval 'cmp <(log_losses $W/resumed.jsonl) <(log_losses $W/arm.jsonl) && cmp $W/resumed/model.safetensors $W/arm/model.safetensors'
check "generate continues a prompt there" \
    bash -c "$Q '$A' generate --model $W/arm --prompt-ids 1,2,3 --max-tokens 8 --ids --ids-with-prompt | grep -Eq '^1 2 3( [0-9]+){8}$'"
summary
