#!/usr/bin/env bash
# cli_build.sh: the Makefile's promises about which binary each build writes, read from `make -n -B` (which
# prints every command and runs none, so nothing is built): `make MPI=1` links its own binary and never
# ./gpt2, with or without SAN=1 or NO_OMP=1, so a later plain `make` cannot keep an MPI binary unknowingly;
# `make test-mpi` tests the binary MPI=1 links; README's mpirun lines run that binary; git ignores it; README.md
# stays a user's page of at most 300 lines (measurements go to tests/bench_results.md, architecture to src/README.md).
# And packagers' flags: CXXFLAGS, CPPFLAGS and LDFLAGS add to what the build needs, ARCH picks the target,
# and switching flags or builds rebuilds or relinks what they changed (in a copy of the tree, with a
# stand-in compiler). `make bench`'s driver, run_bench, is tested by tests/bench_driver.sh (make test-bench),
# so that make test builds no benchmark.
source "$(dirname "$0")/lib.sh"
if ! command -v make >/dev/null; then
    skip "make not found"; summary; exit
fi
# The outer `make test SAN=1` (or CXX=clang++) would hand its flags and variables to these makes through
# MAKEFLAGS and, for a variable set on its command line, through the environment.
clean_env=(env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u SAN -u DEBUG -u MPI -u NO_OMP -u BIN -u CXX -u ARCH -u OPT
           -u CPPFLAGS -u CXXFLAGS -u LDFLAGS)
dry_make() { "${clean_env[@]}" make -n -B "$@" 2>&1; }
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

# make bench first builds the dispatching build's run_bench (its dispatch_fp32_b4t64 case runs it), in
# the portable build's directory
portable_bench=$(dry_make bench | grep -o "ARCH=portable .* [^ ]*-portable/omp/run_bench" | head -1)
check "make bench builds the portable run_bench it runs, in the portable build's directory" \
    eval '[ -n "$portable_bench" ] && dry_make bench | grep -q "PORTABLE_BENCH=.${portable_bench##* }."'
echo "    ${portable_bench:-make -n bench: no portable run_bench}"

mpi=$(linked_bin MPI=1)
tested=$(dry_make test-mpi | sed -n 's/.*GPT2_MPI=\([^ ]*\) .*/\1/p' | head -1)
check "make test-mpi tests the binary make MPI=1 links ($tested against $mpi)" \
    test "${tested#./}" = "$mpi"

grep -E '^mpirun ' README.md >$TEST_TMP/mpirun_lines
check "README shows mpirun lines" test -s $TEST_TMP/mpirun_lines
check "README's mpirun lines each run ./$mpi" \
    eval '! grep -v -- " \./$mpi " $TEST_TMP/mpirun_lines'
check "README shows mpirun with --allow-run-as-root (needed as root)" grep -q -- '--allow-run-as-root' $TEST_TMP/mpirun_lines
readme_lines=$(wc -l <README.md)
check "README.md is at most 300 lines (it has $readme_lines)" test "$readme_lines" -le 300

if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    check "git ignores ./$mpi" git check-ignore -q "$mpi"
else
    skip "git ignores ./$mpi: not a git checkout"
fi

# Flags as packagers pass them, in a copy of the tree built by a stand-in compiler that only writes its
# -o file (so real make runs, in milliseconds). compile_line ARGS...: the line that compiles cli/main.cpp.
compile_line() { dry_make "$@" | grep -- '-c src/cli/main\.cpp'; }
line=$(compile_line CXXFLAGS="-O2 -g" CPPFLAGS=-DPKG LDFLAGS=-Wl,-O1)
check "make CXXFLAGS=... keeps what the build needs (-std=c++17 -Isrc -fopenmp)" \
    eval 'for f in -std=c++17 -Isrc -fopenmp -DPKG; do [[ " $line " == *" $f "* ]] || exit 1; done'
check "... and puts the user's flags last, so -O2 wins over the default -O3" eval '[[ "$line" == *"-O3 "*"-O2 -g"* ]]'
check "... LDFLAGS reach the link line" eval 'dry_make LDFLAGS=-Wl,-O1 | grep -q " -o gpt2 .* -Wl,-O1"'
# A variable given on make's command line overrides every assignment to it in the Makefile: the needed
# -fopenmp (link) and -DGPT2_MPI (compile) must not ride on LDFLAGS or CPPFLAGS.
check "... and keep -fopenmp there (LDFLAGS=-static, as the arm64 stage links)" \
    eval 'dry_make LDFLAGS=-static | grep -q " -o gpt2 .* -fopenmp .*-static"'
