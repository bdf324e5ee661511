// fixtures.mjs: writes the committed tokenizer fixtures, tests/fixtures/tokenizer: OUT/<case>.in (the raw
// bytes) for every case, OUT/<case>.ids for the valid UTF-8 ones from OpenAI's tiktoken (encoding gpt2,
// encode_ordinary, as tiktoken_ids.mjs), cases.txt and .gitattributes. The invalid-UTF-8 cases get their
// .ids from scripts/bpe_reference.py, since tiktoken cannot take invalid bytes. Regenerate all with
//   node tests/node/fixtures.mjs tests/fixtures/tokenizer &&
//   python3 scripts/bpe_reference.py --fixture-ids tests/fixtures/tokenizer
// (`make test-ref` does this into a temporary directory and checks nothing changed). `make test` reads
// the fixtures without node or Python (tests/test_tokenizer.cpp, tests/cli_tokenize.sh).
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

import { fail, gpt2Encoding } from "./common.mjs";

const out = process.argv[2];
if (!out || process.argv.length > 3) fail("usage: node tests/node/fixtures.mjs OUT_DIR");

const SHAKESPEARE =
    "First Citizen:\nBefore we proceed any further, hear me speak.\n\nAll:\nSpeak, speak.\n\n" +
    "First Citizen:\nYou are all resolved rather to die than to famish?\n\nAll:\nResolved. resolved.\n\n" +
    "First Citizen:\nFirst, you know Caius Marcius is chief enemy to the people.\n\n" +
    "All:\nWe know't, we know't.\n\n" +
    "First Citizen:\nLet us kill him, and we'll have corn at our own price.\nIs't a verdict?\n";

const cps = (...list) => String.fromCodePoint(...list);
const range = (lo, hi) => cps(...Array.from({ length: hi - lo + 1 }, (_, i) => lo + i));
// Python-style byte strings: each char of s is one byte (\xNN escapes give raw, possibly invalid, bytes).
const bytes = (s) => Buffer.from(s, "latin1");

