#!/usr/bin/env node
// llama.cpp (through node-llama-cpp's prebuilt CPU binaries) as a test oracle for GGUF files.
//
//   node llama_oracle.mjs generate MODEL.gguf --prompt-ids 1,2,3 [--n 32]
//       greedy continuation (argmax of the raw logits at each step), prompt not included
//   node llama_oracle.mjs tokenize MODEL.gguf FILE...
//       llama.cpp's token ids of each FILE's UTF-8 text, a line per file (no BOS, special tokens not parsed)
//   node llama_oracle.mjs eval MODEL.gguf --ids-file F
//       {"n": N-1, "mean_nll": mean over t of -log softmax(logits_t)[id_{t+1}], "top1": [argmax_t], "nll": [each t's]}
//   node llama_oracle.mjs bench MODEL.gguf --prompt-ids 1,2,3 [--n 128]
//       decode speed of the generated tokens (prompt processing not timed), as JSON
//   node llama_oracle.mjs speed MODEL.gguf [--pp 512] [--tg 128] [--reps 3]
//       llama-bench's two figures, as JSON: pp (tokens/s of a --pp-token prompt in one batch) and tg (tokens/s
//       of --tg tokens decoded one at a time from an empty context), each the best of --reps
//   node llama_oracle.mjs batch MODEL.gguf [--sequences 8] [--tokens 32] [--reps 3]
//       --sequences sequences of one context decoded together, as run_bench's decode_batch cases decode ours:
//       sequence i's prompt is 48 + 2i tokens, then --tokens greedy steps, each step's n evaluations queued at
//       once so that node-llama-cpp puts them in one llama_decode. As JSON: the decode steps' aggregate tokens/s
//       (the median of --reps after a warm-up; prompts not timed), and how many llama_decode calls the timed
//       steps took and the fewest and most tokens in one, which show whether they were batched
//
// Common options: --threads N (default 2), --kv f32|f16 (KV cache type, default f32: llama.cpp's
// own default is f16, which rounds K, V and the attention inputs to f16), --lora ADAPTER.gguf (a LoRA
// adapter applied at scale 1: llama.cpp multiplies by its alpha / rank).
// CPU only, no GPU probing, no build or download, flash attention off, no chat template.
// Every sequence must fit in the model's context length (GPT-2 has learned positions).
// Errors: one line on stderr, exit code 1.
import fs from "node:fs";
import {getLlama, LlamaLogLevel} from "node-llama-cpp";

// llama.cpp's error logs, kept to explain a failure in the one line that fail() prints
const llamaErrors = [];

function fail(msg) {
    const why = llamaErrors.find((m) => m.includes("error loading model")) ?? llamaErrors[0];
    if (why != null && !msg.includes(why)) msg += ` (${why.replace(/^.*error loading model: /, "")})`;
    process.stderr.write(`llama_oracle: ${msg.replace(/[\x00-\x1f\x7f]/g, "?")}\n`);
    process.exit(1);
}

const USAGE = "usage: llama_oracle.mjs generate|tokenize|eval|bench|speed|batch MODEL.gguf [FILE...] [options]";

// ---------------------------------------------------------------- arguments

function parseArgs(argv) {
    const [cmd, model, ...rest] = argv;
    if (!["generate", "tokenize", "eval", "bench", "speed", "batch"].includes(cmd) || model == null ||
        model.startsWith("--"))
        fail(USAGE);
    const opt = {cmd, model, threads: 2, n: cmd === "bench" ? 128 : 32, kv: "f32", promptIds: null, idsFile: null,
                 files: [], lora: null, pp: 512, tg: 128, reps: 3, sequences: 8, tokens: 32};
    for (let i = 0; i < rest.length; i++) {
        const a = rest[i];
        const value = () => {
            if (i + 1 >= rest.length) fail(`${a} needs a value`);
            return rest[++i];
        };
        if (a === "--threads") opt.threads = positiveInt(value(), a);
        else if (a === "--n") opt.n = positiveInt(value(), a);
        else if (a === "--kv") opt.kv = value();
        else if (a === "--prompt-ids") opt.promptIds = parseIds(value(), a);
        else if (a === "--ids-file") opt.idsFile = value();
        else if (a === "--lora") opt.lora = value();
        else if (a === "--pp") opt.pp = positiveInt(value(), a);
        else if (a === "--tg") opt.tg = positiveInt(value(), a);
        else if (a === "--reps") opt.reps = positiveInt(value(), a);
        else if (a === "--sequences") opt.sequences = positiveInt(value(), a);
        else if (a === "--tokens") opt.tokens = positiveInt(value(), a);
        else if (!a.startsWith("--") && cmd === "tokenize") opt.files.push(a);
        else fail(`unexpected argument ${a}`);
    }
    if (!["f32", "f16"].includes(opt.kv)) fail("--kv must be f32 or f16");
    if ((cmd === "generate" || cmd === "bench") && opt.promptIds == null) fail(`${cmd} needs --prompt-ids`);
    if (cmd === "tokenize" && opt.files.length === 0) fail("tokenize needs a FILE");
    if (cmd === "eval" && opt.idsFile == null) fail("eval needs --ids-file");
    return opt;
}

