// common.mjs: small helpers shared by the node tools in tests/node: one-line errors, OpenAI's gpt2 encoding
// from the npm package tiktoken, and a seeded PRNG.

// Prints `error: MSG` on stderr and exits 1 (the project's convention for bad input).
export function fail(msg) {
    process.stderr.write(`error: ${msg}\n`);
    process.exit(1);
}

// tiktoken's "gpt2" encoding (ranks built into the package: no download); one line if it is not installed.
export async function gpt2Encoding() {
    let tiktoken;
    try {
        tiktoken = await import("tiktoken");
    } catch (e) {
        if (e && e.code === "ERR_MODULE_NOT_FOUND")
            fail("npm package tiktoken not installed: run `make node-deps` (npm ci in tests/node)");
        throw e;
    }
    return tiktoken.get_encoding("gpt2");
}

// Seeded, deterministic random numbers (mulberry32: 32-bit state, integer arithmetic only, so every
// node version and machine draws the same sequence for a seed).
export class Rng {
    constructor(seed) {
        this.state = (seed >>> 0) ^ 0x9e3779b9;
    }
    next() {  // uniform in [0, 1)
        let t = (this.state = (this.state + 0x6d2b79f5) >>> 0);
        t = Math.imul(t ^ (t >>> 15), t | 1);
        t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
        return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    }
    int(lo, hi) {  // uniform integer in [lo, hi]
        return lo + Math.floor(this.next() * (hi - lo + 1));
    }
    pick(arr) {
        return arr[Math.floor(this.next() * arr.length)];
    }
    shuffle(arr) {
        for (let i = arr.length - 1; i > 0; i--) {
            const j = Math.floor(this.next() * (i + 1));
            [arr[i], arr[j]] = [arr[j], arr[i]];
        }
        return arr;
    }
}
