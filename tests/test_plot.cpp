// test_plot.cpp: the loss plot: a valid PNG of the stated size (signature and IHDR), written atomically,
// with both series' colours present in the rendered image, each run of several in its own colour with its
// own legend row, and no crash on the edge cases (empty series, one point, NaN/Inf, constant loss, huge
// values). Also run_log_read, which reads --log files back for `gpt2 plot`.
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "platform/platform.h"
#include "platform/output_files.h"
#include "platform/util.h"
#include "test.h"
#include "report/plot.h"
#include "formats/train_state.h"
#include "report/run_log.h"

namespace {

using Series = std::vector<std::pair<int, float>>;

std::string plot_tmp(const std::string& name) { return "/tmp/gpt2_test_" + std::to_string(os_getpid()) + "_" + name; }

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

// One unlabelled run: the trainer's plot.
std::vector<PlotRun> one_run(const Series& train, const Series& val) { return {{"", train, val}}; }

Series decaying(int n, int every, float start) {
    Series s;
    for (int i = 0; i < n; i += every)
        s.push_back({i, start * std::exp(-i / 300.0f) + 2.0f + 0.1f * std::sin(i * 0.3f)});
    return s;
}

}  // namespace

TEST(plot_png_signature_and_size) {
    std::string path = plot_tmp("loss.png");
    plot_losses(path, one_run(decaying(1000, 1, 9.0f), decaying(1000, 50, 9.5f)), 640, 400);
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
    CHECK(!file_exists(path + ".tmp." + std::to_string(os_getpid())));
    os_unlink(path.c_str());
}

TEST(plot_default_size_and_overwrite) {
    std::string path = plot_tmp("loss_default.png");
    plot_losses(path, one_run(decaying(10, 1, 5.0f), {}));
    plot_losses(path, one_run(decaying(20, 1, 5.0f), decaying(20, 5, 5.0f)));  // refreshed in place
    std::vector<uint8_t> png = file_read(path);
    CHECK(png.size() > 24 && be32(&png[16]) == 800 && be32(&png[20]) == 500);
    os_unlink(path.c_str());
}

TEST(plot_render_has_both_series) {
    const int w = 800, h = 500;
    std::vector<uint8_t> img = plot_render(one_run(decaying(2000, 1, 8.0f), decaying(2000, 100, 8.5f)), w, h);
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
        std::vector<uint8_t> img = plot_render(one_run(cases_train[i], {}), w, h);
        CHECK(img.size() == (size_t)w * h * 3);
        CHECK(count_ink(img) > 500);  // axes and labels at least
        std::vector<uint8_t> img2 = plot_render(one_run({}, cases_train[i]), w, h);
        CHECK(img2.size() == (size_t)w * h * 3);
    }
    // A lone finite point shows up.
    std::vector<uint8_t> one = plot_render(one_run({{10, 3.0f}}, {{10, 3.2f}}), w, h);
    CHECK(count_rgb(one, w, kPlotTrainRgb, 0, 40, w, h) >= 1);
    CHECK(count_rgb(one, w, kPlotValRgb, 0, 40, w, h) > 10);
}

// At 800x500 the font scale is 2: glyphs 14 pixels tall, legend rows 22 pixels apart from y = 8.
const int kRowTop = 8, kRowH = 22, kGlyphH = 14;

TEST(plot_runs_each_in_own_colour) {
    const int w = 800, h = 500;
    const int n = kPlotMaxRuns;
    std::vector<PlotRun> runs;
    for (int r = 0; r < n; r++)
        runs.push_back({"run" + std::to_string(r), decaying(2000, 1, 8.0f + r), decaying(2000, 100, 8.5f + r)});
    std::vector<uint8_t> img = plot_render(runs, w, h);
    CHECK(img.size() == (size_t)w * h * 3);
    const int top = kRowTop + n * kRowH + 8;  // the plot area starts below the legend
    for (int r = 0; r < n; r++) {
        // Both curves of run r in its colour, and a legend sample of it in row r (not in other rows).
        CHECK(count_rgb(img, w, kPlotPalette[r], 0, top, w, h) > 300);
        const int y0 = kRowTop + r * kRowH;
        CHECK(count_rgb(img, w, kPlotPalette[r], 0, y0, w, y0 + kGlyphH) > 20);
        CHECK(count_rgb(img, w, kPlotPalette[r], 0, 0, w, y0) == 0);
        CHECK(count_rgb(img, w, kPlotPalette[r], 0, y0 + kRowH, w, top - 8) == 0);
    }
}

