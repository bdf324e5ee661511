// serve_red_team.mjs: hostile requests to `gpt2 serve`, for tests/cli_serve_red_team.sh, over raw sockets (node's
// own modules, no npm package), so that any byte can be sent: malformed and hostile JSON, every field with a wrong
// type, every bound on both sides, stop strings, logprobs and echo as lm-eval-harness sends them, the API key's
// header in every shape, methods and paths, and abuse of HTTP itself (slow, flooding, pipelining, leaving at every
// moment of a stream). Each case checks the status, OpenAI's error object and the field its message names; the
// server must answer /health after each group. Prints one line per case (checks.mjs), each name led by its area.
//   node serve_red_team.mjs URL KEYED_URL KEY SMALL_URL BYTES_URL PID CTX [asan]
// URL: --parallel 2; KEYED_URL: --api-key KEY; SMALL_URL: --parallel 1 --max-queue 4 --max-connections 4
// --timeout 1 --max-body 4096; BYTES_URL: a model trained on bytes that are not UTF-8, whose likeliest tokens are
// such bytes; PID: URL's server (its memory is watched); CTX: the model's context (URL's); asan: the
// server is an AddressSanitizer build, whose quarantine holds freed memory (its VmRSS is not checked then).
import fs from "node:fs";
import net from "node:net";
import { check, deadline, events, expect, parseAnswers, raw, request, same, sleep } from "./checks.mjs";

const [url, keyed, key, small, bytes, pid, ctxArg, asan] = process.argv.slice(2);
const CTX = Number(ctxArg), V = 50257;
const done = deadline(420000, "the red team");
const rss = () => Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"))[1]);
const JSONH = { "Content-Type": "application/json" };
const post = (body, path = "/v1/completions", headers = {}, to = url) => request(to, "POST", path, body, { ...JSONH, ...headers });

// An OpenAI error object with this status, naming param (null: none), its message matching re.
function isError(r, status, param, re) {
    expect(r.status === status, () => `status ${r.status}, want ${status}: ${r.body?.slice(0, 300) || r.error}`);
    const e = r.json?.error;
    expect(e && typeof e.message === "string" && typeof e.type === "string" && "code" in e,
           () => `not an OpenAI error object: ${r.body?.slice(0, 300)}`);
    if (param !== undefined) same(e.param, param, `param (message: ${e.message})`);
    if (re) expect(re.test(e.message), () => `message ${JSON.stringify(e.message)} does not match ${re}`);
    return e;
}
const ok = (r) => expect(r.status === 200 && r.json?.choices, () => `status ${r.status}: ${r.body?.slice(0, 300) || r.error}`);
const alive = async (what) => check(`${what}: the server still answers /health`, async () => {
    const r = await request(url, "GET", "/health");
    same([r.status, r.json], [200, { status: "ok" }], "/health");
});
const rssStart = rss();  // the memory checks are last

// --- json: malformed and hostile bodies ---------------------------------------------------------------------
const malformed = {
    "an empty body": "", "whitespace only": " \n\t ", "a lone brace": "{", "a trailing comma": '{"prompt": "a",}',
    "single quotes": "{'prompt': 'a'}", "a comment": '{"prompt": "a"} // c', "two objects": '{"prompt": "a"}{}',
    "100000 nested arrays": "[".repeat(100000), "10000 nested objects": '{"a":'.repeat(10000),
    "a number past double (1e400)": '{"prompt": "a", "max_tokens": 1e400}', "NaN": '{"prompt": "a", "temperature": NaN}',
    "Infinity": '{"prompt": "a", "temperature": Infinity}', "a leading zero (01)": '{"prompt": "a", "max_tokens": 01}',
    "a byte-order mark before the object": "\ufeff{\"prompt\": \"a\"}", "a duplicate key (prompt)": '{"prompt": "a", "prompt": [1]}',
    "a duplicate key (max_tokens, -1 last)": '{"prompt": "a", "max_tokens": 5, "max_tokens": -1}',
    "a lone high surrogate escape": '{"prompt": "\\ud800"}', "a lone low surrogate escape": '{"prompt": "\\udc00"}',
    "a raw control byte in a string": '{"prompt": "a\u0001b"}', "a raw NUL in a string": '{"prompt": "a\u0000b"}',
    "a NUL outside strings": '{"prompt": "a"}\u0000', "an unknown escape (\\x41)": '{"prompt": "\\x41"}',
    "a truncated \\u escape": '{"prompt": "\\u12"}', "an unterminated string": '{"prompt": "abc',
    "true misspelled": '{"prompt": "a", "echo": tru}', "a bare word": "prompt",
};
for (const [name, body] of Object.entries(malformed))
    await check(`json: ${name}: 400, malformed JSON body`, async () => isError(await post(body), 400, null, /^malformed JSON body: /));
for (const [name, body] of Object.entries({ null: "null", "an array": "[]", "a string": '"a"', "a number": "1", "true": "true" }))
    await check(`json: ${name} for the body: 400, the body must be an object`, async () =>
        isError(await post(body), 400, null, /^the body must be a JSON object, got /));
