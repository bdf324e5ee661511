#!/usr/bin/env node
// unicode_new.mjs FILE: the characters of FILE (UTF-8) that GPT-2's pattern classes differently under
// Unicode 16 than under Unicode 14: letters (\p{L}), numbers (\p{N}) or white space that Unicode 15 and
// 16 assigned. Prints their count, then up to 5 of them as U+XXXX. Used by tests/ref_gguf.sh: a tokenizer
// whose tables predate Unicode 16 (llama.cpp's are 15.1) may split text around exactly these characters.
import fs from "node:fs";
import { fail } from "./common.mjs";
import { loadV14, loadV16 } from "./unicode_data.mjs";

const file = process.argv[2];
if (!file) fail("usage: unicode_new.mjs FILE");
let text;
try {
    text = fs.readFileSync(file, "utf8");
} catch (e) {
    fail(`cannot read ${file}: ${e.message}`);
}
const inRanges = (ranges, cp) => ranges.some(([lo, hi]) => cp >= lo && cp <= hi);
const classes = [];
for (const path of ["General_Category/Letter", "General_Category/Number", "Binary_Property/White_Space"])
    classes.push([await loadV14(path), await loadV16(path)]);
const found = new Set();
for (const ch of text) {
    const cp = ch.codePointAt(0);
    if (classes.some(([old, now]) => inRanges(old, cp) !== inRanges(now, cp))) found.add(cp);
}
const shown = [...found].slice(0, 5).map((cp) => "U+" + cp.toString(16).toUpperCase().padStart(4, "0"));
console.log(`${found.size}${shown.length ? " " + shown.join(" ") : ""}`);
