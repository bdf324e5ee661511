// serve_load.mjs: a bounded load on `gpt2 serve` over loopback, for tests/cli_serve.sh. N requests, C at a
// time, each on its own connection, in a fixed mix: completions whole and streamed (n = 1 and 2), chats whole
// and streamed, streams whose client leaves after the first event or right after sending. Every request has a
// time bound. Then the checks: every answer a 200 or, with a small --max-queue, the expected 503 (an OpenAI
// error object), every whole answer complete; the server's memory (VmRSS) and open descriptors back near where
// they were after a warm-up; the server answering /health and a completion after it. Prints one line per check
// (checks.mjs), and the figures on a line of their own (`load: ...`).
//   node serve_load.mjs URL PID N C RSS_BOUND_KIB (0: VmRSS not checked)
import fs from "node:fs";
import http from "node:http";
import { check, deadline, expect, same, sleep } from "./checks.mjs";

const [url, pid, total, conc, bound] = process.argv.slice(2);
const N = Number(total), C = Number(conc), rssBound = Number(bound);
const done = deadline(300000, "the load");
const { hostname, port } = new URL(url);
const rss = () => Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"))[1]);
const fds = () => fs.readdirSync(`/proc/${pid}/fd`).length;

// The i-th request of the mix: its path, body and what the client does.
function kind(i) {
    const prompt = [464 + (i % 50), 11, 262 + (i % 7)];
    switch (i % 10) {
        case 0: case 1: case 2:
            return { path: "/v1/completions", body: { prompt, max_tokens: 8, temperature: 0.8, seed: i } };
        case 3: case 4:
            return { path: "/v1/completions", body: { prompt, max_tokens: 12, stream: true } };
        case 5: case 6:  // leaves after the first event
            return { path: "/v1/completions", body: { prompt, max_tokens: 40, stream: true }, leave: "event" };
        case 7:
            return { path: "/v1/chat/completions", body: { messages: [{ role: "user", content: `hi ${i}` }], max_tokens: 8 } };
        case 8:  // leaves as soon as the request is sent
            return { path: "/v1/chat/completions", body: { messages: [{ role: "user", content: "go" }], max_tokens: 30,
                                                           stream: true }, leave: "sent" };
        default:
            return { path: "/v1/completions", body: { prompt, max_tokens: 6, n: 2, stream: true } };
    }
}

// One request: resolves "ok", "busy" (a 503 with its error object), "left" (the client left as planned) or an
// error's description.
function one(i) {
    const k = kind(i), payload = JSON.stringify(k.body);
    return new Promise((resolve) => {
        let settled = false;
        const finish = (v) => { if (!settled) { settled = true; clearTimeout(timer); resolve(v); } };
        const req = http.request({ host: hostname, port, path: k.path, method: "POST", agent: false,
                                   headers: { "content-type": "application/json", "content-length": Buffer.byteLength(payload) } });
        const timer = setTimeout(() => { req.destroy(); finish(`request ${i}: no answer in 60 s`); }, 60000);
        req.on("error", (e) => finish(k.leave ? "left" : `request ${i}: ${e.code || e}`));
        req.on("response", (res) => {
            let body = "";
            res.setEncoding("utf8");
            res.on("data", (d) => {
                body += d;
                if (k.leave === "event" && body.includes("\n\n") && res.statusCode === 200) {
                    req.destroy();
                    finish("left");
                }
            });
            res.on("error", () => finish(k.leave ? "left" : `request ${i}: the answer broke off`));
            res.on("end", () => finish(judge(i, k, res.statusCode, body)));
        });
        req.end(payload, () => {
            if (k.leave === "sent") setImmediate(() => { req.destroy(); finish("left"); });
        });
    });
}

