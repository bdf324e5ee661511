#!/usr/bin/env bash
# download_hellaswag.sh: fetches HellaSwag's validation set (10,042 examples, one JSON object per line) into
# data/hellaswag/hellaswag_val.jsonl, the file `gpt2 eval --model M --hellaswag FILE` scores. The download
# goes through a temporary name and is checked against its SHA-256 (the value HuggingFace's datasets
# library records for this URL in datasets/hellaswag/dataset_infos.json) and its line count before it takes
# the final name; a file already there is checked the same way. Needs curl or wget and network access.
set -euo pipefail
cd "$(dirname "$0")/.."
URL=https://raw.githubusercontent.com/rowanz/hellaswag/master/data/hellaswag_val.jsonl
SHA256=0aa3b88843990f3f10a97b9575c94d7b71fb2205240ba04ae4884d9e9c992588
LINES=10042
dest=data/hellaswag/hellaswag_val.jsonl

die() { echo "error: $1" >&2; [ -z "${2:-}" ] || echo "hint: $2" >&2; exit 1; }
sha256_of() {
    if command -v sha256sum >/dev/null; then sha256sum "$1" | cut -d' ' -f1
    else shasum -a 256 "$1" | cut -d' ' -f1; fi
}
verify() {  # FILE NAME: the published checksum and line count, or a one-line error naming NAME
    local got lines
    got=$(sha256_of "$1")
    [ "$got" = "$SHA256" ] || die "checksum mismatch ($2): expected sha256 $SHA256, got $got"
    lines=$(wc -l <"$1")
    [ "$lines" -eq "$LINES" ] || die "wrong line count ($2): expected $LINES examples, got $lines"
}

if [ -e "$dest" ]; then
    verify "$dest" "$dest"
    echo "have     $dest (sha256 and $LINES lines check)"
    exit 0
fi
mkdir -p "$(dirname "$dest")"
tmp="$dest.tmp.$$"
trap 'rm -f "$tmp"' EXIT
offline="offline: copy hellaswag_val.jsonl (from github.com/rowanz/hellaswag, data/) to $dest yourself; this script checks it"
if command -v curl >/dev/null; then err=$(curl -fsSL --retry 3 --connect-timeout 20 -o "$tmp" "$URL" 2>&1)
elif command -v wget >/dev/null; then err=$(wget -q -O "$tmp" "$URL" 2>&1)
else die "cannot download $URL: expected curl or wget on PATH" "$offline"; fi ||
    die "cannot download $URL: expected a reachable URL, got ${err##*$'\n'}" "$offline"
verify "$tmp" "$URL"
mv "$tmp" "$dest"
echo "fetched  $dest (sha256 and $LINES lines check)"
echo "score GPT-2 124M on it: scripts/download_gpt2.sh, then ./gpt2 eval --model data/gpt2 --hellaswag $dest"
