#!/usr/bin/env bash
# download_gpt2.sh [gpt2|gpt2-medium|gpt2-large|gpt2-xl]: fetches a GPT-2 checkpoint from huggingface.co
# into data/<name>/ (config.json, model.safetensors, vocab.json, merges.txt), the layout `gpt2 train
# --model`, `eval`, `generate` and `info` read. Files go through a temporary name, so an interrupted
# download leaves nothing half-written. Needs curl or wget and network access.
set -euo pipefail
cd "$(dirname "$0")/.."
name=${1:-gpt2}
case "$name" in
    gpt2 | gpt2-medium | gpt2-large | gpt2-xl) ;;
    *) echo "error: unknown model '$name' (download_gpt2.sh): expected gpt2, gpt2-medium, gpt2-large or gpt2-xl" >&2; exit 1 ;;
esac
base="https://huggingface.co/openai-community/$name/resolve/main"
dir="data/$name"
mkdir -p "$dir"
for file in config.json vocab.json merges.txt model.safetensors; do
    if [ -s "$dir/$file" ]; then echo "have     $dir/$file"; continue; fi
    tmp="$dir/$file.tmp.$$"
    if command -v curl >/dev/null; then curl -fL --retry 3 -o "$tmp" "$base/$file"
    elif command -v wget >/dev/null; then wget -q -O "$tmp" "$base/$file"
    else echo "error: need curl or wget to download $base/$file" >&2; exit 1; fi
    mv "$tmp" "$dir/$file"
    echo "fetched  $dir/$file"
done
./gpt2 info --model "$dir" 2>/dev/null || echo "(build ./gpt2 with make to check the download with gpt2 info)"