function positiveInt(s, what) {
    if (!/^[0-9]+$/.test(s) || Number(s) < 1) fail(`${what}: expected a positive integer, got '${s}'`);
    return Number(s);
}

function parseIds(s, what) {
    const parts = s.split(/[\s,]+/).filter((p) => p !== "");
    if (parts.length === 0 || !parts.every((p) => /^[0-9]+$/.test(p))) fail(`${what}: expected token ids like 1,2,3`);
    return parts.map(Number);
}

function readFile(path, encoding) {
    try {
        return fs.readFileSync(path, encoding);
    } catch (e) {
        fail(`cannot read ${path}: ${e.code ?? e.message}`);
    }
}

// ---------------------------------------------------------------- llama.cpp

async function loadModel(opt, vocabOnly) {
    if (!fs.existsSync(opt.model)) fail(`no such file: ${opt.model}`);
    // Prebuilt CPU binaries of @node-llama-cpp/linux-x64 only: never build, download or probe GPUs.
    const llama = await getLlama({
        gpu: false, build: "never", usePrebuiltBinaries: true, skipDownload: true, progressLogs: false,
        maxThreads: opt.threads, logLevel: LlamaLogLevel.error,
        logger: (level, message) => llamaErrors.push(message.trim())
    });
    try {
        return await llama.loadModel({modelPath: opt.model, gpuLayers: 0, vocabOnly});
    } catch (e) {
        await new Promise((resolve) => setTimeout(resolve, 200));  // llama.cpp's logs arrive asynchronously
        fail(`cannot load ${opt.model}: ${String(e.message ?? e).split("\n")[0]}`);
    }
}

// A context of `sequences` sequences of `contextSize` positions each, on exactly --threads threads; `more` adds
// createContext options.
async function makeContext(model, opt, contextSize, batchSize, sequences, more = {}) {
    const kvType = opt.kv.toUpperCase();
    if (opt.lora != null && !fs.existsSync(opt.lora)) fail(`no such file: ${opt.lora}`);
    return await model.createContext({
        ...(opt.lora == null ? {} : {lora: {adapters: [{filePath: opt.lora, scale: 1}]}}),
        contextSize, batchSize, sequences,
        threads: {ideal: opt.threads, min: opt.threads},
        flashAttention: false,
        experimentalKvCacheKeyType: kvType, experimentalKvCacheValueType: kvType,
        ...more
    });
}

// One context with one sequence, big enough for `nTokens` positions (all evaluated in one batch).
async function makeSequence(model, opt, nTokens) {
    const nCtx = model.trainContextSize;
    if (nTokens > nCtx) fail(`${nTokens} tokens do not fit the model's context length ${nCtx}`);
    return (await makeContext(model, opt, nCtx, nCtx, 1)).getSequence();
}

function checkIds(model, ids) {
    const nVocab = model.fileInfo.metadata?.tokenizer?.ggml?.tokens?.length;
    const bad = ids.find((id) => nVocab != null && id >= nVocab);
    if (bad != null) fail(`token id ${bad} is out of the vocabulary (${nVocab} tokens)`);
}

// Evaluates `tokens` and returns the greedy next token. No sampling options are given, so
// node-llama-cpp's sampler chain is only llama.cpp's greedy sampler (temperature 0): no
// repetition penalty, top-k/p or token bias; ties go to the lowest id.
async function nextToken(seq, tokens) {
    const input = tokens.map((t, i) => (i === tokens.length - 1 ? [t, {generateNext: {token: true}}] : t));
    const out = await seq.controlledEvaluate(input);
    return out[tokens.length - 1].next.token;
}

