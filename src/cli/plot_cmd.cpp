// plot_cmd.cpp: the `plot` command: several runs' --log files (JSON lines) drawn on one loss plot, e.g. an
// fp32 and a bf16 run of the same model, against step or tokens, smoothed or on a log scale as asked. Every
// log is read and checked before the PNG is written, so a bad one leaves no output. Reading logs lives in
// report/run_log.h, drawing in report/plot.h.
#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "platform/util.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "report/plot.h"
#include "report/run_log.h"

namespace {

// "runs/fp32.jsonl" -> "fp32": the file name without its last extension.
std::string default_label(const std::string& path) {
    std::string base = path_base(path);
    const size_t dot = base.rfind('.');
    if (dot != std::string::npos && dot > 0) base.erase(dot);
    return base;
}

std::vector<std::string> split_commas(const std::string& s) {
    std::vector<std::string> parts(1);
    for (char c : s)
        if (c == ',') parts.emplace_back();
        else parts.back() += c;
    return parts;
}

// The labels of the runs: --labels, else the logs' file names; fatal if one is empty or two are the same.
std::vector<std::string> run_labels(const CliArgs& args, const std::vector<std::string>& logs) {
    std::vector<std::string> labels;
    if (args.has("labels")) {
        labels = split_commas(args.str("labels"));
        if (labels.size() != logs.size())
            fatal("bad value for --labels (plot): expected %zu comma-separated labels, one per log, got %zu",
                  logs.size(), labels.size());
    } else {
        for (const std::string& log : logs) labels.push_back(default_label(log));
    }
    for (size_t i = 0; i < labels.size(); i++) {
        const char* flag = args.has("labels") ? "--labels (plot)" : "the log file names (plot)";
        if (labels[i].empty()) fatal("bad value for %s: label %zu is empty, expected a name", flag, i + 1);
        for (size_t j = 0; j < i; j++)
            if (labels[j] == labels[i])
                fatal_hint("name the runs with --labels A,B,...",
                           "bad value for %s: two runs are labelled '%s', expected a different name for each", flag,
                           labels[i].c_str());
    }
    return labels;
}

// (x, loss) of a log's points: x the step, or with x_tokens the tokens trained on.
std::vector<std::pair<double, float>> plot_points(const std::vector<std::pair<int, float>>& losses,
                                                  const std::vector<int64_t>& tokens, bool x_tokens) {
    std::vector<std::pair<double, float>> points;
    for (size_t i = 0; i < losses.size(); i++)
        points.push_back({x_tokens ? (double)tokens[i] : losses[i].first, losses[i].second});
    return points;
}

// One log as a run to draw; fatal naming the log if it cannot be drawn as `style` asks.
PlotRun plot_run(const std::string& path, const std::string& label, const PlotStyle& style) {
    const RunLog log = run_log_read(path);
    if (style.x_tokens && log.line_without_tokens > 0)
        fatal_hint("this log predates the \"tokens\" field: drop --x tokens to plot it against the step",
                   "missing field \"tokens\" (%s line %zu): expected the tokens trained on, for --x tokens",
                   path.c_str(), log.line_without_tokens);
    for (const auto* points : {&log.train, &log.val})
        for (const auto& p : *points)
            if (style.log_y && !(p.second > 0))
                fatal_hint("drop --log-y to plot it on a linear scale",
                           "bad loss for --log-y (%s, step %d): expected a loss above 0 on a log scale, got %g",
                           path.c_str(), p.first, p.second);
    PlotRun run;
    run.label = label;
    run.train = plot_points(log.train, log.train_tokens, style.x_tokens);
    run.val = plot_points(log.val, log.val_tokens, style.x_tokens);
    return run;
}

}  // namespace

int cmd_plot(int argc, char** argv) {
    static const std::vector<CliFlag> flags = {
        {"out", "o", "", "the PNG to write (replaces only a PNG)"},
        {"labels", "", "", "comma list naming the runs in the legend, one per log (default: file names)"},
        {"width", "", "800", "image width in pixels"},
        {"height", "", "500", "image height in pixels"},
        {"smooth", "", "0", "train loss as a moving average of this weight, 0..0.999 as TensorBoard's (0: raw)"},
        {"log-y", "", "", "a log-scale loss axis (every loss must be above 0)", true},
        {"x", "", "step", "the x axis: step, or tokens trained on (logs written before \"tokens\" have none)"},
    };
    CliArgs args = cli_parse(argc, argv, "plot",
                             "gpt2 plot --out PNG [--labels A,B,...] [--smooth 0.9] [--log-y] [--x step|tokens] "
                             "LOG.jsonl...",
                             "Draws the train and val loss of one or more `train --log` files on one plot, a colour, "
                             "dash pattern and marker per run.",
                             flags, true);
    const std::vector<std::string>& logs = args.positional;
    if (logs.empty()) fatal("missing log file (plot): expected one or more JSON-lines logs written by train --log");
    if (logs.size() > (size_t)kPlotMaxRuns)
        fatal("too many logs (plot): expected at most %d, got %zu", kPlotMaxRuns, logs.size());
    const std::string out = args.str("out");
    const int width = (int)args.integer_in("width", 100, 16384);
    const int height = (int)args.integer_in("height", 100, 16384);

    PlotStyle style;
    style.smooth = args.number_in("smooth", 0, 0.999);
    style.log_y = args.on("log-y");
    const std::string x = args.str("x");
    if (x != "step" && x != "tokens") fatal("bad value for --x (plot): expected step or tokens, got '%s'", x.c_str());
    style.x_tokens = x == "tokens";
    const std::vector<std::string> labels = run_labels(args, logs);
    plot_check_path(out, "--out (plot)", true);
    PathLock lock(out, "--out (plot)");  // makes --out's missing directories, removed again if the plot fails

    std::vector<PlotRun> runs;
    for (size_t i = 0; i < logs.size(); i++) runs.push_back(plot_run(logs[i], labels[i], style));
    plot_losses(out, runs, width, height, "--out (plot)", style);
    size_t points = 0;
    for (const PlotRun& r : runs) points += r.train.size() + r.val.size();
    printf("wrote %s (%dx%d, %zu runs, %zu points)\n", out.c_str(), width, height, runs.size(), points);
    return 0;
}
