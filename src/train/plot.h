// plot.h: a loss plot as a PNG: train loss (thin line) and val loss (thicker line with markers) against
// step, for one run or several on shared axes, with ticks, numeric tick labels, axis labels and a legend.
// Text comes from stb_easy_font's quads, rasterised here; the PNG is encoded in memory by stb_image_write
// and written atomically. It does not pick log scales or smooth curves. Non-finite points are skipped (the
// line breaks there).
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

// One run's curves: (step, loss) in the order given; either may be empty. `label` names the run in the
// legend ("LABEL  train  val"); empty for the plain "train  val" of a single run.
struct PlotRun {
    std::string label;
    std::vector<std::pair<int, float>> train, val;
};

// Renders the plot of 1..kPlotMaxRuns runs into a width x height RGB image (3 bytes per pixel, rows top to
// bottom). All runs share the axes; the legend has one row per run.
std::vector<uint8_t> plot_render(const std::vector<PlotRun>& runs, int width, int height);

// Renders and writes a PNG to `path` atomically (never a half-written file); fatal naming `path` if the
// write fails.
// `flag` names the path in messages.
void plot_losses(const std::string& path, const std::vector<PlotRun>& runs, int width = 800, int height = 500,
                 const char* flag = "--plot");

// Checks, before any work, that `path` may receive a plot: its directory exists, and output_check accepts
// it as a PNG (gpt2 replaces only its own kind: never a link, a device or another kind of file). `flag` names it in errors, e.g.
// "--plot (train)".
void plot_check_path(const std::string& path, const char* flag);