TEST(plot_runs_val_takes_run_colour) {
    // With two runs, run 0's val curve is in run 0's colour (blue), not the single-run val orange, which is
    // run 1's colour; run 1 here has train points only.
    const int w = 800, h = 500;
    std::vector<PlotRun> runs = {{"a", {}, decaying(2000, 100, 8.0f)}, {"b", decaying(2000, 1, 3.0f), {}}};
    std::vector<uint8_t> img = plot_render(runs, w, h);
    const int top = kRowTop + 2 * kRowH + 8;
    CHECK(count_rgb(img, w, kPlotPalette[0], 0, top, w, h) > 300);
    CHECK(count_rgb(img, w, kPlotPalette[1], 0, top, w, h) > 300);
    // The val curve (top left, loss near 10) is blue: no orange in the plot's upper half.
    CHECK(count_rgb(img, w, kPlotPalette[1], 0, top, w, (top + h) / 2 - 40) == 0);
    CHECK(count_rgb(img, w, kPlotPalette[0], 0, top, w, (top + h) / 2 - 40) > 100);
}

TEST(plot_runs_with_nan_points) {
    const int w = 800, h = 500;
    const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
    Series gappy = decaying(2000, 1, 8.0f);
    for (size_t i = 0; i < gappy.size(); i += 7) gappy[i].second = nan;
    gappy[100].second = inf;
    std::vector<PlotRun> runs = {{"fp32", decaying(2000, 1, 8.0f), decaying(2000, 100, 8.5f)},
                                 {"bf16", gappy, {{0, nan}, {100, 7.0f}, {200, nan}, {300, 6.0f}, {400, 5.5f}}},
                                 {"nothing", {{0, nan}, {1, inf}}, {}}};
    std::vector<uint8_t> img = plot_render(runs, w, h);
    CHECK(img.size() == (size_t)w * h * 3);
    const int top = kRowTop + 3 * kRowH + 8;
    CHECK(count_rgb(img, w, kPlotPalette[0], 0, top, w, h) > 300);
    CHECK(count_rgb(img, w, kPlotPalette[1], 0, top, w, h) > 300);
    // The run without a finite point draws no curve, but keeps its legend row.
    CHECK(count_rgb(img, w, kPlotPalette[2], 0, top, w, h) == 0);
    CHECK(count_rgb(img, w, kPlotPalette[2], 0, kRowTop + 2 * kRowH, w, kRowTop + 2 * kRowH + kGlyphH) > 10);
}

TEST(plot_long_labels_stay_inside) {
    const int w = 400, h = 300;  // font scale 1: rows 15 pixels apart
    const std::string long_label(200, 'x');
    std::vector<PlotRun> runs = {{long_label, decaying(100, 1, 5.0f), decaying(100, 10, 5.0f)},
                                 {"short", decaying(100, 1, 4.0f), {}}};
    std::vector<uint8_t> img = plot_render(runs, w, h);
    const uint8_t black[3] = {0, 0, 0};
    CHECK(count_rgb(img, w, black, 0, 0, 8, 38) == 0);   // nothing left of the legend's margin
    CHECK(count_rgb(img, w, black, 8, 0, w, 38) > 100);  // but the (cut) labels are there
}

TEST(log_read_points_sorted_last_wins) {
    std::string path = plot_tmp("run.jsonl");
    const std::string text =
        "{\"step\":1,\"loss\":5.5,\"lr\":1e-3,\"norm\":1.0,\"ms\":2.0}\n"
        "{\"step\":2,\"loss\":5.0,\"lr\":1e-3,\"norm\":1.0,\"ms\":2.0}\n"
        "{\"step\":2,\"val_loss\":5.25}\n"
        "\n"
        "{\"step\":3,\"loss\":4.5}\n"
        "{\"step\":2,\"loss\":4.75}\r\n"  // a resumed run repeats step 2: the later value stays
        "{\"step\":0,\"loss\":6}";        // no final newline
    const OutputKind any = {"a test file", [](const std::string&) { return true; }};
    output_write(path, "test", any, {{text.data(), text.size()}});
    LossHistory hist = run_log_read(path);
    CHECK(hist.train.size() == 4);
    if (hist.train.size() == 4) {
        CHECK(hist.train[0].first == 0 && hist.train[0].second == 6.0f);
        CHECK(hist.train[1].first == 1 && hist.train[1].second == 5.5f);
        CHECK(hist.train[2].first == 2 && hist.train[2].second == 4.75f);
        CHECK(hist.train[3].first == 3 && hist.train[3].second == 4.5f);
    }
    CHECK(hist.val.size() == 1 && hist.val[0].first == 2 && hist.val[0].second == 5.25f);
    const std::string val_only = "{\"step\":50,\"val_loss\":3.5}\n{\"step\":100,\"val_loss\":3.25}\n";
    inputs_forget();  // run_log_read made it an input; this test rewrites it
    output_write(path, "test", any, {{val_only.data(), val_only.size()}});
    hist = run_log_read(path);
    CHECK(hist.train.empty() && hist.val.size() == 2);
    os_unlink(path.c_str());
}

