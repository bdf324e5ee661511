// plot.cpp: see plot.h. A tiny software rasteriser: filled rectangles, square-brush lines (Bresenham),
// filled discs and marker shapes, and text from stb_easy_font, whose glyphs are axis-aligned quads and so
// are filled as rectangles (rotated a quarter turn for the y-axis label). No anti-aliasing: series keep
// their exact colours (and a smoothed run's raw curve an exact tint of its colour), which the tests rely
// on. Reference: stb_easy_font.h and stb_image_write.h (libstb-dev).
#include "report/plot.h"


#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <utility>

#include "platform/output_files.h"
#include "platform/util.h"

// stb headers trip -Wall -Wextra (unused static helpers, missing initialisers); they are not ours.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include <stb/stb_easy_font.h>
// The one definition of stb_image_write in the project. No stdio: every PNG goes through output_files.h.
#define STB_IMAGE_WRITE_IMPLEMENTATION
#define STBI_WRITE_NO_STDIO
#include <stb/stb_image_write.h>
#pragma GCC diagnostic pop

namespace {

struct Rgb {
    uint8_t r, g, b;
};
const Rgb kBlack = {0, 0, 0};
const Rgb kGrid = {225, 225, 225};

Rgb rgb_of(const uint8_t c[3]) { return {c[0], c[1], c[2]}; }
// c mixed with 70% white: the raw curve under a smoothed one.
Rgb tint(Rgb c) {
    auto mix = [](uint8_t v) { return (uint8_t)(v + (255 - v) * 7 / 10); };
    return {mix(c.r), mix(c.g), mix(c.b)};
}

// Run i's dash pattern, one character per brush width along the line ('-' drawn, ' ' skipped), and its
// val marker. Outlines and gaps leave what is under them visible, so identical runs do not hide each other.
const char* const kDash[kPlotMaxRuns] = {
    "-", "------    ", "--  ", "------  --  ", "---   ", "----------  ", "------  --  --  ", "-   "};
enum Marker { kDisc, kSquareOutline, kTriangle, kCross, kDiamondOutline, kPlus, kRing, kTriangleOutline };

struct Canvas {
    int w, h;
    std::vector<uint8_t> rgb;  // (h, w, 3)