check "make MPI=1 CPPFLAGS=... keeps -DGPT2_MPI" eval '[[ "$(compile_line MPI=1 CPPFLAGS=-DPKG)" == *" -DGPT2_MPI "*" -DPKG "* ]]'
# make MPI=1 compiles with -DGPT2_MPI only the sources that read it (src/build.mk's MPI_SRC), the rest shared with make
readers=$(grep -l GPT2_MPI src/*/*.cpp src/*/*.h | sort | paste -sd ' ')
mpi_compiled=$(dry_make MPI=1 | grep -- ' -DGPT2_MPI .* -c ' | sed -n 's/.* -c \([^ ]*\) .*/\1/p' | sort | paste -sd ' ')
check "make MPI=1 compiles with -DGPT2_MPI every source that reads it (${readers:-none}), and no other (${mpi_compiled:-none})" \
    test "$readers" = "$mpi_compiled"
check "... and links the objects of make for the others" \
    eval 'dry_make MPI=1 | grep -- "-o gpt2-mpi " | grep -q " build/omp/core/model.o "'
check "ARCH=native is the default (-march=native)" eval '[[ "$(compile_line)" == *" -march=native "* ]]'
check "ARCH=haswell builds for -march=haswell, in a build directory of its own" \
    eval '[[ "$(compile_line ARCH=haswell)" == *" -march=haswell "*"-o build/g++-haswell/"* ]]'
check "SAN=1 compiles with line tables alone (-g1), DEBUG=1 with the full debug information (-g)" \
    eval '[[ "$(compile_line SAN=1)" == *" -O1 -g1 "* && "$(compile_line DEBUG=1)" == *" -O1 -g "* ]]'
check "ARCH=none passes no -march" eval '[[ "$(compile_line ARCH=none)" != *"-march"* ]]'
check "CXX=clang++ builds in a build directory of its own" \
    eval '[[ "$(compile_line CXX=clang++)" == *"-o build/clang++-native/"* ]]'

