// test_plot.cpp: the loss plot: a valid PNG of the stated size (signature and IHDR), written atomically,
// with both series' colours present in the rendered image, and no crash on the edge cases (empty series,
// one point, NaN/Inf, constant loss, huge values).
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "base/util.h"
#include "test.h"
#include "train/plot.h"

namespace {

using Series = std::vector<std::pair<int, float>>;

std::string plot_tmp(const std::string& name) { return "/tmp/gpt2_test_" + std::to_string(getpid()) + "_" + name; }

uint32_t be32(const uint8_t* p) { return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]; }

// Pixels of exactly colour c inside the rectangle [x0, x1) x [y0, y1).
int count_rgb(const std::vector<uint8_t>& img, int w, const uint8_t c[3], int x0, int y0, int x1, int y1) {
    int n = 0;
    for (int y = y0; y < y1; y++)
        for (int x = x0; x < x1; x++) {
            const uint8_t* p = &img[((size_t)y * w + x) * 3];
            n += p[0] == c[0] && p[1] == c[1] && p[2] == c[2];
        }
    return n;
}

// Non-white pixels.
int count_ink(const std::vector<uint8_t>& img) {
    int n = 0;
    for (size_t i = 0; i < img.size(); i += 3) n += !(img[i] == 255 && img[i + 1] == 255 && img[i + 2] == 255);
    return n;
}

Series decaying(int n, int every, float start) {
    Series s;
    for (int i = 0; i < n; i += every)
        s.push_back({i, start * std::exp(-i / 300.0f) + 2.0f + 0.1f * std::sin(i * 0.3f)});
    return s;
}

}  // namespace

TEST(plot_png_signature_and_size) {
    std::string path = plot_tmp("loss.png");
    plot_losses(path, decaying(1000, 1, 9.0f), decaying(1000, 50, 9.5f), 640, 400);
    std::vector<uint8_t> png = file_read(path);
    const uint8_t sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    CHECK(png.size() > 33);
    if (png.size() <= 33) return;
    CHECK(memcmp(png.data(), sig, 8) == 0);
    // The first chunk is IHDR: length 13, then width and height big-endian, bit depth 8, colour type 2 (RGB).
    CHECK(be32(&png[8]) == 13);
    CHECK(memcmp(&png[12], "IHDR", 4) == 0);
    CHECK(be32(&png[16]) == 640);
    CHECK(be32(&png[20]) == 400);
    CHECK(png[24] == 8);
    CHECK(png[25] == 2);
    CHECK(memcmp(&png[png.size() - 8], "IEND", 4) == 0);
    // No temporary left beside it.
    CHECK(!file_exists(path + ".tmp." + std::to_string(getpid())));
    unlink(path.c_str());
}

TEST(plot_default_size_and_overwrite) {
    std::string path = plot_tmp("loss_default.png");
    plot_losses(path, decaying(10, 1, 5.0f), {});
    plot_losses(path, decaying(20, 1, 5.0f), decaying(20, 5, 5.0f));  // refreshed in place
    std::vector<uint8_t> png = file_read(path);
    CHECK(png.size() > 24 && be32(&png[16]) == 800 && be32(&png[20]) == 500);
    unlink(path.c_str());
}

TEST(plot_render_has_both_series) {
    const int w = 800, h = 500;
    std::vector<uint8_t> img = plot_render(decaying(2000, 1, 8.0f), decaying(2000, 100, 8.5f), w, h);
    CHECK(img.size() == (size_t)w * h * 3);
    // The legend sits above y = 40; the curves are drawn below it.
    CHECK(count_rgb(img, w, kPlotTrainRgb, 0, 40, w, h) > 300);
    CHECK(count_rgb(img, w, kPlotValRgb, 0, 40, w, h) > 300);
    // Legend samples in both colours in the top strip.
    CHECK(count_rgb(img, w, kPlotTrainRgb, 0, 0, w, 40) > 10);
    CHECK(count_rgb(img, w, kPlotValRgb, 0, 0, w, 40) > 10);
    // Black ink for axes, ticks and labels (text on both axes: left and bottom strips).
    const uint8_t black[3] = {0, 0, 0};
    CHECK(count_rgb(img, w, black, 0, 0, 60, h) > 100);
    CHECK(count_rgb(img, w, black, 0, h - 50, w, h) > 100);
}

TEST(plot_edge_cases) {
    const int w = 400, h = 300;
    const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
    std::vector<Series> cases_train = {
        {},                                                     // nothing at all: empty axes
        {{0, 3.5f}},                                            // a single point
        {{0, 2.0f}, {1, 2.0f}, {2, 2.0f}},                      // constant loss
        {{0, nan}, {1, inf}, {2, -inf}},                        // nothing finite
        {{0, 5.0f}, {1, nan}, {2, 4.0f}, {3, inf}, {4, 3.0f}},  // gaps
        {{0, 1e30f}, {1, -1e30f}, {2, 0.0f}},                   // huge range
        {{5, 0.0f}, {5, 0.0f}},                                 // repeated step, zero loss
        {{0, 3.0f}, {1, 3.0000002f}},                           // flat to float precision
        {{2000000000, 1.0f}, {-2000000000, 2.0f}},              // extreme steps
    };
    for (size_t i = 0; i < cases_train.size(); i++) {
        std::vector<uint8_t> img = plot_render(cases_train[i], {}, w, h);
        CHECK(img.size() == (size_t)w * h * 3);
        CHECK(count_ink(img) > 500);  // axes and labels at least
        std::vector<uint8_t> img2 = plot_render({}, cases_train[i], w, h);
        CHECK(img2.size() == (size_t)w * h * 3);
    }
    // A lone finite point shows up.
    std::vector<uint8_t> one = plot_render({{10, 3.0f}}, {{10, 3.2f}}, w, h);
    CHECK(count_rgb(one, w, kPlotTrainRgb, 0, 40, w, h) >= 1);
    CHECK(count_rgb(one, w, kPlotValRgb, 0, 40, w, h) > 10);
}
