#!/usr/bin/env bash
# fresh_machine.sh: runs README's first command (bash scripts/quickstart.sh) in a fresh minimal Debian 12
# chroot (debootstrap --variant=minbase) and checks that it trains, saves and samples. Not part of
# `make check`: it needs root, the Debian mirror and 5-25 minutes (debootstrap can take half). It tests a
# clean clone of the committed HEAD, as CI does: uncommitted changes are not tested. Data comes from
# $GPT2_DATA_DIR (default ../shared/data).
#   FRESH_CHECK=1   then README's second command too (bash .ci/run: apt's test packages, Debian's own Node 18,
#                   npm, every test), checking that it exits 0 with its `N passed, N failed` total (an hour or more)
#   FRESH_STEPS=N   the quick start's training steps (default 400, its own)
#   FRESH_BASE=DIR  copy an existing bookworm minbase tree (cp -a) instead of debootstrapping one
#   FRESH_TMP=DIR   where the temporary root goes (default $TMPDIR or /tmp); KEEP=1 keeps it; MIRROR=URL
set -euo pipefail

die() { echo "error: $1" >&2; exit 1; }

SUITE=bookworm
repo=$(git -C "$(dirname "$0")" rev-parse --show-toplevel) || die "not in a git repository ($0): expected the script inside the project's clone"
data=${GPT2_DATA_DIR:-$repo/../shared/data}
[ "$(id -u)" -eq 0 ] || die "not root (uid $(id -u)): expected root for debootstrap, chroot and bind mounts"
[ -d "$data" ] || die "missing data directory ($data): expected GPT2_DATA_DIR or ../shared/data with gpt2/ and tinyshakespeare.txt"
data=$(cd "$data" && pwd)
for tool in chroot mount umount; do
    command -v "$tool" >/dev/null || die "missing $tool: expected it on PATH"
done

