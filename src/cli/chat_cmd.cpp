// chat_cmd.cpp: the `chat` command: a conversation in the terminal with any model generate takes, in the chat
// template tokenize --instructions trains on (text/instructions.h): "System: S\n" once, then per turn
// "User: ...\n" and "Assistant:", the reply streamed as it is sampled and ended by <|endoftext|> (which a model
// trained so learned to say), --max-tokens or the end of the context. The KV cache is kept across turns, so a turn
// prefills only what it adds: the head with the first turn (and again after /reset), then the "\n" that ended the
// last reply (and that reply's last token, when it was cut before being fed) and its own tokens. When the context
// would overflow, the fewest oldest turns leave it (said in one line) and what is kept is prefilled again.
// /reset starts over, /quit (or the end of input) ends; commands ignore case and the spaces around them. Ctrl-C
// stops the turn at hand (its prefill or its reply), and at the prompt ends the program; SIGTERM and SIGHUP end it.
// With --draft int8 or --draft-model, replies are decoded speculatively (inference/speculative.h): the draft keeps
// its own cache of the conversation across turns, and greedy replies are the same token for token.
#include <algorithm>
#include <cassert>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "cli/cli.h"
#include "cli/commands.h"
#include "inference/generate.h"
#include "inference/infer.h"
#include "inference/sampler.h"
#include "inference/speculative.h"
#include "lora/lora.h"
#include "platform/platform.h"
#include "platform/signals.h"
#include "platform/threads.h"
#include "platform/util.h"
#include "text/tokenizer.h"

