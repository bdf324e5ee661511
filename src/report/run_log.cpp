// run_log.cpp: see run_log.h.
#include "report/run_log.h"

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <utility>

#include "text/json_lines.h"
#include "platform/platform.h"
#include "platform/util.h"

namespace {

// A JSON-lines log as --log writes it (or an empty file): every line, blank ones aside, starts with
// {"step": and ends with '}', and the file ends with a newline. Read as a stream, in constant memory: a
// text of the user's with one JSON line in it, or a JSON-lines dataset, is not a log to append to.
bool run_log_is_ours(const std::string& path) {
    static const char kStart[] = "{\"step\":";
    FILE* in = os_fopen_read(path);
    if (!in) return false;
    int c, last = '\n', last_solid = 0;  // last_solid: the line's last non-blank byte so far, 0 for none
    size_t at = 0;                       // bytes of the line seen; its first ones must spell kStart
    bool ok = true;
    while (ok && (c = getc(in)) != EOF) {
        if (c == '\n') {
            ok = last_solid == 0 || (last_solid == '}' && at >= sizeof(kStart) - 1);
            last_solid = 0, at = 0;
        } else {
            if (at < sizeof(kStart) - 1) ok = c == kStart[at];
            at++;
            if (c != ' ' && c != '\t' && c != '\r') last_solid = c;
        }
        last = c;
    }
    fclose(in);
    return ok && last == '\n';
}

}  // namespace

const OutputKind kRunLogKind = {"a JSON-lines log (train --log)", run_log_is_ours};

namespace {

// fatal with "<what> (<path> line <n>): <rest>".
[[noreturn]] __attribute__((format(printf, 4, 5))) void log_line_error(const char* what, const std::string& path,
                                                                       size_t line, const char* fmt, ...) {
    char rest[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(rest, sizeof(rest), fmt, ap);
    va_end(ap);
    fatal("%s (%s line %zu): %s", what, path.c_str(), line, rest);
}

struct LogPoint {
    int step;
    float loss;
    int64_t tokens;  // -1: none
};

// Sorts by step, of equal steps keeping the later one (in file order), into (step, loss) and tokens.
void sort_keep_last(std::vector<LogPoint> points, std::vector<std::pair<int, float>>* losses,
                    std::vector<int64_t>* tokens) {
    std::stable_sort(points.begin(), points.end(),
                     [](const LogPoint& a, const LogPoint& b) { return a.step < b.step; });
    for (size_t i = 0; i < points.size(); i++)
        if (i + 1 == points.size() || points[i + 1].step != points[i].step)
            losses->push_back({points[i].step, points[i].loss}), tokens->push_back(points[i].tokens);
}

// The line's "tokens" (-1 if it has none); fatal naming the file and line unless it is an integer >= 0.
int64_t log_tokens(const Json& obj, const std::string& path, size_t line) {
    const Json* tokens = obj.find("tokens");
    if (!tokens) return -1;
    if (tokens->type != Json::NUMBER || !tokens->is_integer || tokens->integer < 0)
        log_line_error("bad field \"tokens\"", path, line, "expected an integer >= 0, got %s",
                       tokens->type == Json::NUMBER ? "another number" : json_type_name(tokens->type));
    return tokens->integer;
}

}  // namespace

RunLog run_log_read(const std::string& path) {
    const std::vector<uint8_t> bytes = file_read(path, (size_t)256 << 20);  // 2.5M steps of ~100-byte lines
    const char* text = (const char*)bytes.data();
    std::vector<LogPoint> train, val;
    RunLog h;
    size_t line = 0, skipped = 0;  // steps logged without a loss: they scored no token
    for (size_t start = 0; start < bytes.size();) {
        size_t end = start;
        while (end < bytes.size() && text[end] != '\n') end++;
        line++;
        const char* p = text + start;
        const size_t n = end - start;
        start = end + 1;
        bool blank = true;
        for (size_t i = 0; i < n && blank; i++) blank = p[i] == ' ' || p[i] == '\t' || p[i] == '\r';
        if (blank) continue;
        Json obj;
        std::string err;
        if (!json_parse_line(p, n, &obj, &err))
            log_line_error("malformed JSON", path, line, "%s; expected a line written by train --log", err.c_str());
        if (obj.type != Json::OBJECT)
            log_line_error("bad log line", path, line, "expected a JSON object, got %s", json_type_name(obj.type));
        const Json* step = obj.find("step");
        if (!step) log_line_error("missing field", path, line, "expected \"step\" (with \"loss\" or \"val_loss\")");
        if (step->type != Json::NUMBER || !step->is_integer || step->integer < 0 || step->integer > INT32_MAX)
            log_line_error("bad field \"step\"", path, line, "expected an integer 0..%d, got %s", INT32_MAX,
                           step->type == Json::NUMBER ? "another number" : json_type_name(step->type));
        const Json* loss = obj.find("loss");
        const Json* val_loss = obj.find("val_loss");
        if (!loss && !val_loss)
            log_line_error("missing field", path, line, "expected \"loss\" or \"val_loss\" (with \"step\")");
        for (const Json* j : {loss, val_loss}) {
            if (j && j == loss && j->type == Json::NUL) skipped++;  // a step skipped: it scored no token
            if (!j || (j == loss && j->type == Json::NUL)) continue;
            if (j->type != Json::NUMBER)
                log_line_error(j == loss ? "bad field \"loss\"" : "bad field \"val_loss\"", path, line,
                               "expected a number, got %s", json_type_name(j->type));
            const float value = (float)j->number;
            if (!std::isfinite(value))  // 1e39 parses as a double but has no float, and no point on a plot
                log_line_error(j == loss ? "bad field \"loss\"" : "bad field \"val_loss\"", path, line,
                               "expected a finite number within float range, got %g", j->number);
            (j == loss ? train : val).push_back({(int)step->integer, value, log_tokens(obj, path, line)});
            if (h.line_without_tokens == 0 && (j == loss ? train : val).back().tokens < 0) h.line_without_tokens = line;
        }
    }
    if (train.empty() && val.empty() && skipped)
        fatal("no loss points in %s: its %zu steps all scored no token (\"loss\":null, their batches held prompts "
              "only) and it has no val loss; expected a run with some scored steps", path.c_str(), skipped);
    if (train.empty() && val.empty())
        fatal(
            "no loss points in %s: expected JSON lines with \"step\" and \"loss\" or \"val_loss\", as train --log "
            "writes them",
            path.c_str());
    sort_keep_last(std::move(train), &h.train, &h.train_tokens);
    sort_keep_last(std::move(val), &h.val, &h.val_tokens);
    return h;
}