// (name, text or Buffer); names are file names, so keep them [a-z0-9_].
function cases() {
    let longWord = "";
    for (let i = 0; i < 400; i++) longWord += String.fromCharCode(97 + ((i * i * 7 + i * 3) % 26));
    return [
        ["empty", ""],
        ["ascii_prose", "Hello world! This is a test of the GPT-2 tokenizer, isn't it? Yes: 100% sure."],
        ["contractions", "it's we'll they're I've I'm you'd don't 'S I'M WE'LL 'Re x's 's'll'd''s ''t"],
        ["digits", "0 1 12 123 1234 3.14159 2024-05-20 1,000,000 12345678901234567890 x1y22z333"],
        ["spaces_tabs_newlines", "a  b   c\tb\t\tc\n\nd\n\n\ne\r\nf \n g"],
        ["trailing_spaces", "ends with spaces   "],
        ["three_newlines", "\n\n\n"],
        ["space_tab_newline_x", " \t\n x"],
        ["whitespace_only", "   \t \n"],
        ["punctuation", "Hello!!! What?!... (yes) [no] {maybe} --- ''' \"quoted\" @#$%^&* ~`|\\/<>"],
        ["accented_latin", "café naïve résumé Ångström déjà vu Œuvre façade Dvořák Łódź"],
        ["greek", "Καλημέρα κόσμε, ΑΒΓ αβγ ω"],
        ["cyrillic", "Привет, мир! Съешь же ещё этих мягких французских булок"],
        ["cjk", "你好，世界。日本語のテキスト、カタカナ 한국어 텍스트"],
        ["emoji",
         "I \u2764\ufe0f \u{1F355}! \u{1F468}\u200d\u{1F469}\u200d\u{1F467}\u200d\u{1F466} " +
             "family \u{1F1FA}\u{1F1F8}\u{1F1EF}\u{1F1F5} flags \u{1F44D}\u{1F3FD} ok"],
        ["combining_marks", "e\u0301 a\u0308 n\u0303o Z\u0351\u0352\u0353algo \u0915\u094d\u0937"],
        ["other_numbers", "\u0663\u0664\u0665 \u216b \u00bd \u00b2\u00b3 \u0967\u0968\u0969"],
        ["unicode_whitespace", "a\u00a0b  \u00a0c\u3000d \u3000 e\u2003f\u2028g\u0085h\x1c\x1di \u00a0"],
        ["endoftext_literal", "<|endoftext|>"],
        ["endoftext_in_text", "Hello<|endoftext|>world <|endoftext|> again"],
        ["invalid_lone_continuation", bytes("lone \x80\xbf cont\x80inued \x80")],
        ["invalid_truncated", bytes("trunc \xe2\x82 end \xf0\x9f\x98, two \xc3 x \xe2\x82")],
        ["invalid_ff", bytes("\xff\xfe ff \xff x\xffy")],
        ["invalid_overlong", bytes("overlong \xc0\xaf \xc1\xbf \xe0\x80\xaf \xf0\x80\x80\xaf")],
        ["invalid_surrogates", bytes("surrogate \xed\xa0\x80\xed\xbf\xbf ok \xed\x9f\xbf")],
        ["invalid_above_max", bytes("max \xf4\x8f\xbf\xbf above \xf4\x90\x80\x80 \xf5\x80")],
        ["invalid_mixed_space", bytes("a \xff  \x80 \n\xfe\n \xc3")],
        ["shakespeare", SHAKESPEARE],
        ["long_piece", longWord + " ".repeat(300) + "x" + "\n".repeat(50) + "9".repeat(120)],
        // Letters and numbers added in Unicode 15.0 and 16.0 (Kawi, CJK Extensions H and I, Sunuwar,
        // Garay, Todhri, Kirat Rai, Latin Extended-G), each against a contraction, an ASCII letter or
        // digit, or a space: with Unicode 14 tables each of these splits differently from tiktoken.
        ["unicode_15_16",
         range(0x11f04, 0x11f08) + "'s " + cps(0x31350, 0x31351) + "'t " + cps(0x2ebf0) + "'re x" +
             range(0x11bc0, 0x11bc4) + "y " + range(0x11bf0, 0x11bf3) + "'s " + range(0x11f50, 0x11f52) +
             "7 " + cps(0x10d50, 0x10d51) + "'ll " + range(0x10d40, 0x10d43) + "1 " + cps(0x105c0, 0x105c1) +
             "'d " + range(0x16d43, 0x16d45) + "'ve " + range(0x16d70, 0x16d72) + "'m " +
             cps(0x1df25, 0x1df26) + "s'S " + cps(0xa7cb, 0xa7cc) + "'s"],
        // Every White_Space character between letters, in runs, before letters and at the end; and the
        // controls U+001C..U+001F and U+200B, U+FEFF, which are not \s.
        ["white_space_all",
         "a\t\n\x0b\x0c\r b\x85\xa0\u1680c\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200ad" +
             "\u2028\u2029\u202f\u205f\u3000e \u3000f\u3000 g\u2029\u2029h \x85 1\x1c\x1d\x1e\x1fi\u200bj\ufeffk" +
             " \u00a0 \t "],
    ];
}

const enc = await gpt2Encoding();
const strict = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
mkdirSync(out, { recursive: true });
const names = [];
let withIds = 0;
for (const [name, text] of cases()) {
    const data = typeof text === "string" ? Buffer.from(text, "utf8") : text;
    writeFileSync(join(out, name + ".in"), data);
    let valid = true, decoded = "";
    try {
        decoded = strict.decode(data);
    } catch {
        valid = false;
    }
    if (valid) {
        writeFileSync(join(out, name + ".ids"), Array.from(enc.encode_ordinary(decoded)).join(" ") + "\n");
        withIds++;
    }
    names.push(name);
}
enc.free();
writeFileSync(join(out, "cases.txt"), names.join("\n") + "\n");
// Raw bytes (CR, invalid UTF-8) must reach the tests unchanged on every checkout.
writeFileSync(join(out, ".gitattributes"), "* -text\n");
console.log(`wrote ${names.length} cases to ${out} (${withIds} with ids from tiktoken; the rest need ` +
            `scripts/bpe_reference.py --fixture-ids)`);
