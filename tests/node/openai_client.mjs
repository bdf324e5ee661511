// openai_client.mjs: OpenAI's official client (npm `openai`, pinned in package.json) against `gpt2 serve`, for
// tests/cli_serve.sh: completions and chat, streamed and not; usage; n > 1; stop strings (one across a token
// boundary, two that are prefixes of each other); the errors a client sees (400 naming the field, 401, 404); and
// greedy decoding equal to `gpt2 generate --temperature 0`, prompt by prompt, with the prompts' streams batched
// together. Prints one line per check (checks.mjs). Does not start the server or run generate: the shell does.
//   node openai_client.mjs URL KEYED_URL KEY MODEL GEN_DIR MAX_TOKENS [drafts|drafts-all-kept]
// GEN_DIR holds, for each prompt N: N.prompt (its token ids), N.txt (generate's text, --no-prompt), N.ids (the
// ids generate gave). KEYED_URL is a server started with --api-key KEY. With `drafts`, the servers decode with a
// draft: usage also says how many drafted tokens were kept and not (completion_tokens_details, as OpenAI's
// predicted outputs), plain decoding's oracle all the same; with `drafts-all-kept` (the model drafting for
// itself), none rejected.
import fs from "node:fs";
import OpenAI from "openai";
import { check, deadline, expect, same } from "./checks.mjs";

const [url, keyedUrl, key, model, genDir, maxTokensArg, draftsArg] = process.argv.slice(2);
const drafts = draftsArg?.startsWith("drafts"), allKept = draftsArg === "drafts-all-kept";
const maxTokens = Number(maxTokensArg);
const done = deadline(180000, "the OpenAI client's checks");
const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: "unused", maxRetries: 0, timeout: 30000 });

// generate's outputs: its text without the newline it ends with
const gen = fs.readdirSync(genDir).filter((f) => f.endsWith(".prompt")).sort().map((f) => {
    const base = `${genDir}/${f.slice(0, -7)}`;
    const words = (file) => fs.readFileSync(file, "utf8").trim().split(/\s+/).filter(Boolean).map(Number);
    return { prompt: words(`${base}.prompt`), text: fs.readFileSync(`${base}.txt`, "utf8").replace(/\n$/, ""),
             ids: words(`${base}.ids`) };
});

async function streamed(params) {
    const chunks = [];
    for await (const c of await client.completions.create({ ...params, stream: true })) chunks.push(c);
    return chunks;
}

function choiceTexts(chunks, n) {
    const texts = Array(n).fill(""), reasons = Array(n).fill(null);
    for (const c of chunks)
        for (const ch of c.choices) {
            texts[ch.index] += ch.text ?? ch.delta?.content ?? "";
            if (ch.finish_reason) {
                expect(reasons[ch.index] === null, `choice ${ch.index} ended twice`);
                reasons[ch.index] = ch.finish_reason;
            }
        }
    return { texts, reasons };
}

const g0 = gen[0];
await check(`models.list names the model served (${model})`, async () => {
    const list = await client.models.list();
    same(list.data.map((m) => m.id), [model], "model ids");
});

await check("completions, not streamed: generate's text, finish_reason, usage", async () => {
    const r = await client.completions.create({ model, prompt: g0.prompt, max_tokens: maxTokens, temperature: 0 });
    expect(r.object === "text_completion" && r.choices.length === 1, "one text_completion choice");
    same(r.choices[0].text, g0.text, "text");
    same(r.choices[0].finish_reason, g0.ids.length < maxTokens ? "stop" : "length", "finish_reason");
    const { completion_tokens_details: details, ...usage } = r.usage;
    same(usage, { prompt_tokens: g0.prompt.length, completion_tokens: g0.ids.length,
                  total_tokens: g0.prompt.length + g0.ids.length }, "usage");
    if (!drafts) return same(details, undefined, "usage.completion_tokens_details without a draft");
    const { accepted_prediction_tokens: kept, rejected_prediction_tokens: rejected, ...rest } = details ?? {};
    expect(Number.isInteger(kept) && Number.isInteger(rejected) && kept >= 0 && rejected >= 0 &&
           kept < g0.ids.length && kept + rejected > 0 && Object.keys(rest).length === 0,
           () => `completion_tokens_details: ${JSON.stringify(details)}`);
    expect(!allKept || rejected === 0, () => `a draft rejected where all are kept: ${JSON.stringify(details)}`);
});