await check("json: a NUL escape (\\u0000) in the prompt is text: 200", async () => ok(await post('{"prompt": "a\\u0000b", "max_tokens": 1}')));
await check("json: a surrogate pair escape (U+1F600) in the prompt: 200, echoed as the character", async () => {
    const r = await post('{"prompt": "x\\ud83d\\ude00", "max_tokens": 0, "echo": true}');
    ok(r);
    same(r.json.choices[0].text, "x\u{1F600}", "echo");
});
await check("json: invalid UTF-8 bytes in the prompt are tokenized as bytes: 200, echoed as U+FFFD", async () => {
    const r = await post(Buffer.from('{"prompt": "a\xff\xfe\xc0\xafb", "max_tokens": 0, "echo": true}', "latin1"));
    ok(r);
    same(r.json.choices[0].text, "a\ufffd\ufffd\ufffd\ufffdb", "echo");
});
await check("json: a number that underflows to 0 (temperature 1e-400): greedy, 200", async () => ok(await post('{"prompt": "a", "temperature": 1e-400, "max_tokens": 1}')));
await check("json: unknown fields (suffix, best_of, tools) are read and ignored: 200", async () =>
    ok(await post({ prompt: "a", max_tokens: 1, suffix: "z", best_of: 1, tools: [] })));
await check("json: -0 for max_tokens is 0: 400, at least 1", async () => isError(await post('{"prompt": "a", "max_tokens": -0}'), 400, "max_tokens", /at least 1/));
await alive("json");

// --- type: every field with a wrong type ---------------------------------------------------------------------
const wrong = [
    ["prompt", [true, 5, {}, [true], [[1, "x"]], [{}]]], ["max_tokens", ["16", true, [16], {}, 1.5]],
    ["temperature", ["1", true, [1]]], ["top_p", ["0.5", false]], ["top_k", [1.5, "3", true]], ["seed", ["1", 1.5, []]],
    ["stop", [5, {}, [5], [null], true]], ["n", ["2", 2.5, true]], ["echo", ["true", 1, {}]],
    ["logprobs", [true, "1", 1.5]], ["stream", ["true", 1]], ["model", [5, [], {}]], ["presence_penalty", [0.5, "0"]],
    ["frequency_penalty", [1, true]], ["logit_bias", [{ 1: 5 }, [], "x"]],
];
for (const [field, values] of wrong)
    for (const v of values)
        await check(`type: ${field} = ${JSON.stringify(v)}: 400 naming '${field}'`, async () =>
            isError(await post({ prompt: field === "prompt" ? v : "a", max_tokens: 2, [field]: v }), 400, field, new RegExp(`^'${field}'`)));
for (const v of ["1e1", "16.0", "1E+1"])
    await check(`type: max_tokens = ${v} (a number not written as an integer): 400 naming 'max_tokens'`, async () =>
        isError(await post(`{"prompt": "a", "max_tokens": ${v}}`), 400, "max_tokens", /^'max_tokens' must be an integer/));
await check("type: stream_options = true with stream: 400 naming 'stream_options'", async () =>
    isError(await post({ prompt: "a", stream: true, stream_options: true }), 400, "stream_options", /^'stream_options'/));
await check("type: stream_options.include_usage = 1: 400 naming it", async () =>
    isError(await post({ prompt: "a", stream: true, stream_options: { include_usage: 1 } }), 400, "stream_options.include_usage", /include_usage/));
await check("type: stream_options without stream: 400 naming it", async () =>
    isError(await post({ prompt: "a", stream_options: { include_usage: true } }), 400, "stream_options", /needs 'stream'/));
await check("type: no prompt: 400 naming 'prompt'", async () => isError(await post({ max_tokens: 2 }), 400, "prompt", /required/));
const chat = (body) => post(body, "/v1/chat/completions");
const user = [{ role: "user", content: "hi" }];
const badMessages = { "a string": "hi", "an empty array": [], "an empty object": [{}], "no content": [{ role: "user" }],
    "content 5": [{ role: "user", content: 5 }], "role bot": [{ role: "bot", content: "x" }],
    "system not first": [{ role: "user", content: "x" }, { role: "system", content: "y" }, { role: "user", content: "z" }],
    "the assistant last": [{ role: "user", content: "x" }, { role: "assistant", content: "y" }], "a number": [5] };
for (const [name, messages] of Object.entries(badMessages))
    await check(`type: chat messages ${name}: 400 naming 'messages'`, async () => isError(await chat({ messages }), 400, "messages", /^'messages'/));
await check("type: chat without messages: 400 naming 'messages'", async () => isError(await chat({ prompt: "a" }), 400, "messages", /required/));
for (const [field, v] of [["max_completion_tokens", -1], ["max_completion_tokens", "8"], ["logprobs", 1], ["top_logprobs", 21], ["top_logprobs", "1"]])
    await check(`type: chat ${field} = ${JSON.stringify(v)}: 400 naming '${field}'`, async () =>
        isError(await chat({ messages: user, logprobs: field === "top_logprobs" ? true : undefined, [field]: v }), 400, field, new RegExp(`'${field}'`)));
await check("type: chat top_logprobs without logprobs: 400 naming 'top_logprobs'", async () =>
    isError(await chat({ messages: user, top_logprobs: 2 }), 400, "top_logprobs", /needs 'logprobs'/));
await alive("type");

