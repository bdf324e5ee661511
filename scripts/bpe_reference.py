#!/usr/bin/env python3
"""bpe_reference.py: a plain Python GPT-2 byte-level BPE encoder, our reference for INVALID UTF-8 only.

The tokenizer's oracle is OpenAI's tiktoken (tests/node/tiktoken_ids.mjs, `make test-ref`), but tiktoken takes
JS strings, so it never sees invalid UTF-8; this script is the reference for those bytes. It follows the
published algorithm (bytes mapped to printable characters, the GPT-2 regex pre-tokenizer run with the `regex`
module, then the lowest-ranked merge applied repeatedly) and favours obviousness over speed. Invalid UTF-8 is
decoded with errors='surrogateescape', so each invalid byte becomes one U+DC80..U+DCFF character, which the
pattern sees as neither letter, number nor space -- the same class the C++ pre-tokenizer gives an invalid byte.
Its letters and numbers are those of the installed `regex` module's Unicode version (Debian's: 15.0), not
tiktoken's 16.0, so its inputs keep to characters every version agrees on: the invalid-UTF-8 fixtures and
--random-text, whose valid characters come from a fixed list of long-standing ones.

  bpe_reference.py [--tokenizer DIR] FILE            print FILE's ids on one line, like `gpt2 tokenize --ids`
  bpe_reference.py [--tokenizer DIR] --fixture-ids DIR   write DIR/<case>.ids for each case of DIR/cases.txt
                     whose .in is not valid UTF-8 (tests/node/fixtures.mjs writes the rest)
  bpe_reference.py --random-text OUT [--seed S]      write ~100 KB of seeded random text full of invalid UTF-8
"""
import argparse
import json
import os
import random
import sys

import regex

