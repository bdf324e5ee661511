#!/usr/bin/env bash
# install_deps.sh: the one list of Debian packages the project needs, used by scripts/quickstart.sh (build)
# and .ci/run (test). Installs with apt, as root, only the packages dpkg reports neither installed nor
# provided by an installed package. It does not build or test anything, and knows no other package manager
# (npm packages are `make node-deps`'s): off Debian it only checks for g++, make and the stb headers.
#   bash scripts/install_deps.sh build|test      install what is missing
#   bash scripts/install_deps.sh --list build    print the set's packages on one line
set -euo pipefail

die() { echo "error: $1" >&2; exit 1; }

# build: ./gpt2 (g++ with OpenMP, stb headers) and `make data` (curl + certificates when downloading).
build=(g++ make libstb-dev ca-certificates curl)
# test: `make check` (PyTorch references, OpenBLAS for torch, clang + libFuzzer runtime for make fuzz and
# libomp for make test-clang, node and npm for the tokenizer's oracle tiktoken and OpenAI's client, whose npm
# packages `make node-deps` installs, chromium for the chat page of tests/cli_serve.sh (headless), OpenMPI for
# make MPI=1 and its mpirun tests (iproute2's ip and tc for the one over network namespaces), full perl for the
# Compress::Zlib that tests/cli_plot.sh decodes PNGs with, qemu-user and the aarch64 cross compiler for make
# test-portable and make test-arm64, the mingw-w64 cross compiler and wine for make test-windows: wine64 runs
# 64-bit programs, wine gives it the `wine` command; procps for tests/mpi.sh's pgrep, git for tests/cli_build.sh,
# time for the peak memory tests/cli_instruct_trust.sh measures).
# tests/cli_build.sh checks that every command the suites call is here or on every Debian.
test=("${build[@]}" python3 python3-torch python3-numpy python3-regex libopenblas0-pthread clang libclang-rt-14-dev libomp-dev
      nodejs npm chromium openmpi-bin libopenmpi-dev iproute2 perl qemu-user g++-aarch64-linux-gnu g++-mingw-w64-x86-64 wine wine64
      procps git time)

list=0 set=""
for arg in "$@"; do
    case $arg in
        --list) list=1 ;;
        build|test) [ -z "$set" ] || die "more than one set ($set, $arg): expected one of build, test"; set=$arg ;;
        -h|--help) sed -n '2,8s/^# \{0,1\}//p' "$0"; exit 0 ;;
        *) die "unknown argument ($arg): expected build, test or --list" ;;
    esac
done
[ -n "$set" ] || die "missing set: expected \`bash scripts/install_deps.sh [--list] build|test\`"
if [ "$set" = build ]; then pkgs=("${build[@]}"); else pkgs=("${test[@]}"); fi

if [ "$list" = 1 ]; then echo "${pkgs[*]}"; exit 0; fi

if ! command -v dpkg-query >/dev/null || ! command -v apt-get >/dev/null; then
    echo "note: no dpkg-query/apt-get (not Debian): not installing; expected the equivalents of: ${pkgs[*]}"
    for tool in g++ make; do
        command -v "$tool" >/dev/null || die "missing $tool: expected it on PATH (Debian package: $tool)"
    done
    [ -f /usr/include/stb/stb_easy_font.h ] ||
        die "missing stb headers (/usr/include/stb/stb_easy_font.h): expected them installed (Debian package: libstb-dev)"
    exit 0
fi

# provided NAME: an installed package provides NAME (e.g. NodeSource's nodejs provides npm and conflicts
# with Debian's npm package, so asking apt for npm there would fail).
provided() {
    dpkg-query -W -f='${Status}\t${Provides}\n' 2>/dev/null | awk -F'\t' -v want="$1" '
        $1 ~ / installed$/ { n = split($2, p, /, */); for (i = 1; i <= n; i++) { split(p[i], w, " "); if (w[1] == want) found = 1 } }
        END { exit !found }'
}
missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q ' installed$' || provided "$p" || missing+=("$p")
done
[ ${#missing[@]} -gt 0 ] || exit 0

if [ "$(id -u)" -ne 0 ]; then
    die "missing packages: ${missing[*]} (install them as root: apt-get install ${missing[*]})"
fi
# apt's hundreds of progress lines go to a log, shown only when apt fails.
log=$(mktemp "${TMPDIR:-/tmp}/install_deps.XXXXXX.log")
echo "installing ${#missing[@]} Debian packages (${missing[*]}); apt's log: $log"
export DEBIAN_FRONTEND=noninteractive
apt_failed() { tail -15 "$log" | sed 's/^/    /' >&2; die "$1 (the last lines of $log above)"; }
apt-get update -q >"$log" 2>&1 || apt_failed "apt-get update failed: expected reachable package sources"
apt-get install -y -q --no-install-recommends "${missing[@]}" >>"$log" 2>&1 ||
    apt_failed "apt-get install failed (${missing[*]})"
echo "installed them"