function judge(i, k, status, body) {
    try {
        if (status === 503) {
            const e = JSON.parse(body).error;
            return /busy/.test(e.message) ? "busy" : `request ${i}: 503 saying ${e.message}`;
        }
        if (status !== 200) return `request ${i}: status ${status}: ${body.slice(0, 200)}`;
        const choices = (k.body.n || 1);
        if (!k.body.stream) return JSON.parse(body).choices.length === choices ? "ok" : `request ${i}: ${body.slice(0, 200)}`;
        if (!body.endsWith("data: [DONE]\n\n")) return `request ${i}: a stream not ended by [DONE]`;
        const ends = body.split("\n\n").filter((e) => e.startsWith("data: {")).map((e) => JSON.parse(e.slice(6)))
            .filter((c) => c.choices[0]?.finish_reason).length;
        return ends === choices ? "ok" : `request ${i}: ${ends} choices ended, not ${choices}`;
    } catch (e) {
        return `request ${i}: ${e.message}: ${body.slice(0, 200)}`;
    }
}

async function run(first, count, width) {
    const tally = {};
    let next = first;
    const worker = async () => {
        while (next < first + count) {
            const r = await one(next++);
            tally[r] = (tally[r] || 0) + 1;
            if (r === "busy") await sleep(50);  // as a client backs off a 503 (else 503s come as fast as a loop)
        }
    };
    await Promise.all(Array.from({ length: width }, worker));
    return tally;
}

async function settled(base) {  // the descriptors back to base: closed connections linger up to 2 s
    let n = fds();
    for (let i = 0; i < 100 && n > base; i++, await sleep(100)) n = fds();
    return n;
}

const warm = await run(1000000, 40, C);  // allocator pools, the thread team and every path of the mix once
await sleep(2500);
const before = { rss: rss(), fds: fds() };
const t0 = Date.now();
const tally = await run(0, N, C);
const seconds = (Date.now() - t0) / 1000;
const afterFds = await settled(before.fds);
const after = { rss: rss(), fds: afterFds };
const errors = Object.keys(tally).filter((k) => !["ok", "busy", "left"].includes(k));
console.log(`    load: ${N} requests, ${C} at a time, in ${seconds.toFixed(1)} s: ${tally.ok || 0} answered, ` +
            `${tally.busy || 0} 503 (busy), ${tally.left || 0} left early by the client, ${errors.length} other; ` +
            `VmRSS ${before.rss} KiB before, ${after.rss} KiB after; descriptors ${before.fds} before, ${after.fds} after`);

await check(`${N} requests ${C} at a time: only 200s and the expected 503s`, async () => {
    same(errors.map((k) => `${k} (x${tally[k]})`).slice(0, 10), [], "errors");
    same(Object.keys(warm).filter((k) => !["ok", "busy", "left"].includes(k)), [], "errors of the warm-up");
    expect(tally.ok >= N / 4, `${tally.ok} answered`);
    expect(tally.busy > 0, "no 503: the load did not reach --max-queue (so the test proves nothing of it)");
});
if (!rssBound) console.log("skip the memory flat: not measured (an AddressSanitizer build's quarantine holds freed memory)");
else await check(`the memory flat: VmRSS grew by at most ${rssBound} KiB over the load`, async () => {
    expect(after.rss - before.rss <= rssBound, `${before.rss} KiB before, ${after.rss} KiB after`);
});
await check("no descriptor left open: every connection closed", async () => {
    expect(after.fds <= before.fds, `${before.fds} descriptors before, ${after.fds} after`);
});
await check("the server answers /health and a completion after the load", async () => {
    const health = await fetch(`${url}/health`);
    same([health.status, await health.json()], [200, { status: "ok" }], "/health");
    const r = await fetch(`${url}/v1/completions`, { method: "POST", headers: { "content-type": "application/json" },
                                                     body: JSON.stringify({ prompt: [464], max_tokens: 4 }) });
    const j = await r.json();
    same([r.status, j.choices?.length, j.usage?.completion_tokens], [200, 1, 4], "the completion");
});
done();