PATTERN = regex.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""")


def byte_to_char_table():
    """The 256 printable characters GPT-2 uses to spell bytes inside encoder.json and vocab.bpe."""
    printable = [b for b in range(256) if 33 <= b <= 126 or 161 <= b <= 172 or 174 <= b <= 255]
    table = {}
    spare = 0
    for b in range(256):
        if b in printable:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + spare)
            spare += 1
    return table


class Encoder:
    def __init__(self, directory):
        enc_path, merges_path = find_files(directory)
        with open(enc_path, encoding="utf-8") as f:
            self.vocab = json.load(f)
        with open(merges_path, encoding="utf-8") as f:
            lines = f.read().split("\n")
        merges = [tuple(line.split(" ")) for line in lines if line and not line.startswith("#version")]
        self.rank = {pair: i for i, pair in enumerate(merges)}
        self.byte_char = byte_to_char_table()
        self.cache = {}

    def merge_word(self, word):
        """word: tuple of symbols (strings). Applies merges until no adjacent pair has a rank."""
        while len(word) > 1:
            best = None
            for i in range(len(word) - 1):
                r = self.rank.get((word[i], word[i + 1]))
                if r is not None and (best is None or r < best[0]):
                    best = (r, word[i], word[i + 1])
            if best is None:
                break
            _, left, right = best
            out = []
            i = 0
            while i < len(word):
                if i + 1 < len(word) and word[i] == left and word[i + 1] == right:
                    out.append(left + right)
                    i += 2
                else:
                    out.append(word[i])
                    i += 1
            word = tuple(out)
        return word

    def encode_piece(self, piece_bytes):
        if piece_bytes not in self.cache:
            symbols = tuple(self.byte_char[b] for b in piece_bytes)
            self.cache[piece_bytes] = [self.vocab[s] for s in self.merge_word(symbols)]
        return self.cache[piece_bytes]

    def encode(self, data):
        """data: bytes. The literal text <|endoftext|> is encoded as ordinary text."""
        text = data.decode("utf-8", errors="surrogateescape")
        ids = []
        for piece in PATTERN.findall(text):
            ids.extend(self.encode_piece(piece.encode("utf-8", errors="surrogateescape")))
        return ids


def find_files(directory):
    for enc, merges in (("encoder.json", "vocab.bpe"), ("vocab.json", "merges.txt")):
        e, m = os.path.join(directory, enc), os.path.join(directory, merges)
        if os.path.exists(e) and os.path.exists(m):
            return e, m
    sys.exit(f"error: tokenizer files not found ({directory}): expected encoder.json + vocab.bpe or "
             f"vocab.json + merges.txt\nhint: set GPT2_DATA_DIR or run `make data`")


def default_dir():
    root = os.environ.get("GPT2_DATA_DIR")
    return os.path.join(root, "gpt2") if root else os.path.join("data", "gpt2")


# Long-standing characters (letters, marks, numbers, punctuation, spaces, emoji of 2, 3 and 4 bytes) whose
# classes no Unicode version since has changed, so any `regex` module agrees with tiktoken on them.
STABLE_RANGES = [
    (0x00C0, 0x00D6), (0x00D8, 0x00F6), (0x0391, 0x03A1), (0x03B1, 0x03C9), (0x0410, 0x044F), (0x05D0, 0x05EA),
    (0x0660, 0x0669), (0x0300, 0x036F), (0x0905, 0x0939), (0x0966, 0x096F), (0x0E01, 0x0E30), (0x2000, 0x200B),
    (0x2010, 0x2027), (0x3000, 0x3003), (0x4E00, 0x4EFF), (0xAC00, 0xACFF), (0x1F600, 0x1F64F), (0x1D400, 0x1D454),
]


def random_text(seed, size=100_000):
    """Words, numbers, punctuation and whitespace mixed with invalid UTF-8 bytes: lone continuation bytes,
    truncated and overlong sequences, surrogates, bytes above U+10FFFF, next to valid multi-byte characters."""
    rng = random.Random(seed)
    stable = [chr(cp).encode("utf-8") for lo, hi in STABLE_RANGES for cp in range(lo, hi + 1)]
    spaces = [b" ", b"  ", b"\t", b"\n", b"\n\n", b"\r\n", b" \n ", "\u00a0".encode(), "\u3000".encode(), b"\x0b"]
    ascii_words = [b"the", b"The", b"and", b"it's", b"we'll", b"I'M", b"'s", b"don't", b"x", b"hello", b"42",
                   b"3.14", b"1000000", b"!!", b"...", b"?!", b"(", b")", b"'", b'"', b"-", b"--", b"<|endoftext|>"]
    invalid = [b"\x80", b"\xbf", b"\xc3", b"\xe2\x82", b"\xf0\x9f\x98", b"\xc0\xaf", b"\xe0\x80\xaf",
               b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xf5", b"\xfe", b"\xff"]
    out = bytearray()
    while len(out) < size:
        r = rng.random()
        if r < 0.3:
            out += rng.choice(ascii_words)
        elif r < 0.5:
            out += rng.choice(spaces)
        elif r < 0.7:
            for _ in range(rng.randint(1, 6)):
                out += rng.choice(stable)
        elif r < 0.8:
            out += bytes(rng.randint(0x20, 0x7e) for _ in range(rng.randint(1, 5)))
        elif r < 0.9:
            out += rng.choice(invalid)
        else:
            out += bytes(rng.randint(0x80, 0xff) for _ in range(rng.randint(1, 3)))
    return bytes(out)


def write_fixture_ids(enc, fixture_dir):
    """The .ids of the fixtures that are not valid UTF-8 (tiktoken cannot take them)."""
    with open(os.path.join(fixture_dir, "cases.txt")) as f:
        names = [line for line in f.read().split("\n") if line]
    written = 0
    for name in names:
        with open(os.path.join(fixture_dir, name + ".in"), "rb") as f:
            data = f.read()
        try:
            data.decode("utf-8")
            continue
        except UnicodeDecodeError:
            pass
        with open(os.path.join(fixture_dir, name + ".ids"), "w") as f:
            f.write(" ".join(str(i) for i in enc.encode(data)) + "\n")
        written += 1
    print(f"wrote the ids of {written} invalid-UTF-8 cases of {len(names)} in {fixture_dir}")


def main():
    ap = argparse.ArgumentParser(description="reference GPT-2 BPE encoder for invalid UTF-8")
    ap.add_argument("--tokenizer", default=default_dir())
    ap.add_argument("--fixture-ids", metavar="DIR")
    ap.add_argument("--random-text", metavar="OUT")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("file", nargs="?")
    args = ap.parse_args()
    if args.random_text:
        with open(args.random_text, "wb") as f:
            f.write(random_text(args.seed))
        return
    enc = Encoder(args.tokenizer)
    if args.fixture_ids:
        write_fixture_ids(enc, args.fixture_ids)
        return
    if not args.file:
        ap.error("expected FILE or --fixture-ids DIR")
    data = sys.stdin.buffer.read() if args.file == "-" else open(args.file, "rb").read()
    sys.stdout.write(" ".join(str(i) for i in enc.encode(data)) + "\n")


if __name__ == "__main__":
    main()
