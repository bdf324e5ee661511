// checks.mjs: the small harness of the node scripts that tests/cli_serve*.sh drive (through serve_lib.sh's
// node_checks): each check prints `ok NAME` or `FAIL NAME` and an indented reason, which the shell counts as its
// own pass or fail; the whole run has a deadline, so a server that stops answering fails the run, never stalls it.
// Also the HTTP pieces those scripts share, on node's own modules only (no npm package).
import net from "node:net";

let failures = 0;

// Runs fn (async); it passes unless it throws. The reason printed is the error's message.
export async function check(name, fn) {
    try {
        await fn();
        console.log(`ok ${name}`);
    } catch (e) {
        failures++;
        console.log(`FAIL ${name}`);
        for (const line of String((e && e.stack && !e.expected ? e.stack : e && e.message) || e).split("\n").slice(0, 8))
            console.log(`    ${line}`);
    }
}

// Throws (a failure whose message is the reason) unless cond holds.
export function expect(cond, why) {
    if (!cond) {
        const e = new Error(typeof why === "function" ? why() : why);
        e.expected = true;
        throw e;
    }
}

export function same(got, want, what) {
    expect(JSON.stringify(got) === JSON.stringify(want),
           () => `${what}: got ${JSON.stringify(got)?.slice(0, 400)}, want ${JSON.stringify(want)?.slice(0, 400)}`);
}

// Ends the process after ms with a failure line, whatever is pending; done() ends it at once.
export function deadline(ms, what) {
    const timer = setTimeout(() => {
        console.log(`FAIL ${what}: not finished after ${ms / 1000} s (a request got no answer)`);
        process.exit(1);
    }, ms);
    return () => {
        clearTimeout(timer);
        process.exit(0);
    };
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// A raw exchange over one TCP connection: writes each piece of `parts` (strings or Buffers; a number between
// them waits that many ms), then reads until the server closes or `ms` pass (then the socket is destroyed).
// Resolves {data: Buffer of everything read, closed: whether the server ended it, error: a socket error code}.
export function raw(url, parts, { ms = 5000, end = false } = {}) {
    const { hostname, port } = new URL(url);
    return new Promise((resolve) => {
        const chunks = [];
        let closed = false, error = "";
        const sock = net.connect({ host: hostname, port: Number(port) });
        const timer = setTimeout(() => sock.destroy(), ms);
        sock.on("data", (d) => chunks.push(d));
        sock.on("error", (e) => (error = e.code || String(e)));
        sock.on("end", () => (closed = true));
        sock.on("close", () => {
            clearTimeout(timer);
            resolve({ data: Buffer.concat(chunks), closed, error });
        });
        sock.on("connect", async () => {
            for (const p of [].concat(parts)) {
                if (typeof p === "number") await sleep(p);
                else if (!sock.destroyed) sock.write(p);
            }
            if (end && !sock.destroyed) sock.end();
        });
    });
}

// The answers in the bytes a connection read: [{status, headers (lowercase names), body (de-chunked)}], in order.
export function parseAnswers(buf) {
    const out = [];
    let at = 0;
    while (at < buf.length) {
        const headEnd = buf.indexOf("\r\n\r\n", at);
        if (headEnd < 0) break;
        const lines = buf.subarray(at, headEnd).toString("latin1").split("\r\n");
        const status = Number(lines[0].split(" ")[1]);
        const headers = {};
        for (const l of lines.slice(1)) {
            const c = l.indexOf(":");
            headers[l.slice(0, c).toLowerCase()] = l.slice(c + 1).trim();
        }
        at = headEnd + 4;
        if (status === 100) continue;
        let body = Buffer.alloc(0);
        if (headers["transfer-encoding"] === "chunked") {
            const parts = [];
            for (;;) {
                const eol = buf.indexOf("\r\n", at);
                if (eol < 0) { at = buf.length; break; }
                const size = parseInt(buf.subarray(at, eol).toString(), 16);
                if (!(size >= 0) || eol + 2 + size > buf.length) { at = buf.length; break; }
                parts.push(buf.subarray(eol + 2, eol + 2 + size));
                at = eol + 2 + size + 2;
                if (size === 0) break;
            }
            body = Buffer.concat(parts);
        } else if (headers["content-length"] !== undefined) {
            const n = Number(headers["content-length"]);
            body = buf.subarray(at, at + n);
            at += n;
        } else {
            body = buf.subarray(at);
            at = buf.length;
        }
        out.push({ status, headers, body: body.toString("utf8") });
    }
    return out;
}

// One request over its own connection: method, path, body (a string, Buffer or object sent as JSON), headers.
// Resolves the first answer ({status, headers, body, json}) or {status: 0, error} when none came.
export async function request(url, method, path, body, headers = {}, ms = 15000) {
    const payload = body === undefined ? "" : Buffer.isBuffer(body) || typeof body === "string" ? body : JSON.stringify(body);
    const bytes = Buffer.isBuffer(payload) ? payload : Buffer.from(payload);
    let head = `${method} ${path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n`;
    for (const [k, v] of Object.entries(headers)) head += `${k}: ${v}\r\n`;
    if (method !== "GET" && method !== "HEAD" || bytes.length) head += `Content-Length: ${bytes.length}\r\n`;
    const r = await raw(url, [Buffer.concat([Buffer.from(head + "\r\n"), bytes])], { ms });
    const answers = parseAnswers(r.data);
    if (!answers.length) return { status: 0, error: r.error || "no answer", headers: {}, body: "" };
    const a = answers[0];
    try { a.json = JSON.parse(a.body); } catch { a.json = undefined; }
    return a;
}

// The data of a server-sent event stream's body: the JSON of each `data:` line, "[DONE]" as is.
export function events(body) {
    return body.split("\n\n").filter((e) => e.startsWith("data: ")).map((e) => {
        const d = e.slice(6);
        return d === "[DONE]" ? d : JSON.parse(d);
    });
}

export function failed() { return failures; }