await check("completions, streamed: the chunks add up to the same text, then usage (include_usage)", async () => {
    const chunks = await streamed({ model, prompt: g0.prompt, max_tokens: maxTokens, temperature: 0,
                                    stream_options: { include_usage: true } });
    expect(chunks.length >= 2, `${chunks.length} chunks`);
    const { texts, reasons } = choiceTexts(chunks, 1);
    same(texts[0], g0.text, "streamed text");
    expect(reasons[0], "no finish_reason");
    const last = chunks[chunks.length - 1];
    same(last.choices, [], "the usage chunk's choices");
    same(last.usage?.completion_tokens, g0.ids.length, "usage.completion_tokens");
});

await check(`the same tokens as generate --temperature 0: ${gen.length} prompts streamed at once (batched)`, async () => {
    const all = await Promise.all(gen.map((g) => streamed({ model, prompt: g.prompt, max_tokens: maxTokens,
                                                            temperature: 0, stream_options: { include_usage: true } })));
    all.forEach((chunks, i) => {
        same(choiceTexts(chunks, 1).texts[0], gen[i].text, `prompt ${i} (${gen[i].prompt.join(" ")}): text`);
        same(chunks[chunks.length - 1].usage.completion_tokens, gen[i].ids.length, `prompt ${i}: tokens`);
    });
});

await check(`... and as one request holding the ${gen.length} prompts (a choice each, in prompt order)`, async () => {
    const r = await client.completions.create({ model, prompt: gen.map((g) => g.prompt), max_tokens: maxTokens,
                                                temperature: 0 });
    same(r.choices.map((c) => c.index), gen.map((_, i) => i), "indexes");
    same(r.choices.map((c) => c.text), gen.map((g) => g.text), "texts");
    same(r.usage.completion_tokens, gen.reduce((s, g) => s + g.ids.length, 0), "usage.completion_tokens");
});

const messages = [{ role: "system", content: "Be brief." }, { role: "user", content: "Hello there" }];
let chatText = "";
await check("chat, not streamed: an assistant message, finish_reason, usage", async () => {
    const r = await client.chat.completions.create({ model, messages, max_tokens: 12, temperature: 0 });
    expect(r.object === "chat.completion", `object ${r.object}`);
    const c = r.choices[0];
    same(c.message.role, "assistant", "role");
    expect(typeof c.message.content === "string", "content is not a string");
    expect(["stop", "length"].includes(c.finish_reason), `finish_reason ${c.finish_reason}`);
    expect(r.usage.prompt_tokens > 2 && r.usage.completion_tokens >= 1 && r.usage.completion_tokens <= 12 &&
           r.usage.total_tokens === r.usage.prompt_tokens + r.usage.completion_tokens, () => JSON.stringify(r.usage));
    chatText = c.message.content;
});

await check("chat, streamed: the role first, then the same content, one finish_reason", async () => {
    const chunks = [];
    const s = await client.chat.completions.create({ model, messages, max_tokens: 12, temperature: 0, stream: true });
    for await (const c of s) chunks.push(c);
    expect(chunks.every((c) => c.object === "chat.completion.chunk"), "an object not chat.completion.chunk");
    same(chunks[0].choices[0].delta.role, "assistant", "first delta's role");
    const { texts, reasons } = choiceTexts(chunks, 1);
    same(texts[0], chatText, "content");
    expect(reasons[0], "no finish_reason");
});

await check("n = 3 at temperature 0: three choices, each generate's text", async () => {
    const r = await client.completions.create({ model, prompt: g0.prompt, max_tokens: maxTokens, temperature: 0, n: 3 });
    same(r.choices.map((c) => c.index), [0, 1, 2], "indexes");
    same(r.choices.map((c) => c.text), [g0.text, g0.text, g0.text], "texts");
    same(r.usage.completion_tokens, 3 * g0.ids.length, "usage.completion_tokens (all choices)");
});