// --- bound: each bound on both sides --------------------------------------------------------------------------
const P = [464, 11, 262];
const bounds = [
    ["n", 0, 400], ["n", 1, 200], ["n", 16, 200], ["n", 17, 400], ["max_tokens", 0, 400], ["max_tokens", 1, 200],
    ["max_tokens", CTX - P.length, 200], ["max_tokens", CTX - P.length + 1, 400], ["max_tokens", 2 ** 31, 400],
    ["max_tokens", -1, 400], ["temperature", -0.0001, 400], ["temperature", 0, 200], ["temperature", 2, 200],
    ["temperature", 2.0001, 400], ["top_p", 0, 400], ["top_p", 1e-9, 200], ["top_p", 1, 200], ["top_p", 1.0001, 400],
    ["top_k", -1, 400], ["top_k", 0, 200], ["top_k", 2 ** 20, 200], ["top_k", 2 ** 20 + 1, 400], ["logprobs", 0, 200],
    ["logprobs", 5, 200], ["logprobs", 6, 400], ["logprobs", -1, 400], ["seed", "-9223372036854775808", 200],
    ["seed", "9223372036854775807", 200], ["seed", "9223372036854775808", 400], ["seed", 0, 200],
];
for (const [field, v, status] of bounds)
    await check(`bound: ${field} ${v}: ${status}`, async () => {
        const body = `{"prompt": ${JSON.stringify(P)}, ${field === "max_tokens" ? "" : '"max_tokens": 2, '}"${field}": ${v}}`;
        const r = await post(body);
        if (status === 200) ok(r);
        else isError(r, 400, field, new RegExp(`^'${field}'`));
    });
const ids = (n, id = 262) => Array(n).fill(id);
const promptBounds = [
    ["token id V-1", [V - 1], 200], ["token id V", [V], 400], ["token id -1", [-1], 400], ["token id 1.5", [1.5], 400],
    ["an empty array", [], 400], ["[[]]", [[]], 400], ["16 strings", Array(16).fill("a"), 200],
    ["17 strings", Array(17).fill("a"), 400], ["100000 empty strings", Array(100000).fill(""), 400],
    [`${CTX} ids (the whole context, no room for max_tokens 1)`, ids(CTX), 400, "max_tokens"], [`${CTX + 1} ids`, ids(CTX + 1), 400],
    ["100000 ids", ids(100000), 400], ["an empty string (starts from <|endoftext|>)", "", 200],
    ["a 1 MB string, under --max-body", "a".repeat(1000000), 400], ["16 strings of 60 KB", Array(16).fill("ab ".repeat(20000)), 400],
];
for (const [name, prompt, status, param = "prompt"] of promptBounds)
    await check(`bound: prompt ${name}: ${status}`, async () => {
        const r = await post({ prompt, max_tokens: 1 });
        if (status === 200) ok(r);
        else isError(r, 400, param, new RegExp(`^'${param}'`));
    });
await check(`bound: prompt of ${CTX} ids with max_tokens 0 and echo (the whole context scored): 200`, async () =>
    ok(await post({ prompt: ids(CTX), max_tokens: 0, echo: true, logprobs: 0 })));
await check("bound: a body past --max-body (1 MiB + 1): 413", async () => isError(await post(`{"prompt": "${"a".repeat(1048576)}"}`), 413, undefined, /too large/));
await check("bound: n 4 times 5 prompts = 20 choices: 400 naming 'n'", async () =>
    isError(await post({ prompt: Array(5).fill("a"), n: 4, max_tokens: 1 }), 400, "n", /^'n'/));
await check("bound: chat messages filling the context exactly: 400 naming 'messages', not a field not sent", async () => {
    let content = "a ".repeat(40), r;
    for (let i = 0; i < 40; i++, content += "a ") {
        r = await chat({ messages: [{ role: "user", content }] });
        if (r.status !== 200) break;
    }
    isError(r, 400, "messages", /^'messages' is \d+ tokens/);
});
await check("bound: more choices than the server's --max-queue: 400 naming 'n' (a 503 would never pass on a retry)", async () =>
    isError(await post({ prompt: "a", n: 5, max_tokens: 1 }, "/v1/completions", {}, small), 400, "n", /max-queue/));
for (const [name, stop, status] of [["4 strings", ["a", "b", "c", "d"], 200], ["5 strings", ["a", "b", "c", "d", "e"], 400],
    ["an empty string", "", 400], ["256 bytes", "x".repeat(256), 200], ["257 bytes", "x".repeat(257), 400],
    ["100000 strings", Array(100000).fill("a"), 400], ["null", null, 200]])
    await check(`bound: stop ${name}: ${status}`, async () => {
        const r = await post({ prompt: P, max_tokens: 2, stop });
        if (status === 200) ok(r);
        else isError(r, 400, "stop", /^'stop'/);
    });
await alive("bound");

