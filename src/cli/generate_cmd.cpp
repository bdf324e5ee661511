// generate_cmd.cpp: the `generate` command: prompt in, streamed text (or ids) out, timings on stderr.
// It prints the prompt, then its continuation, as nanoGPT's sample.py does (--no-prompt: the continuation alone; with
// --ids, --ids-with-prompt puts the prompt's ids first, as HuggingFace's generate returns them). It stops at
// <|endoftext|> or after --max-tokens (-n, llama.cpp's spelling) and says which on stderr; --ignore-eos goes on past
// <|endoftext|> (printed as such) to exactly --max-tokens, as llm.c samples. --max-tokens may exceed the model's
// context: the window then slides as nanoGPT's does (each new token sees the last maxT tokens), at the cost of one
// maxT-token prefill per token. --interactive keeps the model loaded and answers one prompt per line of standard
// input (a line longer than the context could hold, in bytes, is skipped with an error as it is read).

#include <cerrno>
#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "platform/platform.h"
#include "platform/signals.h"
#include "platform/util.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "formats/checkpoint.h"
#include "inference/generate.h"
#include "inference/speculative.h"
#include "lora/lora.h"
#include "precision/precision.h"
#include "text/tokenizer.h"

namespace {

std::vector<int> parse_ids(const std::string& text, const char* flag, int vocab_size) {
    std::vector<int> ids;
    const char* p = text.c_str();
    while (*p) {
        while (*p == ' ' || *p == ',' || *p == '\n' || *p == '\t') p++;
        if (!*p) break;
        char* end = nullptr;
        long v = strtol(p, &end, 10);
        if (end == p || (*end && !strchr(" ,\n\t", *end)))
            fatal("malformed value for --%s (generate): expected space-separated token ids, got '%s'", flag, p);
        if (v < 0 || v >= vocab_size)
            fatal("token id %.*s out of range (--%s): expected 0..%d", (int)(end - p), p, flag, vocab_size - 1);
        ids.push_back((int)v);
        p = end;
    }
    return ids;
}

// Encodes a text prompt; "" when it fits the model's context, else why not (the caller decides).
std::string encode_prompt(Tokenizer* tok, const std::string& text, const GPT2Config& cfg, std::vector<int>* prompt) {
    *prompt = tokenizer_encode(tok, text);
    if ((int)prompt->size() > cfg.max_seq_len)
        return "prompt too long: " + std::to_string(prompt->size()) +
               " tokens, expected at most the model's context of " + std::to_string(cfg.max_seq_len);
    return "";
}

// The prompt's ids from --prompt-ids, --prompt or --prompt-file (encoded with tok), or <|endoftext|>.
std::vector<int> read_prompt(const CliArgs& args, Tokenizer* tok, const GPT2Config& cfg) {
    std::vector<int> prompt;
    if (args.has("prompt-ids")) {
        prompt = parse_ids(args.str("prompt-ids"), "prompt-ids", cfg.vocab_size);
        if (prompt.empty()) fatal("empty prompt (--prompt-ids): expected at least one token id");
        if ((int)prompt.size() > cfg.max_seq_len)
            fatal("prompt too long (--prompt-ids): %zu tokens, expected at most the model's context of %d",
                  prompt.size(), cfg.max_seq_len);
    } else if (args.has("prompt") || args.has("prompt-file")) {
        const char* flag = args.has("prompt") ? "--prompt" : "--prompt-file";
        const size_t max_bytes = cli_text_max_bytes(*tok, cfg.max_seq_len);  // no more than could fit the context
        const std::string hint = "a longer prompt has more tokens than the model's context of " +
                                 std::to_string(cfg.max_seq_len) + " (no token is longer than 1/" +
                                 std::to_string(cfg.max_seq_len) + " of that)";
        std::string text =
            args.has("prompt") ? args.str("prompt") : text_read(args.str("prompt-file"), max_bytes, hint.c_str());
        if (text.empty())
            fatal("empty prompt (%s): expected some text, or no prompt to start from <|endoftext|>", flag);
        if (text.size() > max_bytes)
            fatal("prompt too long (%s): more than %zu bytes, more tokens than the model's context of %d", flag,
                  max_bytes, cfg.max_seq_len);
        std::string err = encode_prompt(tok, text, cfg, &prompt);
        if (!err.empty()) fatal("%s (%s)", err.c_str(), flag);
    } else {
        if (kTokenizerEot >= cfg.vocab_size)
            fatal_hint("give --prompt-ids", "no prompt for a model without <|endoftext|>: its vocabulary has %d tokens, "
                       "expected more than %d to start from it", cfg.vocab_size, kTokenizerEot);
        prompt = {kTokenizerEot};
    }
    return prompt;
}

// What to generate and how to show it, from the flags, checked before the model is loaded.
struct GenerateRun {
    GenerateOptions opts;
    long long samples = 1;
    bool interactive = false;     // prompts from standard input, one per line
    bool ids_out = false;         // print token ids instead of text
    bool echo = true;             // print the prompt before the continuation (its ids with --ids)
    bool need_tokenizer = false;  // text in or out
    const GPT2* draft = nullptr;  // --draft int8 or --draft-model: speculative decoding (inference/speculative.h)
};

// Generates r.samples continuations of prompt, streaming text (or ids) to stdout and a summary of each
// (why it stopped, speed) to stderr.
void run_samples(const GPT2& model, const Tokenizer& tok, const std::vector<int>& prompt, const GenerateRun& r,
                 Rng* rng) {
    const GenerateOptions& opts = r.opts;
    const bool ids_out = r.ids_out;
    stop_catch(true);  // a stop signal ends the sample at hand (cmd_generate says so); at a prompt it ends the process
    for (long long sample = 0; sample < r.samples && !stop_requested(); sample++) {
        TokenDecoder decoder(tok);
        bool first = true;
        if (r.echo) {  // the prompt, as the continuation will extend it (a lone <|endoftext|> start shows nothing)
            for (int id : prompt) {
                if (ids_out) printf(first ? "%d" : " %d", id);
                else if (prompt.size() > 1 || id != kTokenizerEot) print_text(decoder.push(id));
                first = false;
            }
        }
        GenerateStats stats;
        const auto on_token = [&](int id) {
                if (ids_out) {
                    printf(first ? "%d" : " %d", id);
                } else if (id != kTokenizerEot || opts.stop_token < 0) {  // shown only when generation goes past it
                    print_text(decoder.push(id));
                }
                first = false;
                if (fflush(stdout) != 0) fatal("cannot write standard output: %s", strerror(errno));
            };
        if (r.draft) generate_speculative(model, *r.draft, prompt, opts, rng, on_token, &stats);
        else generate(model, prompt, opts, rng, on_token, &stats);
        if (!ids_out) print_text(decoder.flush());
        printf("\n");
        if (r.samples > 1 && !ids_out) printf("---\n");
        if (fflush(stdout) != 0) fatal("cannot write standard output: %s", strerror(errno));
        if (stats.stop == GenerateStop::kCancelled) break;
        if (stats.stop == GenerateStop::kNonFinite) fatal("%s", generate_nonfinite_message(stats).c_str());
        if (stats.stop == GenerateStop::kStopToken) fprintf(stderr, "stopped: <|endoftext|>\n");
        else fprintf(stderr, "stopped: --max-tokens %d reached\n", opts.max_tokens);
        if (stats.slides)
            fprintf(stderr, "context of %d full: the window slid for the last %d tokens\n", model.cfg.max_seq_len,
                    stats.slides);
        if (r.draft && stats.drafted == 0)
            fprintf(stderr, "draft: no token drafted (plain decoding cost less, or the context or --max-tokens left "
                            "no room)\n");
        else if (r.draft)
            fprintf(stderr, "draft: %d of %d drafted tokens kept (%.1f%%) in %d check%s of %.1f tokens on average\n",
                    stats.kept, stats.drafted, 100.0 * stats.kept / stats.drafted, stats.rounds,
                    stats.rounds == 1 ? "" : "s", (double)stats.drafted / stats.rounds);
        // The prompt's one batched pass as a time: a short prompt's is latency, not a rate to set beside
        // decoding's (the first one also starts the thread team, and runs on every thread before the tuner
        // has measured other processes' load: platform/threads.h). Its logits give the first new token, so
        // the rate is over the other ones, each a forward of its own.
        fprintf(stderr, "prompt: %d tokens in %.0f ms; ", stats.prompt_tokens, stats.prompt_s * 1e3);
        const int decoded = stats.new_tokens - 1;
        if (decoded < 1) fprintf(stderr, "%d new token%s, no decoding pass\n", stats.new_tokens, decoded ? "s" : "");
        else
            fprintf(stderr, "%d new tokens, the last %d decoded in %.3f s (%.1f tok/s)\n", stats.new_tokens, decoded,
                    stats.decode_s, decoded / std::max(stats.decode_s, 1e-9));
    }
    stop_catch(false);
    if (const int sig = stop_requested()) {
        fprintf(stderr, "interrupted by %s\n", stop_signal_name(sig));
        exit(128 + sig);
    }
}

// The flags of `gpt2 generate`, parsed; --help and a malformed flag end the process here.
CliArgs generate_args(int argc, char** argv) {
    static const std::vector<CliFlag> flags = {
        {"model", "", "", "checkpoint to sample from"},
        {"tokenizer", "", "", "directory with encoder.json + vocab.bpe (default: the model's own, else $GPT2_DATA_DIR/gpt2 or data/gpt2)"},
        {"prompt", "", "", "prompt text (default: start from <|endoftext|>)"},
        {"prompt-file", "", "", "read the prompt text from this file"},
        {"prompt-ids", "", "", "prompt as space-separated token ids instead of text"},
        {"max-tokens", "n", "64", "new tokens to generate at most (exactly, with --ignore-eos)"},
        {"temperature", "", "1.0", "softmax temperature; 0 is greedy"},
        {"top-k", "", "50", "keep the k most likely tokens; 0 disables"},
        {"top-p", "", "1.0", "keep the smallest set whose probability reaches p; 1 disables"},
        {"seed", "", "1337", "seed of the sampler"},
        {"num-samples", "", "1", "independent samples from the same prompt"},
        {"ids", "", "", "print generated token ids on one line instead of text", true},
        {"no-prompt", "", "", "print only the continuation (default: the prompt's text first, as nanoGPT does)", true},
        {"ids-with-prompt", "", "", "with --ids: the prompt's ids first, then the new ones (as HF's generate)", true},
        {"ignore-eos", "", "", "go on past <|endoftext|> (shown as such) to --max-tokens, as llm.c samples", true},
        {"interactive", "", "", "keep the model loaded and read one prompt per line from standard input", true},
        kCliHeadsFlag,
        kCliInferPrecisionFlag,
        {"lora-from", "", "", "apply this PEFT LoRA adapter directory (adapter_config.json + "
                              "adapter_model.safetensors) to --model"},
        kCliForceBaseFlag,
        kCliDraftFlag,
        kCliDraftModelFlag,
        kCliDraftMaxFlag,
        kCliDraftMinFlag,
    };
    return cli_parse(
        argc, argv, "generate", "gpt2 generate --model PATH [--prompt TEXT | --interactive] [flags]",
        "Samples text with a KV cache and prints the prompt, then its continuation; with several samples or "
        "prompts, a line `---` ends each sample and `===` each --interactive answer off a terminal. Generation "
        "stops at <|endoftext|> (unless --ignore-eos) or after --max-tokens, which may exceed the model's context: the window then slides as nanoGPT's does (each token sees the last maxT tokens), "
        "and every token past the context costs a prefill of maxT tokens instead of one position.",
        flags, false);
}

// The sampling settings and the prompt's source, in the order the flags' messages are checked.
GenerateRun generate_run(const CliArgs& args) {
    GenerateRun r;
    GenerateOptions& opts = r.opts;
    long long max_tokens = args.integer_in("max-tokens", 1, 1 << 20), top_k = args.integer_in("top-k", 0, 1 << 30);
    r.samples = args.integer_in("num-samples", 1, 10000);
    double temperature = args.number_in("temperature", 0, 1e6), top_p = args.number_in("top-p", -HUGE_VAL, HUGE_VAL);
    if (!(top_p > 0 && top_p <= 1))
        fatal("bad value for --top-p (generate): expected 0 < p <= 1, got %s", args.str("top-p").c_str());
    opts.max_tokens = (int)max_tokens;
    opts.stop_token = args.on("ignore-eos") ? -1 : kTokenizerEot;
    opts.cancelled = [] { return stop_requested() != 0; };
    opts.sampler.temperature = (float)temperature;
    opts.sampler.top_k = (int)top_k;
    opts.sampler.top_p = (float)top_p;
    int prompt_sources = args.has("prompt") + args.has("prompt-file") + args.has("prompt-ids");
    if (prompt_sources > 1) fatal("conflicting flags (generate): give one of --prompt, --prompt-file, --prompt-ids");
    r.interactive = args.on("interactive");
    if (r.interactive && prompt_sources)
        fatal("conflicting flags (generate): --interactive reads its prompts from standard input, one per line");
    r.ids_out = args.on("ids");
    if (args.on("ids-with-prompt") && !r.ids_out) fatal("conflicting flags (generate): --ids-with-prompt needs --ids");
    if (args.on("ids-with-prompt") && args.on("no-prompt"))
        fatal("conflicting flags (generate): --ids-with-prompt prints the prompt, --no-prompt does not");
    r.echo = r.ids_out ? args.on("ids-with-prompt") : !args.on("no-prompt");
    r.need_tokenizer = !r.ids_out || args.has("prompt") || args.has("prompt-file") || r.interactive;
    return r;
}

// One prompt per line until end of input; a line that cannot run is reported and skipped, and the run then
// fails at the end, naming how many were.
int run_interactive(const GPT2& model, Tokenizer* tok, const GenerateRun& r, Rng* rng) {
    const bool terminal = os_isatty(stdin);
    const size_t max_bytes = cli_text_max_bytes(*tok, model.cfg.max_seq_len);
    int errors = 0;
    std::string line;
    bool too_long = false;
    for (long long number = 1;; number++) {
        if (terminal) fputs("> ", stderr);
        if (!cli_read_line(stdin, max_bytes, &line, &too_long)) break;
        if (too_long) {
            fprintf(stderr,
                    "error: prompt too long (--interactive, line %lld skipped): more than %zu bytes, more tokens than "
                    "the model's context of %d\n",
                    number, max_bytes, model.cfg.max_seq_len);
            errors++;
            continue;
        }
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.empty()) continue;
        std::vector<int> prompt;
        std::string err = encode_prompt(tok, line, model.cfg, &prompt);
        if (!err.empty()) {
            fprintf(stderr, "error: %s (--interactive, line %lld skipped)\n", err.c_str(), number);
            errors++;
            continue;
        }
        run_samples(model, *tok, prompt, r, rng);
        if (!terminal) printf("===\n");  // where one answer ends, for a program reading them
    }
    if (ferror(stdin)) fatal("cannot read standard input (--interactive): %s", strerror(errno));
    if (errors) fatal("%d prompt%s skipped (--interactive): see the lines above", errors, errors == 1 ? "" : "s");
    return 0;
}

}  // namespace