// ---------------------------------------------------------------- commands

async function generate(opt) {
    const model = await loadModel(opt, false);
    checkIds(model, opt.promptIds);
    const seq = await makeSequence(model, opt, opt.promptIds.length + opt.n - 1);
    const out = [await nextToken(seq, opt.promptIds)];
    while (out.length < opt.n) out.push(await nextToken(seq, [out[out.length - 1]]));
    console.log(out.join(" "));
}

async function tokenize(opt) {
    // The text reaches llama.cpp as a JS string, which cannot carry invalid UTF-8: refuse it.
    // A byte order mark is kept as text (ignoreBOM). The model is loaded once for every file.
    const texts = opt.files.map((file) => {
        try {
            return new TextDecoder("utf-8", {fatal: true, ignoreBOM: true}).decode(readFile(file));
        } catch {
            fail(`${file} is not valid UTF-8`);
        }
    });
    const model = await loadModel(opt, true);
    // specialTokens=false: "<|endoftext|>" in the text is plain text; llama.cpp adds no BOS here
    for (const text of texts) console.log(Array.from(model.tokenize(text, false)).join(" "));
}

async function evaluate(opt) {
    const ids = parseIds(readFile(opt.idsFile, "utf8"), opt.idsFile);
    if (ids.length < 2) fail("eval needs at least 2 token ids");
    const model = await loadModel(opt, false);
    checkIds(model, ids);
    const seq = await makeSequence(model, opt, ids.length);
    // For each position t < N-1 ask for: the greedy token (= argmax, whose logit is the max logit),
    // the logits of that token and of ids[t+1], and sum_v exp(logit_v - max logit).
    const input = ids.map((id, t) => (t === ids.length - 1 ? id : [id, {
        generateNext: {
            token: true,
            logits: {filter: {tokens: [ids[t + 1]], includeSelected: true}},
            totalLogitWeight: true
        }
    }]));
    const out = await seq.controlledEvaluate(input);
    let sum = 0;
    const top1 = [], nll = [];
    for (let t = 0; t < ids.length - 1; t++) {
        const next = out[t].next;
        const maxLogit = next.logits.get(next.token);
        // log softmax(logits)[target] = logit_target - max - log(sum exp(logit - max))
        nll.push(-(next.logits.get(ids[t + 1]) - maxLogit - Math.log(next.totalLogitWeight)));
        sum += nll[t];
        top1.push(next.token);
    }
    console.log(JSON.stringify({n: ids.length - 1, mean_nll: sum / (ids.length - 1), top1, nll}));
}

async function bench(opt) {
    const model = await loadModel(opt, false);
    checkIds(model, opt.promptIds);
    const seq = await makeSequence(model, opt, opt.promptIds.length + opt.n - 1);
    const t0 = process.hrtime.bigint();
    let tok = await nextToken(seq, opt.promptIds);  // prompt processing + first generated token
    const t1 = process.hrtime.bigint();
    for (let i = 1; i < opt.n; i++) tok = await nextToken(seq, [tok]);  // n-1 one-token decodes
    const t2 = process.hrtime.bigint();
    const decodeS = Number(t2 - t1) / 1e9, promptS = Number(t1 - t0) / 1e9;
    console.log(JSON.stringify({
        threads: opt.threads, prompt_tokens: opt.promptIds.length, generated: opt.n,
        decode_steps: opt.n - 1, decode_s: decodeS,
        decode_tokens_per_s: (opt.n - 1) / decodeS,
        prompt_s: promptS
    }));
}

// llama-bench's pp and tg on one sequence, cleared before each timing; token ids i * 7919 mod the vocabulary,
// as run_bench's own prompts.
async function speed(opt) {
    const model = await loadModel(opt, false);
    const nVocab = model.fileInfo.metadata?.tokenizer?.ggml?.tokens?.length ?? 50257;
    const ids = Array.from({length: Math.max(opt.pp, opt.tg)}, (_, i) => (i * 7919) % nVocab);
    const seq = await makeSequence(model, opt, Math.max(opt.pp, opt.tg));
    let pp = 0, tg = 0;
    for (let rep = 0; rep < opt.reps; rep++) {
        await seq.clearHistory();
        let t0 = process.hrtime.bigint();
        await nextToken(seq, ids.slice(0, opt.pp));
        pp = Math.max(pp, opt.pp / (Number(process.hrtime.bigint() - t0) / 1e9));
        await seq.clearHistory();
        t0 = process.hrtime.bigint();
        let tok = ids[0];
        for (let i = 0; i < opt.tg; i++) tok = await nextToken(seq, [tok]);
        tg = Math.max(tg, opt.tg / (Number(process.hrtime.bigint() - t0) / 1e9));
    }
    console.log(JSON.stringify({threads: opt.threads, pp: opt.pp, tg: opt.tg, reps: opt.reps,
                                pp_tokens_per_s: pp, tg_tokens_per_s: tg}));
}

