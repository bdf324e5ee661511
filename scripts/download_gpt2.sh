#!/usr/bin/env bash
# download_gpt2.sh [gpt2|gpt2-medium|gpt2-large|gpt2-xl]: fetches a GPT-2 checkpoint from huggingface.co
# into data/<name>/ (config.json, model.safetensors, vocab.json, merges.txt), the layout `gpt2 train
# --model`, `eval`, `generate` and `info` read. Files go through a temporary name, so an interrupted
# download leaves nothing half-written, and files already there are kept: offline, put the four files
# there yourself (from any copy of the model). Needs curl or wget and network access.
set -euo pipefail
cd "$(dirname "$0")/.."
name=${1:-gpt2}
case "$name" in
    gpt2 | gpt2-medium | gpt2-large | gpt2-xl) ;;
    *) echo "error: unknown model '$name' (download_gpt2.sh): expected gpt2, gpt2-medium, gpt2-large or gpt2-xl" >&2; exit 1 ;;
esac
base="https://huggingface.co/openai-community/$name/resolve/main"
dir="data/$name"
die() {
    echo "error: $1" >&2
    echo "hint: offline, put config.json, vocab.json, merges.txt and model.safetensors of $name (any copy of" \
        "huggingface.co/openai-community/$name) in $dir/ yourself; or try fine-tuning with no download:" \
        "README's random 124M checkpoint (scripts/random_checkpoint.py)" >&2
    exit 1
}
mkdir -p "$dir"
tmp=""
trap 'rm -f "$tmp"' EXIT
for file in config.json vocab.json merges.txt model.safetensors; do
    if [ -s "$dir/$file" ]; then echo "have     $dir/$file"; continue; fi
    tmp="$dir/$file.tmp.$$"
    if command -v curl >/dev/null; then err=$(curl -fsSL --retry 3 --connect-timeout 20 -o "$tmp" "$base/$file" 2>&1)
    elif command -v wget >/dev/null; then err=$(wget -q -O "$tmp" "$base/$file" 2>&1)
    else die "cannot download $base/$file: expected curl or wget on PATH"; fi ||
        die "cannot download $base/$file: expected a reachable URL, got ${err##*$'\n'}"
    mv "$tmp" "$dir/$file"
    echo "fetched  $dir/$file"
done
./gpt2 info --model "$dir" 2>/dev/null || echo "(build ./gpt2 with make to check the download with gpt2 info)"