await check("n = 2 sampled with a seed: streamed and not give the same two texts, which differ", async () => {
    const p = { model, prompt: g0.prompt, max_tokens: 8, temperature: 1, seed: 7, n: 2 };
    const whole = await client.completions.create(p);
    const { texts, reasons } = choiceTexts(await streamed(p), 2);
    same(texts, whole.choices.map((c) => c.text), "streamed texts");
    expect(reasons.every(Boolean), "a streamed choice without finish_reason");
    expect(texts[0] !== texts[1], `both choices gave ${JSON.stringify(texts[0])}`);
});

// A stop string made of a token's last 2 bytes and the next token's first 2: the text ends before its first
// occurrence, streamed or not; with two stop strings, one a prefix of the other (either order), before the first
// occurrence of either.
await check("a stop string across a token boundary ends the text before it; two that are prefixes of each other too",
            async () => {
    let g, tokens = [], k = -1;
    for (g of gen) {
        const r = await client.completions.create({ model, prompt: g.prompt, max_tokens: maxTokens, temperature: 0,
                                                    logprobs: 0 });
        tokens = r.choices[0].logprobs.tokens;
        k = tokens.findIndex((t, i) => i + 1 < tokens.length && t.length >= 2 && tokens[i + 1].length >= 2);
        if (k >= 0) break;
    }
    expect(k >= 0, "no prompt's continuation has two tokens of 2 bytes or more in a row");
    const stop = tokens[k].slice(-2) + tokens[k + 1].slice(0, 2);
    for (const stops of [[stop], [stop, stop.slice(0, 3)], [stop.slice(1, 3), stop]]) {
        const at = Math.min(...stops.map((s) => g.text.indexOf(s)).filter((i) => i >= 0));
        const want = g.text.slice(0, at);
        const p = { model, prompt: g.prompt, max_tokens: maxTokens, temperature: 0, stop: stops };
        const whole = await client.completions.create(p);
        same([whole.choices[0].text, whole.choices[0].finish_reason], [want, "stop"], `stop ${JSON.stringify(stops)}`);
        const { texts, reasons } = choiceTexts(await streamed(p), 1);
        same([texts[0], reasons[0]], [want, "stop"], `streamed, stop ${JSON.stringify(stops)}`);
    }
});

async function apiError(promise) {
    try {
        await promise;
    } catch (e) {
        return e;
    }
    expect(false, "the request succeeded");
}

await check("a bad field: BadRequestError 400, its param and message naming the field", async () => {
    const e = await apiError(client.completions.create({ model, prompt: g0.prompt, max_tokens: -1 }));
    expect(e instanceof OpenAI.BadRequestError && e.status === 400, `${e.constructor.name} ${e.status}`);
    same(e.param, "max_tokens", "param");
    expect(/max_tokens/.test(e.message), `message: ${e.message}`);
    same(e.type, "invalid_request_error", "type");
});

await check("a wrong key on a server with --api-key: AuthenticationError 401; the right key passes", async () => {
    const wrong = new OpenAI({ baseURL: `${keyedUrl}/v1`, apiKey: key + "x", maxRetries: 0, timeout: 30000 });
    const e = await apiError(wrong.models.list());
    expect(e instanceof OpenAI.AuthenticationError && e.status === 401, `${e.constructor.name} ${e.status}`);
    const right = new OpenAI({ baseURL: `${keyedUrl}/v1`, apiKey: key, maxRetries: 0, timeout: 30000 });
    const r = await right.completions.create({ model, prompt: g0.prompt, max_tokens: 2, temperature: 0 });
    same(r.choices.length, 1, "choices with the right key");
});

await check("a route that does not exist (models.retrieve): NotFoundError 404", async () => {
    const e = await apiError(client.models.retrieve("no-such-model"));
    expect(e instanceof OpenAI.NotFoundError && e.status === 404, `${e.constructor.name} ${e.status}`);
    expect(/no route/.test(e.message), `message: ${e.message}`);
});

done();
