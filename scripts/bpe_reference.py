#!/usr/bin/env python3
"""bpe_reference.py: a plain Python GPT-2 byte-level BPE encoder, the reference the C++ tokenizer is tested against.

It follows the published algorithm (bytes mapped to printable characters, the GPT-2 regex pre-tokenizer run
with the `regex` module, then the lowest-ranked merge applied repeatedly) and favours obviousness over speed.
Invalid UTF-8 is decoded with errors='surrogateescape', so each invalid byte becomes one U+DC80..U+DCFF
character, which the pattern sees as neither letter, number nor space -- the same class the C++ pre-tokenizer
gives an invalid byte. It writes the committed fixtures (--fixtures); it does not decode.

  bpe_reference.py [--tokenizer DIR] FILE            print FILE's ids on one line, like `gpt2 tokenize --ids`
  bpe_reference.py [--tokenizer DIR] --split-on-blank-lines FILE   the same in llm.c's document layout
  bpe_reference.py [--tokenizer DIR] --counts N FILE  print `val V train T` of that layout, N val tokens
  bpe_reference.py [--tokenizer DIR] --fixtures OUT   write OUT/<case>.in (raw bytes), OUT/<case>.ids, cases.txt
  bpe_reference.py --random-text OUT [--seed S]      write ~200 KB of seeded random mixed text for differential tests
"""
import argparse
import json
import os
import random
import sys
import unicodedata

import regex

PATTERN = regex.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""")
EOT_TEXT = "<|endoftext|>"


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
        self.eot = self.vocab[EOT_TEXT]
        self.warned = set()

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

    def check_unicode_version(self, text):
        """Warns once per character where `regex` (possibly newer Unicode) and unicodedata disagree."""
        for ch in set(text):
            if ord(ch) < 128 or ch in self.warned or 0xDC80 <= ord(ch) <= 0xDCFF:
                continue
            cat = unicodedata.category(ch)
            if (regex.match(r"\p{L}", ch) is not None) != cat.startswith("L") or \
               (regex.match(r"\p{N}", ch) is not None) != cat.startswith("N"):
                self.warned.add(ch)
                print(f"warning: U+{ord(ch):04X} is classified differently by regex {regex.__version__} and "
                      f"unicodedata {unicodedata.unidata_version}; C++ follows unicodedata", file=sys.stderr)

    def encode(self, data):
        """data: bytes. The literal text <|endoftext|> is encoded as ordinary text."""
        text = data.decode("utf-8", errors="surrogateescape")
        self.check_unicode_version(text)
        ids = []
        for piece in PATTERN.findall(text):
            ids.extend(self.encode_piece(piece.encode("utf-8", errors="surrogateescape")))
        return ids

    def encode_documents(self, data):
        """llm.c's tiny shakespeare layout: <|endoftext|> before the text and after every "\\n\\n"."""
        ids = []
        for section in split_keep(data, b"\n\n"):
            ids.append(self.eot)
            ids.extend(self.encode(section))
        return ids


def split_keep(data, sep):
    """Splits after each non-overlapping sep, keeping it; the (possibly empty) remainder is the last part."""
    parts = []
    start = 0
    while True:
        i = data.find(sep, start)
        if i < 0:
            parts.append(data[start:])
            return parts
        parts.append(data[start:i + len(sep)])
        start = i + len(sep)


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


SHAKESPEARE = (
    "First Citizen:\nBefore we proceed any further, hear me speak.\n\nAll:\nSpeak, speak.\n\n"
    "First Citizen:\nYou are all resolved rather to die than to famish?\n\nAll:\nResolved. resolved.\n\n"
    "First Citizen:\nFirst, you know Caius Marcius is chief enemy to the people.\n\n"
    "All:\nWe know't, we know't.\n\n"
    "First Citizen:\nLet us kill him, and we'll have corn at our own price.\nIs't a verdict?\n"
)