tree=$TEST_TMP/tree
mkdir -p $tree/tests/fuzz && cp -r Makefile src $tree/ && cp tests/*.mk $tree/tests/ && cp tests/fuzz/*.mk $tree/tests/fuzz/
cat >$TEST_TMP/fakecxx <<'EOS'
#!/usr/bin/env bash
# A compiler that writes only its -o file, and logs each call (but -dumpmachine, which make asks once: it
# answers $FAKE_TARGET).
[ "$1" = -dumpmachine ] && { echo "${FAKE_TARGET:-}"; exit 0; }
echo "$*" >>"$(dirname "$0")/fakecxx.log"
while [ $# -gt 0 ]; do [ "$1" = -o ] && { : >"$2"; exit 0; }; shift; done
EOS
chmod +x $TEST_TMP/fakecxx
# cross_line TARGET: the line compiling cli/main.cpp when the compiler's target is TARGET.
cross_line() { FAKE_TARGET=$1 compile_line CXX=$TEST_TMP/fakecxx; }
check "a compiler for this machine ($(uname -m)-linux-gnu) builds ARCH=native by default" \
    eval '[[ "$(cross_line $(uname -m)-linux-gnu)" == *" -march=native "*"-o build/fakecxx-native/"* ]]'
for target in aarch64-linux-gnu x86_64-w64-mingw32; do
    check "a cross compiler ($target) builds ARCH=portable by default, without -march=native" \
        eval '[[ "$(cross_line $target)" == *"-o build/fakecxx-portable/"* && "$(cross_line $target)" != *"-march=native"* ]]'
done
# fake_make ARGS...: make in the copy with the stand-in compiler; prints its calls: "compile N" and the
# binaries it linked.
fake_make() {
    rm -f $TEST_TMP/fakecxx.log
    (cd $tree && "${clean_env[@]}" make -s CXX=$TEST_TMP/fakecxx "$@" >/dev/null 2>&1)
    [ -f $TEST_TMP/fakecxx.log ] || { echo nothing; return; }
    echo "compile $(grep -c -- ' -c ' $TEST_TMP/fakecxx.log) $(grep -v -- ' -c ' $TEST_TMP/fakecxx.log | sed -n 's/^-o \([^ ]*\) .*/\1/p' | tr '\n' ' ')"
}
n=$(ls src/*/*.cpp | grep -vxc src/core/main.cpp)  # every file but gpt2-core's main (make core)
check "a first make compiles every file and links gpt2" test "$(fake_make)" = "compile $n gpt2 "
check "... a second does nothing" test "$(fake_make)" = nothing
check "new CXXFLAGS recompile everything" test "$(fake_make CXXFLAGS=-O2)" = "compile $n gpt2 "
check "... and going back recompiles again" test "$(fake_make)" = "compile $n gpt2 "
check "ARCH=haswell builds its own objects into ./gpt2" test "$(fake_make ARCH=haswell)" = "compile $n gpt2 "
check "... and a plain make after it relinks ./gpt2 from the native objects, compiling nothing" \
    test "$(fake_make)" = "compile 0 gpt2 "
check "SAN=1 and DEBUG=1 (other debug information) build in directories of their own: going back compiles nothing" \
    eval '[ "$(fake_make SAN=1)" = "compile $n build/fakecxx-native/san/gpt2 " ] &&
          [ "$(fake_make DEBUG=1)" = "compile $n build/fakecxx-native/debug/gpt2 " ] && [ "$(fake_make SAN=1)" = nothing ]'
if command -v mpicxx >/dev/null; then
    check "make MPI=1 after make compiles the three sources that read GPT2_MPI and links gpt2-mpi" \
        test "$(fake_make MPI=1)" = "compile 3 gpt2-mpi "
    check "... then make and make MPI=1 do nothing" eval '[ "$(fake_make)" = nothing ] && [ "$(fake_make MPI=1)" = nothing ]'
    check "... make MPI=1 BIN=gpt2 relinks ./gpt2 with MPI, and make then relinks it without" \
        eval '[ "$(fake_make MPI=1 BIN=gpt2)" = "compile 0 gpt2 " ] && [ "$(fake_make)" = "compile 0 gpt2 " ]'
else
    skip "make MPI=1 after make: no mpicxx (Debian: libopenmpi-dev)"
fi
check "make MPI=1 links run_tests of its own (build/omp/mpi/run_tests), not make's" \
    eval 'dry_make MPI=1 test | grep -q -- "-o build/omp/mpi/run_tests " && dry_make test | grep -q -- "-o build/omp/run_tests "'

# Reading the Makefile writes nothing, and neither does make -n: the flags files, the record of which build
# linked ./gpt2 and a Windows build's stb link are written by rules, which -n only prints. make -q runs no
# recipe at all, so whatever it writes was written while the Makefile was read.
# written_by ARGS...: the files `make ARGS` in the copy (stand-in compiler) created or changed.
listing() { (cd $tree && find . -printf '%p %T@\n' | sort); }
written_by() {
    listing >$TEST_TMP/listing_before
    (cd $tree && "${clean_env[@]}" make CXX=$TEST_TMP/fakecxx "$@" >/dev/null 2>&1)
    listing | diff $TEST_TMP/listing_before - | sed -n 's/^> \.\/\([^ ]*\) .*/\1/p' | tr '\n' ' '
}
rm -rf $tree/build $tree/gpt2
for args in "-n" "-q" "-n CXXFLAGS=-O2" "-n ARCH=haswell SAN=1" "-n test bench" "-n MPI=1" "-q MPI=1 SAN=1"; do
    written=$(written_by $args)
    check "make $args writes nothing${written:+ (wrote: $written)}" test -z "$written"
done
written=$(FAKE_TARGET=x86_64-w64-mingw32 written_by -n)
check "... nor make -n for a Windows compiler${written:+ (wrote: $written)}" test -z "$written"
check "... whose make links stb's headers into its build directory" \
    eval 'FAKE_TARGET=x86_64-w64-mingw32 fake_make >/dev/null; [ -L $tree/build/fakecxx-portable/omp/stb-include/stb ]'
check "make test builds no benchmark" eval '! dry_make test | grep -qE "bench_[a-z]+\.cpp|run_bench"'
check "... make test-bench builds run_bench and tests it" \
    eval 'dry_make test-bench | grep -q -- "-o build/omp/run_bench " && dry_make test-bench | grep -q "RUN_BENCH=build/omp/run_bench .*tests/bench_driver.sh"'