// The pixels of colour c below the legend of `runs` legend rows: their x range, and the mean y of those in
// the column halfway along it.
struct Trace {
    int n = 0, x0 = 1 << 30, x1 = -1, y0 = 1 << 30, y1 = -1;
    double mid_y = -1;
};
static Trace trace_of(const std::vector<uint8_t>& img, int w, int h, const uint8_t c[3], int rows) {
    Trace t;
    const int top = kRowTop + rows * kRowH + 8;
    auto is_c = [&](int x, int y) {
        const uint8_t* p = &img[((size_t)y * w + x) * 3];
        return p[0] == c[0] && p[1] == c[1] && p[2] == c[2];
    };
    for (int y = top; y < h; y++)
        for (int x = 0; x < w; x++)
            if (is_c(x, y))
                t.n++, t.x0 = std::min(t.x0, x), t.x1 = std::max(t.x1, x), t.y0 = std::min(t.y0, y),
                       t.y1 = std::max(t.y1, y);
    double sum = 0;
    int k = 0;
    for (int y = top; y < h; y++)
        if (t.n && is_c((t.x0 + t.x1) / 2, y)) sum += y, k++;
    if (k) t.mid_y = sum / k;
    return t;
}

TEST(plot_smooth_is_debiased_moving_average) {
    // Reference: after n finite points the smoothed value is sum_i w^(n-i) x_i / sum_i w^(n-i).
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const std::vector<std::pair<double, float>> pts = {{1, 5.0f}, {2, 3.0f}, {3, nan}, {4, 4.0f}, {5, 1.5f}};
    for (double w : {0.0, 0.5, 0.9, 0.99}) {
        const std::vector<std::pair<double, float>> out = plot_smooth(pts, w);
        CHECK(out.size() == pts.size());
        double num = 0, den = 0;
        for (size_t i = 0; i < pts.size() && out.size() == pts.size(); i++) {
            CHECK(out[i].first == pts[i].first);
            if (!std::isfinite(pts[i].second)) {
                CHECK(std::isnan(out[i].second));  // a gap stays a gap
                continue;
            }
            num = w * num + pts[i].second, den = w * den + 1;
            CHECK(std::fabs(out[i].second - num / den) <= 1e-6 * std::fabs(num / den));
        }
    }
    // A constant curve stays where it is from its first point: no ramp up from 0.
    for (const auto& p : plot_smooth({{0, 7.5f}, {1, 7.5f}, {2, 7.5f}}, 0.9)) CHECK(std::fabs(p.second - 7.5f) < 1e-5f);
}

TEST(plot_smooth_draws_raw_curve_in_tint) {
    const int w = 800, h = 500;
    auto tint = [](const uint8_t c[3]) {  // 70% white
        std::vector<uint8_t> t(3);
        for (int i = 0; i < 3; i++) t[i] = (uint8_t)(c[i] + (255 - c[i]) * 7 / 10);
        return t;
    };
    const std::vector<uint8_t> faint = tint(kPlotTrainRgb);
    PlotStyle smooth;
    smooth.smooth = 0.9;
    const std::vector<uint8_t> img = plot_render(one_run(decaying(2000, 1, 8.0f), {}), w, h, smooth);
    CHECK(trace_of(img, w, h, faint.data(), 1).n > 300);   // the raw curve, faint
    CHECK(trace_of(img, w, h, kPlotTrainRgb, 1).n > 300);  // the smoothed one over it
    const std::vector<uint8_t> raw = plot_render(one_run(decaying(2000, 1, 8.0f), {}), w, h);
    CHECK(trace_of(raw, w, h, faint.data(), 1).n == 0);
}

TEST(plot_log_y_puts_decades_evenly) {
    // Losses 100, 10, 1 at steps 1, 2, 3: on a log axis the middle point sits halfway down, on a linear
    // one a tenth of the way up from the bottom.
    const int w = 800, h = 500;
    const Series pts = {{1, 100.0f}, {2, 10.0f}, {3, 1.0f}};
    PlotStyle log_y;
    log_y.log_y = true;
    for (bool log : {true, false}) {
        const Trace t =
            trace_of(plot_render(one_run(pts, {}), w, h, log ? log_y : PlotStyle()), w, h, kPlotTrainRgb, 1);
        CHECK(t.n > 100 && t.mid_y >= 0);
        const double up = (t.y1 - t.mid_y) / (t.y1 - t.y0);  // 0 at loss 1, 1 at loss 100
        CHECK(log ? std::fabs(up - 0.5) < 0.03 : std::fabs(up - 9.0 / 99) < 0.03);
    }
}

TEST(plot_identical_runs_both_show) {
    // Two runs with the same points (fp32 and bf16 agreeing): the second is drawn dashed with hollow
    // markers, so the first shows through along the whole curve, not only in the legend.
    const int w = 800, h = 500;
    const std::vector<PlotRun> runs = {{"fp32", decaying(2000, 1, 8.0f), decaying(2000, 100, 8.5f)},
                                       {"bf16", decaying(2000, 1, 8.0f), decaying(2000, 100, 8.5f)}};
    const std::vector<uint8_t> img = plot_render(runs, w, h);
    for (int r = 0; r < 2; r++) {
        const Trace t = trace_of(img, w, h, kPlotPalette[r], 2);
        CHECK(t.n > 1000);
        CHECK(t.x1 - t.x0 > w / 2);
    }
}