    Canvas(int w_, int h_) : w(w_), h(h_), rgb((size_t)w_ * h_ * 3, 255) {}
    void set(int x, int y, Rgb c) {
        if (x < 0 || y < 0 || x >= w || y >= h) return;
        uint8_t* p = &rgb[((size_t)y * w + x) * 3];
        p[0] = c.r, p[1] = c.g, p[2] = c.b;
    }
    // Fills [x0, x1) x [y0, y1), clipped to the canvas.
    void fill_rect(int x0, int y0, int x1, int y1, Rgb c) {
        x0 = std::max(x0, 0), y0 = std::max(y0, 0);
        x1 = std::min(x1, w), y1 = std::min(y1, h);
        for (int y = y0; y < y1; y++)
            for (int x = x0; x < x1; x++) set(x, y, c);
    }
    // A line with a square brush `thick` pixels wide (1 = plain Bresenham). With `dash` (kDash), only the
    // brush positions its pattern marks are drawn; *phase counts positions, so a polyline drawn segment by
    // segment keeps one pattern.
    void line(int x0, int y0, int x1, int y1, int thick, Rgb c, const char* dash = nullptr, int* phase = nullptr) {
        int lo = -(thick - 1) / 2, hi = lo + thick;
        int dx = std::abs(x1 - x0), dy = -std::abs(y1 - y0);
        int sx = x0 < x1 ? 1 : -1, sy = y0 < y1 ? 1 : -1;
        int e = dx + dy;
        const int period = dash ? (int)strlen(dash) : 1;
        for (;;) {
            const bool on = !dash || dash[*phase / thick] == '-';
            if (dash) *phase = (*phase + 1) % (period * thick);
            if (on) fill_rect(x0 + lo, y0 + lo, x0 + hi, y0 + hi, c);
            if (x0 == x1 && y0 == y1) break;
            int e2 = 2 * e;
            if (e2 >= dy) e += dy, x0 += sx;
            if (e2 <= dx) e += dx, y0 += sy;
        }
    }
    void disc(int cx, int cy, int r, Rgb c) {
        for (int y = -r; y <= r; y++)
            for (int x = -r; x <= r; x++)
                if (x * x + y * y <= r * r + r) set(cx + x, cy + y, c);
    }
    // Outlines are 2 pixels wide; each shape spans about (2r+1) x (2r+1) pixels centred on (cx, cy).
    void marker(int cx, int cy, int r, Marker m, Rgb c) {
        auto poly = [&](std::initializer_list<std::pair<int, int>> pts) {  // closed, through the offsets given
            const std::pair<int, int>* prev = pts.end() - 1;
            for (const auto& p : pts)
                line(cx + prev->first, cy + prev->second, cx + p.first, cy + p.second, 2, c), prev = &p;
        };
        switch (m) {
            case kDisc: disc(cx, cy, r, c); break;
            case kSquareOutline: poly({{-r, -r}, {r, -r}, {r, r}, {-r, r}}); break;
            case kTriangle:
                for (int y = -r; y <= r; y++) fill_rect(cx - (y + r) / 2, cy + y, cx + (y + r) / 2 + 1, cy + y + 1, c);
                break;
            case kCross: line(cx - r, cy - r, cx + r, cy + r, 2, c), line(cx - r, cy + r, cx + r, cy - r, 2, c); break;
            case kDiamondOutline: poly({{0, -r}, {r, 0}, {0, r}, {-r, 0}}); break;
            case kPlus: line(cx - r, cy, cx + r, cy, 2, c), line(cx, cy - r, cx, cy + r, 2, c); break;
            case kRing:
                for (int y = -r; y <= r; y++)
                    for (int x = -r; x <= r; x++)
                        if (x * x + y * y <= r * r + r && x * x + y * y > (r - 2) * (r - 2) + r - 2)
                            set(cx + x, cy + y, c);
                break;
            case kTriangleOutline: poly({{0, -r}, {r, r}, {-r, r}}); break;
        }
    }
};

// ---------------------------------------------------------------------------------------------------------
// Text. stb_easy_font lays glyphs out in font units (digits are 7 units tall, advance about 6); we scale
// each unit to `scale` pixels.

const int kGlyphHeight = 7;

int text_width(const std::string& s, int scale) {
    std::string copy = s;  // stb_easy_font takes char*
    return stb_easy_font_width(&copy[0]) * scale;
}

// Draws `s` (printable ASCII only) with its top-left corner at (x, y). With `upward`, the text is turned a
// quarter turn counterclockwise and reads bottom to top; (x, y) is then its bottom-left corner.
void draw_text(Canvas* cv, int x, int y, const std::string& s, int scale, Rgb c, bool upward = false) {
    std::string copy;
    for (char ch : s) copy += (ch >= 32 && ch < 127) ? ch : '?';
    // 16 bytes per vertex, 4 vertices per quad; glyphs use at most ~20 quads.
    std::vector<float> vbuf(copy.size() * 32 * 16 + 16);
    int quads = stb_easy_font_print(0, 0, &copy[0], nullptr, vbuf.data(), (int)(vbuf.size() * sizeof(float)));
    for (int q = 0; q < quads; q++) {
        const float* v = &vbuf[(size_t)q * 16];  // vertices 0 and 2 are opposite corners
        int u0 = (int)std::lround(std::min(v[0], v[8])), u1 = (int)std::lround(std::max(v[0], v[8]));
        int w0 = (int)std::lround(std::min(v[1], v[9])), w1 = (int)std::lround(std::max(v[1], v[9]));
        if (!upward) cv->fill_rect(x + u0 * scale, y + w0 * scale, x + u1 * scale, y + w1 * scale, c);
        else  // font (u, w) -> pixel (x + w, y - u)
            cv->fill_rect(x + w0 * scale, y - u1 * scale + 1, x + w1 * scale, y - u0 * scale + 1, c);
    }
}

// ---------------------------------------------------------------------------------------------------------
// Axes.

struct Axis {
    double lo, hi;                    // the drawn range; on a log axis its log10
    bool log = false;                 // positions by log10 of the value
    std::vector<double> ticks;        // values, lo to hi
    std::vector<std::string> labels;  // one per tick
    // Where v falls along the axis: 0 at lo, 1 at hi.
    double frac(double v) const { return ((log ? std::log10(v) : v) - lo) / (hi - lo); }
};

// 1, 2 or 5 x 10^k, the smallest at least span / intervals.
double nice_step(double span, int intervals) {
    double raw = span / intervals;
    double mag = std::pow(10.0, std::floor(std::log10(raw)));
    double f = raw / mag;
    return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * mag;
}

// "%.*f", without a trailing ".0..." once `trim` is set.
std::string format_fixed(double v, int decimals, bool trim) {
    char buf[64];
    snprintf(buf, sizeof(buf), "%.*f", std::min(decimals, 12), v);
    std::string s = buf;
    if (trim && s.find('.') != std::string::npos) {
        while (s.back() == '0') s.pop_back();
        if (s.back() == '.') s.pop_back();
    }
    return s;
}

// v as tokens are counted: 950, 500K, 1.2M, 3.4B, 2T, with the decimals the tick spacing `step` needs.
std::string format_si(double v, double step) {
    static const char* const kSuffix[] = {"", "K", "M", "B", "T"};
    int k = 0;
    while (k < 4 && std::fabs(v) >= std::pow(1000.0, k + 1)) k++;
    const double unit = std::pow(1000.0, k);
    const int decimals = std::max(0, (int)-std::floor(std::log10(step / unit) + 1e-9));
    return format_fixed(v / unit, decimals, true) + kSuffix[k];
}

// A linear axis covering [lo, hi] (lo < hi) with about `intervals` ticks on round numbers. integer_ticks
// keeps the spacing a whole number (steps, tokens); si labels them as format_si does.
Axis axis_make(double lo, double hi, int intervals, bool integer_ticks, bool si) {
    double step = nice_step(hi - lo, intervals);
    if (integer_ticks) step = std::max(1.0, std::round(step));
    Axis a;
    a.lo = std::floor(lo / step) * step;
    a.hi = std::ceil(hi / step) * step;
    if (a.hi <= a.lo) a.hi = a.lo + step;
    const int decimals = integer_ticks ? 0 : std::max(0, (int)-std::floor(std::log10(step) + 1e-9));
    const bool huge = std::max(std::fabs(a.lo), std::fabs(a.hi)) >= 1e7;
    const int n = (int)std::lround((a.hi - a.lo) / step) + 1;
    for (int i = 0; i < n; i++) {
        double v = a.lo + i * step;
        if (std::fabs(v) < step * 1e-6) v = 0;  // no "-0.00"
        char buf[64];
        snprintf(buf, sizeof(buf), "%.3g", v);  // keeps labels short
        a.ticks.push_back(v);
        a.labels.push_back(si ? format_si(v, step) : huge ? buf : format_fixed(v, decimals, false));
    }
    return a;
}

// A log axis over exactly [lo, hi] (0 < lo < hi). Ticks at 1 x 10^k, else at 1, 2 and 5 x 10^k, else at 1..9
// x 10^k, the first of these to put 3 ticks in range (at most 10 labelled: every few decades on a wide range);
// a range too narrow for any of them gets round linear ticks, as a linear axis would.
Axis axis_make_log(double lo, double hi) {
    Axis a;
    a.log = true;
    a.lo = std::log10(lo), a.hi = std::log10(hi);
    static const std::vector<double> kMantissas[] = {{1}, {1, 2, 5}, {1, 2, 3, 4, 5, 6, 7, 8, 9}};
    for (const std::vector<double>& mantissas : kMantissas) {
        std::vector<double> in_range;
        for (int k = (int)std::floor(a.lo); k <= (int)std::ceil(a.hi); k++)
            for (double m : mantissas) {
                const double v = m * std::pow(10.0, k);
                if (v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9)) in_range.push_back(v);
            }
        if (in_range.size() < 3) continue;
        for (size_t i = 0, every = (in_range.size() + 9) / 10; i < in_range.size(); i += every) {
            char buf[64];
            snprintf(buf, sizeof(buf), "%g", in_range[i]);
            a.ticks.push_back(in_range[i]), a.labels.push_back(buf);
        }
        return a;
    }
    const Axis linear = axis_make(lo, hi, 4, false, false);
    for (size_t i = 0; i < linear.ticks.size(); i++)
        if (linear.ticks[i] >= lo && linear.ticks[i] <= hi)
            a.ticks.push_back(linear.ticks[i]), a.labels.push_back(linear.labels[i]);
    return a;
}

