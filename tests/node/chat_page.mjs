// chat_page.mjs: `gpt2 serve`'s chat page in headless Chromium, for tests/cli_serve.sh. Loads
// /?temperature=0&max_tokens=16&q=..., which sends q at load (src/serve/page.html), waits for the streamed reply,
// keeps a screenshot and checks what the page shows against the API's own answer to the same request. Drives
// Chromium over the DevTools protocol on a pipe (--remote-debugging-pipe: JSON messages ended by a NUL on fds 3
// and 4), so it needs no npm package. Prints one line per check (checks.mjs).
//   node chat_page.mjs URL MODEL SCREENSHOT.png [CHROMIUM]
import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { check, deadline, expect, failed, same, sleep } from "./checks.mjs";

const [url, model, png, chromium = "chromium"] = process.argv.slice(2);
const q = "Hello there";
const done = deadline(90000, "the chat page in Chromium");
const profile = fs.mkdtempSync(path.join(path.dirname(png), "chromium-"));
const browser = spawn(chromium, ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
    "--no-first-run", "--no-default-browser-check", "--disable-extensions", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--window-size=900,700", `--user-data-dir=${profile}`,
    "--remote-debugging-pipe", "about:blank"], { stdio: ["ignore", "ignore", "pipe", "pipe", "pipe"] });
let stderr = "";
browser.stdio[2].on("data", (d) => (stderr = (stderr + d).slice(-2000)));
process.on("exit", () => browser.kill("SIGKILL"));  // its profile is in the suite's temporary directory

// The protocol: a message per command, its answer matched by id; events to listeners.
let nextId = 1, input = Buffer.alloc(0);
const waiting = new Map(), listeners = [];
browser.stdio[4].on("data", (d) => {
    input = Buffer.concat([input, d]);
    for (let end; (end = input.indexOf(0)) >= 0; input = input.subarray(end + 1)) {
        const m = JSON.parse(input.subarray(0, end).toString());
        if (m.id && waiting.has(m.id)) {
            const { resolve, reject } = waiting.get(m.id);
            waiting.delete(m.id);
            m.error ? reject(new Error(`${JSON.stringify(m.error)}`)) : resolve(m.result);
        } else if (m.method) listeners.forEach((f) => f(m));
    }
});
// Chromium gone (or never started): every command waiting fails with what it said.
let dead = "";
function gone(why) {
    dead = `chromium ${why}: ${stderr.slice(-300)}`;
    for (const { reject } of waiting.values()) reject(Object.assign(new Error(dead), { expected: true }));
    waiting.clear();
}
browser.on("error", (e) => gone(`did not start (${e.code || e})`));
browser.on("exit", (code, sig) => gone(`exited (${sig || code})`));
browser.stdio[3].on("error", () => {});
function send(method, params = {}, sessionId) {
    if (dead) return Promise.reject(Object.assign(new Error(dead), { expected: true }));
    const id = nextId++;
    browser.stdio[3].write(JSON.stringify({ id, method, params, sessionId }) + "\0");
    return new Promise((resolve, reject) => waiting.set(id, { resolve, reject }));
}

const requests = [], exceptions = [], streams = [];
let session, page = {};
await check("Chromium starts and opens the page at /?temperature=0&max_tokens=16&q=...", async () => {
    const { targetId } = await send("Target.createTarget", { url: "about:blank" });
    ({ sessionId: session } = await send("Target.attachToTarget", { targetId, flatten: true }));
    listeners.push((m) => {
        if (m.sessionId !== session) return;
        if (m.method === "Network.requestWillBeSent") requests.push(m.params.request.url);
        if (m.method === "Network.responseReceived" && m.params.response.url.endsWith("/v1/chat/completions"))
            streams.push(m.params.response.mimeType);
        if (m.method === "Runtime.exceptionThrown") exceptions.push(m.params.exceptionDetails.text);
    });
    for (const domain of ["Network", "Runtime", "Page"]) await send(`${domain}.enable`, {}, session);
    const target = `${url}/?temperature=0&max_tokens=16&q=${encodeURIComponent(q)}`;
    const nav = await send("Page.navigate", { url: target }, session);
    expect(!nav.errorText, `navigation: ${nav.errorText}`);
});

async function evaluate(expression) {
    const r = await send("Runtime.evaluate", { expression, returnByValue: true }, session);
    return r.result.value;
}