// --- stop: where the text ends ---------------------------------------------------------------------------------
const greedy = (extra) => post({ prompt: P, max_tokens: 12, temperature: 0, ...extra });
const full = (await greedy({})).json.choices[0].text;
const promptText = (await post({ prompt: P, max_tokens: 0, echo: true })).json.choices[0].text;
console.log(`    (the greedy continuation of ${JSON.stringify(promptText)}: ${JSON.stringify(full)})`);
await check("stop: the first 2 generated bytes: empty text, finish_reason stop", async () => {
    const c = (await greedy({ stop: full.slice(0, 2) })).json.choices[0];
    same([c.text, c.finish_reason], ["", "stop"], "choice");
});
await check("stop: a string that never appears: the whole text, finish_reason length", async () => {
    const c = (await greedy({ stop: ["\u2603never"] })).json.choices[0];
    same([c.text, c.finish_reason], [full, "length"], "choice");
});
await check("stop: streamed, the stop string is never sent, not even its first bytes", async () => {
    const stop = full.slice(5, 9);
    const r = await post({ prompt: P, max_tokens: 12, temperature: 0, stop, stream: true });
    const text = events(r.body).filter((e) => e !== "[DONE]").map((e) => e.choices[0].text).join("");
    same(text, full.slice(0, full.indexOf(stop)), "streamed text");
});
await check("stop: with echo, a stop string across the prompt's end and the reply leaves the prompt whole", async () => {
    const whole = (await post({ prompt: P, max_tokens: 12, temperature: 0, echo: true })).json.choices[0].text;
    const stop = promptText.slice(-1) + full.slice(0, 1), at = full.indexOf(stop);  // in the reply alone
    same(whole, promptText + full, "echo");
    const c = (await post({ prompt: P, max_tokens: 12, temperature: 0, echo: true, stop })).json.choices[0];
    same(c.text, promptText + (at < 0 ? full : full.slice(0, at)), `echo with stop ${JSON.stringify(stop)}`);
});
await check("stop: with echo, a stop string inside the prompt does not cut it", async () => {
    const c = (await post({ prompt: P, max_tokens: 3, temperature: 0, echo: true, stop: promptText.slice(0, 2) })).json.choices[0];
    expect(c.text.startsWith(promptText), `text ${JSON.stringify(c.text)}`);
});
await check("stop: a multi-byte character and raw bytes as stop strings: 200", async () => {
    ok(await greedy({ stop: ["\u00e9", "\u{1F600}"] }));
    ok(await post(Buffer.from(`{"prompt": [464], "max_tokens": 3, "stop": ["\xff\xfe"]}`, "latin1")));
});
await alive("stop");

// --- logprobs: logprobs and echo, as lm-eval-harness sends them ------------------------------------------------
await check("logprobs: echo, max_tokens 0, logprobs 1 (lm-eval's loglikelihood): a log-probability per prompt token but the first", async () => {
    const r = await post({ prompt: [P], max_tokens: 0, echo: true, logprobs: 1, temperature: 0, seed: 1234 });
    ok(r);
    const c = r.json.choices[0], lp = c.logprobs;
    same([c.text, c.finish_reason, lp.tokens.join(""), lp.tokens.length], [promptText, "length", promptText, P.length], "choice");
    expect(lp.token_logprobs[0] === null && lp.token_logprobs.slice(1).every((x) => x <= 0), `token_logprobs ${lp.token_logprobs}`);
    expect(lp.top_logprobs[0] === null && lp.top_logprobs.slice(1).every((t) => Object.keys(t).length === 1), "top_logprobs");
    same(lp.text_offset, [0, 3, 4], "text_offset");
    same(r.json.usage, { prompt_tokens: 3, completion_tokens: 0, total_tokens: 3 }, "usage");
});
await check("logprobs: echo, max_tokens 1, logprobs 5: the prompt's and the new token's, 5 alternatives each", async () => {
    const lp = (await post({ prompt: P, max_tokens: 1, echo: true, logprobs: 5, temperature: 0 })).json.choices[0].logprobs;
    same(lp.tokens.length, P.length + 1, "tokens");
    expect(lp.top_logprobs.slice(1).every((t) => Object.keys(t).length === 5), "top_logprobs of 5");
});
await check("logprobs: the greedy token is its top alternative", async () => {
    const lp = (await post({ prompt: P, max_tokens: 4, logprobs: 1, temperature: 0 })).json.choices[0].logprobs;
    lp.tokens.forEach((t, i) => same(Object.keys(lp.top_logprobs[i]), [t], `token ${i}`));
});
await check("logprobs: echo and logprobs streamed give the same tokens as not streamed (the prompt's too)", async () => {
    const body = { prompt: P, max_tokens: 3, echo: true, logprobs: 1, temperature: 0 };
    const whole = (await post(body)).json.choices[0];
    const chunks = events((await post({ ...body, stream: true })).body).filter((e) => e !== "[DONE]");
    same(chunks.map((e) => e.choices[0].text).join(""), whole.text, "text");
    same(chunks.flatMap((e) => e.choices[0].logprobs?.tokens ?? []), whole.logprobs.tokens, "tokens");
    same(chunks.flatMap((e) => e.choices[0].logprobs?.token_logprobs ?? []), whole.logprobs.token_logprobs, "token_logprobs");
});
await check("logprobs: echo, max_tokens 0, streamed: the prompt's text once, finish_reason length, [DONE]", async () => {
    const ev = events((await post({ prompt: P, max_tokens: 0, echo: true, stream: true })).body);
    same(ev[ev.length - 1], "[DONE]", "last event");
    same(ev.slice(0, -1).map((e) => e.choices[0].text).join(""), promptText, "text");
    same(ev[ev.length - 2].choices[0].finish_reason, "length", "finish_reason");
});
await check("logprobs: echo with n 2 and 2 prompts: each of 4 choices starts with its prompt", async () => {
    const r = await post({ prompt: [P, [40]], n: 2, max_tokens: 2, echo: true });
    same(r.json.choices.map((c) => c.text.startsWith(c.index < 2 ? promptText : "I")), [true, true, true, true], "echoed prompts");
});
await check("logprobs: a chat of n 2 streamed: each choice's first chunk carries the role, each ends once", async () => {
    const ev = events((await chat({ messages: user, n: 2, max_tokens: 3, stream: true })).body).filter((e) => e !== "[DONE]");
    for (const i of [0, 1]) {
        const mine = ev.map((e) => e.choices[0]).filter((c) => c.index === i);
        same([mine[0]?.delta.role, mine.filter((c) => c.finish_reason).length], ["assistant", 1], `choice ${i}`);
    }
});
await check("logprobs: chat logprobs true, top_logprobs 3: content entries with 3 alternatives and their bytes", async () => {
    const c = (await chat({ messages: user, max_tokens: 3, logprobs: true, top_logprobs: 3 })).json.choices[0];
    expect(c.logprobs.content.length >= 1 && c.logprobs.content.every((t) => t.top_logprobs.length === 3 &&
           Array.isArray(t.bytes)), () => JSON.stringify(c.logprobs).slice(0, 300));
});
await check("logprobs: tokens that are not UTF-8 alone are written bytes:\\xNN, each alternative its own key", async () => {
    const r = await post({ prompt: [464], max_tokens: 3, logprobs: 5, temperature: 0 }, "/v1/completions", {}, bytes);
    const lp = r.json.choices[0].logprobs;
    same(lp.top_logprobs.map((t) => Object.keys(t).length), [5, 5, 5], "alternatives per token (a key shared is lost)");
    lp.tokens.forEach((t, i) => expect(/^bytes:(\\x[0-9a-f]{2})+$/.test(t) && Object.keys(lp.top_logprobs[i])[0] === t,
                                       () => `token ${i}: ${JSON.stringify(t)}, top ${JSON.stringify(lp.top_logprobs[i])}`));
    const c = (await post({ messages: user, max_tokens: 1, logprobs: true, top_logprobs: 3, temperature: 0 },
                          "/v1/chat/completions", {}, bytes)).json.choices[0].logprobs.content[0];
    same(new Set(c.top_logprobs.map((t) => t.token)).size, 3, "the chat's alternatives, distinct");
    for (const t of [c, ...c.top_logprobs]) {
        const written = "bytes:" + t.bytes.map((b) => "\\x" + b.toString(16).padStart(2, "0")).join("");
        const text = Buffer.from(t.bytes).toString("utf8");
        expect(t.token === written || (t.token === text && !text.includes("\ufffd")), `token ${JSON.stringify(t)}`);
    }
});
await alive("logprobs");