// A point drawn at all: a finite loss, above 0 on a log scale.
bool drawable(float loss, bool log_y) { return std::isfinite(loss) && (!log_y || loss > 0); }

// Range of the drawable points of every series: x in [*xlo, *xhi], losses in [*ylo, *yhi]. False if none.
bool data_range(const std::vector<PlotRun>& runs, bool log_y, double* xlo, double* xhi, double* ylo, double* yhi) {
    bool any = false;
    for (const PlotRun& run : runs)
        for (const auto* s : {&run.train, &run.val})
            for (const auto& p : *s) {
                if (!drawable(p.second, log_y)) continue;
                if (!any) *xlo = *xhi = p.first, *ylo = *yhi = p.second, any = true;
                *xlo = std::min(*xlo, p.first), *xhi = std::max(*xhi, p.first);
                *ylo = std::min(*ylo, (double)p.second), *yhi = std::max(*yhi, (double)p.second);
            }
    return any;
}

// `s` cut at the end (marked "..") until it is at most max_w pixels wide; "" if not even ".." fits.
std::string text_fit(const std::string& s, int max_w, int scale) {
    if (text_width(s, scale) <= max_w) return s;
    std::string cut = s;
    while (!cut.empty() && text_width(cut + "..", scale) > max_w) cut.pop_back();
    return text_width(cut + "..", scale) <= max_w ? cut + ".." : "";
}

