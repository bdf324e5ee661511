// hellaswag_cmd.cpp: `gpt2 eval --hellaswag FILE`: checks the flags, reads and tokenizes the examples, checks
// memory, scores them (report/hellaswag.h) and prints acc and acc_norm, optionally writing every example's
// candidate losses. The flags themselves are declared in eval's table (eval_cmd.cpp).
#include <algorithm>
#include <cstring>
#include <memory>
#include <cstdio>
#include <string>
#include <vector>

#include "platform/output_files.h"
#include "platform/util.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "formats/checkpoint.h"
#include "core/model.h"
#include "text/tokenizer.h"
#include "report/hellaswag.h"

namespace {

const char* const kHellaSwagOnly[] = {"hellaswag-batch", "hellaswag-scores", "tokenizer"};
const char* const kDataOnly[] = {"batch", "tokens", "batches"};  // --data is refused on its own

// A scores file gpt2 wrote: JSON lines starting with the example's line number (or an empty file).
bool scores_is_ours(const std::string& path) {
    static const char kStart[] = "{\"line\":";
    const std::vector<uint8_t> head = file_head_bytes(path, sizeof(kStart) - 1);
    return head.size() == sizeof(kStart) - 1 && memcmp(head.data(), kStart, head.size()) == 0;
}

const OutputKind kScoresKind = {"a HellaSwag scores file", scores_is_ours};

// One JSON line per example: its file line, label, the four summed and mean losses and the two choices.
std::string scores_jsonl(const std::vector<HellaSwagExample>& examples, const std::vector<HellaSwagScore>& scores) {
    std::string out;
    char buf[128];
    for (size_t i = 0; i < examples.size(); i++) {
        const HellaSwagScore& s = scores[i];
        snprintf(buf, sizeof(buf), "{\"line\":%d,\"label\":%d", examples[i].line, examples[i].label);
        out += buf;
        for (const char* key : {"sum", "mean"}) {
            const double* v = key[0] == 's' ? s.sum : s.mean;
            out += std::string(",\"") + key + "\":[";
            for (int j = 0; j < kHellaSwagEndings; j++) {
                snprintf(buf, sizeof(buf), j ? ",%.9g" : "%.9g", v[j]);
                out += buf;
            }
            out += "]";
        }
        snprintf(buf, sizeof(buf), ",\"pred\":%d,\"pred_norm\":%d}\n", s.pred_sum, s.pred_mean);
        out += buf;
    }
    return out;
}

}  // namespace

void eval_check_hellaswag_flags(const CliArgs& args) {
    for (const char* name : kHellaSwagOnly)
        if (args.has(name)) fatal("flag --%s (eval) needs --hellaswag: it has no meaning for --data", name);
}

int cmd_eval_hellaswag(const CliArgs& args) {
    if (args.has("data")) fatal("conflicting flags (eval): --data and --hellaswag; expected one of them");
    for (const char* name : kDataOnly)
        if (args.has(name))
            fatal(
                "conflicting flags (eval): --%s belongs to --data; --hellaswag makes its own batches "
                "(--hellaswag-batch)",
                name);
    const std::string path = args.str("hellaswag");
    if (path.empty()) fatal("empty value for --hellaswag (eval): expected a HellaSwag JSONL file");
    const int per_batch = args.integer_in("hellaswag-batch", 1, 1 << 16);
    const std::string scores_path = args.has("hellaswag-scores") ? args.str("hellaswag-scores") : "";
    std::unique_ptr<PathLock> scores_lock;
    if (args.has("hellaswag-scores")) {  // checked now, not after an hour of scoring
        if (scores_path.empty()) fatal("empty value for --hellaswag-scores (eval): expected a file path");
        if (!dir_exists(path_parent(scores_path)))
            fatal("bad value for --hellaswag-scores (eval): directory %s does not exist",
                  path_parent(scores_path).c_str());
        input_note_path(path);
        output_check(scores_path, "--hellaswag-scores (eval)", kScoresKind);
        scores_lock.reset(new PathLock(scores_path, "--hellaswag-scores (eval)"));
    }
    if (args.has("tokenizer") && args.str("tokenizer").empty())
        fatal("empty value for --tokenizer (eval): expected a directory with encoder.json + vocab.bpe");

    std::vector<HellaSwagExample> examples = hellaswag_read(path);  // a bad file fails before the model loads
    GPT2 model;
    checkpoint_load(&model, args.str("model"), cli_heads(args));
    cli_set_precision(&model, args, true);
    Tokenizer tok;
    const std::string which = cli_tokenizer(args, args.str("model"), true, &tok);
    tokenizer_check_vocab(tok, model.cfg.vocab_size, "");
    fprintf(stderr, "tokenizer: %s\n", which.c_str());
    const int longest = hellaswag_tokenize(&examples, &tok, model.cfg.max_seq_len, path);
    const int per = (int)std::min((size_t)per_batch, examples.size());
    memory_check(hellaswag_memory_bytes(model.cfg, per, longest),
                 "activations for --hellaswag-batch " + std::to_string(per) + " (" +
                     std::to_string(per * kHellaSwagEndings) + " rows of up to " + std::to_string(longest) + " tokens)",
                 "lower --hellaswag-batch");

    const std::vector<HellaSwagScore> scores = hellaswag_evaluate(&model, examples, per, path);
    size_t correct = 0, correct_norm = 0;
    for (size_t i = 0; i < examples.size(); i++) {
        correct += scores[i].pred_sum == examples[i].label;
        correct_norm += scores[i].pred_mean == examples[i].label;
    }
    const size_t n = examples.size();
    printf("hellaswag %zu examples\n", n);
    printf("acc %.4f (%zu/%zu)\n", (double)correct / n, correct, n);
    printf("acc_norm %.4f (%zu/%zu)\n", (double)correct_norm / n, correct_norm, n);
    if (!scores_path.empty()) {
        const std::string text = scores_jsonl(examples, scores);
        output_write(scores_path, "--hellaswag-scores (eval)", kScoresKind, {{text.data(), text.size()}});
    }
    return 0;
}