# make check (tests/check.sh) makes each stage's build ahead, then runs the stage: every file the stage's make
# writes (each -o of its commands, from make -n -B), the build ahead or make test's build writes too.
outputs() { dry_make "$@" | grep -o -- ' -o [^ ]*' | sort -u; }
outputs test-build >$TEST_TMP/first_stage
for pair in "build-portable|test-portable" "build-arm64|test-arm64" "windows|test-windows" "build-clang|test-clang" \
            "test-build SAN=1|test SAN=1" "fuzz-build|fuzz"; do
    ahead=${pair%|*} stage=${pair#*|}
    outputs $stage >$TEST_TMP/stage
    left=$(outputs $ahead | sort -u - $TEST_TMP/first_stage | comm -13 - $TEST_TMP/stage | head -3 | paste -sd ' ')
    check "make $ahead (made ahead) writes what make $stage builds${left:+ (not:$left)}" \
        eval '[ -s $TEST_TMP/stage ] && [ -z "$left" ]'
done

# make check itself (tests/check.sh), with a stand-in make that logs each call (its pid and nice value) and
# sleeps $STUB_BUILD_S in a build: the stages run at normal priority, the builds ahead at nice 19 and after make
# test; a build ahead still running at the stage limit is stopped, and no later stage waits for one.
stub=$TEST_TMP/stub
mkdir -p $stub
cat >$stub/make <<'EOF'
#!/bin/bash
echo "$$ $(nice) $*" >>"$STUB_LOG"
case " $* " in
    *" build-"* | *" windows "* | *" test-build "* | *" fuzz-build "*) sleep "$STUB_BUILD_S" ;;
    *) echo "1 passed, 0 failed" ;;
esac
EOF
chmod +x $stub/make
# stub_check BUILD_S STAGE_LIMIT: make check with the stand-in; its output in check.out, the calls in stub.log
stub_check() {
    rm -f $TEST_TMP/stub.log
    "${clean_env[@]}" STUB_LOG=$TEST_TMP/stub.log STUB_BUILD_S=$1 STAGE_LIMIT=$2 PATH=$stub:$PATH \
        timeout 60 bash tests/check.sh >$TEST_TMP/check.out 2>&1
}
# calls NICE: the targets of the calls made at that nice value, in order
calls() { awk -v n=$1 '$2 == n {print $5}' $TEST_TMP/stub.log | paste -sd ' '; }
stub_check 0 60
check "make check runs its 10 stages at normal priority: $(calls 0)" \
    test "$(calls 0)" = "test test-bench test-ref test-mpi test-portable test-arm64 test-windows test-clang test fuzz"
check "... and makes 7 builds ahead at nice 19: $(calls 19)" \
    test "$(calls 19)" = "build-noomp-test build-portable build-arm64 windows build-clang test-build fuzz-build"
check "... none before make test" eval '[[ "$(head -1 $TEST_TMP/stub.log)" == *" 0 -s -j"*" test" ]]'
check "... then its total, 10 passed, exit 0" eval 'tail -1 $TEST_TMP/check.out | grep -qx "10 passed, 0 failed, 0 skipped"'
start=$SECONDS
stub_check 100 2
check "a build ahead still running at a stage's limit (2 s) is waited for once, in $((SECONDS - start)) s" \
    eval '[ $((SECONDS - start)) -lt 20 ] && [ "$(grep -c "was not made ahead (waited 0 s)" $TEST_TMP/check.out)" = 6 ]'
# alive PID...: one of them runs (a stopped process may stay a zombie where nothing reaps orphans: Z is not running)
alive() {
    local p
    for p; do [ -e /proc/$p ] && ! grep -q ') Z' /proc/$p/stat 2>/dev/null && return 0; done
    return 1
}
check "... and stopped: no stand-in build left running" \
    eval '! alive $(awk '"'"'$2 == 19 {print $1}'"'"' $TEST_TMP/stub.log)'