def fixture_cases():
    """(name, bytes) pairs; names are file names, so keep them [a-z0-9_]."""
    u = lambda s: s.encode("utf-8")
    long_word = "".join(chr(97 + (i * i * 7 + i * 3) % 26) for i in range(400))
    return [
        ("empty", b""),
        ("ascii_prose", u("Hello world! This is a test of the GPT-2 tokenizer, isn't it? Yes: 100% sure.")),
        ("contractions", u("it's we'll they're I've I'm you'd don't 'S I'M WE'LL 'Re x's 's'll'd''s ''t")),
        ("digits", u("0 1 12 123 1234 3.14159 2024-05-20 1,000,000 12345678901234567890 x1y22z333")),
        ("spaces_tabs_newlines", u("a  b   c\tb\t\tc\n\nd\n\n\ne\r\nf \n g")),
        ("trailing_spaces", u("ends with spaces   ")),
        ("three_newlines", u("\n\n\n")),
        ("space_tab_newline_x", u(" \t\n x")),
        ("whitespace_only", u("   \t \n")),
        ("punctuation", u("Hello!!! What?!... (yes) [no] {maybe} --- ''' \"quoted\" @#$%^&* ~`|\\/<>")),
        ("accented_latin", u("café naïve résumé Ångström déjà vu Œuvre façade Dvořák Łódź")),
        ("greek", u("Καλημέρα κόσμε, ΑΒΓ αβγ ω")),
        ("cyrillic", u("Привет, мир! Съешь же ещё этих мягких французских булок")),
        ("cjk", u("你好，世界。日本語のテキスト、カタカナ 한국어 텍스트")),
        ("emoji", u("I \u2764\ufe0f \U0001F355! \U0001F468\u200d\U0001F469\u200d\U0001F467\u200d\U0001F466 "
                    "family \U0001F1FA\U0001F1F8\U0001F1EF\U0001F1F5 flags \U0001F44D\U0001F3FD ok")),
        ("combining_marks", u("e\u0301 a\u0308 n\u0303o Z\u0351\u0352\u0353algo \u0915\u094d\u0937")),
        ("other_numbers", u("\u0663\u0664\u0665 \u216b \u00bd \u00b2\u00b3 \u0967\u0968\u0969")),
        ("unicode_whitespace", u("a\u00a0b  \u00a0c\u3000d \u3000 e\u2003f\u2028g\u0085h\x1c\x1di \u00a0")),
        ("endoftext_literal", u("<|endoftext|>")),
        ("endoftext_in_text", u("Hello<|endoftext|>world <|endoftext|> again")),
        ("invalid_lone_continuation", b"lone \x80\xbf cont\x80inued \x80"),
        ("invalid_truncated", b"trunc \xe2\x82 end \xf0\x9f\x98, two \xc3 x \xe2\x82"),
        ("invalid_ff", b"\xff\xfe ff \xff x\xffy"),
        ("invalid_overlong", b"overlong \xc0\xaf \xc1\xbf \xe0\x80\xaf \xf0\x80\x80\xaf"),
        ("invalid_surrogates", b"surrogate \xed\xa0\x80\xed\xbf\xbf ok \xed\x9f\xbf"),
        ("invalid_above_max", b"max \xf4\x8f\xbf\xbf above \xf4\x90\x80\x80 \xf5\x80"),
        ("invalid_mixed_space", b"a \xff  \x80 \n\xfe\n \xc3"),
        ("shakespeare", u(SHAKESPEARE)),
        ("long_piece", u(long_word + " " * 300 + "x" + "\n" * 50 + "9" * 120)),
    ]


def random_text(seed, size=200_000):
    """Words, numbers, punctuation and whitespace from many scripts, plus invalid UTF-8 bytes. Code points
    are drawn only where `regex` and unicodedata agree, so the C++ tables (unicodedata) must match exactly."""
    rng = random.Random(seed)
    agree = []
    for cp in range(0x80, 0x30000):
        ch = chr(cp)
        cat = unicodedata.category(ch)
        if cat in ("Cn", "Cs", "Co"):
            continue
        if (regex.match(r"\p{L}", ch) is not None) == cat.startswith("L") and \
           (regex.match(r"\p{N}", ch) is not None) == cat.startswith("N"):
            agree.append(ch.encode("utf-8"))
    spaces = [b" ", b"  ", b"\t", b"\n", b"\n\n", b"\r\n", b" \n ", "\u00a0".encode(), "\u3000".encode(), b"\x0b"]
    ascii_words = [b"the", b"The", b"and", b"it's", b"we'll", b"I'M", b"'s", b"don't", b"x", b"hello", b"42",
                   b"3.14", b"1000000", b"!!", b"...", b"?!", b"(", b")", b"'", b'"', b"-", b"--", b"<|endoftext|>"]
    out = bytearray()
    while len(out) < size:
        r = rng.random()
        if r < 0.35:
            out += rng.choice(ascii_words)
        elif r < 0.6:
            out += rng.choice(spaces)
        elif r < 0.85:
            for _ in range(rng.randint(1, 6)):
                out += rng.choice(agree)
        elif r < 0.95:
            out += bytes(rng.randint(0x20, 0x7e) for _ in range(rng.randint(1, 5)))
        else:
            out += bytes(rng.randint(0x80, 0xff) for _ in range(rng.randint(1, 3)))
    return bytes(out)


def write_fixtures(enc, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    names = []
    for name, data in fixture_cases():
        with open(os.path.join(out_dir, name + ".in"), "wb") as f:
            f.write(data)
        with open(os.path.join(out_dir, name + ".ids"), "w") as f:
            f.write(" ".join(str(i) for i in enc.encode(data)) + "\n")
        names.append(name)
    with open(os.path.join(out_dir, "cases.txt"), "w") as f:
        f.write("\n".join(names) + "\n")
    # Raw bytes (CR, invalid UTF-8) must reach the tests unchanged on every checkout.
    with open(os.path.join(out_dir, ".gitattributes"), "w") as f:
        f.write("* -text\n")
    print(f"wrote {len(names)} cases to {out_dir}")


def main():
    ap = argparse.ArgumentParser(description="reference GPT-2 BPE encoder")
    ap.add_argument("--tokenizer", default=default_dir())
    ap.add_argument("--fixtures", metavar="OUT_DIR")
    ap.add_argument("--split-on-blank-lines", action="store_true")
    ap.add_argument("--counts", type=int, metavar="VAL_TOKENS")
    ap.add_argument("--random-text", metavar="OUT")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("file", nargs="?")
    args = ap.parse_args()
    if args.random_text:
        with open(args.random_text, "wb") as f:
            f.write(random_text(args.seed))
        return
    enc = Encoder(args.tokenizer)
    if args.fixtures:
        write_fixtures(enc, args.fixtures)
        return
    if not args.file:
        ap.error("expected FILE or --fixtures")
    data = sys.stdin.buffer.read() if args.file == "-" else open(args.file, "rb").read()
    if args.counts is not None:
        ids = enc.encode_documents(data)
        print(f"val {min(args.counts, len(ids))} train {max(0, len(ids) - args.counts)}")
    else:
        ids = enc.encode_documents(data) if args.split_on_blank_lines else enc.encode(data)
        sys.stdout.write(" ".join(str(i) for i in ids) + "\n")


if __name__ == "__main__":
    main()