// ---------------------------------------------------------------------------------------------------------
// The plot: its frame, then grid, series, axes and legend, each drawn over the one before.

const int kTickLen = 5, kPad = 8;  // pixels

// The ranges the axes cover: the data's ([0, 1] without a drawable point, [1, 10] on a log scale); a flat
// or single-valued range is widened so the scale never divides by zero, and the losses get a margin.
void axis_ranges(const std::vector<PlotRun>& runs, bool log_y, double* xlo, double* xhi, double* ylo, double* yhi) {
    *xlo = 0, *xhi = 1, *ylo = log_y ? 1 : 0, *yhi = log_y ? 10 : 1;
    if (!data_range(runs, log_y, xlo, xhi, ylo, yhi)) return;
    if (*xhi == *xlo) *xlo = std::max(0.0, *xlo - 1), *xhi = *xlo + 2;
    if (log_y) {  // the same in log10
        const double ratio = *yhi / *ylo, widen = ratio < 1.0001 ? 1.1 : std::pow(ratio, 0.05);
        *ylo /= widen, *yhi *= widen;
        return;
    }
    double mag = std::max({1.0, std::fabs(*ylo), std::fabs(*yhi)});
    if (*yhi - *ylo < 1e-4 * mag) {
        double mid = 0.5 * (*ylo + *yhi), half = std::max(0.05, 0.05 * std::fabs(mid));
        *ylo = mid - half, *yhi = mid + half;
    } else {
        double margin = 0.05 * (*yhi - *ylo);
        *ylo -= margin, *yhi += margin;
    }
}