// Sequences decoded together: one context of --sequences sequences, each step a controlledEvaluate of one token
// per sequence, all started before any is awaited. node-llama-cpp queues them and sends the queue to llama.cpp at
// its next dispatch (on the next event loop cycle, or at once when every sequence has queued), one llama_decode
// for all of them. The batching strategy below gives each queued item all its tokens, as node-llama-cpp's default
// ("maximumParallelism") does whenever they fit the batch, as one token each always does; it also counts, since
// node-llama-cpp asks it once for each llama_decode, the calls and their tokens. Each timed run starts from the
// prompts (the decoded tokens erased), as ours sets its caches back to the prompts' lengths.
async function batch(opt) {
    const model = await loadModel(opt, false);
    const n = opt.sequences, nVocab = model.fileInfo.metadata?.tokenizer?.ggml?.tokens?.length ?? 50257;
    const promptLen = (i) => 48 + 2 * i;
    const positions = promptLen(n - 1) + opt.tokens;
    if (positions > model.trainContextSize)
        fail(`${positions} positions do not fit the model's context length ${model.trainContextSize}`);
    let calls = 0, fewest = Infinity, most = 0;
    const counting = ({items}) => {
        const tokens = items.reduce((sum, item) => sum + item.tokens.length, 0);
        calls++, fewest = Math.min(fewest, tokens), most = Math.max(most, tokens);
        return items.map((item) => ({item, processAmount: item.tokens.length}));
    };
    const batching = {itemPrioritizationStrategy: counting};
    const context = await makeContext(model, opt, positions, 512, n, {batching});
    const seqs = Array.from({length: n}, () => context.getSequence());
    await Promise.all(seqs.map((seq, i) =>
        seq.controlledEvaluate(Array.from({length: promptLen(i)}, (_, t) => (t * 7919 + i) % nVocab))));
    const runs = [];
    let timedCalls = 0, timedFewest = Infinity, timedMost = 0;
    for (let rep = 0; rep <= opt.reps; rep++) {  // rep 0 is a warm-up
        await Promise.all(seqs.map((seq, i) =>
            seq.eraseContextTokenRanges([{start: promptLen(i), end: seq.nextTokenIndex}])));
        let tokens = seqs.map((_, i) => (i * 7919 + 13) % nVocab);
        calls = 0, fewest = Infinity, most = 0;
        const t0 = process.hrtime.bigint();
        for (let step = 0; step < opt.tokens; step++) {
            const outs = await Promise.all(seqs.map((seq, i) =>
                seq.controlledEvaluate([[tokens[i], {generateNext: {token: true}}]])));
            tokens = outs.map((out) => out[0].next.token);
        }
        if (rep === 0) continue;
        runs.push(n * opt.tokens / (Number(process.hrtime.bigint() - t0) / 1e9));
        timedCalls += calls, timedFewest = Math.min(timedFewest, fewest), timedMost = Math.max(timedMost, most);
    }
    runs.sort((a, b) => a - b);
    console.log(JSON.stringify({threads: opt.threads, sequences: n, tokens: opt.tokens, reps: opt.reps,
                                decode_tokens_per_s: runs[Math.floor(runs.length / 2)], runs,
                                decode_steps: opt.tokens * opt.reps, llama_decode_calls: timedCalls,
                                fewest_tokens_per_call: timedFewest, most_tokens_per_call: timedMost}));
}

const opt = parseArgs(process.argv.slice(2));
const commands = {generate, tokenize, eval: evaluate, bench, speed, batch};
commands[opt.cmd](opt).then(() => process.exit(0), (e) => fail(String(e?.message ?? e).split("\n")[0]));
