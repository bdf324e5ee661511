// plot.h: a loss plot as a PNG: train loss (thin line) and val loss (thicker line with markers) against
// step, with axes, ticks, numeric tick labels, axis labels and a legend. Text comes from stb_easy_font's
// quads, rasterised here; the PNG is encoded in memory by stb_image_write and written atomically.
// It does not pick log scales or smooth curves. Non-finite points are skipped (the line breaks there).
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

// Series colours (RGB), exposed so tests can look for them in the rendered image.
const uint8_t kPlotTrainRgb[3] = {31, 119, 180};  // blue
const uint8_t kPlotValRgb[3] = {230, 97, 1};      // orange

// Renders the plot into a width x height RGB image (3 bytes per pixel, rows top to bottom).
// Each series is (step, loss) in the order given. Either series may be empty.
std::vector<uint8_t> plot_render(const std::vector<std::pair<int, float>>& train,
                                 const std::vector<std::pair<int, float>>& val, int width, int height);

// Renders and writes a PNG to `path` atomically (never a half-written file); fatal naming `path` if the
// write fails.
void plot_losses(const std::string& path, const std::vector<std::pair<int, float>>& train,
                 const std::vector<std::pair<int, float>>& val, int width = 800, int height = 500);