// --- auth: the API key's header (the server with --api-key) ----------------------------------------------------
const models = (headers) => request(keyed, "GET", "/v1/models", undefined, headers);
const auths = [
    ["none", {}, 401], ["Bearer alone", { Authorization: "Bearer" }, 401], ["Bearer and a space", { Authorization: "Bearer " }, 401],
    ["a wrong key", { Authorization: "Bearer wrong" }, 401], ["the key without Bearer", { Authorization: key }, 401],
    ["the key one byte short", { Authorization: `Bearer ${key.slice(0, -1)}` }, 401],
    ["the key one byte longer", { Authorization: `Bearer ${key}x` }, 401], ["Basic", { Authorization: `Basic ${btoa("u:" + key)}` }, 401],
    ["the key", { Authorization: `Bearer ${key}` }, 200], ["bearer in lowercase", { Authorization: `bearer ${key}` }, 200],
    ["BEARER in capitals", { Authorization: `BEARER ${key}` }, 200], ["two spaces after Bearer", { Authorization: `Bearer  ${key}` }, 200],
    ["spaces after the key", { Authorization: `Bearer ${key}   ` }, 200], ["the header name in capitals", { AUTHORIZATION: `Bearer ${key}` }, 200],
    ["the key in another header (X-Api-Key)", { "X-Api-Key": key }, 401], ["the key as a query", {}, 401, `/v1/models?api_key=${key}`],
];
for (const [name, headers, status, path] of auths)
    await check(`auth: ${name}: ${status}`, async () => {
        const r = path ? await request(keyed, "GET", path, undefined, headers) : await models(headers);
        if (status === 200) same(r.status, 200, "status");
        else {
            const e = isError(r, 401, null, /API key/);
            same([e.type, r.headers["www-authenticate"]], ["authentication_error", "Bearer"], "type and WWW-Authenticate");
        }
    });
for (const [name, order] of [["wrong then right", ["wrong", key]], ["right then wrong", [key, "wrong"]]])
    await check(`auth: two Authorization headers (${name}): refused`, async () => {
        const r = await raw(keyed, [`GET /v1/models HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${order[0]}\r\n` +
                                    `Authorization: Bearer ${order[1]}\r\nConnection: close\r\n\r\n`]);
        const a = parseAnswers(r.data)[0];
        expect(a && a.status >= 400 && a.status < 500, `status ${a?.status}`);
    });
for (const [name, path, method, status] of [["/health", "/health", "GET", 200], ["/ (the page)", "/", "GET", 200],
    ["HEAD /v1/models", "/v1/models", "HEAD", 401], ["a completion", "/v1/completions", "POST", 401], ["a chat", "/v1/chat/completions", "POST", 401]])
    await check(`auth: ${name} without the key: ${status}`, async () => {
        const r = await request(keyed, method, path, method === "POST" ? { prompt: "a" } : undefined);
        same(r.status, status, "status");
    });
await check("auth: a malformed body without the key: 401, not 400 (nothing read before the key)", async () =>
    isError(await request(keyed, "POST", "/v1/completions", "{", JSONH), 401, null, /API key/));
await check("auth: a completion with the key: 200", async () =>
    ok(await request(keyed, "POST", "/v1/completions", { prompt: "a", max_tokens: 1 }, { ...JSONH, Authorization: `Bearer ${key}` })));

