// chat_cmd.cpp: the `chat` command: a conversation in the terminal with any model generate takes, in the chat
// template tokenize --instructions trains on (text/instructions.h): "System: S\n" once, then per turn
// "User: ...\n" and "Assistant:", the reply streamed as it is sampled and ended by <|endoftext|> (which a model
// trained so learned to say) or --max-tokens. The KV cache is kept across turns, so a turn prefills only its own
// new tokens; when the context would overflow, the oldest turns leave it (said in one line) and what is kept is
// prefilled again. /reset starts over, /quit (or the end of input) ends; Ctrl-C stops the reply being written,
// and at the prompt ends the program.
#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "cli/cli.h"
#include "cli/commands.h"
#include "inference/infer.h"
#include "inference/sampler.h"
#include "lora/lora.h"
#include "platform/platform.h"
#include "platform/signals.h"
#include "platform/threads.h"
#include "platform/util.h"
#include "text/tokenizer.h"

namespace {

struct Conversation {
    const GPT2* model = nullptr;
    Tokenizer* tok = nullptr;
    SamplerConfig sampler;
    int max_tokens = 0;  // per reply (0: the rest of the context)
    Rng rng;
    std::vector<int> head;                // <|endoftext|> and the system message
    std::vector<std::vector<int>> turns;  // each kept turn: the user's message, "Assistant:", the reply, "\n"
    InferState st;                        // the cache holds head, then the turns, in order, but for `unfed`
    std::vector<int> unfed;               // the last turn's "\n", fed with the next turn
    std::vector<float> logits;
};

std::vector<int> encode(Tokenizer* tok, const std::string& text) { return tokenizer_encode(tok, text); }

// A turn's tokens as the template has them: the user's line, then "Assistant:" to answer after.
std::vector<int> turn_tokens(Conversation* c, const std::string& line) {
    std::vector<int> t;
    for (const std::string& text : {"User: " + line + "\n", std::string("Assistant:")})
        for (int id : encode(c->tok, text)) t.push_back(id);
    return t;
}

// Prefills `tokens` after what the cache holds; the count prefilled, or -1 when they do not fit beside `reserve`
// reply tokens even with every earlier turn gone. When they fit only without the oldest turns, those leave (said
// in one line) and what is kept is prefilled again.
int prefill(Conversation* c, const std::vector<int>& turn, int reserve) {
    const int ctx = c->model->cfg.max_seq_len;
    if ((int)(c->head.size() + turn.size()) + reserve > ctx) return -1;
    std::vector<int> tokens = c->unfed;
    tokens.insert(tokens.end(), turn.begin(), turn.end());
    c->unfed.clear();
    if (c->st.len + (int)tokens.size() + reserve > ctx) {
        size_t kept = c->head.size();
        for (const auto& t : c->turns) kept += t.size();
        int dropped = 0;
        while (!c->turns.empty() && (int)(kept + tokens.size()) + reserve > ctx)
            kept -= c->turns.front().size(), c->turns.erase(c->turns.begin()), dropped++;
        fprintf(stderr, "(context of %d full: the oldest %d turn%s left the conversation)\n", ctx, dropped,
                dropped == 1 ? "" : "s");
        tokens = c->head;
        for (const auto& t : c->turns) tokens.insert(tokens.end(), t.begin(), t.end());
        tokens.insert(tokens.end(), turn.begin(), turn.end());
        c->st.len = 0;
    }
    infer_forward(&c->st, *c->model, tokens.data(), (int)tokens.size(), c->logits.data(), false);
    return (int)tokens.size();
}

// Samples and prints the reply; returns its tokens (<|endoftext|> not among them).
std::vector<int> reply(Conversation* c, int limit, double* seconds) {
    const GPT2Config& cfg = c->model->cfg;
    TokenDecoder decoder(*c->tok);
    std::vector<int> out;
    const double t0 = time_now_s();
    while ((int)out.size() < limit && !stop_requested()) {
        const int token = sampler_sample(c->logits.data(), cfg.vocab_size, c->sampler, &c->rng);
        if (token == kTokenizerEot) break;
        out.push_back(token);
        print_text(decoder.push(token));
        if (fflush(stdout) != 0) fatal("cannot write standard output: %s", strerror(errno));
        if ((int)out.size() == limit || c->st.len == cfg.max_seq_len) break;
        infer_forward(&c->st, *c->model, &token, 1, c->logits.data(), false);
    }
    print_text(decoder.flush());
    printf("\n");
    if (fflush(stdout) != 0) fatal("cannot write standard output: %s", strerror(errno));
    *seconds = time_now_s() - t0;
    return out;
}

// One turn: the user's line in, the reply out; said on stderr: what was prefilled, and the speed.
void turn(Conversation* c, const std::string& line) {
    const int ctx = c->model->cfg.max_seq_len;
    const int reserve = c->max_tokens ? std::min(c->max_tokens, ctx / 4) : ctx / 4;  // room kept for the reply
    std::vector<int> tokens = turn_tokens(c, line);
    const double t0 = time_now_s();
    const int prefilled = prefill(c, tokens, reserve);
    if (prefilled < 0) {
        fprintf(stderr, "error: message too long: %zu tokens, and %d kept for the reply, past the context of %d\n",
                tokens.size() + c->head.size(), reserve, ctx);
        return;
    }
    const double prefill_s = time_now_s() - t0;
    const int limit = std::min(c->max_tokens ? c->max_tokens : ctx, ctx - c->st.len + 1);
    stop_catch(true);  // Ctrl-C ends this reply, not the program
    double seconds = 0;
    const std::vector<int> answer = reply(c, limit, &seconds);
    const bool stopped = stop_requested();
    stop_catch(false);
    tokens.insert(tokens.end(), answer.begin(), answer.end());
    c->unfed = encode(c->tok, "\n");  // the reply's end, as the template has it: fed with the next turn
    tokens.insert(tokens.end(), c->unfed.begin(), c->unfed.end());
    c->turns.push_back(tokens);
    fprintf(stderr, "(%d tokens prefilled in %.0f ms; %zu tokens at %.1f tok/s%s)\n", prefilled, prefill_s * 1e3,
            answer.size(), answer.size() / std::max(seconds, 1e-9), stopped ? "; stopped" : "");
}

void reset(Conversation* c, const std::string& system) {
    c->turns.clear();
    c->head.clear();
    c->unfed.clear();
    if (kTokenizerEot < c->model->cfg.vocab_size) c->head.push_back(kTokenizerEot);  // as each training window starts
    if (!system.empty())
        for (int id : encode(c->tok, "System: " + system + "\n")) c->head.push_back(id);
    c->st.len = 0;
    if (c->head.empty()) c->head = encode(c->tok, "\n");  // a vocabulary without <|endoftext|>: some start
    infer_forward(&c->st, *c->model, c->head.data(), (int)c->head.size(), c->logits.data(), false);
}

CliArgs chat_args(int argc, char** argv) {
    static const std::vector<CliFlag> flags = {
        {"model", "", "", "checkpoint to talk to (one fine-tuned on chat data: tokenize --instructions)"},
        {"tokenizer", "", "", "directory with encoder.json + vocab.bpe (default: the model's own, else $GPT2_DATA_DIR/gpt2 or data/gpt2)"},
        {"system", "", "", "a system message, first in the conversation"},
        {"max-tokens", "n", "0", "tokens per reply at most; 0: the rest of the context"},
        {"temperature", "", "0.7", "softmax temperature; 0 is greedy"},
        {"top-k", "", "50", "keep the k most likely tokens; 0 disables"},
        {"top-p", "", "1.0", "keep the smallest set whose probability reaches p; 1 disables"},
        {"seed", "", "1337", "seed of the sampler"},
        kCliHeadsFlag,
        kCliInferPrecisionFlag,
        {"lora-from", "", "", "apply this PEFT LoRA adapter directory to --model"},
        kCliForceBaseFlag,
    };
    return cli_parse(argc, argv, "chat", "gpt2 chat --model PATH [--lora-from DIR] [--system TEXT] [flags]",
                     "Talks with a model in the chat template tokenize --instructions trains on, one line per "
                     "message; /reset starts over, /quit ends. The KV cache is kept across turns.",
                     flags, false);
}

}  // namespace