await check("the page sends the message and its streamed reply ends (body data-state done)", async () => {
    let state, named = false;
    for (let i = 0; i < 600 && !(["done", "error"].includes(state) && named); i++, await sleep(100)) {
        state = await evaluate("document.body.dataset.state");
        named = (await evaluate("document.getElementById('model').textContent")) === model;
    }
    page = await evaluate(`JSON.stringify({
        user: [...document.querySelectorAll(".msg.user")].map((e) => e.textContent),
        replies: [...document.querySelectorAll(".msg.assistant .reply, .msg.error .reply")].map((e) => e.textContent),
        meta: document.querySelector(".meta")?.textContent, speed: document.getElementById("speed").textContent,
        model: document.getElementById("model").textContent })`).then(JSON.parse);
    same(state, "done", `data-state (the page shows ${JSON.stringify(page)})`);
    same(streams, ["text/event-stream"], "the reply's content type");
});

await check("a screenshot of the page is kept", async () => {
    const shot = await send("Page.captureScreenshot", { format: "png" }, session);
    fs.writeFileSync(png, Buffer.from(shot.data, "base64"));
    const bytes = fs.readFileSync(png);
    expect(bytes.length > 5000 && bytes.subarray(1, 4).toString() === "PNG", `${bytes.length} bytes`);
    console.log(`    screenshot: ${png}`);
});

await check("the page shows the message, and a reply equal to the API's answer to the same request", async () => {
    const r = await fetch(`${url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" },
        body: JSON.stringify({ messages: [{ role: "user", content: q }], temperature: 0, max_tokens: 16 }) });
    const answer = (await r.json()).choices[0].message.content;
    same(page.user, [q], "the user's bubble");
    expect(answer.length > 0, "the API's answer is empty: nothing to compare");
    same(page.replies, [answer], "the reply shown");
});

await check("the page shows the model's name, the tokens and their rate", async () => {
    same(page.model, model, "the model's name");
    expect(/^\d+ tokens, [0-9.]+ tok\/s, first after \d+ ms$/.test(page.meta), `meta line: ${page.meta}`);
    expect(/tok\/s$/.test(page.speed), `speed: ${page.speed}`);
});

await check("a message of HTML in the URL shows as text: no element made, no script run, nothing fetched for it", async () => {
    const html = `<img src="/x.png" onerror="document.title='pwned'">`;
    await send("Page.navigate", { url: `${url}/?temperature=0&max_tokens=2&q=${encodeURIComponent(html)}` }, session);
    let shown;
    for (let i = 0; i < 300; i++, await sleep(100)) {
        shown = await evaluate(`JSON.stringify({ state: document.body.dataset.state, title: document.title,
            user: [...document.querySelectorAll(".msg.user")].map((e) => e.textContent),
            images: document.querySelectorAll("main img").length })`).then(JSON.parse).catch(() => shown);
        if (shown?.state === "done" && shown.user[0] === html) break;
    }
    same(shown, { state: "done", title: "gpt2.cpp chat", user: [html], images: 0 }, "the page");
    same(requests.filter((u) => new URL(u).pathname === "/x.png"), [], "requests for the image");
});

await check("the page's headers: no frame of another site's page, no request but to this server (CSP)", async () => {
    const r = await fetch(`${url}/`);
    const csp = r.headers.get("content-security-policy") || "";
    for (const rule of ["default-src 'none'", "connect-src 'self'", "frame-ancestors 'none'"])
        expect(csp.split(/;\s*/).includes(rule), `${rule} not in ${JSON.stringify(csp)}`);
    same(r.headers.get("x-frame-options"), "DENY", "X-Frame-Options");
});

await check("the page made no request but to the server, and threw no error", async () => {
    const origin = new URL(url).origin;
    expect(requests.length >= 3, `requests: ${JSON.stringify(requests)}`);
    same(requests.filter((u) => !u.startsWith(origin + "/")), [], "requests elsewhere");
    same(exceptions, [], "exceptions");
});

send("Browser.close").catch(() => {});
const exited = new Promise((r) => browser.on("exit", r));
await Promise.race([exited, sleep(5000)]);
if (failed()) console.log(stderr.split("\n").slice(-5).map((l) => `    chromium: ${l}`).join("\n"));
done();
