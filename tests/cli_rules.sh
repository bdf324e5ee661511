#!/usr/bin/env bash
# cli_rules.sh: the rules that keep the core plain and outputs and signals safe by construction, enforced
# on src/: src/core includes nothing outside itself (tests/cli_core.sh builds it alone), every folder includes
# only folders of a lower rank in src/README.md's table; only
# src/platform/output_files.cpp opens a file for writing (staged with O_EXCL|O_NOFOLLOW, locked, checked
# for kind), only src/platform/signals.cpp installs signal handlers, and only src/platform/platform* (and,
# for the unit tests, tests/test_os.cpp) meets the operating system; the kernels and the model never print
# or exit; src/ reads only the environment variables its users set. Each checker is tried on made-up trees
# first, so it is seen to find each kind of fault, then run on src/ (and tests/). First, src/README.md's
# reading path names files that exist, with their true line counts and total, and every other line count the
# READMEs state is one this script checks, and true.
source "$(dirname "$0")/lib.sh"
T=$TEST_TMP

# --- src/README.md's reading path: each row's lines and the total are the files' ----------------------------
# reading_path README SRC: prints each disagreement between README's table under "## One training step, in
# order" (rows `| N | `path` | what | lines |` numbered from 1, one file a row, then `| | total | | lines |`)
# and the files under SRC: a file that does not exist, a row whose lines are not the file's `wc -l`, a total
# that is not their sum, rows out of order or none at all; fails if there is any.
reading_path() {
    local readme=$1 src=$2 bad=0 rows=0 sum=0 total="" n file lines count
    while IFS='|' read -r _ n file _ lines _; do
        n=${n// /} lines=${lines//[ ,]/} file=$(echo $file)
        case $n in '#' | -*) continue ;; esac
        if [ "$file" = total ]; then total=$lines; continue; fi
        file=${file//\`/} rows=$((rows + 1))
        [ "$n" = $rows ] || { echo "row $n: expected number $rows"; bad=1; }
        if [ ! -f "$src/$file" ]; then echo "row $n: no file $src/$file"; bad=1; continue; fi
        count=$(wc -l <"$src/$file")
        sum=$((sum + count))
        [ "$lines" = $count ] || { echo "row $n: $file has $count lines, the table says '$lines'"; bad=1; }
    done < <(sed -n '/^## One training step, in order/,/^## /p' "$readme" | grep '^|')
    [ $rows -gt 0 ] || { echo "no rows under '## One training step, in order' in $readme"; bad=1; }
    [ "$total" = $sum ] || { echo "total: the files have $sum lines, the table says '$total'"; bad=1; }
    return $bad
}
mkdir -p $T/path/src/core
printf '1\n2\n3\n' >$T/path/src/core/config.h && printf 'a\nb\n' >$T/path/src/core/gelu.cpp
cat >$T/path/README.md <<'TABLE'
# Reading src/
## One training step, in order
| # | file | what to look for | lines |
|---|------|------------------|-------|
| 1 | `core/config.h` | the geometry | 3 |
| 2 | `core/gelu.cpp` | GELU | 2 |
| | total | | 5 |

## Skip on a first read
| 3 | `core/gemm.cpp` | past the section: not a row of the table | 1,000 |
TABLE
check "the reading-path check passes a table whose rows and total are the files' line counts" \
    reading_path $T/path/README.md $T/path/src
# fails_with NAME SED OUTPUT: the check fails on the made-up table edited by SED, printing OUTPUT alone.
fails_with() {
    sed "$2" $T/path/README.md >$T/path/edited.md
    reading_path $T/path/edited.md $T/path/src >$T/path.out
    check "$1" test $? -eq 1 -a "$(cat $T/path.out)" = "$3"
}
fails_with "... and fails on a row's wrong count, naming the row and both counts" 's/| 3 |$/| 4 |/' \
    "row 1: core/config.h has 3 lines, the table says '4'"
fails_with "... on a wrong total" 's/| 5 |$/| 6 |/' "total: the files have 5 lines, the table says '6'"
fails_with "... on a file that does not exist" 's|`core/gelu.cpp`|`kernels/gelu.c`|' \
    "row 2: no file $T/path/src/kernels/gelu.c
total: the files have 3 lines, the table says '5'"
fails_with "... on a missing total" '/| total |/d' "total: the files have 5 lines, the table says ''"
fails_with "... on a row out of order" 's/^| 2 |/| 3 |/' "row 3: expected number 2"
reading_path src/README.md src >$T/path.out
check "src/README.md's reading path: every file exists, each row's lines and the total are wc -l's" \
    test ! -s $T/path.out
sed 's/^/    /' $T/path.out

# --- every other line count a README states: in a form this check reads, and true -----------------------------
# line_counts ROOT README...: prints `README: ...` for each line count ("N lines" or "N-line", N with or without
# thousands' commas, across line breaks too) that a README states outside its reading-path table, unless it is
# written `PATH` (N lines), `PATH` (at most N lines) or `PATH` (about N lines) and is true of ROOT/PATH: the lines
# of that file, or of every file under that folder (`cat | wc -l`), are N, at most N, or round to N at N's last
# nonzero digit (about 17,600: 17,550 to 17,649). Fails if it prints anything: a count no test checks is written
# so that this one does, or left out. A number the text does not call lines ("at most 3,000") is not seen: say lines.
line_counts() {
    local root=$1 readme
    shift
    for readme in "$@"; do
        sed '/^## One training step, in order/,/^## /{/^|/d}' "$readme" | tr '\n' ' ' |
            LC_ROOT=$root LC_FILE=$readme perl -ne '
            my ($root, $file, %checked) = ($ENV{LC_ROOT}, $ENV{LC_FILE});
            while (/`([^`\s]+)` \((at most |about |)(\d[\d,]*) lines\)/g) {
                my ($path, $how, $n, $at) = ($1, $2, $3, $-[3]);
                $checked{$at} = 1;
                (my $want = $n) =~ s/,//g;
                my $p = "$root/$path";
                if (!-e $p) { print "$file: `$path` ($how$n lines): no such file or folder\n"; next }
                my $got = 0 + (-d $p ? `find "$p" -type f -print0 | xargs -0 cat | wc -l` : `wc -l <"$p"`);
                my $ok = $got == $want;
                $ok = $got <= $want if $how eq "at most ";
                if ($how eq "about ") {
                    my $unit = 1;
                    $unit *= 10 while $want % ($unit * 10) == 0 && $want >= $unit * 10;
                    $ok = int(($got + $unit / 2) / $unit) * $unit == $want;
                }
                print "$file: `$path` ($how$n lines): it has $got\n" unless $ok;
            }
            while (/(\d[\d,]*)[ -]lines?\b/g) {
                next if $checked{$-[1]};
                my $from = $-[0] > 50 ? $-[0] - 50 : 0;
                print "$file: a line count no test checks: ...", substr($_, $from, $+[0] - $from), "\n";
            }'
    done | grep . && return 1
    return 0
}
mkdir -p $T/counts/lib
printf '1\n2\n' >$T/counts/lib/a.c && printf '3\n4\n5\n' >$T/counts/lib/b.c
cat >$T/counts/README.md <<'TEXT'
# A made-up README
The library, `lib` (5 lines), is small: `lib/a.c` (at most 10
lines) and `lib/b.c` (about 3 lines).
## One training step, in order
| 1 | `lib/a.c` | a row: reading_path's, not this check's | 2 lines |
## Next
TEXT
check "the line-count check passes counts written as \`PATH\` (N lines), (at most N lines), (about N lines) that hold" \
    line_counts $T/counts $T/counts/README.md
# counts_fail NAME SED OUTPUT: the check fails on the made-up README edited by SED, printing OUTPUT alone.
counts_fail() {
    sed "$2" $T/counts/README.md >$T/counts/edited.md
    line_counts $T/counts $T/counts/edited.md >$T/counts.out
    check "$1" test $? -eq 1 -a "$(cat $T/counts.out)" = "$3"
}
counts_fail "... and fails on a wrong count, naming the path and the true count" 's/(5 lines)/(6 lines)/' \
    "$T/counts/edited.md: \`lib\` (6 lines): it has 5"
counts_fail "... on a file past its 'at most'" 's/(at most 10/(at most 1/' \
    "$T/counts/edited.md: \`lib/a.c\` (at most 1 lines): it has 2"
counts_fail "... on an 'about' that does not round to it" 's/(about 3 lines)/(about 30 lines)/' \
    "$T/counts/edited.md: \`lib/b.c\` (about 30 lines): it has 3"
counts_fail "... on a path that does not exist" 's|`lib/b.c`|`lib/c.c`|' \
    "$T/counts/edited.md: \`lib/c.c\` (about 3 lines): no such file or folder"
counts_fail "... and on a count in any other form (here: about 17,600 lines)" \
    's/^The library/The whole, about 17,600 lines; the library/' \
    "$T/counts/edited.md: a line count no test checks: ...# A made-up README The whole, about 17,600 lines"
line_counts . README.md src/README.md tests/README.md tests/bench_results.md >$T/counts.out
check "README.md, src/README.md, tests/README.md, tests/bench_results.md: every line count is checked, and true" \
    test ! -s $T/counts.out
sed 's/^/    /' $T/counts.out

# --- the write rule: only src/platform/output_files.cpp writes files, only src/platform/signals.cpp handles signals -------------
# write_rule DIR: prints FILE:LINE: WHAT for each file under DIR (C++ sources) but platform/output_files.cpp that opens a
# file for writing (fopen with a mode of w, a or + or not a literal, freopen, ofstream/fstream, creat, open or
# openat with O_WRONLY, O_RDWR or O_CREAT, platform.h's os_create_exclusive, os_open_append or os_open_lock),
# and each but platform/signals.cpp that calls signal, sigaction or os_signals_install; fails if any. The platform
# layer (platform/platform*) is how those two do it, and is exempt; so is core/main.cpp, gpt2-core's main,
# which cannot reach that door: it writes only into the directory it creates, each file new ("wbx") under a
# .partial name, then renamed, and its one signal handler only removes that directory while it is empty.
write_rule() {
    find "$1" -type f \( -name '*.cpp' -o -name '*.h' -o -name '*.cc' -o -name '*.hpp' \) | sort | perl -e '
        my ($root, $bad) = ($ARGV[0], 0);
        my $args = qr/(\((?:[^()"]++|"(?:[^"\\]|\\.)*"|(?-1))*\))/;
        while (my $file = <STDIN>) {
            chomp $file; open(my $h, "<", $file) or die "$file: $!"; local $/; my $src = <$h>;
            (my $rel = $file) =~ s{^\Q$root\E/*}{};
            # comments and #include lines become blanks (newlines kept, so line numbers stay), string and
            # character literals "N", N indexing @lit (so no call is seen inside one)
            my @lit;
            $src =~ s{("(?:[^"\\\n]|\\.)*"|\x27(?:[^\x27\\\n]|\\.)*\x27)|(//[^\n]*|/\*.*?\*/|^[ \t]*#[ \t]*include[^\n]*)}
                     {defined $1 ? do { push @lit, $1; "\"$#lit\"" } : ($2 =~ tr/\n//cdr)}gsme;
            my @hits;
            my $at = sub { my $n = 1 + (substr($src, 0, $_[0]) =~ tr/\n//); push @hits, [$n, "$file:$n: $_[1]"]; };
            next if $rel =~ m{^platform/platform(?:_\w+\.cpp|\.h)$};
            if ($rel ne "platform/output_files.cpp" && $rel ne "core/main.cpp") {
                while ($src =~ /\bfopen\s*$args/g) {
                    my $p = $-[0]; my @ids = $1 =~ /"(\d+)"/g;  # the mode: the last literal
                    $at->($p, "fopen for writing") if !@ids || $lit[$ids[-1]] =~ /[wa+]/;
                }
                while ($src =~ /\b(?:freopen|creat)\s*\(/g) { $at->($-[0], "freopen or creat") }
                while ($src =~ /\b(?:w?ofstream|w?fstream|basic_o?fstream)\b/g) { $at->($-[0], "ofstream or fstream") }
                while ($src =~ /\b(?:open|openat)\s*$args/g) {
                    my ($p, $call) = ($-[0], $1); $at->($p, "open for writing") if $call =~ /\bO_(?:WRONLY|RDWR|CREAT)\b/;
                }
                while ($src =~ /\bos_(?:create_exclusive|open_append|open_lock)\s*\(/g) { $at->($-[0], "open for writing") }
            }
            if ($rel ne "platform/signals.cpp" && $rel ne "core/main.cpp") {
                while ($src =~ /\b(?:signal|sigaction|os_signals_install)\s*\(/g) { $at->($-[0], "signal handler") }
            }
            print "$_->[1]\n" for sort { $a->[0] <=> $b->[0] } @hits; $bad += @hits;
        }
        exit($bad ? 1 : 0);' "$1"
}
mkdir -p $T/rule/src/platform $T/rule/src/cli
cat >$T/rule/src/platform/output_files.cpp <<'EOF'
int publish(const char* p) { FILE* f = fopen(p, "w"); int fd = open(p, O_WRONLY | O_CREAT, 0644); return fd; }
EOF
cat >$T/rule/src/platform/signals.cpp <<'EOF'
void stop_install() { struct sigaction sa = {}; sigaction(SIGINT, &sa, nullptr); signal(SIGPIPE, SIG_IGN); }
EOF
cat >$T/rule/src/cli/reads.cpp <<'EOF'
#include <fstream>
// fopen(p, "w") in a comment, and /* std::ofstream out(p); */
void reads(const char* p) {
    FILE* f = path == "-" ? stdin : fopen(p, "rb");
    if (!(f = fopen(p, "rb"))) fatal("cannot open %s for writing a+", p);
    int fd = ::open(p, O_RDONLY | O_NONBLOCK);
    std::ifstream in(p);
    fatal("fopen(p, \"w\") and open(p, O_CREAT)");
    struct sigaction old;
}
EOF
check "the write rule passes a tree that writes only in output_files.cpp and handles signals only in signals.cpp" \
    write_rule $T/rule/src
cp $T/rule/src/cli/reads.cpp $T/rule/reads.cpp && echo '    FILE* g = fopen(p, "w");' >>$T/rule/src/cli/reads.cpp
write_rule $T/rule/src >$T/rule.out
check "... and fails once a raw fopen(p, \"w\") is added to another file, naming its line" \
    test $? -eq 1 -a "$(cat $T/rule.out)" = "$T/rule/src/cli/reads.cpp:11: fopen for writing"
cp $T/rule/reads.cpp $T/rule/src/cli/reads.cpp
cat >$T/rule/src/cli/writes.cpp <<'EOF'
void writes(const char* p, const char* mode) {
    FILE* a = fopen(p, "ab"); FILE* b = fopen(p, "r+"); FILE* c = fopen(p, mode);
    freopen("x", "r", stdout); std::ofstream o(p); std::fstream io(p); int d = creat(p, 0644);
    int e = open(p,
                 O_RDWR);
    int g = openat(AT_FDCWD, p, O_CREAT | O_EXCL, 0600);
    std::signal(SIGINT, on_int);
    sigaction(SIGTERM, &sa, nullptr);
}
EOF
write_rule $T/rule/src >$T/rule.out
if [ "$(cut -d: -f2 $T/rule.out | tr '\n' ' ')" = "2 2 2 3 3 3 3 4 6 7 8 " ]; then
    pass "... and finds each kind of write and signal call"
else
    fail "... and finds each kind of write and signal call (expected 11 on lines 2 2 2 3 3 3 3 4 6 7 8)"
    sed 's/^/    /' $T/rule.out
fi
cp -r src $T/rule/copy && echo 'static FILE* raw(const char* p) { return fopen(p, "w"); }' >>$T/rule/copy/cli/main.cpp
write_rule $T/rule/copy >$T/rule.out
check "... and a raw fopen(p, \"w\") added to a scratch copy of src/cli/main.cpp is found on its line" \
    grep -qx "$T/rule/copy/cli/main.cpp:$(wc -l <$T/rule/copy/cli/main.cpp): fopen for writing" $T/rule.out
cat >$T/rule/src/cli/via_os.cpp <<'EOF'
void via_os(const std::string& p) { int fd = os_open_read(p); fd = os_create_exclusive(p, false);
    os_signals_install(on_stop, on_fault); }
EOF
write_rule $T/rule/src >$T/rule.out
check "... and finds platform.h's write and signal calls outside output_files.cpp and signals.cpp (not its reads)" \
    test "$(grep via_os.cpp $T/rule.out | cut -d: -f2- | tr '\n' ' ')" = "1: open for writing 2: signal handler "
rm $T/rule/src/cli/via_os.cpp
write_rule src >$T/rule.out
check "src/: only platform/output_files.cpp opens files for writing, only platform/signals.cpp calls signal or sigaction" \
    test ! -s $T/rule.out
sed 's/^/    /' $T/rule.out

# --- the error rule: kernels and the model never print or exit ----------------------------------------------
# error_rule DIR: prints FILE:LINE: CALL for each call (comments aside) that reports or ends the process:
# fatal, fatal_hint, printf, fprintf, puts, fputs, perror, std::cout, std::cerr, exit, abort, in the files
# under DIR/core, DIR/precision, DIR/tuned, DIR/inference and DIR/memory that compute (kernels, the model, its
# precisions, the tuned gemm and decoding): all but fatal()'s own (error.*), gpt2-core's main and the ones that read a user's input (the
# trainer, optimizer, data loader and token file, safetensors, HuggingFace checkpoint and JSON readers); fails
# if any. What a caller has already checked is an assert there, what
# only the computation finds is returned, and the callers report it (src/README.md, "The rules the code
# keeps").
error_rule() {
    find "$1/core" "$1/precision" "$1/tuned" "$1/inference" "$1/memory" -type f \( -name '*.cpp' -o -name '*.h' \) \
        ! -name 'trainer.*' ! -name 'optimizer.*' ! -name 'dataloader.*' \
        ! -name 'safetensors.*' ! -name 'hf.*' ! -name 'json.*' ! -name 'error.*' ! -name 'main.*' 2>/dev/null | sort | perl -e '
        my $bad = 0;
        while (my $file = <STDIN>) {
            chomp $file; open(my $h, "<", $file) or die "$file: $!"; local $/; my $src = <$h>;
            $src =~ s{(//[^\n]*|/\*.*?\*/)}{$1 =~ tr/\n//cdr}gse;  # comments blanked, newlines kept
            while ($src =~ /\b(fatal|fatal_hint|printf|fprintf|puts|fputs|perror|exit|abort)\s*\(|\bstd::(cout|cerr)\b/g) {
                my $n = 1 + (substr($src, 0, $-[0]) =~ tr/\n//);
                print "$file:$n: ", $1 // "std::$2", "\n"; $bad++;
            }
        }
        exit($bad ? 1 : 0);'
}
mkdir -p $T/err/core $T/err/inference $T/err/cli
cat >$T/err/inference/quiet.cpp <<'EOF'
// fatal("x") in a comment, /* printf("y") */ and exit(1) here are not calls
#include <cassert>
int check(int id, int V) { assert(id < V && "callers check ids"); return snprintf(buf, 8, "%d", id); }
EOF
printf 'void f() { fatal("out of range"); }\n' >$T/err/cli/loud.cpp
printf 'void f() { fatal("bad token file"); }\n' >$T/err/core/dataloader.cpp
check "the error rule passes kernels that only assert and return (fatal in cli/ and the data loader is theirs)" \
    error_rule $T/err
printf 'void g() {\n  fatal("x");\n  fatal_hint("h", "x"); printf("x");\n  std::cerr << 1; exit(1);\n}\n' \
    >$T/err/core/gelu.cpp
error_rule $T/err >$T/err.out
check "... and fails once a kernel calls fatal, fatal_hint, printf, std::cerr or exit, naming each line" \
    test "$(cut -d: -f2- $T/err.out | tr '\n' ' ')" = "2: fatal 3: fatal_hint 3: printf 4: std::cerr 4: exit "
error_rule src >$T/err.out
check "src/: the kernels and the model never print or exit (no fatal(): their callers report errors)" test ! -s $T/err.out
sed 's/^/    /' $T/err.out

# --- the direction rule: src/core includes nothing outside itself ---------------------------------------------
# core_arrows DIR: prints `FILE: HEADER` for each #include "HEADER" in DIR/core/ whose HEADER is not one of
# core's own (core/...); the C++ library's <...> headers are allowed.
core_arrows() {
    (cd "$1" && grep -HE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' core/*.cpp core/*.h 2>/dev/null) |
        sed -E 's/:[[:space:]]*#[[:space:]]*include[[:space:]]*"([^"]*)".*/: \1/' | grep -v ': core/' | sort
}
mkdir -p $T/dir/core && printf '#include <vector>\n#include "core/model.h"\n' >$T/dir/core/model.cpp
check "the direction rule passes a core that includes only core/ and the C++ library" test -z "$(core_arrows $T/dir)"
printf '#include "platform/util.h"\n' >>$T/dir/core/model.cpp
check "... and names a core file's include from outside core" \
    test "$(core_arrows $T/dir)" = "core/model.cpp: platform/util.h"
core_arrows src >$T/dir.out
check "src/core includes nothing outside itself (an extension includes the core, never the other way)" \
    test ! -s $T/dir.out
sed 's/^/    /' $T/dir.out

# --- the rank rule: every folder's includes point down src/README.md's table of folders --------------------
# rank_rule README SRC: prints `FILE:LINE: includes X/ (rank R, not below F's rank R')` for each #include
# "X/..." in SRC/F/ of another folder X whose rank in README's table (rows `| N | a, b |` in the
# "**Direction.**" rule) is not lower than F's, and `SRC/F: not in the rank table` for a folder it lacks;
# fails if any. Same-rank folders may not include each other either, so no circle can cross folders.
rank_rule() {
    local table
    table=$(sed -n '/^- \*\*Direction\./,/^- \*\*/p' "$1" | grep -E '^ *\| *[0-9]+ *\|' | tr -d ' ')
    [ -n "$table" ] || { echo "$1: no rank table in the **Direction.** rule"; return 1; }
    (cd "$2" && for d in */; do echo "${d%/}"; done; grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"[^"/]+/' \
        */*.cpp */*.h 2>/dev/null) | awk -v table="$table" -v src="$2" '
        BEGIN { n = split(table, rows, "\n")
                for (i = 1; i <= n; i++) { split(rows[i], c, "|"); k = split(c[3], f, ","); for (j = 1; j <= k; j++) rank[f[j]] = c[2] } }
        !/:/ { if (!($0 in rank)) { print src "/" $0 ": not in the rank table"; bad = 1 } next }
        { split($0, p, ":"); from = p[1]; sub(/\/.*/, "", from); to = $0; sub(/^[^"]*"/, "", to); sub(/\/.*/, "", to)
          if (to == from || !(from in rank)) next
          if (!(to in rank) || rank[to] >= rank[from]) {
              print src "/" p[1] ":" p[2] ": includes " to "/ (rank " (to in rank ? rank[to] : "none") ", not below " from "'"'"'s " rank[from] ")"; bad = 1 } }
        END { exit bad }'
}
mkdir -p $T/rank/src/core $T/rank/src/platform $T/rank/src/cli
cat >$T/rank/README.md <<'TABLE'
- **Direction.** Folders point down:

  | rank | folders |
  |------|---------|
  | 0 | core |
  | 1 | platform |
  | 2 | cli |
- **Errors.** (the next rule: past the table)
  | 0 | cli |
TABLE
printf '#include "core/model.h"\n' >$T/rank/src/platform/util.h
printf '#include <vector>\n#include "cli/args.h"\n#include "platform/util.h"\n#include "core/model.h"\n' >$T/rank/src/cli/main.cpp
printf '#include "core/layers.h"\n' >$T/rank/src/core/model.h
check "the rank rule passes folders that include their own files and lower ranks' only" rank_rule $T/rank/README.md $T/rank/src
printf '// a comment\n  #include "cli/args.h"\n' >>$T/rank/src/platform/util.h
rank_rule $T/rank/README.md $T/rank/src >$T/rank.out
check "... and fails on an include up a rank, naming its line and both ranks" \
    test $? -eq 1 -a "$(cat $T/rank.out)" = "$T/rank/src/platform/util.h:3: includes cli/ (rank 2, not below platform's 1)"
printf '#include "core/model.h"\n' >$T/rank/src/platform/util.h && mkdir -p $T/rank/src/serve
rank_rule $T/rank/README.md $T/rank/src >$T/rank.out
check "... and on a folder the table lacks" test $? -eq 1 -a "$(cat $T/rank.out)" = "$T/rank/src/serve: not in the rank table"
rmdir $T/rank/src/serve && sed -i 's/| 2 | cli |/| 1 | cli |/' $T/rank/README.md
rank_rule $T/rank/README.md $T/rank/src >$T/rank.out
check "... and on an include between folders of one rank (a circle could close there)" \
    test $? -eq 1 -a "$(cat $T/rank.out)" = "$T/rank/src/cli/main.cpp:3: includes platform/ (rank 1, not below cli's 1)"
cp -r src $T/rank/copy && echo '#include "cli/args.h"' >>$T/rank/copy/platform/util.h
rank_rule src/README.md $T/rank/copy >$T/rank.out
check "... and finds an include of cli/ planted in a scratch copy of src/platform/util.h" \
    grep -qx "$T/rank/copy/platform/util.h:$(wc -l <$T/rank/copy/platform/util.h): includes cli/ (rank 6, not below platform's 1)" $T/rank.out
rank_rule src/README.md src >$T/rank.out
check "src/: every folder's includes point down src/README.md's rank table (no arrow up, no circle)" test ! -s $T/rank.out
sed 's/^/    /' $T/rank.out

# --- the length rule: no function is longer than 80 lines -------------------------------------------------
# long_functions MAX FILE...: prints `FILE:LINE: N lines: SIGNATURE` for each function longer than MAX lines,
# from its signature's first line to its closing brace, and fails if any. A function is what the house style
# makes one: a signature at column 0 (or 4, a member in a class body) whose last line ends with "{", its
# continuation lines indented, closed by "}" at the signature's indent; one-liners and initializers are not.
long_functions() {
    local max=$1; shift
    awk -v max="$max" '
FNR == 1 { sig = 0; body = 0 }
body { if (substr($0, 1, length(ind) + 1) == ind "}") { n = FNR - sig + 1; if (n > max) printf "%s:%d: %d lines: %s\n", FILENAME, sig, n, head; body = sig = 0 } next }
/^(    )?[A-Za-z_~]/ && !/^ *(namespace|struct|class|enum|union|using|typedef|static_assert|public:|private:|protected:|return|extern "C"|template *<[^>]*> *(struct|class))\b/ &&
    !(sig && head ~ /^ *template *<[^>]*> *$/) { sig = FNR; head = $0; text = ""; ind = $0; sub(/[^ ].*/, "", ind) }
sig { text = text $0
      if (/\{.*\}[ \t;]*(\/\/.*)?$/ || /;[ \t]*(\/\/.*)?$/) { sig = 0; next }
      if (/\{[ \t]*(\/\/.*)?$/) { pre = text; sub(/\(.*/, "", pre); if (text ~ /\(/ && pre !~ /=/) body = 1; else sig = 0 } }
    ' "$@" | grep .
    test $? -ne 0
}
mkdir -p $T/len
{
    echo 'namespace {'
    echo 'int one_liner(int x) { return x; }'
    echo 'const int kTable[] = {'
    for i in $(seq 90); do echo "    $i,"; done
    echo '};'
    echo 'template <typename T>'
    echo 'T twice(T x,'
    echo '        T y) {'
    for i in $(seq 75); do echo "    x += y;  // $i"; done
    echo '    return x;'
    echo '}'
    echo 'struct Box {'
    echo '    int size() const {'
    for i in $(seq 77); do echo "        n++;  // $i"; done
    echo '        return n;'
    echo '    }'
    echo '};'
    echo '}  // namespace'
} >$T/len/a.cpp
check "the length rule passes functions of 80 lines (a template, a member) and skips one-liners and tables" \
    long_functions 80 $T/len/a.cpp
sed -i 's|^    x += y;  // 1$|    x += y;\n    x -= y;|; s|^        n++;  // 1$|        n++;\n        n--;|' $T/len/a.cpp
long_functions 80 $T/len/a.cpp >$T/len.out
check "... and fails on each one line longer, naming its first line and length" \
    test $? -eq 1 -a "$(cut -d: -f2,3 $T/len.out | tr '\n' ' ')" = "95: 81 lines 177: 81 lines "
long_functions 80 src/*/*.cpp src/*/*.h tests/*.cpp tests/*.h tests/fuzz/*.cpp >$T/len.out
check "src/ and the unit tests: no function longer than 80 lines" test ! -s $T/len.out
sed 's/^/    /' $T/len.out

# --- the platform rule: the operating system is met in the platform layer only ------------------------------
# platform_rule DIR: prints FILE:LINE: WHAT for each C++ source under DIR but the platform layer
# (platform/platform*, and test_os.cpp for the unit tests), the benchmarks (never built for Windows) and npm's
# node_modules (third-party sources the tests run, not ours) that tests
# _WIN32 or includes a system header: <windows.h>, <io.h>, <unistd.h>, <fcntl.h>, <dirent.h>, <glob.h>,
# <sched.h>, <signal.h> or <sys/*.h>; fails if any. (<csignal> is standard C++: signals.cpp's flags need it.)
platform_rule() {
    find "$1" -name node_modules -prune -o -type f \( -name '*.cpp' -o -name '*.h' \) ! -path "$1/platform/platform*" \
        ! -name test_os.cpp ! -name 'bench*' -print | sort | xargs -r grep -nHE \
        '_WIN32|^[[:space:]]*#[[:space:]]*include[[:space:]]*<(windows|io|unistd|fcntl|dirent|glob|sched|signal|sys/[a-z_]+)\.h>'
}
platform_rule_clean() { ! platform_rule "$1" >$T/plat.out; }
mkdir -p $T/plat/platform $T/plat/io
printf '#ifdef _WIN32\n#include <windows.h>\n#endif\n' >$T/plat/platform/platform_win.cpp
printf '#include <sys/mman.h>\n#include <dirent.h>\n' >$T/plat/platform/platform_posix.cpp
printf '#include <csignal>\n#include "platform/platform.h"\nint f() { return os_getpid(); }\n' >$T/plat/io/reader.cpp
mkdir -p $T/plat/node/node_modules/addon && printf '#ifdef _WIN32\n#endif\n' >$T/plat/node/node_modules/addon/env.cpp
check "the platform rule passes a tree that meets the system only in platform/platform* (and in node_modules)" \
    platform_rule_clean $T/plat
printf 'int g() {\n#ifdef _WIN32\n  return 1;\n#endif\n}\n#include <sys/mman.h>\n#include <fcntl.h>\n#include <io.h>\n' \
    >>$T/plat/io/reader.cpp
platform_rule $T/plat >$T/plat.out
check "... and finds _WIN32 and <sys/mman.h>, <fcntl.h>, <io.h> outside it, naming each line" \
    test "$(cut -d: -f2 $T/plat.out | tr '\n' ' ')" = "5 9 10 11 "
platform_rule_clean src
check "src/ meets the operating system only in platform/platform* (no _WIN32, no system headers elsewhere)" \
    test ! -s $T/plat.out
sed 's/^/    /' $T/plat.out
platform_rule_clean tests
check "... and the unit tests only in tests/test_os.cpp" test ! -s $T/plat.out
sed 's/^/    /' $T/plat.out
# --- the environment rule: ./gpt2 reads only the variables its users set ------------------------------------
# env_rule DIR: prints FILE:LINE: NAME for each getenv in DIR whose argument is not one of the variables the
# READMEs document for users (GPT2_DATA_DIR, GPT2_ISA, OMP_NUM_THREADS, TERM) or not a literal; fails if any.
# A knob for tests is a flag, or the test calls the function with its own options: no production file reads a
# test-only variable.
env_rule() {
    grep -rnE '\bgetenv[[:space:]]*\(' "$1" --include='*.cpp' --include='*.h' |
        grep -vE 'getenv[[:space:]]*\("(GPT2_DATA_DIR|GPT2_ISA|OMP_NUM_THREADS|TERM)"\)' | grep .
    test $? -ne 0
}
mkdir -p $T/env && printf 'const char* d = getenv("GPT2_DATA_DIR");\nconst char* t = getenv("TERM");\n' >$T/env/a.cpp
check "the environment rule passes getenv of the documented variables" env_rule $T/env
printf 'size_t n = atoi(getenv("GPT2_TEST_CHUNK"));\n' >>$T/env/a.cpp
check "... and fails once a file reads another variable, naming its line" \
    test "$(env_rule $T/env | cut -d: -f2)" = 3
env_rule src >$T/env.out
check "src/ reads no environment variable but GPT2_DATA_DIR, GPT2_ISA, OMP_NUM_THREADS and TERM" test ! -s $T/env.out
sed 's/^/    /' $T/env.out
# --- the top level: src/ data/ scripts/ tests/ Makefile README.md, .ci/ and the tools' dot files ------------
# top_level_rule DIR: prints each entry git tracks at DIR's top level that is not one of those; fails if any.
top_level_rule() {
    git -C "$1" ls-files | cut -d/ -f1 | sort -u |
        grep -vxE 'src|data|scripts|tests|Makefile|README\.md|\.ci|\.gitignore|\.clang-format'
    test $? -ne 0
}
if git -C . rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git init -q $T/top && touch $T/top/Makefile $T/top/README.md $T/top/in.fifo && mkdir $T/top/src &&
        touch $T/top/src/a.cpp && git -C $T/top add -A
    check "the top-level rule finds a stray file, naming it" test "$(top_level_rule $T/top)" = in.fifo
    git -C $T/top rm -q --cached in.fifo
    check "... and passes once it is gone" top_level_rule $T/top
    top_level_rule . >$T/top.out
    check "the clone's top level holds only src/ data/ scripts/ tests/ Makefile README.md (and .ci/, dot files)" \
        test ! -s $T/top.out
    sed 's/^/    /' $T/top.out
else
    skip "the top-level rule: not a git clone"
fi
summary