// The axes and the plot area they span on the canvas, and the mapping of data to pixels.
struct Frame {
    Axis xa, ya;
    int px0, px1, py0, py1;  // plot area: x from px0 to px1, y from py1 (bottom) up to py0
    int to_px(double x) const { return px0 + (int)std::lround(xa.frac(x) * (px1 - px0)); }
    int to_py(double y) const { return py1 - (int)std::lround(ya.frac(y) * (py1 - py0)); }
};

// Layout: y tick labels and the rotated "loss" on the left, x tick labels and "step" below, the legend
// above, one row per run. Axes first get a provisional y axis to size the left margin.
Frame frame_make(const std::vector<PlotRun>& runs, int width, int height, int s, const PlotStyle& style) {
    double xlo, xhi, ylo, yhi;
    axis_ranges(runs, style.log_y, &xlo, &xhi, &ylo, &yhi);
    const int glyph_h = kGlyphHeight * s;
    const int legend_rows = std::max(1, (int)runs.size()), row_h = glyph_h + kPad;
    Frame f;
    f.ya = style.log_y ? axis_make_log(ylo, yhi) : axis_make(ylo, yhi, 5, false, false);
    int ylabel_w = 0;
    for (const std::string& label : f.ya.labels) ylabel_w = std::max(ylabel_w, text_width(label, s));
    const int left = kPad + glyph_h + 2 * kPad + ylabel_w + kTickLen + 4;
    const int top = kPad + legend_rows * row_h + kPad;
    const int bottom = kTickLen + 6 + glyph_h + 2 * kPad + glyph_h + kPad;
    // Room on the right for half of the last x tick label, which is centred on the axis end.
    f.xa = axis_make(xlo, xhi, 6, true, style.x_tokens);
    const int right = std::max(3 * kPad, text_width(f.xa.labels.back(), s) / 2 + 4);
    f.px0 = left, f.px1 = std::max(left + 1, width - right);
    f.py0 = top, f.py1 = std::max(top + 1, height - bottom);

    // Fewer x ticks until the widest label fits between neighbours.
    for (int intervals = 6; intervals >= 1; intervals--) {
        f.xa = axis_make(xlo, xhi, intervals, true, style.x_tokens);
        int widest = 0;
        for (const std::string& label : f.xa.labels) widest = std::max(widest, text_width(label, s));
        const int ticks = (int)f.xa.ticks.size();
        if (ticks <= 1 || (double)(f.px1 - f.px0) / (ticks - 1) >= widest + 2 * kPad) break;
    }
    return f;
}

// The grid goes first, so that the series and the axes are drawn over it.
void draw_grid(Canvas* cv, const Frame& f) {
    for (double t : f.xa.ticks) cv->line(f.to_px(t), f.py0, f.to_px(t), f.py1, 1, kGrid);
    for (double t : f.ya.ticks) cv->line(f.px0, f.to_py(t), f.px1, f.to_py(t), 1, kGrid);
}

// How one series is drawn: line width, marker radius (0: none) and shape, dash pattern, colour.
struct Pen {
    int thick, marker_r;
    Marker marker;
    const char* dash;
    Rgb c;
};

// A point that cannot be drawn breaks the line; a point with no drawable neighbour gets a dot so it still
// shows.
void draw_series(Canvas* cv, const Frame& f, const std::vector<std::pair<double, float>>& pts, const Pen& pen) {
    auto ok = [&](size_t i) { return i < pts.size() && drawable(pts[i].second, f.ya.log); };
    int phase = 0;
    for (size_t i = 0; i < pts.size(); i++) {
        if (!ok(i)) continue;
        int x = f.to_px(pts[i].first), y = f.to_py(pts[i].second);
        if (ok(i + 1))
            cv->line(x, y, f.to_px(pts[i + 1].first), f.to_py(pts[i + 1].second), pen.thick, pen.c, pen.dash, &phase);
        bool lone = !ok(i + 1) && (i == 0 || !ok(i - 1));
        if (pen.marker_r > 0) cv->marker(x, y, pen.marker_r, pen.marker, pen.c);
        else if (lone) cv->disc(x, y, 2, pen.c);
    }
}