# The suites' cleanups (lib.sh's temporary directory, serve_lib.sh's servers, run.sh's log) run in the suite's own
# shell. A background job is a copy of the shell until its exec, EXIT trap included; a signal reaching it there (a
# test that kills a job it has just started) ran the trap in the copy: CI once lost cli_trust.sh's directory so.
kept_after_early_kills() {  # SOURCED...: "kept" when the shell's temporary files outlive 5 jobs killed at once
    timeout 60 env -u TEST_TMP bash -c 'for f in "$@"; do source "tests/$f"; done; keep=${TEST_TMP:-$suite_log}
        for i in 1 2 3 4 5; do sleep 1 >/dev/null & kill -HUP $!; wait $! 2>/dev/null; done
        [ -e "$keep" ] && echo kept' _ "$@" 2>/dev/null
}
for sourced in lib.sh suite.sh; do
    check "a job killed before its exec leaves what $sourced cleans up at the end" \
        test "$(kept_after_early_kills $sourced)" = kept
done

# tests/fuzz/run.sh stopped by SIGTERM (not its process group, as Ctrl-C or timeout would): it ends the fuzzer
# running, starts no other and exits 143. Stand-in fuzzers note their pid and sleep; one runs at a time.
fz=$TEST_TMP/fuzz && mkdir -p $fz
for t in a b; do
    printf '#!/bin/sh\necho $$ >>%s/started\nexec sleep 30\n' "$fz" >$fz/fuzz_stand_in_$t && chmod +x $fz/fuzz_stand_in_$t
done
FUZZ_JOBS=1 bash tests/fuzz/run.sh $fz 30 stand_in_a stand_in_b >$fz/out 2>&1 &
runner=$!
for i in $(seq 100); do [ -s $fz/started ] && break; sleep 0.1; done
kill -TERM $runner
wait_bounded $runner 20
rc=$?
check "fuzz/run.sh exits 143 on SIGTERM (it exited $rc)" test $rc = 143
fuzzer=$(head -1 $fz/started)
for i in $(seq 50); do alive "$fuzzer" || break; sleep 0.1; done
check "... and ends its running fuzzer (pid ${fuzzer:-none})" eval '[ -n "$fuzzer" ] && ! alive "$fuzzer"'
sleep 0.5
check "... and starts no other ($(wc -l <$fz/started) started)" test "$(wc -l <$fz/started)" = 1
for p in $(cat $fz/started); do alive "$p" && kill "$p"; done