int cmd_chat(int argc, char** argv) {
    const CliArgs args = chat_args(argc, argv);
    Conversation c;
    c.sampler = {(float)args.number_in("temperature", 0, 100), (int)args.integer_in("top-k", 0, 1 << 20),
                 (float)args.number_in("top-p", 1e-9, 1)};
    c.max_tokens = (int)args.integer_in("max-tokens", 0, 1 << 20);
    c.rng = Rng((uint64_t)args.integer_in("seed", 0, LLONG_MAX));
    GPT2 model;
    LoraModel lora;
    Tokenizer tok;
    cli_load_for_inference(args, &model, &lora);
    const int ctx = model.cfg.max_seq_len;
    memory_check(infer_memory_bytes(model.cfg, ctx, ctx), "the KV cache of the context", "a smaller model");
    cli_load_tokenizer(args, model, &tok);
    c.model = &model, c.tok = &tok;
    infer_init(&c.st, model, ctx, ctx);
    c.logits.resize(model.cfg.padded_vocab_size);
    reset(&c, args.has("system") ? args.str("system") : "");
    const bool terminal = os_isatty(stdin);
    std::string line;
    for (bool too_long = false;;) {
        if (terminal) fputs("> ", stderr);
        if (!cli_read_line(stdin, (size_t)16 << 20, &line, &too_long)) break;
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (too_long) fprintf(stderr, "error: message too long: more than 16 MiB\n");
        if (too_long || line.empty()) continue;
        if (line == "/quit" || line == "/exit") break;
        if (line == "/reset") {
            reset(&c, args.has("system") ? args.str("system") : "");
            fprintf(stderr, "(conversation reset)\n");
            continue;
        }
        turn(&c, line);
    }
    if (ferror(stdin)) fatal("cannot read standard input (chat): %s", strerror(errno));
    return 0;
}
