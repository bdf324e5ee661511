// tiktoken_ids.mjs: the test oracle for our tokenizer: OpenAI's tiktoken (npm `tiktoken`, its Rust core
// built to WASM), encoding "gpt2" from the ranks embedded in the package (no download, no files of ours).
// Prints FILE's ids on one line, space-separated, exactly as `gpt2 tokenize --ids FILE` does.
//   node tests/node/tiktoken_ids.mjs FILE                      encode_ordinary(text): the text
//        <|endoftext|> is ordinary text, as in our `tokenize` (tiktoken's encode() would refuse it)
//   node tests/node/tiktoken_ids.mjs --split-on-blank-lines FILE
//        llm.c's tiny shakespeare layout, as llm.c writes it with tiktoken:
//        encode("<|endoftext|>" + text.replace("\n\n", "\n\n<|endoftext|>"), allowed_special="all");
//        refused for a FILE that holds the text <|endoftext|> (llm.c would make it the special token,
//        our `tokenize --split-on-blank-lines` keeps it text)
//   node tests/node/tiktoken_ids.mjs --jsonl-field NAME FILE
//        llm.c's dev/data/fineweb.py layout of JSON lines: for each non-blank line, <|endoftext|> followed by
//        encode_ordinary(JSON.parse(line)[NAME])
// FILE must be valid UTF-8 (a JS string cannot carry invalid bytes, so tiktoken never sees them; the
// invalid-UTF-8 cases are scripts/bpe_reference.py's). A byte order mark is kept as text, as ours does.
import { readFileSync } from "node:fs";

import { fail, gpt2Encoding } from "./common.mjs";

const args = process.argv.slice(2);
const llmc = args[0] === "--split-on-blank-lines";
if (llmc) args.shift();
let jsonlField = null;
if (args[0] === "--jsonl-field" && args.length > 1) jsonlField = args.splice(0, 2)[1];
if (args.length !== 1 || args[0].startsWith("-"))
    fail("usage: node tests/node/tiktoken_ids.mjs [--split-on-blank-lines | --jsonl-field NAME] FILE");
const file = args[0];

let bytes;
try {
    bytes = readFileSync(file);
} catch (e) {
    fail(`cannot read ${file}: ${e.message}`);
}
let text;
try {
    text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(bytes);
} catch {
    fail(`${file} is not valid UTF-8: tiktoken (JS strings) cannot encode invalid bytes`);
}

const enc = await gpt2Encoding();
let ids;
if (jsonlField !== null) {
    ids = [];
    const eot = enc.encode("<|endoftext|>", "all")[0];
    text.split("\n").forEach((line, i) => {
        if (line.trim() === "") return;
        let doc;
        try {
            doc = JSON.parse(line)[jsonlField];
        } catch (e) {
            fail(`${file} line ${i + 1}: ${e.message}`);
        }
        if (typeof doc !== "string") fail(`${file} line ${i + 1}: field ${jsonlField} is not a string`);
        ids.push(eot);
        for (const id of enc.encode_ordinary(doc)) ids.push(id);
    });
} else if (llmc) {
    if (text.includes("<|endoftext|>"))
        fail(`${file} holds the text <|endoftext|>: llm.c's layout would encode it as the special token`);
    ids = enc.encode("<|endoftext|>" + text.replaceAll("\n\n", "\n\n<|endoftext|>"), "all");
} else {
    ids = enc.encode_ordinary(text);
}
enc.free();
process.stdout.write(ids.join(" ") + "\n");