// A single run keeps its two colours, solid lines and discs; with several, each run has one colour, and
// its own dash pattern and marker.
Pen series_pen(const std::vector<PlotRun>& runs, size_t run, bool val, int s) {
    const size_t style = runs.size() == 1 ? 0 : run;
    const Rgb c = runs.size() == 1 ? rgb_of(val ? kPlotValRgb : kPlotTrainRgb) : rgb_of(kPlotPalette[run]);
    return {val ? 3 : 1, val ? 3 + s : 0, (Marker)style, kDash[style], c};
}

// The axes go over the series: the lines, their ticks and tick labels, and the names of x and "loss".
void draw_axes(Canvas* cv, const Frame& f, int s, const char* x_name) {
    const int glyph_h = kGlyphHeight * s;
    cv->line(f.px0, f.py0, f.px0, f.py1, 1, kBlack);  // y axis
    cv->line(f.px0, f.py1, f.px1, f.py1, 1, kBlack);  // x axis
    for (size_t i = 0; i < f.xa.ticks.size(); i++) {
        int x = f.to_px(f.xa.ticks[i]);
        cv->line(x, f.py1, x, f.py1 + kTickLen, 1, kBlack);
        const std::string& t = f.xa.labels[i];
        draw_text(cv, x - text_width(t, s) / 2, f.py1 + kTickLen + 6, t, s, kBlack);
    }
    for (size_t i = 0; i < f.ya.ticks.size(); i++) {
        int y = f.to_py(f.ya.ticks[i]);
        cv->line(f.px0 - kTickLen, y, f.px0, y, 1, kBlack);
        const std::string& t = f.ya.labels[i];
        draw_text(cv, f.px0 - kTickLen - 4 - text_width(t, s), y - glyph_h / 2, t, s, kBlack);
    }
    draw_text(cv, (f.px0 + f.px1 - text_width(x_name, s)) / 2, f.py1 + kTickLen + 6 + glyph_h + 2 * kPad, x_name, s,
              kBlack);
    draw_text(cv, kPad, (f.py0 + f.py1 + text_width("loss", s)) / 2, "loss", s, kBlack, true);
}

// Legend, right-aligned above the plot, one row per run: its label, then a line sample (with the run's dash
// pattern and, for val, its marker) and the name of each series that has points. Columns line up across
// rows; labels too long for the width are cut.
void draw_legend(Canvas* cv, const Frame& f, const std::vector<PlotRun>& runs, int s) {
    const int glyph_h = kGlyphHeight * s, row_h = glyph_h + kPad;
    const int sample_w = 10 * s + 14;
    const int train_w = sample_w + 6 + text_width("train", s), val_w = sample_w + 6 + text_width("val", s);
    const int entries_w = train_w + 3 * kPad + val_w;
    std::vector<std::string> labels;
    int label_w = 0;
    for (const PlotRun& run : runs) {
        labels.push_back(text_fit(run.label, std::max(0, f.px1 - 4 * kPad - entries_w), s));
        label_w = std::max(label_w, text_width(labels.back(), s));
    }
    const int lx0 = f.px1 - entries_w - (label_w > 0 ? label_w + 3 * kPad : 0);
    for (size_t r = 0; r < runs.size(); r++) {
        const int y = kPad + (int)r * row_h, ly = y + glyph_h / 2;
        draw_text(cv, lx0, y, labels[r], s, kBlack);
        int lx = f.px1 - entries_w, phase = 0;
        if (!runs[r].train.empty()) {
            const Pen pen = series_pen(runs, r, false, s);
            cv->line(lx, ly, lx + sample_w, ly, pen.thick, pen.c, pen.dash, &phase);
            draw_text(cv, lx + sample_w + 6, y, "train", s, kBlack);
        }
        lx += train_w + 3 * kPad, phase = 0;
        if (!runs[r].val.empty()) {
            const Pen pen = series_pen(runs, r, true, s);
            cv->line(lx, ly, lx + sample_w, ly, pen.thick, pen.c, pen.dash, &phase);
            cv->marker(lx + sample_w / 2, ly, pen.marker_r, pen.marker, pen.c);
            draw_text(cv, lx + sample_w + 6, y, "val", s, kBlack);
        }
    }
}

}  // namespace