namespace {

const int kPrefillRows = 256;  // positions per prefill pass: a stop signal is seen between two

struct Conversation {
    const GPT2* model = nullptr;
    Tokenizer* tok = nullptr;
    SamplerConfig sampler;
    int max_tokens = 0;  // per reply (0: the rest of the context)
    int reserve = 0;     // context a turn leaves free for its reply when it is let in
    Rng rng;
    std::string system;
    std::vector<int> head;                // <|endoftext|> and the system message
    std::vector<std::vector<int>> turns;  // each kept turn: the user's message, "Assistant:", the reply, "\n"
    // The cache holds head, then the turns, in order, but for `unfed` at their end: the head after a reset, what a
    // stop signal left of a prefill, a reply's last token (sampled, not fed) and its "\n"; fed with the next turn.
    InferState st;
    std::vector<int> unfed;
    std::vector<float> logits;
    ThreadTuner tuner;  // each forward's team, from the other processes' load (platform/threads.h), as generate's
    std::unique_ptr<Speculation> spec;  // --draft int8 or --draft-model: replies decoded speculatively, else null
    GenerateOptions draft;              // its --draft-min and --draft-max
};

std::vector<int> encode(Tokenizer* tok, const std::string& text) { return tokenizer_encode(tok, text); }

// A turn's tokens as the template has them: the user's line, then "Assistant:" to answer after.
std::vector<int> turn_tokens(const Conversation& c, const std::string& line) {
    std::vector<int> t;
    for (const std::string& text : {"User: " + line + "\n", std::string("Assistant:")})
        for (int id : encode(c.tok, text)) t.push_back(id);
    return t;
}

// What the cache holds once `turn` is prefilled: the head, the kept turns, then `turn`.
std::vector<int> conversation(const Conversation& c, const std::vector<int>& turn) {
    std::vector<int> all = c.head;
    for (const auto& t : c.turns) all.insert(all.end(), t.begin(), t.end());
    all.insert(all.end(), turn.begin(), turn.end());
    return all;
}

void forward(Conversation* c, const int* tokens, int n) {
    c->tuner.begin();
    infer_forward(&c->st, *c->model, tokens, n, c->logits.data(), false);
    c->tuner.end();
}

// Feeds `tokens` after what the cache holds, kPrefillRows at a time; after a stop signal the rest stays unfed.
// Returns how many were fed.
int feed(Conversation* c, const std::vector<int>& tokens) {
    if (tokens.size() > (size_t)kPrefillRows) fprintf(stderr, "(prefilling %zu tokens; Ctrl-C stops)\n", tokens.size());
    size_t fed = 0;
    while (fed < tokens.size() && !stop_requested()) {
        size_t n = std::min(tokens.size() - fed, (size_t)kPrefillRows);
        if (tokens.size() - fed - n == 1) n--;  // no pass of one row: that is decoding's mat-vec, other sums
        n = std::max(n, (size_t)1);
        forward(c, tokens.data() + fed, (int)n);
        fed += n;
    }
    c->unfed.assign(tokens.begin() + fed, tokens.end());
    return (int)fed;
}

// Whether a turn of `tokens` fits beside the head and the room kept for its reply, every earlier turn gone.
bool fits(const Conversation& c, size_t tokens) {
    return (int)(c.head.size() + tokens) + c.reserve <= c.model->cfg.max_seq_len;
}

// Prefills what the cache lacks, then `turn` (which fits); returns how many tokens that was. When they do not fit
// beside the room kept for the reply, the fewest oldest turns leave (said in one line) and what is kept is
// prefilled again.
int prefill(Conversation* c, const std::vector<int>& turn) {
    const int ctx = c->model->cfg.max_seq_len;
    std::vector<int> tokens = c->unfed;
    size_t kept = c->head.size();  // the conversation so far: the cache and `unfed`
    for (const auto& t : c->turns) kept += t.size();
    assert(c->st.len + c->unfed.size() == kept && "the cache and unfed hold the conversation");
    if ((int)(kept + turn.size()) + c->reserve > ctx) {
        int dropped = 0;
        while ((int)(kept + turn.size()) + c->reserve > ctx)  // the head and the turn alone fit (fits())
            kept -= c->turns.front().size(), c->turns.erase(c->turns.begin()), dropped++;
        fprintf(stderr, "(context of %d full: the oldest %d turn%s left the conversation)\n", ctx, dropped,
                dropped == 1 ? "" : "s");
        tokens = conversation(*c, {});
        c->st.len = 0;
    }
    tokens.insert(tokens.end(), turn.begin(), turn.end());
    return feed(c, tokens);
}

// Ends the program on logits that hold a NaN or an infinity (s says where), as generate does: nothing is sampled
// from them.
void nonfinite(const GenerateStats& s, bool mid_line) {
    if (mid_line) printf("\n");
    fflush(stdout);
    fatal("%s", generate_nonfinite_message(s).c_str());
}

enum class ReplyEnd { kEot, kMaxTokens, kContext, kStopped };

// Samples and prints the reply after a whole prefill of `all` (the conversation), plainly or through the draft
// (c->spec: each round's kept tokens at once, the same greedy reply); returns its tokens (<|endoftext|> not among
// them) and why it ended. A reply cut by --max-tokens or the context leaves its last token unfed.
std::vector<int> reply(Conversation* c, std::vector<int> all, ReplyEnd* end, GenerateStats* s) {
    const GPT2Config& cfg = c->model->cfg;
    const int room = cfg.max_seq_len - c->st.len + 1;  // the last token is not fed
    const int limit = c->max_tokens ? std::min(c->max_tokens, room) : room;
    TokenDecoder decoder(*c->tok);
    std::vector<int> out;
    *end = ReplyEnd::kStopped;  // unless a token says otherwise
    const auto take = [&](int token) {  // false when the reply ends with it
        if (token == kTokenizerEot) return *end = ReplyEnd::kEot, false;
        out.push_back(token);
        print_text(decoder.push(token));
        if (fflush(stdout) != 0) fatal("cannot write standard output: %s", strerror(errno));
        if ((int)out.size() < limit) return true;
        *end = limit < room ? ReplyEnd::kMaxTokens : ReplyEnd::kContext;
        c->unfed.push_back(token);
        return false;
    };
    const double t0 = time_now_s();
    if (!c->spec) {
        while (!stop_requested()) {  // a prefill cut short (unfed tokens left) leaves it set
            if (!generate_finite_logits(c->logits.data(), cfg.vocab_size, c->st.len, s)) nonfinite(*s, !out.empty());
            const int token = sampler_sample(c->logits.data(), cfg.vocab_size, c->sampler, &c->rng);
            if (!take(token)) break;
            forward(c, &token, 1);
        }
    } else if (!stop_requested()) {
        GenerateOptions opts = c->draft;
        opts.max_tokens = limit, opts.sampler = c->sampler, opts.stop_token = kTokenizerEot;
        opts.cancelled = [] { return stop_requested() != 0; };
        c->spec->decode(&c->st, &all, c->logits.data(), opts, &c->rng, take, s);
        if (s->stop == GenerateStop::kNonFinite) nonfinite(*s, !out.empty());
    }
    print_text(decoder.flush());
    printf("\n");
    if (fflush(stdout) != 0) fatal("cannot write standard output: %s", strerror(errno));
    s->decode_s = time_now_s() - t0;
    return out;
}

// One turn: the user's line in, the reply out; said on stderr: what was prefilled, the speed, and why the reply
// ended when it was not its own end or --max-tokens. A stop signal ends the turn; SIGTERM and SIGHUP the program.
void turn(Conversation* c, const std::string& line) {
    std::vector<int> tokens = turn_tokens(*c, line);
    if (!fits(*c, tokens.size())) {
        const int ctx = c->model->cfg.max_seq_len;
        fprintf(stderr, "error: message too long: its turn is %zu tokens, expected at most %d (the context of %d, "
                "less %zu for the head and %d kept for the reply)\n", tokens.size(),
                ctx - (int)c->head.size() - c->reserve, ctx, c->head.size(), c->reserve);
        return;
    }
    stop_catch(true);  // Ctrl-C ends this turn, not the program
    const double t0 = time_now_s();
    const int prefilled = prefill(c, tokens);
    const std::vector<int> all = conversation(*c, tokens);
    if (c->spec && !stop_requested()) c->spec->prefill(all, [] { return stop_requested() != 0; });
    const double prefill_s = time_now_s() - t0;
    GenerateStats s;
    ReplyEnd end;
    const std::vector<int> answer = reply(c, all, &end, &s);
    stop_catch(false);
    tokens.insert(tokens.end(), answer.begin(), answer.end());
    for (int id : encode(c->tok, "\n")) tokens.push_back(id), c->unfed.push_back(id);  // the reply's end
    c->turns.push_back(tokens);
    char drafts[80] = "";
    if (c->spec) snprintf(drafts, sizeof drafts, "; %d of %d drafted kept", s.kept, s.drafted);
    fprintf(stderr, "(%d tokens prefilled in %.0f ms; %zu token%s at %.1f tok/s%s%s)\n", prefilled, prefill_s * 1e3,
            answer.size(), answer.size() == 1 ? "" : "s", answer.size() / std::max(s.decode_s, 1e-9), drafts,
            end == ReplyEnd::kStopped ? "; stopped" : end == ReplyEnd::kContext ? "; the context is full" : "");
    const int sig = stop_requested();
    if (sig && sig != SIGINT) {
        fprintf(stderr, "interrupted by %s\n", stop_signal_name(sig));
        exit(128 + sig);
    }
}

void reset(Conversation* c) {
    c->turns.clear();
    c->head.clear();
    if (kTokenizerEot < c->model->cfg.vocab_size) c->head.push_back(kTokenizerEot);  // as each training window starts
    if (!c->system.empty())
        for (int id : encode(c->tok, "System: " + c->system + "\n")) c->head.push_back(id);
    if (c->head.empty()) c->head = encode(c->tok, "\n");  // a vocabulary without <|endoftext|>: some start
    c->st.len = 0;
    c->unfed = c->head;  // prefilled with the first turn
}

// The context must hold the head, the turn of an empty message and the room kept for a reply, or every message
// would be refused: fatal naming --system when it is what does not fit, else the model.
void check_room(Conversation* c, const CliArgs& args) {
    const int ctx = c->model->cfg.max_seq_len, turn = (int)turn_tokens(*c, "").size();
    if (fits(*c, turn)) return;
    const size_t system = c->system.empty() ? 0 : encode(c->tok, "System: " + c->system + "\n").size();
    c->system.clear();
    reset(c);  // the head without it
    const size_t head = c->head.size();
    if (fits(*c, turn))
        fatal("system message too long (--system): %zu tokens with its template, expected at most %d (the context of "
              "%d, less %zu for the head, %d for an empty turn and %d kept for the reply)", system,
              ctx - (int)head - turn - c->reserve, ctx, head, turn, c->reserve);
    fatal_hint("use a model with a longer context" + std::string(c->max_tokens ? ", or a smaller --max-tokens" : ""),
               "context too small for a conversation (--model %s): expected at least %zu tokens (the head's %zu, an "
               "empty turn's %d and %d kept for the reply), got %d", args.str("model").c_str(),
               head + turn + c->reserve, head, turn, c->reserve, ctx);
}

// What a line asks: nothing (blank), a message, or a command (a slash and letters alone on the line, in any case,
// spaces around it ignored); *word: the command as typed.
enum class LineKind { kBlank, kMessage, kQuit, kReset, kUnknown };
LineKind line_kind(const std::string& line, std::string* word) {
    const size_t b = line.find_first_not_of(" \t\r"), e = line.find_last_not_of(" \t\r");
    if (b == std::string::npos) return LineKind::kBlank;
    *word = line.substr(b, e - b + 1);
    if (word->size() < 2 || (*word)[0] != '/' ||
        !std::all_of(word->begin() + 1, word->end(), [](unsigned char ch) { return std::isalpha(ch) != 0; }))
        return LineKind::kMessage;
    std::string lower = *word;
    for (char& ch : lower) ch = (char)std::tolower((unsigned char)ch);
    if (lower == "/quit" || lower == "/exit") return LineKind::kQuit;
    return lower == "/reset" ? LineKind::kReset : LineKind::kUnknown;
}

// Reads the user's lines until /quit or the end of input; a line longer than the context could hold is refused as
// it is read, in memory bounded by that length.
void talk(Conversation* c) {
    const int ctx = c->model->cfg.max_seq_len;
    const size_t max_bytes = cli_text_max_bytes(*c->tok, ctx);
    const bool terminal = os_isatty(stdin);
    std::string line, word;
    for (bool too_long = false;;) {
        if (terminal) fputs("> ", stderr);
        if (!cli_read_line(stdin, max_bytes, &line, &too_long)) break;
        if (too_long) {
            fprintf(stderr, "error: message too long: more than %zu bytes, more tokens than the context of %d\n",
                    max_bytes, ctx);
            continue;
        }
        if (!line.empty() && line.back() == '\r') line.pop_back();
        const LineKind kind = line_kind(line, &word);
        if (kind == LineKind::kQuit) break;
        if (kind == LineKind::kReset) reset(c), fprintf(stderr, "(conversation reset)\n");
        if (kind == LineKind::kUnknown)
            fprintf(stderr, "error: unknown command '%s': expected /reset or /quit (/exit)\n", word.c_str());
        if (kind == LineKind::kMessage) turn(c, line);
    }
    if (ferror(stdin)) fatal("cannot read standard input (chat): %s", strerror(errno));
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
        kCliDraftFlag,
        kCliDraftModelFlag,
        kCliDraftMaxFlag,
        kCliDraftMinFlag,
    };
    return cli_parse(argc, argv, "chat", "gpt2 chat --model PATH [--lora-from DIR] [--system TEXT] [flags]",
                     "Talks with a model in the chat template tokenize --instructions trains on, one line per "
                     "message; /reset starts over, /quit ends. The KV cache is kept across turns. Ctrl-C stops "
                     "a reply; at the prompt it ends the program.",
                     flags, false);
}

