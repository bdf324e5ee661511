// serve_cmd.cpp: the `serve` command: an OpenAI-compatible HTTP server and a chat page over any model generate
// takes (serve/server.h). Safe by default: it listens on loopback; another --host needs --api-key, or
// --allow-unauthenticated to say that anyone who reaches the port may use it.
#include <algorithm>
#include <cstdio>
#include <string>

#include "cli/cli.h"
#include "cli/commands.h"
#include "inference/infer.h"
#include "lora/lora.h"
#include "platform/util.h"
#include "serve/http.h"
#include "serve/scheduler.h"
#include "serve/server.h"

namespace {

CliArgs serve_args(int argc, char** argv) {
    static const std::vector<CliFlag> flags = {
        {"model", "", "", "checkpoint to serve"},
        {"tokenizer", "", "", "directory with encoder.json + vocab.bpe (default: the model's own, else $GPT2_DATA_DIR/gpt2 or data/gpt2)"},
        {"host", "", "127.0.0.1", "address to listen on: loopback by default; another needs --api-key (or --allow-unauthenticated)"},
        {"port", "", "8080", "port to listen on (0: any free one, printed)"},
        {"api-key", "", "", "require \"Authorization: Bearer KEY\" on /v1 (as OpenAI's API)"},
        {"allow-unauthenticated", "", "", "serve a --host other than loopback without --api-key: anyone who reaches the port may use it", true},
        {"parallel", "", "4", "streams decoded together, each with its own KV cache (continuous batching)"},
        {"max-queue", "", "64", "choices that may wait for a stream; past it a request gets 503"},
        {"max-body", "", "1048576", "bytes of a request body at most (413 past it)"},
        {"max-connections", "", "64", "connections open at once (503 past it)"},
        {"timeout", "", "20", "seconds a client may take to send its request, or leave its answer unread"},
        {"model-name", "", "", "the model's id in /v1/models and answers (default: --model's name)"},
        kCliHeadsFlag,
        kCliInferPrecisionFlag,
        {"lora-from", "", "", "apply this PEFT LoRA adapter directory to --model"},
        kCliForceBaseFlag,
        kCliDraftFlag,
        kCliDraftModelFlag,
        kCliDraftMaxFlag,
        kCliDraftMinFlag,
    };
    return cli_parse(argc, argv, "serve", "gpt2 serve --model PATH [--port N] [--api-key KEY] [flags]",
                     "Serves the model over OpenAI's API (/v1/completions, /v1/chat/completions, /v1/models) with "
                     "continuous batching, and a chat page at /. Ctrl-C stops it.",
                     flags, false);
}

// The key's bytes: printable ASCII without spaces. A header's value loses the whitespace around it, and a client
// cannot send a control byte in one, so a key of other bytes would start a server no request can use.
bool key_ok(const std::string& key) {
    for (unsigned char c : key)
        if (c <= 0x20 || c >= 0x7f) return false;
    return true;
}

ServeOptions serve_options(const CliArgs& args) {
    ServeOptions o;
    o.host = args.str("host");
    if (o.host != "localhost" && !http_host_is_ipv4(o.host))
        fatal_hint("0.0.0.0 listens on every IPv4 address of the machine; IPv6 addresses are not served",
                   "bad value for --host (serve): expected localhost or an IPv4 address (a.b.c.d), got '%s'",
                   o.host.c_str());
    o.port = (int)args.integer_in("port", 0, 65535);
    o.api_key = args.has("api-key") ? args.str("api-key") : "";
    if (args.has("api-key") && o.api_key.empty()) fatal("empty value for --api-key (serve): expected a key");
    if (!key_ok(o.api_key))
        fatal(
            "bad value for --api-key (serve): expected printable ASCII without spaces (a client sends it in a "
            "header), got a key holding a space, a control byte or a byte past ASCII");
    if (!http_host_is_loopback(o.host) && o.api_key.empty() && !args.on("allow-unauthenticated"))
        fatal_hint("give --api-key KEY, or --allow-unauthenticated if anyone who reaches the port may use the model",
                   "bad value for --host (serve): %s is reachable from other machines, and no --api-key was given",
                   o.host.c_str());
    o.parallel = (int)args.integer_in("parallel", 1, 64);
    o.max_queue = (int)args.integer_in("max-queue", 1, 1 << 16);
    o.max_body = (size_t)args.integer_in("max-body", 1024, (long long)1 << 30);
    o.max_connections = (int)args.integer_in("max-connections", 1, 1 << 16);
    o.idle_ms = o.request_ms = o.write_ms = (int)(args.number_in("timeout", 0.1, 86400) * 1000);
    const std::string model = path_strip_slashes(args.str("model"));
    o.model_name = args.has("model-name") ? args.str("model-name") : path_base(model);
    return o;
}

}  // namespace

int cmd_serve(int argc, char** argv) {
    const CliArgs args = serve_args(argc, argv);
    ServeOptions o = serve_options(args);
    GenerateOptions drafts;
    const bool drafting = cli_draft_options(args, &drafts);
    o.draft_min = drafts.draft_min, o.draft_max = drafts.draft_max;
    GPT2 model, draft;
    LoraModel lora;
    Tokenizer tok;
    cli_load_for_inference(args, &model, &lora);
    if (drafting) cli_load_draft(args, model, o.draft_max, &draft);
    const int ctx = model.cfg.max_seq_len;
    // int8 with streams together: the weights also laid out once for their products
    const double tiles = o.parallel > 1 ? infer_q8_tiles_bytes(model) : 0;
    double stream = scheduler_stream_bytes(model.cfg, ctx, ctx), beside = 0;
    if (drafting)
        stream += scheduler_draft_stream_bytes(draft.cfg, ctx, ctx),
            beside = scheduler_draft_bytes(model.cfg, draft.cfg, o.parallel);
    memory_check(o.parallel * stream + beside + tiles,
                 "the KV caches of --parallel " + std::to_string(o.parallel) + " streams" +
                     (drafting ? " and their drafts'" : "") +
                     (tiles > 0 ? " and the int8 weights laid out for them" : ""),
                 drafting ? "a smaller --parallel, or leave out the draft" : "a smaller --parallel");
    if (tiles > 0) infer_keep_q8_tiles(&model);
    else infer_keep_q8_tiles_if_room(&model, stream + beside);  // beside one stream (and the draft's), faster
    if (drafting) infer_keep_q8_tiles_if_room(&draft, o.parallel * stream + beside);
    cli_load_tokenizer(args, model, &tok);
    return 128 + serve_run(model, &tok, o, drafting ? &draft : nullptr);  // as every command a signal stops
}