PlotRun::PlotRun(std::string label_, const std::vector<std::pair<int, float>>& train_,
                 const std::vector<std::pair<int, float>>& val_)
    : label(std::move(label_)), train(train_.begin(), train_.end()), val(val_.begin(), val_.end()) {}

std::vector<std::pair<double, float>> plot_smooth(const std::vector<std::pair<double, float>>& pts, double w) {
    std::vector<std::pair<double, float>> out = pts;
    double average = 0, w_n = 1;
    for (auto& p : out) {
        if (!std::isfinite(p.second)) continue;
        average = w * average + (1 - w) * p.second;
        w_n *= w;
        p.second = (float)(average / (1 - w_n));
    }
    return out;
}

std::vector<uint8_t> plot_render(const std::vector<PlotRun>& runs, int width, int height, const PlotStyle& style) {
    assert(width >= 100 && height >= 100 && width <= 16384 && height <= 16384);
    assert(runs.size() <= (size_t)kPlotMaxRuns);
    assert(style.smooth >= 0 && style.smooth < 1);
    Canvas cv(width, height);
    const int s = std::max(1, std::min(width / 400, height / 250));  // pixels per font unit
    const Frame f = frame_make(runs, width, height, s, style);
    draw_grid(&cv, f);
    // Raw train curves (faint when smoothed), then the smoothed ones, then val on top of all.
    for (size_t r = 0; r < runs.size(); r++) {
        Pen pen = series_pen(runs, r, false, s);
        if (style.smooth > 0) pen.c = tint(pen.c);
        draw_series(&cv, f, runs[r].train, pen);
    }
    if (style.smooth > 0)
        for (size_t r = 0; r < runs.size(); r++)
            draw_series(&cv, f, plot_smooth(runs[r].train, style.smooth), series_pen(runs, r, false, s));
    for (size_t r = 0; r < runs.size(); r++) draw_series(&cv, f, runs[r].val, series_pen(runs, r, true, s));
    draw_axes(&cv, f, s, style.x_tokens ? "tokens" : "step");
    draw_legend(&cv, f, runs, s);
    return cv.rgb;
}

static void png_append(void* ctx, void* data, int size) {
    auto* out = (std::vector<uint8_t>*)ctx;
    out->insert(out->end(), (const uint8_t*)data, (const uint8_t*)data + size);
}

static bool png_is_ours(const std::string& path) {
    static const uint8_t kPng[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    const std::vector<uint8_t> head = file_head_bytes(path, 8);
    return head.size() == 8 && memcmp(head.data(), kPng, 8) == 0;
}

const OutputKind kPngKind = {"a PNG", png_is_ours};

void plot_losses(const std::string& path, const std::vector<PlotRun>& runs, int width, int height, const char* flag,
                 const PlotStyle& style) {
    std::vector<uint8_t> rgb = plot_render(runs, width, height, style);
    std::vector<uint8_t> png;
    if (!stbi_write_png_to_func(png_append, &png, width, height, 3, rgb.data(), width * 3))
        fatal("cannot encode the loss plot (%s): stb_image_write failed", path.c_str());
    output_write(path, flag, kPngKind, {{png.data(), png.size()}});
}

void plot_check_path(const std::string& path, const char* flag, bool make_dirs) {
    if (path.empty()) fatal("empty value for %s: expected a PNG path", flag);
    if (!make_dirs && !dir_exists(path_parent(path)))
        fatal("bad value for %s: directory %s does not exist", flag, path_parent(path).c_str());
    output_check(path, flag, kPngKind);
}
