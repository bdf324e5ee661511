#!/usr/bin/env bash
# prepare_data.sh (make data): puts tiny shakespeare and the GPT-2 tokenizer files under data/ and
# tokenizes the text the way llm.c does (an <|endoftext|> before every blank-line-separated section, first
# 32,768 tokens to val):
#   data/gpt2/encoder.json, data/gpt2/vocab.bpe, data/tinyshakespeare/input.txt,
#   data/tinyshakespeare/val.bin (32,768 tokens), data/tinyshakespeare/train.bin (305,260 tokens)
# Files come from $GPT2_DATA_DIR when set (copied from gpt2/ and tinyshakespeare.txt or
# tinyshakespeare/input.txt), else from their public URLs. Every file is checked against its SHA-256.
# Work already done is skipped, so running it again is cheap. Needs ./gpt2 (make data builds it).
set -euo pipefail
cd "$(dirname "$0")/.."

SHAKESPEARE_URL=https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/input.txt
GPT2_URL=https://openaipublic.blob.core.windows.net/gpt-2/models/124M
declare -A SHA256=(
    [data/tinyshakespeare/input.txt]=86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed
    [data/gpt2/encoder.json]=196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783
    [data/gpt2/vocab.bpe]=1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5
)

die() { echo "error: $1" >&2; [ -z "${2:-}" ] || echo "hint: $2" >&2; exit 1; }

sha256_of() {
    if command -v sha256sum >/dev/null; then sha256sum "$1" | cut -d' ' -f1
    else shasum -a 256 "$1" | cut -d' ' -f1; fi
}

download() {  # URL OUT: quiet; on failure the tool's last message line is on stdout
    local err
    if command -v curl >/dev/null; then err=$(curl -fsSL --retry 3 --connect-timeout 20 -o "$2" "$1" 2>&1)
    elif command -v wget >/dev/null; then err=$(wget -q -O "$2" "$1" 2>&1)
    else echo "no curl or wget on PATH"; return 1; fi || { echo "${err##*$'\n'}"; return 1; }
}

# fetch DEST [CANDIDATE...] URL: copy DEST from the first candidate under $GPT2_DATA_DIR that exists,
# else download URL. Goes through a temporary name so an interrupted run never leaves a partial file.
fetch() {
    local dest=$1; shift
    local url=${*: -1} candidates=("${@:1:$#-1}") src=""
    if [ -s "$dest" ]; then
        echo "skip     $dest  (already there)"
        return
    fi
    mkdir -p "$(dirname "$dest")"
    if [ -n "${GPT2_DATA_DIR:-}" ]; then
        for c in "${candidates[@]}"; do
            if [ -f "$GPT2_DATA_DIR/$c" ]; then src=$GPT2_DATA_DIR/$c; break; fi
        done
        [ -n "$src" ] || die "missing file in GPT2_DATA_DIR ($GPT2_DATA_DIR): expected one of ${candidates[*]}"
        cp "$src" "$dest.tmp"
        chmod 644 "$dest.tmp"
    else
        why=$(download "$url" "$dest.tmp") || {
            rm -f "$dest.tmp"
            die "download failed ($url): expected a reachable URL, got ${why:-no answer}" \
                "offline: set GPT2_DATA_DIR to a directory holding tinyshakespeare.txt, gpt2/encoder.json and gpt2/vocab.bpe (make data copies them), or put $dest there yourself"
        }
    fi
    local got
    got=$(sha256_of "$dest.tmp")
    if [ "$got" != "${SHA256[$dest]}" ]; then
        rm -f "$dest.tmp"
        die "checksum mismatch (${src:-$url}): expected sha256 ${SHA256[$dest]}, got $got"
    fi
    mv "$dest.tmp" "$dest"
    if [ -n "$src" ]; then echo "copied   $dest  (from $src)"; else echo "fetched  $dest  (from $url)"; fi
}

fetch data/tinyshakespeare/input.txt tinyshakespeare.txt tinyshakespeare/input.txt "$SHAKESPEARE_URL"
fetch data/gpt2/encoder.json gpt2/encoder.json "$GPT2_URL/encoder.json"
fetch data/gpt2/vocab.bpe gpt2/vocab.bpe "$GPT2_URL/vocab.bpe"

train=data/tinyshakespeare/train.bin
val=data/tinyshakespeare/val.bin
if [ -s "$train" ] && [ -s "$val" ] && [ "$train" -nt data/tinyshakespeare/input.txt ] &&
   [ "$val" -nt data/tinyshakespeare/input.txt ]; then
    echo "skip     $val, $train  (newer than input.txt)"
else
    [ -x ./gpt2 ] || die "missing binary (./gpt2): expected it built; run \`make data\` instead"
    ./gpt2 tokenize data/tinyshakespeare/input.txt -o data/tinyshakespeare/ --split-on-blank-lines \
        --val-tokens 32768 --tokenizer data/gpt2
fi
