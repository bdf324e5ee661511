// hellaswag.cpp: see hellaswag.h. The losses come from the model's own forward (gpt2_forward's per-position
// cross-entropy); this file only lays candidates out as rows and reduces over the ending's positions.
#include "report/hellaswag.h"


#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>

#include "platform/platform.h"
#include "platform/signals.h"
#include "text/json_lines.h"
#include "platform/util.h"
#include "core/layout.h"

namespace {

// fatal with "<what> (<path> line <n>): <rest>", the location every per-line error names.
[[noreturn]] __attribute__((format(printf, 4, 5))) void line_error(const char* what, const std::string& path, int line,
                                                                   const char* fmt, ...) {
    char rest[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(rest, sizeof(rest), fmt, ap);
    va_end(ap);
    fatal("%s (%s line %d): %s", what, path.c_str(), line, rest);
}

const Json& require_field(const Json& obj, const char* key, const std::string& path, int line) {
    const Json* j = obj.find(key);
    if (!j) line_error("missing field", path, line, "expected \"%s\" (with ctx, endings and label)", key);
    return *j;
}

HellaSwagExample parse_example(const char* text, size_t n, const std::string& path, int line) {
    Json obj;
    std::string err;
    if (!json_parse_line(text, n, &obj, &err)) line_error("malformed JSON", path, line, "%s", err.c_str());
    if (obj.type != Json::OBJECT)
        line_error("bad HellaSwag example", path, line, "expected a JSON object, got %s", json_type_name(obj.type));
    HellaSwagExample ex;
    ex.line = line;
    const Json& ctx = require_field(obj, "ctx", path, line);
    const Json& endings = require_field(obj, "endings", path, line);
    const Json& label = require_field(obj, "label", path, line);
    if (ctx.type != Json::STRING)
        line_error("bad field \"ctx\"", path, line, "expected a string, got %s", json_type_name(ctx.type));
    // the first ending token is predicted from the last context token: there must be one
    if (ctx.str.empty()) line_error("bad field \"ctx\"", path, line, "expected text before the endings, got \"\"");
    ex.ctx = ctx.str;
    if (endings.type != Json::ARRAY)
        line_error("bad field \"endings\"", path, line, "expected an array of %d strings, got %s", kHellaSwagEndings,
                   json_type_name(endings.type));
    if (endings.items.size() != (size_t)kHellaSwagEndings)
        line_error("bad field \"endings\"", path, line, "expected %d strings, got %zu", kHellaSwagEndings,
                   endings.items.size());
    for (int j = 0; j < kHellaSwagEndings; j++) {
        if (endings.items[j].type != Json::STRING)
            line_error("bad field \"endings\"", path, line, "expected %d strings, got %s at index %d",
                       kHellaSwagEndings, json_type_name(endings.items[j].type), j);
        ex.endings[j] = endings.items[j].str;
    }
    if (label.type != Json::NUMBER)
        line_error("bad field \"label\"", path, line, "expected an integer 0..%d, got %s", kHellaSwagEndings - 1,
                   json_type_name(label.type));
    if (!label.is_integer)  // 1.0, 1e0, 2.5, or more digits than int64 holds: say which
        line_error("bad field \"label\"", path, line, "expected a plain integer 0..%d, got %.17g%s", kHellaSwagEndings - 1,
                   label.number,
                   std::fabs(label.number) >= 9.2e18      ? " (beyond 64-bit integers)"
                   : label.number == std::floor(label.number) ? " written with a decimal point or exponent"
                                                              : "");
    if (label.integer < 0 || label.integer >= kHellaSwagEndings)
        line_error("bad field \"label\"", path, line, "expected 0..%d, got %lld", kHellaSwagEndings - 1,
                   (long long)label.integer);
    ex.label = (int)label.integer;
    return ex;
}

int candidate_len(const HellaSwagExample& ex, int j) { return (int)(ex.ctx_ids.size() + ex.ending_ids[j].size()); }

// One forward pass over examples all[idx[0..n)]: row 4i+j holds candidate j of the i-th, inputs its tokens
// but the last, targets its tokens from the second on, padded with token 0 to the batch's longest candidate
// (the attention is causal, so padding after a row's end never changes its earlier positions). Writes
// out[idx[i]].
void score_batch(GPT2* model, const HellaSwagExample* all, const size_t* idx, int n, HellaSwagScore* out,
                 const std::string& path, std::vector<int>* inputs, std::vector<int>* targets) {
    std::vector<const HellaSwagExample*> ex(n);
    for (int i = 0; i < n; i++) ex[i] = &all[idx[i]];
    const int rows = n * kHellaSwagEndings;
    int T = 1;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < kHellaSwagEndings; j++) T = std::max(T, candidate_len(*ex[i], j) - 1);
    inputs->assign((size_t)rows * T, 0);
    targets->assign((size_t)rows * T, 0);
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < kHellaSwagEndings; j++) {
            int* in = inputs->data() + (size_t)(i * kHellaSwagEndings + j) * T;
            int* tg = targets->data() + (size_t)(i * kHellaSwagEndings + j) * T;
            std::vector<int> tokens = ex[i]->ctx_ids;
            tokens.insert(tokens.end(), ex[i]->ending_ids[j].begin(), ex[i]->ending_ids[j].end());
            for (size_t t = 0; t + 1 < tokens.size(); t++) in[t] = tokens[t], tg[t] = tokens[t + 1];
        }
    }
    gpt2_forward(model, inputs->data(), targets->data(), rows, T);
    const float* losses = model->act.losses;  // (rows, T)
    for (int i = 0; i < n; i++) {
        HellaSwagScore& s = out[idx[i]];
        const int nc = (int)ex[i]->ctx_ids.size();
        for (int j = 0; j < kHellaSwagEndings; j++) {
            // ending token k sits at position nc + k and is predicted at position nc + k - 1
            const float* row = losses + (size_t)(i * kHellaSwagEndings + j) * T + (nc - 1);
            const int ne = (int)ex[i]->ending_ids[j].size();
            double sum = 0;
            for (int k = 0; k < ne; k++) sum += row[k];
            if (!std::isfinite(sum))
                fatal(
                    "loss is %g on ending %d (%s line %d): the model's weights or activations overflow; expected "
                    "a finite loss",
                    sum, j, path.c_str(), ex[i]->line);
            s.sum[j] = sum;
            s.mean[j] = sum / ne;
            if (s.sum[j] < s.sum[s.pred_sum]) s.pred_sum = j;
            if (s.mean[j] < s.mean[s.pred_mean]) s.pred_mean = j;
        }
    }
}

}  // namespace