# The first http(s) URI apt uses for $SUITE itself: classic `deb [opts] URI SUITE ...` lines, then deb822
# stanzas (Types: deb, Suites: including $SUITE, not Enabled: no).
mirror_from_apt() {
    local f uri
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [ -f "$f" ] || continue
        uri=$(awk -v suite="$SUITE" '$1 == "deb" {
                i = 2; if ($i ~ /^\[/) { while (i <= NF && $i !~ /\]$/) i++; i++ }
                if ($(i + 1) == suite && $i ~ /^https?:\/\//) { print $i; exit } }' "$f")
        [ -z "$uri" ] || { echo "$uri"; return; }
    done
    for f in /etc/apt/sources.list.d/*.sources; do
        [ -f "$f" ] || continue
        uri=$(awk -v suite="$SUITE" '
            function flush() {
                if ((" " types " ") ~ / deb / && (" " suites " ") ~ (" " suite " ") && enabled != "no" && uri ~ /^https?:\/\//) { print uri; done = 1; exit }
                types = suites = uri = enabled = ""
            }
            /^[ \t]*#/ { next }
            /^[ \t]*$/ { flush(); next }
            { key = tolower($1); $1 = "" }
            key == "types:" { types = $0 }
            key == "uris:" { uri = $2 }
            key == "suites:" { suites = $0 }
            key == "enabled:" { enabled = tolower($2) }
            END { if (!done) flush() }' "$f")
        [ -z "$uri" ] || { echo "$uri"; return; }
    done
}

base=${FRESH_BASE:-}
if [ -n "$base" ]; then
    [ -x "$base/bin/bash" ] && [ -d "$base/etc/apt" ] || die "bad FRESH_BASE ($base): expected a debootstrapped Debian tree"
    base=$(cd "$base" && pwd)
    ! awk -v p="$base/" 'index($2 "/", p) == 1 { found = 1 } END { exit !found }' /proc/self/mounts ||
        die "something is mounted under FRESH_BASE ($base): expected a plain tree to copy"
else
    mirror=${MIRROR:-$(mirror_from_apt)}
    [ -n "$mirror" ] || die "no $SUITE mirror in /etc/apt/sources.list{,.d/}: expected a deb line or .sources stanza for $SUITE, or MIRROR=URL"
    if ! command -v debootstrap >/dev/null; then
        echo "installing debootstrap"
        DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends debootstrap >/dev/null ||
            die "apt-get install debootstrap failed: expected it installable from apt's sources"
    fi
fi

parent=${FRESH_TMP:-${TMPDIR:-/tmp}}
mkdir -p "$parent"
work=$(mktemp -d "$(cd "$parent" && pwd)/fresh_machine.XXXXXX")
case $work in *[[:space:]]*) rmdir "$work"; die "temporary directory has a space ($work): expected FRESH_TMP without spaces" ;; esac
root=$work/root
log=$work/quickstart.log
mounted=()

# What is mounted at or under $1 (per /proc/self/mounts).
mounts_under() { awk -v p="$1/" 'index($2 "/", p) == 1 { print $2 }' /proc/self/mounts; }

cleanup() {  # cleanup STATUS: the exit status to keep
    local rc=$1 i left
    for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
        umount "${mounted[i]}" 2>/dev/null || umount -l "${mounted[i]}" || true
    done
    left=$(mounts_under "$root" | tr '\n' ' ')
    if [ -n "$left" ]; then
        echo "error: still mounted under $root ($left): not removing $work; unmount them, then rm -rf it" >&2
        rc=1
    elif [ "${KEEP:-0}" = 1 ]; then
        echo "kept $work (chroot: root/, log: quickstart.log)"
    else
        rm -rf --one-file-system "$work"
    fi
    exit "$rc"
}
trap 'rc=$?; if [ "$BASHPID" = "$$" ]; then cleanup $rc; fi' EXIT  # the shell's own, not a job's before its exec (lib.sh)
trap 'exit 130' INT
trap 'exit 143' TERM

t0=$SECONDS
if [ -n "$base" ]; then
    echo "copying $base to $root"
    cp -a "$base" "$root"
else
    echo "debootstrap --variant=minbase $SUITE $root $mirror (log: $work/debootstrap.log)"
    if ! debootstrap --variant=minbase "$SUITE" "$root" "$mirror" >"$work/debootstrap.log" 2>&1; then
        tail -20 "$work/debootstrap.log" | sed 's/^/    /'
        die "debootstrap failed ($mirror): see the log lines above"
    fi
fi
echo "chroot ready in $((SECONDS - t0))s"

echo "cloning $repo at $(git -C "$repo" log -1 --format='%h %s') (committed HEAD only)"
dirty=$(git -C "$repo" status --porcelain | wc -l)
[ "$dirty" -eq 0 ] || echo "note: $dirty uncommitted change(s) in $repo are not tested"
git clone -q "$repo" "$root/root/gpt2"
mkdir -p "$root/root/data"
cp -a "$data/." "$root/root/data/"
# Certificate authorities this machine adds to Debian's (a network that inspects TLS, as an egress proxy
# does): npm and curl in the chroot trust what the host trusts, once ca-certificates is installed there.
if compgen -G '/usr/local/share/ca-certificates/*.crt' >/dev/null; then
    mkdir -p "$root/usr/local/share/ca-certificates"
    cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/"
fi
if [ -e /etc/resolv.conf ]; then
    rm -f "$root/etc/resolv.conf"
    cp -L /etc/resolv.conf "$root/etc/resolv.conf"
fi
mount --bind "$root" "$root"  # / a mount point inside, as `ip netns exec` needs (tests/mpi_net.sh)
mounted+=("$root")
for m in proc sys dev dev/pts; do  # dev/pts: script(1)'s terminals (tests/cli_first_hour.sh)
    mkdir -p "$root/$m"
    mount --bind "/$m" "$root/$m"
    mounted+=("$root/$m")
done

cmd="cd /root/gpt2 && GPT2_DATA_DIR=/root/data STEPS=${FRESH_STEPS:-400} bash scripts/quickstart.sh"
echo "running in the chroot: $cmd"
t1=$SECONDS
set +e
chroot "$root" /usr/bin/env -i HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin bash -c "$cmd" </dev/null 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
set -e
echo "quickstart took $((SECONDS - t1))s (exit $rc)"
# Ctrl-C: the trainer catches it and exits 130, so bash does not run the INT trap; stop here all the same.
[ "$rc" -ne 130 ] || exit 130

passed=0 failed=0
check() {  # NAME CONDITION...
    local name=$1; shift
    if "$@"; then passed=$((passed + 1)); echo "ok   $name"; else failed=$((failed + 1)); echo "FAIL $name"; fi
}
sample_chars() {  # characters of text between the sample's opening and closing rules
    awk '/^---- sample ----$/ { on = 1; next } /^----------------$/ { on = 0 } on { n += length($0) } END { print n + 0 }' "$log"
}
out=$root/root/gpt2/out/shakespeare
check "quickstart exits 0 (exit $rc)" [ "$rc" -eq 0 ]
check "prints val loss lines" grep -Eq '^step +[0-9]+/[0-9]+ \| val loss [0-9]+\.[0-9]+ on [0-9]+ tokens$' "$log"
check "prints its wall time" grep -Eq '^quickstart: [0-9]+m[0-9]{2}s in all' "$log"
check "trains every position of the context (-T 256 of 256)" grep -q 'steps of 1024 tokens (-B 4 x -T 256)' "$log"
check "prints a sample ($(sample_chars) characters)" [ "$(sample_chars)" -gt 0 ]
check "saved out/shakespeare (model.safetensors, config.json)" [ -s "$out/model.safetensors" -a -s "$out/config.json" ]
check "saved out/shakespeare/loss.png" [ -s "$out/loss.png" ]
again=skipped
[ "$rc" -ne 0 ] || again=$(chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
    bash /root/gpt2/scripts/install_deps.sh build 2>&1)
check "install_deps.sh build is then a no-op" [ -z "$again" ]
if [ "${FRESH_CHECK:-0}" = 1 ]; then
    # install_deps.sh build installed ca-certificates before the host's authorities were beside it
    chroot "$root" /usr/sbin/update-ca-certificates >/dev/null
    cmd='cd /root/gpt2 && GPT2_DATA_DIR=/root/data CI=true bash .ci/run'
    echo "running in the chroot: $cmd (log: $work/ci.log)"
    t2=$SECONDS
    set +e
    chroot "$root" /usr/bin/env -i HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin \
        NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt bash -c "$cmd" </dev/null >"$work/ci.log" 2>&1
    ci_rc=$?
    set -e
    total=$(grep -E '^([a-z]+: )?[0-9]+ passed, [0-9]+ failed' "$work/ci.log" | tail -1)
    echo ".ci/run took $((SECONDS - t2))s (exit $ci_rc): ${total:-no total line}"
    grep -E '^(FAIL|skip) ' "$work/ci.log" | sed 's/^/    /' | head -40
    check ".ci/run exits 0 with its total ($total)" [ "$ci_rc" -eq 0 -a -n "$total" ]
fi
echo "total $((SECONDS - t0))s"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
