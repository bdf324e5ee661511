// plot_cmd.cpp: the `plot` command: several runs' --log files (JSON lines) drawn on one loss plot, e.g. an
// fp32 and a bf16 run of the same model. Every log is read and checked before the PNG is written, so a bad
// one leaves no output. Reading logs lives in train/trainer.h, drawing in train/plot.h.
#include <cstdio>
#include <string>
#include <vector>

#include "base/util.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "train/plot.h"
#include "train/run_log.h"

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

}  // namespace

int cmd_plot(int argc, char** argv) {
    static const std::vector<CliFlag> flags = {
        {"out", "o", "", "the PNG to write (replaces only a PNG)"},
        {"labels", "", "", "comma list naming the runs in the legend, one per log (default: file names)"},
        {"width", "", "800", "image width in pixels"},
        {"height", "", "500", "image height in pixels"},
    };
    CliArgs args = cli_parse(argc, argv, "plot", "gpt2 plot --out PNG [--labels A,B,...] LOG.jsonl...",
                             "Draws the train and val loss of one or more `train --log` files on one plot, a colour "
                             "per run.",
                             flags, true);
    const std::vector<std::string>& logs = args.positional;
    if (logs.empty()) fatal("missing log file (plot): expected one or more JSON-lines logs written by train --log");
    if (logs.size() > (size_t)kPlotMaxRuns)
        fatal("too many logs (plot): expected at most %d, got %zu", kPlotMaxRuns, logs.size());
    const std::string out = args.str("out");
    const int width = (int)args.integer_in("width", 100, 16384);
    const int height = (int)args.integer_in("height", 100, 16384);

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
    plot_check_path(out, "--out (plot)");
    PathLock lock(out, "--out (plot)");

    std::vector<PlotRun> runs;
    for (size_t i = 0; i < logs.size(); i++) {
        const LossHistory h = run_log_read(logs[i]);
        runs.push_back({labels[i], h.train, h.val});
    }
    plot_losses(out, runs, width, height, "--out (plot)");
    size_t points = 0;
    for (const PlotRun& r : runs) points += r.train.size() + r.val.size();
    printf("wrote %s (%dx%d, %zu runs, %zu points)\n", out.c_str(), width, height, runs.size(), points);
    return 0;
}
