#!/usr/bin/env bash
# cli_build.sh: the Makefile's promises about which binary each build writes, read from `make -n -B` (which
# prints every command and runs none, so nothing is built): `make MPI=1` links its own binary and never
# ./gpt2, with or without SAN=1 or NO_OMP=1, so a later plain `make` cannot keep an MPI binary unknowingly;
# `make test-mpi` tests the binary MPI=1 links; README's mpirun lines run that binary; git ignores it.
source "$(dirname "$0")/lib.sh"
if ! command -v make >/dev/null; then
    skip "make not found"; summary; exit
fi
# The outer `make test SAN=1` would hand its flags and variables to these makes through MAKEFLAGS.
dry_make() { env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -n -B "$@" 2>&1; }
# linked_bin ARGS...: the file the link line of `make ARGS` writes (the -o of the command naming cli/main.o).
linked_bin() { dry_make "$@" | grep '/cli/main\.o ' | grep -v ' -c ' | sed -n 's/.* -o \([^ ]*\) .*/\1/p'; }

plain=$(linked_bin)
check "plain make links ./gpt2" test "$plain" = gpt2
for switches in "" "SAN=1" "NO_OMP=1"; do
    one=$(linked_bin $switches)
    mpi=$(linked_bin MPI=1 $switches)
    check "make MPI=1${switches:+ $switches} links a binary of its own ($mpi), not ./gpt2 nor that of make${switches:+ $switches} ($one)" \
        eval '[ -n "$mpi" ] && [ -n "$one" ] && [ "$mpi" != "$one" ] && [ "$mpi" != gpt2 ] && [ "$mpi" != ./gpt2 ]'
done

mpi=$(linked_bin MPI=1)
tested=$(dry_make test-mpi | sed -n 's/.*GPT2_MPI=\([^ ]*\) .*/\1/p' | head -1)
check "make test-mpi tests the binary make MPI=1 links ($tested against $mpi)" \
    test "${tested#./}" = "$mpi"

grep -E '^mpirun ' README.md >$TEST_TMP/mpirun_lines
check "README shows mpirun lines" test -s $TEST_TMP/mpirun_lines
check "README's mpirun lines each run ./$mpi" \
    eval '! grep -v -- " \./$mpi " $TEST_TMP/mpirun_lines'
check "README shows mpirun with --allow-run-as-root (needed as root)" grep -q -- '--allow-run-as-root' $TEST_TMP/mpirun_lines

if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    check "git ignores ./$mpi" git check-ignore -q "$mpi"
else
    skip "git ignores ./$mpi: not a git checkout"
fi
summary