// --- host: a loopback server answers only requests that name it (DNS rebinding) -------------------------------
for (const [name, host, status] of [["localhost:PORT", "localhost:1", 200], ["127.0.0.1", "127.0.0.1", 200],
    ["127.1.2.3:8080", "127.1.2.3:8080", 200], ["[::1]:8080", "[::1]:8080", 200], ["LOCALHOST", "LOCALHOST", 200],
    ["evil.example.com", "evil.example.com", 403], ["evil.example.com:8080", "evil.example.com:8080", 403],
    ["localhost.evil.com", "localhost.evil.com", 403], ["127.0.0.1.evil.com", "127.0.0.1.evil.com", 403],
    ["10.0.0.1", "10.0.0.1", 403]])
    await check(`host: Host ${name}: ${status}`, async () => {
        const r = await raw(url, [`GET /v1/models HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`]);
        const a = parseAnswers(r.data)[0];
        same(a?.status, status, `status (${a?.body?.slice(0, 200)})`);
        if (status === 403) expect(/names the host/.test(JSON.parse(a.body).error.message), a.body);
    });
await check("host: an absolute-form target naming another host: 403", async () => {
    const r = await raw(url, ["GET http://evil.example.com/v1/models HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"]);
    same(parseAnswers(r.data)[0]?.status, 403, "status");
});
const port = new URL(url).port, body1 = '{"prompt": "a", "max_tokens": 1}';
for (const [name, origin, host, status] of [["a page of another site, a POST of text/plain", "http://evil.example.com", "localhost", 403],
    ["Origin null (a sandboxed or file page)", "null", "localhost", 403], ["another port of this machine", `http://localhost:1`, `localhost:${port}`, 403],
    ["this server's own page", `http://127.0.0.1:${port}`, `127.0.0.1:${port}`, 200],
    ["this server's own page, in capitals", `HTTP://LOCALHOST:${port}`, `localhost:${port}`, 200]])
    await check(`host: Origin of ${name}: ${status}`, async () => {
        const r = await raw(url, [`POST /v1/completions HTTP/1.1\r\nHost: ${host}\r\nOrigin: ${origin}\r\nContent-Type: text/plain\r\n` +
                                  `Content-Length: ${body1.length}\r\nConnection: close\r\n\r\n${body1}`]);
        const a = parseAnswers(r.data)[0];
        same(a?.status, status, `status (${a?.body?.slice(0, 200)})`);
        if (status === 403) expect(/another site \(Origin: /.test(JSON.parse(a.body).error.message), a.body);
    });
await check("host: HTTP/1.0 without a Host: 200", async () => {
    const r = await raw(url, ["GET /health HTTP/1.0\r\n\r\n"]);
    same(parseAnswers(r.data)[0]?.status, 200, "status");
});
await alive("auth and host");

// --- route: methods and paths ----------------------------------------------------------------------------------
const routes = [
    ["GET", "/v1/completions", 405, "POST"], ["PUT", "/v1/chat/completions", 405, "POST"], ["DELETE", "/v1/models", 405, "GET, HEAD"],
    ["POST", "/", 405, "GET, HEAD"], ["POST", "/health", 405, "GET, HEAD"], ["OPTIONS", "/v1/completions", 405, "POST"],
    ["PATCH", "/v1/models", 405, "GET, HEAD"], ["post", "/v1/completions", 405, "POST"], ["HEAD", "/v1/completions", 405, "POST"],
    ["GET", "/nope", 404], ["GET", "/v1/completions/", 404], ["GET", "/V1/models", 404], ["GET", "//v1/models", 404],
    ["GET", "/v1/../v1/models", 404], ["GET", "/v1/%6dodels", 404], ["GET", "/v1", 404], ["GET", "/v1/models/gpt-4", 404],
    ["GET", "/" + "a".repeat(8000), 404], ["GET", "/v1/models?x=1&y", 200], ["GET", "/health?", 200], ["HEAD", "/health", 200],
    ["HEAD", "/", 200], ["GET", "http://localhost/v1/models", 200], ["OPTIONS", "*", 404], ["BREW", "/", 405, "GET, HEAD"],
    ["X".repeat(1000), "/v1/models", 405, "GET, HEAD"],
];
for (const [method, path, status, allow] of routes)
    await check(`route: ${method.slice(0, 12)} ${path.slice(0, 40)}: ${status}`, async () => {
        const r = await request(url, method, path);
        if (status === 200) {
            same(r.status, 200, "status");
            if (method === "HEAD") same(r.body, "", "a HEAD answer's body");
            return;
        }
        if (method === "HEAD") return same([r.status, r.headers.allow, r.body], [status, allow, ""], "status, Allow, body");
        const e = isError(r, status, null, status === 404 ? /^no route / : /takes /);
        if (status === 405) same(r.headers.allow, allow, "Allow");
        if (status === 404) same(e.type, "not_found_error", "type");
        expect(e.message.length < 9000 && !e.message.includes("X".repeat(33)), "the message echoes at most 32 bytes of a method");
    });
for (const [name, bytes, status] of [["a target of 9000 bytes", `GET /${"a".repeat(9000)} HTTP/1.1\r\nHost: localhost\r\n\r\n`, 414],
    ["a method holding a NUL", "GE\0T / HTTP/1.1\r\nHost: localhost\r\n\r\n", 400], ["HTTP/2.0", "GET / HTTP/2.0\r\nHost: localhost\r\n\r\n", 505],
    ["no Host in HTTP/1.1", "GET /health HTTP/1.1\r\n\r\n", 400], ["a bare LF", "GET /health HTTP/1.1\nHost: x\n\n", 400],
    ["a TLS hello", "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + "\x00".repeat(40) + "\r\n\r\n", 400],
    ["10000 empty lines first", "\r\n".repeat(10000) + "GET / HTTP/1.1\r\n\r\n", 414],
    ["a header of 20 KB", `GET / HTTP/1.1\r\nHost: localhost\r\nX-A: ${"a".repeat(20000)}\r\n\r\n`, 431],
    ["101 headers", "GET / HTTP/1.1\r\nHost: localhost\r\n" + "X-A: 1\r\n".repeat(101) + "\r\n", 431],
    ["a chunked body", "POST /v1/completions HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 411],
    ["Transfer-Encoding gzip", "POST /v1/completions HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: gzip\r\n\r\n", 501],
    ["Content-Length and Transfer-Encoding", "POST /v1/completions HTTP/1.1\r\nHost: localhost\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n{}", 400],
    ["two Content-Lengths", "POST /v1/completions HTTP/1.1\r\nHost: localhost\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n{}", 400],
    ["Content-Length +2", "POST /v1/completions HTTP/1.1\r\nHost: localhost\r\nContent-Length: +2\r\n\r\n{}", 400],
    ["Content-Length of 30 digits", `POST /v1/completions HTTP/1.1\r\nHost: localhost\r\nContent-Length: ${"9".repeat(30)}\r\n\r\n`, 413],
    ["Expect: 100-continue", 'POST /v1/completions HTTP/1.1\r\nHost: localhost\r\nExpect: 100-continue\r\nContent-Length: 32\r\n\r\n{"prompt": "a", "max_tokens": 1}', 200],
    ["Expect: something else", "POST /v1/completions HTTP/1.1\r\nHost: localhost\r\nExpect: 200-ok\r\nContent-Length: 2\r\n\r\n{}", 417]])
    await check(`route: ${name}: ${status}`, async () => {
        const a = parseAnswers((await raw(url, [Buffer.from(bytes, "latin1")])).data);
        const last = a[a.length - 1];
        same(last?.status, status, `status (${last?.body?.slice(0, 120)})`);
        if (status >= 400) expect(JSON.parse(last.body).error.message, "an error object");
    });
await alive("route");

// --- http: abuse of the connection itself (the small server: 4 connections, 1 s timeouts, 4 KiB bodies) -------
await check("http: pipelined /health, a completion and /v1/models in one write: three answers in order", async () => {
    const body = '{"prompt": "a", "max_tokens": 2}';
    const r = await raw(url, [`GET /health HTTP/1.1\r\nHost: localhost\r\n\r\nPOST /v1/completions HTTP/1.1\r\nHost: localhost\r\n` +
        `Content-Length: ${body.length}\r\n\r\n${body}GET /v1/models HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n`]);
    const a = parseAnswers(r.data);
    same(a.map((x) => x.status), [200, 200, 200], "statuses");
    expect(JSON.parse(a[1].body).choices && JSON.parse(a[2].body).data, "bodies out of order");
});
await check("http: a streamed completion pipelined before /health: the stream whole, then /health", async () => {
    const body = '{"prompt": "a", "max_tokens": 5, "stream": true}';
    const r = await raw(url, [`POST /v1/completions HTTP/1.1\r\nHost: localhost\r\nContent-Length: ${body.length}\r\n\r\n${body}` +
        "GET /health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"]);
    const a = parseAnswers(r.data);
    same(a.map((x) => x.status), [200, 200], "statuses");
    expect(a[0].body.endsWith("data: [DONE]\n\n") && a[1].body === '{"status":"ok"}', "bodies");
});
await check("http: HTTP/1.0 streaming: the body ends with the connection, [DONE] last", async () => {
    const body = '{"prompt": "a", "max_tokens": 3, "stream": true}';
    const r = await raw(url, [`POST /v1/completions HTTP/1.0\r\nContent-Length: ${body.length}\r\n\r\n${body}`]);
    const a = parseAnswers(r.data)[0];
    expect(a.status === 200 && !a.headers["transfer-encoding"] && a.body.endsWith("data: [DONE]\n\n") && r.closed, a.body.slice(-100));
});
await check("http: a request head dripped past --timeout: 408, then closed", async () => {
    const r = await raw(small, ["GET /health HTTP/1.1\r\n", 600, "Host: localhost\r\n", 900, "X-A: 1\r\n"], { ms: 4000 });
    same([parseAnswers(r.data)[0]?.status, r.closed], [408, true], "status and close");
});
await check("http: a body dripped past --timeout: 408", async () => {
    const r = await raw(small, ["POST /v1/completions HTTP/1.1\r\nHost: localhost\r\nContent-Length: 20\r\n\r\n{", 1500, "\"p"], { ms: 4000 });
    same(parseAnswers(r.data)[0]?.status, 408, "status");
});
await check("http: an idle connection is closed after --timeout, without an answer", async () => {
    const t0 = Date.now(), r = await raw(small, [], { ms: 5000 });
    expect(r.closed && r.data.length === 0 && Date.now() - t0 < 4000, `closed ${r.closed} after ${Date.now() - t0} ms, ${r.data.length} bytes`);
});
await check("http: a body past --max-body (4096): 413 before the body is sent", async () => {
    const r = await raw(small, ["POST /v1/completions HTTP/1.1\r\nHost: localhost\r\nContent-Length: 4097\r\n\r\n"]);
    isError({ ...parseAnswers(r.data)[0], json: JSON.parse(parseAnswers(r.data)[0].body) }, 413, null, /too large/);
});
await check("http: 12 connections on a server of 4: 503 for those past the cap, then it answers again", async () => {
    const socks = [];
    const answers = Array(12).fill(null);
    for (let i = 0; i < 12; i++) {
        const s = net.connect(Number(new URL(small).port), "127.0.0.1");
        s.on("data", (d) => (answers[i] = (answers[i] || "") + d));
        s.on("error", () => {});
        socks.push(s);
        await sleep(20);
    }
    await sleep(300);
    socks.forEach((s) => s.destroy());
    const busy = answers.filter((a) => a && a.startsWith("HTTP/1.1 503")).length;
    expect(busy >= 8 && answers.slice(0, 4).every((a) => a === null), `${busy} answered 503: ${JSON.stringify(answers.map((a) => a?.slice(0, 12)))}`);
    await sleep(200);
    same((await request(small, "GET", "/health")).status, 200, "/health after");
});
await check("http: a flood of 300 connections: the server's descriptors stay bounded, and it answers after", async () => {
    const before = fs.readdirSync(`/proc/${pid}/fd`).length;
    const socks = [];
    for (let i = 0; i < 300; i++) {
        const s = net.connect(Number(new URL(url).port), "127.0.0.1");
        s.on("error", () => {});
        socks.push(s);
    }
    await sleep(800);
    const during = fs.readdirSync(`/proc/${pid}/fd`).length;
    socks.forEach((s) => s.destroy());
    expect(during <= before + 2 * 64 + 4, `${before} descriptors before, ${during} during`);
    await sleep(300);
    same((await request(url, "GET", "/health")).status, 200, "/health after");
});
// Leaving a stream at each moment: after the request, after the head, after the first event, mid-way, after the
// last text; with a body half sent; half-closed; reset. Then the server answers, its connections all closed.
const streamBody = '{"prompt": "a", "max_tokens": 40, "stream": true}';
const streamReq = `POST /v1/completions HTTP/1.1\r\nHost: localhost\r\nContent-Length: ${streamBody.length}\r\n\r\n${streamBody}`;
function leave(when) {
    return new Promise((resolve) => {
        const s = net.connect(Number(new URL(url).port), "127.0.0.1");
        let got = "";
        s.on("error", () => {});
        s.on("close", resolve);
        s.on("connect", () => {
            if (when === "mid-body") return s.end(streamReq.slice(0, streamReq.length - 5)), s.destroy();
            s.write(streamReq);
            if (when === "sent") s.destroy();
            if (when === "half-close") s.end();
            if (when === "reset") s.resetAndDestroy();
        });
        s.on("data", (d) => {
            got += d;
            const evs = got.split("data: ").length - 1;
            if ((when === "head" && got.includes("\r\n\r\n")) || (when === "first" && evs >= 1) || (when === "mid" && evs >= 10) ||
                (when === "last" && got.includes('"finish_reason":"length"')))
                s.destroy();
        });
        setTimeout(() => s.destroy(), 5000);
    });
}
for (const when of ["sent", "head", "first", "mid", "last", "mid-body", "half-close", "reset"])
    await check(`http: a client leaving a stream (${when}), 5 times over 2 slots: the server answers the next`, async () => {
        await Promise.all(Array.from({ length: 5 }, () => leave(when)));
        const r = await post({ prompt: "a", max_tokens: 3 });
        ok(r);
    });
await check("http: every connection left behind is closed (descriptors back to the listener's few)", async () => {
    let n = 0;
    for (let i = 0; i < 50; i++, await sleep(100)) if ((n = fs.readdirSync(`/proc/${pid}/fd`).length) <= 8) break;
    expect(n <= 8, `${n} descriptors open`);
});
await alive("http");

// The largest bodies a client may send (each under --max-body), three times over: the memory they take comes back
// to the allocator and is taken again, so it grows no more after the second time. A body of JSON values parses into
// a tree many times its size for a moment, one request at a time, hence the bound over the start (its figures:
// tests/bench_results.md).
async function heavy() {
    for (const prompt of ["a".repeat(1000000), ids(100000), Array(16).fill("ab ".repeat(20000)), Array(100000).fill("")])
        await post({ prompt, max_tokens: 1 });
    await post(`{"prompt": [${"[],".repeat(349000)}[]]}`);  // 1 MiB of empty arrays: the most JSON values a body holds
    await post("[".repeat(1000000));
    await post({ prompt: P, max_tokens: CTX - P.length, n: 16, logprobs: 5, echo: true });
}
if (asan === "asan")  // and the largest requests once (a round is slow there), for the sanitizers to see
    await heavy(), console.log("skip memory: VmRSS under AddressSanitizer, whose quarantine holds freed memory " +
                               "(LeakSanitizer looks at the stop)");
else await check("memory: the largest requests three times over: VmRSS grows by at most 4 MiB the third time", async () => {
    const seen = [];
    for (let i = 0; i < 3; i++) await heavy(), seen.push(rss());
    console.log(`    VmRSS ${rssStart} KiB at the start, ${seen.join(", ")} KiB after each round of the largest requests`);
    expect(seen[2] - seen[1] <= 4096, `${seen[1]} KiB, then ${seen[2]} KiB`);
    expect(seen[2] - rssStart <= 196608, `${rssStart} KiB at the start, ${seen[2]} KiB now: more than 192 MiB more`);
});
done();