# .ci/run installs every tool the tests call: the words in command position of the suites make check runs and
# of the scripts they call (commands.pl reads them: quoted prose and awk/perl/python code skipped, bash -c
# scripts and arrays run as commands read) each come from a package every Debian has (priority required or
# essential), from one of install_deps.sh's test set, or from a package those depend on. A command not
# installed here, or not from a package, must be named like a package of the set. (A fresh Debian lacked
# procps's pgrep.)
cat >$TEST_TMP/commands.pl <<'EOF'
local $/;
my (%fn, @found);
for my $f (@ARGV) {
    open(my $fh, '<', $f) or die "cannot read $f\n";
    my $s = <$fh>;
    $s =~ s/<<-?\s*'?(\w+)'?.*?\n.*?\n\1\n/\n/gs;    # here-documents
    $s =~ s/"(\$\{\w+\[@\]\})"/$1/g;                  # "${ARRAY[@]}" run as a command: read below
    for my $pass (1, 2) {  # quotes and comments left to right (a backslash-newline inside "..." too); a bash -c
                           # "..." script is read as commands
        $s =~ s/(-c )?('[^']*'|"(?:[^"\\]|\\[\s\S])*"|(?<![\w\$\{])#.*$)/
            my ($c, $q) = ($1, $2);
            ($c && substr($q, 0, 1) eq '"') ? do { $q = substr($q, 1, -1); $q =~ s|\\(.)|$1|g; "; $q ;" } : "''"/gme;
    }
    $s =~ s/\(\((?:[^()\n]|\([^()\n]*\))*\)\)//g;    # arithmetic
    my %first = $s =~ /\b(\w+)=\(\s*([a-z_][\w.+-]*)/g;  # an array's first word: a command when it is run
    $s =~ s/=\(/= /g;
    $s =~ s/\$\{(\w+)\[@\]\}/$first{$1} \/\/ ''/ge;
    $s =~ s/(^\s*|\bin\s+)[\w.*-]+(?:\s*\|\s*[\w.*-]+)*\)/$1/mg;  # case labels
    $fn{$_} = 1 for $s =~ /^\s*(?:function\s+)?([A-Za-z_][\w-]*)\s*\(\)/mg;
    my $before = qr/^|[|;&(`{!]|\$\(|\b(?:if|elif|while|until|then|do|else|exec|time|xargs|command -v|check\s+\S+|check_error\s+\S+\s+\S+|timeout(?:\s+-\w(?:\s+[0-9.]+[smh]?)?|\s+--\S+)*\s+[0-9.]+[smh]?)\s/m;
    push @found, [$f, $1] while $s =~ /(?:(?:$before)\s*)+([a-z_][A-Za-z0-9_.+-]*)(?=[\s;)|&`"]|$)/mg;
}
print "$_->[1] $_->[0]\n" for grep { !$fn{$_->[1]} } @found;
EOF
if ! command -v dpkg-query >/dev/null; then
    skip "the tools the tests call: not Debian (no dpkg-query)"
else
    suites=$(ls tests/*.sh tests/fuzz/*.sh | grep -v tests/fresh_machine.sh)  # fresh_machine.sh: by hand, as root
    scripts=$(grep -ohE 'scripts/[a-z_]+\.sh' $suites Makefile .ci/run | sort -u)
    set_pkgs=" $(bash scripts/install_deps.sh --list test) "
    # the set and what its installed packages depend on, to any depth
    dpkg-query -W -f='${Package} ${Depends}, ${Pre-Depends}\n' >$TEST_TMP/depends 2>/dev/null
    covered=" $(awk -v set="$set_pkgs" '
        { deps[$1] = $0 }
        END {
            n = split(set, todo, " "); for (i = 1; i <= n; i++) seen[todo[i]] = 1
            while (n > 0) {
                p = todo[n--]; m = split(deps[p], d, /[ ,|]+/)
                for (j = 2; j <= m; j++) { q = d[j]; sub(/:.*/, "", q)
                    if (q ~ /^[a-z0-9][a-z0-9.+-]+$/ && !(q in seen)) { seen[q] = 1; todo[++n] = q } }
            }
            for (p in seen) printf "%s ", p
        }' $TEST_TMP/depends) "
    perl $TEST_TMP/commands.pl $suites $scripts .ci/run | sort -u >$TEST_TMP/commands
    # Each command's file, then the package of every file in one dpkg -S and every package's priority in one
    # dpkg-query (a dpkg call per command took minutes).
    uncovered="" >$TEST_TMP/paths
    while read -r cmd file; do
        case $(type -t "$cmd") in builtin | keyword) continue ;; esac
        case $cmd in wget) continue ;; esac  # prepare_data.sh's fallback when curl (in the set) is missing
        if ! path=$(type -P "$cmd"); then
            [[ "$set_pkgs" == *" $cmd "* ]] || uncovered+=" $cmd ($file: not installed here)"
            continue
        fi
        real=$(readlink -f "$path")
        echo "$cmd $file $real" >>$TEST_TMP/paths
    done <$TEST_TMP/commands
    # dpkg -S prints "pkg[:arch][, pkg]: /path" (a file usrmerge moved is listed without /usr).
    dpkg -S $(awk '{ print $3; sub(/^\/usr/, "", $3); print $3 }' $TEST_TMP/paths | sort -u) 2>/dev/null |
        grep -v '^diversion by' | sed -n 's/^\([^:, ]*\).*: \(\/[^ ]*\)$/\2 \1/p' >$TEST_TMP/owners
    dpkg-query -W -f='${Package} ${Priority} ${Essential}\n' $(cut -d' ' -f2 $TEST_TMP/owners | sort -u) \
        2>/dev/null >$TEST_TMP/priorities
    while read -r cmd file real; do
        pkg=$(awk -v a="$real" -v b="${real#/usr}" '$1 == a || $1 == b { print $2; exit }' $TEST_TMP/owners)
        how=$(awk -v p="$pkg" '$1 == p { print $2, $3; exit }' $TEST_TMP/priorities)
        case $how in required* | *yes) continue ;; esac
        [[ "$covered" == *" $pkg "* || ( -z "$pkg" && "$set_pkgs" == *" $cmd "* ) ]] ||
            uncovered+=" $cmd ($file: package ${pkg:-none})"
    done <$TEST_TMP/paths
    check "the tests' $(cut -d' ' -f1 $TEST_TMP/commands | sort -u | wc -l) commands are on every Debian or installed by install_deps.sh test${uncovered:+; not:$uncovered}" \
        test -z "$uncovered"
fi

summary