std::vector<HellaSwagExample> hellaswag_read(const std::string& path) {
    const std::vector<uint8_t> bytes = file_read(path, (size_t)256 << 20);  // hellaswag_val.jsonl is 11 MB
    const char* text = (const char*)bytes.data();
    std::vector<HellaSwagExample> examples;
    int line = 0;
    for (size_t start = 0; start < bytes.size();) {
        size_t end = start;
        while (end < bytes.size() && text[end] != '\n') end++;
        line++;
        size_t stop = end;
        if (stop > start && text[stop - 1] == '\r') stop--;  // CRLF files
        bool blank = true;
        for (size_t i = start; i < stop && blank; i++) blank = text[i] == ' ' || text[i] == '\t';
        if (!blank) examples.push_back(parse_example(text + start, stop - start, path, line));
        start = end + 1;
    }
    if (examples.empty())
        fatal("no examples in %s: expected one JSON object per line (HellaSwag's hellaswag_val.jsonl)", path.c_str());
    return examples;
}

int hellaswag_tokenize(std::vector<HellaSwagExample>* examples, Tokenizer* tok, int max_len, const std::string& path) {
    int longest = 0;
    for (HellaSwagExample& ex : *examples) {
        ex.ctx_ids = tokenizer_encode(tok, ex.ctx);
        for (int j = 0; j < kHellaSwagEndings; j++) {
            // GPT-2 sees words with their leading space; the ending continues the context's last word
            ex.ending_ids[j] = tokenizer_encode(tok, " " + ex.endings[j]);
            const int n = candidate_len(ex, j);
            if (n > max_len)
                line_error("candidate too long", path, ex.line,
                           "ctx + ending %d is %d tokens, expected <= %d (the model's context)", j, n, max_len);
            longest = std::max(longest, n);
        }
    }
    return longest;
}

double hellaswag_memory_bytes(const GPT2Config& cfg, int per_batch, int max_tokens) {
    const int rows = per_batch * kHellaSwagEndings, T = std::max(1, max_tokens - 1);
    return sizeof(float) * (double)layout_params_size(layout_acts(cfg, rows, T));
}

std::vector<HellaSwagScore> hellaswag_evaluate(GPT2* model, const std::vector<HellaSwagExample>& examples,
                                               int per_batch, const std::string& path) {
    const size_t total = examples.size();
    std::vector<HellaSwagScore> scores(total);
    std::vector<int> inputs, targets;
    // Batches are formed longest first, so a batch pads little (and the ETA errs long); scores land in file
    // order.
    std::vector<int> longest_of(total, 0);
    std::vector<size_t> order(total);
    for (size_t i = 0; i < total; i++) {
        order[i] = i;
        for (int j = 0; j < kHellaSwagEndings; j++)
            longest_of[i] = std::max(longest_of[i], candidate_len(examples[i], j));
    }
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return longest_of[a] > longest_of[b]; });
    // sized once for the largest batch; every batch then fits in it (model.h), whatever its own length
    gpt2_alloc_acts(model, per_batch * kHellaSwagEndings, longest_of[order[0]] - 1);
    const bool tty = os_isatty(stderr);
    const double t0 = time_now_s();
    size_t correct_sum = 0, correct_mean = 0;
    int tenths_shown = 0;
    for (size_t b = 0; b < total; b += per_batch) {
        const int n = (int)std::min((size_t)per_batch, total - b);
        if (stop_requested()) {  // eval's stop_catch_abort (signals.h): the progress line ends first
            if (tty) fprintf(stderr, "\n");
            stop_point();
        }
        score_batch(model, examples.data(), &order[b], n, scores.data(), path, &inputs, &targets);
        for (size_t k = b; k < b + n; k++) {
            correct_sum += scores[order[k]].pred_sum == examples[order[k]].label;
            correct_mean += scores[order[k]].pred_mean == examples[order[k]].label;
        }
        const size_t done = b + n;
        const double s = time_now_s() - t0;
        const int tenths = (int)(done * 10 / total);
        if (!tty && tenths == tenths_shown) continue;  // a log gets a line per tenth, a terminal one live line
        tenths_shown = tenths;
        fprintf(stderr, "%shellaswag %zu/%zu | acc %.4f | acc_norm %.4f | %.1f examples/s | ETA %s%s", tty ? "\r" : "",
                done, total, (double)correct_sum / done, (double)correct_mean / done, done / s,
                format_duration(s / done * (total - done)).c_str(), tty ? "\033[K" : "\n");
        fflush(stderr);
    }
    if (tty) fprintf(stderr, "\n");
    return scores;
}