// The sampler's flags, in generate's ranges.
void read_sampling(const CliArgs& args, Conversation* c) {
    const double top_p = args.number_in("top-p", -HUGE_VAL, HUGE_VAL);
    if (!(top_p > 0 && top_p <= 1))
        fatal("bad value for --top-p (chat): expected 0 < p <= 1, got %s", args.str("top-p").c_str());
    c->sampler = {(float)args.number_in("temperature", 0, 1e6), (int)args.integer_in("top-k", 0, 1 << 30),
                  (float)top_p};
    c->max_tokens = (int)args.integer_in("max-tokens", 0, 1 << 20);
    c->rng = Rng((uint64_t)args.integer_in("seed", 0, LLONG_MAX));
    c->system = args.has("system") ? args.str("system") : "";
}

}  // namespace

int cmd_chat(int argc, char** argv) {
    const CliArgs args = chat_args(argc, argv);
    GPT2 model, draft;  // (before the conversation, whose draft refers to them)
    LoraModel lora;
    Tokenizer tok;
    Conversation c;
    read_sampling(args, &c);
    const bool drafting = cli_draft_options(args, &c.draft);
    cli_load_for_inference(args, &model, &lora);
    const int ctx = model.cfg.max_seq_len, rows = std::min(ctx, kPrefillRows);
    double beside = infer_memory_bytes(model.cfg, ctx, rows);
    memory_check(beside, "the KV cache of the context", "a smaller model");
    int draft_len = 0, draft_rows = 0;
    if (drafting) {  // the draft's cache: the conversation, as far as its context goes
        cli_load_draft(args, model, c.draft.draft_max, &draft);
        draft_len = std::min(ctx, draft.cfg.max_seq_len), draft_rows = std::min(draft_len, kPrefillRows);
        beside += speculation_bytes(model, draft, draft_len, draft_rows);
        memory_check(beside, "the KV caches of the model and the draft", "leave out the draft");
        if (args.has("draft")) infer_keep_q8_tiles_if_room(&draft, beside);
    }
    infer_keep_q8_tiles_if_room(&model, beside);  // int8: faster decoding
    if (drafting) c.spec = std::make_unique<Speculation>(model, draft, draft_len, draft_rows, &c.tuner);
    cli_load_tokenizer(args, model, &tok);
    c.model = &model, c.tok = &tok;
    c.reserve = c.max_tokens ? std::min(c.max_tokens, ctx / 4) : ctx / 4;  // room kept for a reply
    infer_init(&c.st, model, ctx, rows);
    c.logits.resize(model.cfg.padded_vocab_size);
    reset(&c);
    check_room(&c, args);
    talk(&c);
    return 0;
}