int cmd_generate(int argc, char** argv) {
    CliArgs args = generate_args(argc, argv);
    GenerateRun r = generate_run(args);
    const bool drafting = cli_draft_options(args, &r.opts);

    GPT2 model;
    LoraModel lora;
    Tokenizer tok;
    cli_load_for_inference(args, &model, &lora);
    // the cache for the longest prompt there can be (the context) and --max-tokens
    const int ctx = model.cfg.max_seq_len;
    double beside = generate_memory_bytes(model.cfg, ctx, r.opts.max_tokens);
    memory_check(beside, "the KV cache for --max-tokens " + std::to_string(r.opts.max_tokens), "generate fewer tokens");
    GPT2 draft;
    if (drafting) {
        cli_load_draft(args, model, r.opts.draft_max, &draft);
        beside += speculative_memory_bytes(model, draft, ctx, r.opts.max_tokens);
        memory_check(beside, "the KV caches of the model and the draft for --max-tokens", "generate fewer tokens");
        r.draft = &draft;
    }
    // int8 (the model, or its own copy drafting): the weights also laid out for faster decoding, where they fit
    infer_keep_q8_tiles_if_room(&model, beside);
    if (args.has("draft")) infer_keep_q8_tiles_if_room(&draft, beside);
    if (r.need_tokenizer) cli_load_tokenizer(args, model, &tok);
    Rng rng((uint64_t)args.integer_in("seed", 0, LLONG_MAX));
    if (!r.interactive) {
        run_samples(model, tok, read_prompt(args, &tok, model.cfg), r, &rng);
        return 0;
    }
    return run_interactive(model, &tok, r, &rng);
}
