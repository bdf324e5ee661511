// plot.h: a loss plot as a PNG: train loss (thin line) and val loss (thicker line with markers) against
// step or tokens, for one run or several on shared axes, with ticks, numeric tick labels, axis labels and
// a legend; optionally the train loss smoothed as TensorBoard does, and a log-scale y axis. Text comes from
// stb_easy_font's quads, rasterised here; the PNG is encoded in memory by stb_image_write and written
// atomically. Non-finite points (and on a log scale, losses not above 0) are skipped: the line breaks there.
//
// train saves it as loss.png in --out with each checkpoint, or to --plot FILE at each validation. `gpt2 plot`
// (cli/plot_cmd.cpp) draws the --log files of up to 8 runs on one plot, a legend row per run naming it (its file name
// without the extension, or --labels), each run with its own colour, dash pattern and val marker so that two runs
// that agree (fp32 and bf16) both stay visible: --smooth 0.9 (TensorBoard's bias-corrected moving average over the
// raw curve in a faint tint), --log-y, and --x tokens to compare runs of different batch sizes (each log line's
// "tokens"; logs written before version 0.4 lack it, and plot says so). A log may hold train or val points only; a
// step logged twice (a resumed run repeats the steps after its checkpoint) keeps its later value. A missing or empty
// log, or a line that is not a JSON object with an integer step and a number loss or val_loss, is an error naming the
// file (and line), and no PNG is written.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

// A single run keeps two colours: train blue, val orange.
const uint8_t kPlotTrainRgb[3] = {31, 119, 180};  // blue
const uint8_t kPlotValRgb[3] = {230, 97, 1};      // orange
// With several runs each has one colour for both its curves (train thin, val thick with markers): run i
// takes kPlotPalette[i]. Exposed so tests can look for them in the rendered image.
const int kPlotMaxRuns = 8;
const uint8_t kPlotPalette[kPlotMaxRuns][3] = {
    {31, 119, 180},  // blue
    {230, 97, 1},    // orange
    {40, 150, 40},   // green
    {200, 30, 40},   // red
    {130, 80, 180},  // purple
    {140, 90, 60},   // brown
    {220, 60, 170},  // pink
    {20, 170, 190},  // teal
};

// Besides its colour, run i of several draws its lines with its own dash pattern and its val points with
// its own marker shape (run 0 solid, with discs), so a run drawn over an identical one still shows through
// the gaps; the legend shows both.

// One run's curves: (x, loss) in the order given, x the step or the tokens trained on; either may be
// empty. `label` names the run in the legend ("LABEL  train  val"); empty for the plain "train  val" of a
// single run.
struct PlotRun {
    std::string label;
    std::vector<std::pair<double, float>> train, val;

    PlotRun() = default;
    // Curves against the step, as the trainer keeps them.
    PlotRun(std::string label, const std::vector<std::pair<int, float>>& train,
            const std::vector<std::pair<int, float>>& val);
};

// How the curves are drawn; the default is the trainer's plot.
struct PlotStyle {
    // Train loss as an exponential moving average with this weight, 0 <= smooth < 1 (0: raw), bias-corrected
    // at the start as TensorBoard does, over the raw curve in a faint tint of its colour.
    double smooth = 0;
    bool log_y = false;     // a log-scale loss axis
    bool x_tokens = false;  // x is tokens trained on ("tokens", ticks 500K, 1.2M, 3.4B), not "step"
};

// TensorBoard's smoothing of a curve: an exponential moving average of its finite points with weight w
// (0 <= w < 1), divided by 1 - w^n after n points so that the first ones are not pulled toward the
// average's start at 0. A non-finite point stays as it is (a gap in the line) and is not averaged in.
std::vector<std::pair<double, float>> plot_smooth(const std::vector<std::pair<double, float>>& pts, double w);

// Renders the plot of 1..kPlotMaxRuns runs into a width x height RGB image (3 bytes per pixel, rows top to
// bottom). All runs share the axes; the legend has one row per run.
std::vector<uint8_t> plot_render(const std::vector<PlotRun>& runs, int width, int height,
                                 const PlotStyle& style = PlotStyle());

// Renders and writes a PNG to `path` atomically (never a half-written file); fatal naming `path` if the
// write fails.
// `flag` names the path in messages.
void plot_losses(const std::string& path, const std::vector<PlotRun>& runs, int width = 800, int height = 500,
                 const char* flag = "--plot", const PlotStyle& style = PlotStyle());

// Checks, before any work, that `path` may receive a plot: its directory exists (or make_dirs: the caller
// makes it, e.g. with a PathLock), and output_check accepts it as a PNG (gpt2 replaces only its own kind:
// never a link, a device or another kind of file). `flag` names it in errors, e.g. "--plot (train)".
void plot_check_path(const std::string& path, const char* flag, bool make_dirs = false);
