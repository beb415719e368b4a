#include "torchprobe/report/plot.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "torchprobe/report/svg_util.h"

namespace torchprobe::report {
namespace {

constexpr double kPad = kChartPad, kTop = 48, kPlotWidth = 520, kPlotHeight = 300;
constexpr double kAxisFont = 12, kTickFont = 11, kPointFont = 10, kNoteFont = 11;
constexpr double kLegendRow = 18, kNoteRow = 16;
constexpr size_t kMaxLabelChars = 60, kMostLabels = 200;
const char* const kAlarm = "#e15759";

struct Box {
  double x0, y0, x1, y1;
  bool overlaps(const Box& o) const { return x0 < o.x1 && o.x0 < x1 && y0 < o.y1 && o.y0 < y1; }
};

// One axis: its range, its ticks and the mapping of a value to [0, 1].
struct Scale {
  bool log = false;
  double lo = 0.0, hi = 1.0;
  std::vector<double> ticks;
  double unit(double v) const {
    const double t = log ? (std::log10(v) - std::log10(lo)) / (std::log10(hi) - std::log10(lo)) : (v - lo) / (hi - lo);
    return std::clamp(t, 0.0, 1.0);
  }
};

Scale make_scale(double lo, double hi, bool log, bool include_zero) {
  Scale s;
  s.log = log;
  if (!(lo <= hi)) lo = log ? 1.0 : 0.0, hi = log ? 10.0 : 1.0;
  if (log) {
    s.ticks = log_ticks(lo, hi);
    if (s.ticks.size() < 2) s.ticks.push_back(s.ticks.back() * 10.0);
    s.lo = s.ticks.front();
    s.hi = s.ticks.back();
    return s;
  }
  if (include_zero) lo = std::min(lo, 0.0), hi = std::max(hi, 0.0);
  if (hi == lo) hi = lo == 0.0 ? 1.0 : lo + std::fabs(lo) * 0.1;
  std::vector<double> ticks = linear_ticks(lo, hi, /*target=*/5);
  const double step = ticks.size() > 1 ? ticks[1] - ticks[0] : (hi - lo);
  const double start = std::floor(lo / step + 1e-9) * step;
  ticks = linear_ticks(start, hi, /*target=*/5);
  if (ticks.size() > 1 && ticks.back() < hi) ticks.push_back(ticks.back() + (ticks[1] - ticks[0]));
  s.ticks = ticks;
  s.lo = std::min(start, ticks.front());
  s.hi = std::max(hi, ticks.back());
  if (!(s.hi > s.lo)) s.hi = s.lo + 1.0;
  return s;
}

// Values an axis can place: within +-1e15 (a span of two such values stays finite) and, on a log axis, from 1e-15.
// No figure a chart shows comes near either; a hostile file's 1.7e308 would make the axis infinite.
constexpr double kLargestCharted = 1e15, kSmallestLogCharted = 1e-15;
bool placeable(double v, bool log) {
  return std::isfinite(v) && std::fabs(v) <= kLargestCharted && (!log || v >= kSmallestLogCharted);
}

bool shown(const PlotPoint& p, const XYPlot& plot) { return placeable(p.x, plot.x.log) && placeable(p.y, plot.y.log); }

std::string text(double x, double y, double size, const std::string& content, const std::string& extra = "") {
  return fmt::format(R"(<text x="{:.1f}" y="{:.1f}" font-size="{}"{}>{}</text>)"
                     "\n",
                     x, y, size, extra, xml_escape(content));
}

// The legend and notes under a chart from `y`: entries wrapped into rows of at most `width`; returns the new y and
// widens `right_edge` to what it drew.
double legend_and_notes(const std::vector<std::pair<std::string, std::string>>& entries,  // (swatch SVG at 0,0; name)
                        const std::vector<std::string>& notes, double left, double width, double y, std::string& body,
                        double& right_edge) {
  double x = left;
  bool any = false;
  for (const auto& [swatch, name] : entries) {
    const double w = 18 + text_width(name, kAxisFont) + 14;
    if (any && x + w > left + width) x = left, y += kLegendRow;
    body += fmt::format(R"svg(<g transform="translate({:.1f},{:.1f})">{}</g>)svg"
                        "\n",
                        x, y - 4, swatch);
    body += text(x + 18, y, kAxisFont, name);
    right_edge = std::max(right_edge, x + w);
    x += w;
    any = true;
  }
  if (any) y += kLegendRow + 4;
  for (const auto& note : notes) {
    for (const auto& line : wrap_text(note, kNoteFont, left + width - kPad)) {
      body += text(kPad, y, kNoteFont, line, R"( fill="#555")");
      right_edge = std::max(right_edge, kPad + text_width(line, kNoteFont));
      y += kNoteRow;
    }
  }
  return y;
}

}  // namespace

std::string xy_plot(const XYPlot& plot) {
  double xlo = INFINITY, xhi = -INFINITY, ylo = INFINITY, yhi = -INFINITY;
  size_t hidden = 0;
  for (const auto& s : plot.series) {
    for (const auto& p : s.points) {
      if (!shown(p, plot)) {
        ++hidden;
        continue;
      }
      xlo = std::min(xlo, p.x), xhi = std::max(xhi, p.x), ylo = std::min(ylo, p.y), yhi = std::max(yhi, p.y);
    }
  }
  if (!(xlo <= xhi)) xlo = xhi = NAN, ylo = yhi = NAN;
  const Scale xs = make_scale(xlo, xhi, plot.x.log, plot.x.include_zero);
  const Scale ys = make_scale(ylo, yhi, plot.y.log, plot.y.include_zero);

  double tick_width = 0.0;
  for (const double t : ys.ticks) tick_width = std::max(tick_width, text_width(tick_label(t), kTickFont));
  const double left = kPad + 18 + tick_width + 8, bottom = kTop + kPlotHeight;
  const auto px = [&](double v) { return left + kPlotWidth * xs.unit(v); };
  const auto py = [&](double v) { return bottom - kPlotHeight * ys.unit(v); };
  double right_edge = std::max(left + kPlotWidth + text_width(tick_label(xs.ticks.back()), kTickFont) / 2,
                               kPad + 1.1 * text_width(plot.title, kTitleFont));

  std::string body = title_text(plot.title);
  // Grid, ticks and axis titles.
  for (const double t : xs.ticks) {
    body += fmt::format(R"(<line x1="{0:.1f}" y1="{1}" x2="{0:.1f}" y2="{2}" stroke="#ddd"/>)"
                        "\n",
                        px(t), kTop, bottom);
    body += text(px(t), bottom + 16, kTickFont, tick_label(t), R"( text-anchor="middle")");
  }
  for (const double t : ys.ticks) {
    body += fmt::format(R"(<line x1="{0}" y1="{1:.1f}" x2="{2}" y2="{1:.1f}" stroke="#ddd"/>)"
                        "\n",
                        left, py(t), left + kPlotWidth);
    body += text(left - 6, py(t) + 4, kTickFont, tick_label(t), R"( text-anchor="end")");
  }
  body += fmt::format(R"(<rect x="{}" y="{}" width="{}" height="{}" fill="none" stroke="#333"/>)"
                      "\n",
                      left, kTop, kPlotWidth, kPlotHeight);
  body += text(left + kPlotWidth / 2, bottom + 34, kAxisFont, plot.x.title, R"( text-anchor="middle")");
  right_edge = std::max(right_edge, left + kPlotWidth / 2 + text_width(plot.x.title, kAxisFont) / 2);
  std::string y_title = plot.y.title;  // it runs along the plot's height: cut to fit it
  for (size_t chars = y_title.size(); text_width(y_title, kAxisFont) > kPlotHeight && chars > 8;)
    y_title = shorten(plot.y.title, --chars);
  body += fmt::format(
      R"svg(<text x="{:.1f}" y="{:.1f}" font-size="{}" text-anchor="middle" transform="rotate(-90)">{}</text>)svg"
      "\n",
      -(kTop + kPlotHeight / 2), kPad + 12, kAxisFont, xml_escape(y_title));

  // Series: lines first, then markers, then labels placed where they overlap no other label.
  std::vector<Box> placed;  // what a label must not cover: every marker, then the labels placed so far
  for (const auto& s : plot.series) {
    for (const auto& p : s.points) {
      if (s.markers && shown(p, plot)) placed.push_back({px(p.x) - 5, py(p.y) - 5, px(p.x) + 5, py(p.y) + 5});
    }
  }
  size_t dropped = 0, labelled = 0;
  std::string labels;
  for (const auto& s : plot.series) {
    const char* colour = palette(static_cast<size_t>(s.colour));
    if (s.line) {
      std::string points;
      for (const auto& p : s.points) {
        if (shown(p, plot)) points += fmt::format("{:.1f},{:.1f} ", px(p.x), py(p.y));
      }
      body +=
          fmt::format(R"(<polyline points="{}" fill="none" stroke="{}" stroke-width="2"{}><title>{}</title></polyline>)"
                      "\n",
                      points, colour, s.dashed ? R"( stroke-dasharray="6 4")" : "", xml_escape(s.name));
    }
  }
  for (const auto& s : plot.series) {
    const char* colour = palette(static_cast<size_t>(s.colour));
    for (const auto& p : s.points) {
      if (!shown(p, plot)) continue;
      const double x = px(p.x), y = py(p.y);
      const std::string tip = xml_escape(p.tooltip.empty() ? p.label : p.tooltip);
      if (s.markers && s.cross) {
        body += fmt::format(
            R"(<path class="point" d="M{0:.1f},{1:.1f}l8,8m0,-8l-8,8" stroke="{2}" stroke-width="2"><title>{3}</title></path>)"
            "\n",
            x - 4, y - 4, colour, tip);
      } else if (s.markers) {
        body +=
            fmt::format(R"(<circle class="point" cx="{:.1f}" cy="{:.1f}" r="4" fill="{}"><title>{}</title></circle>)"
                        "\n",
                        x, y, colour, tip);
      }
      if (p.label.empty()) continue;
      if (labelled >= kMostLabels) {  // placing is quadratic in the labels: a file of thousands of ops stays fast
        ++dropped;
        continue;
      }
      ++labelled;
      const std::string label = shorten(p.label, kMaxLabelChars);
      const double w = text_width(label, kPointFont), h = kPointFont * 1.25;
      // Right, left, above, below the point: the first that stays in the plot's rows, clear of markers and labels.
      const std::vector<std::pair<double, double>> spots = {
          {x + 6, y + 4}, {x - 6 - w, y + 4}, {x - w / 2, y - 9}, {x - w / 2, y + 18}};
      bool done = false;
      for (const auto& [tx, ty] : spots) {
        const Box box{tx, ty - kPointFont, tx + w, ty - kPointFont + h};
        if (box.x0 < left || box.y0 < kTop || box.y1 > bottom) continue;
        if (std::any_of(placed.begin(), placed.end(), [&](const Box& b) { return b.overlaps(box); })) continue;
        placed.push_back(box);
        labels += text(tx, ty, kPointFont, label, R"( class="label")");
        right_edge = std::max(right_edge, box.x1);
        done = true;
        break;
      }
      dropped += done ? 0 : 1;
    }
  }
  body += labels;

  std::vector<std::pair<std::string, std::string>> entries;
  for (const auto& s : plot.series) {
    if (s.name.empty()) continue;
    const char* colour = palette(static_cast<size_t>(s.colour));
    std::string swatch;
    if (s.line) {
      swatch = fmt::format(R"(<line x1="0" y1="0" x2="14" y2="0" stroke="{}" stroke-width="2"{}/>)", colour,
                           s.dashed ? R"( stroke-dasharray="4 2")" : "");
    } else if (s.cross) {
      swatch = fmt::format(R"(<path d="M3,-4l8,8m0,-8l-8,8" stroke="{}" stroke-width="2"/>)", colour);
    } else {
      swatch = fmt::format(R"(<circle cx="7" cy="0" r="4" fill="{}"/>)", colour);
    }
    entries.emplace_back(swatch, s.name);
  }
  std::vector<std::string> notes = plot.notes;
  if (dropped > 0)
    notes.push_back(fmt::format("{} point label{} left out where {} would overlap another: hover a point for its name",
                                dropped, dropped == 1 ? "" : "s", dropped == 1 ? "it" : "they"));
  if (hidden > 0)
    notes.push_back(fmt::format("{} point{} not drawn: outside what the axes can show (not finite, beyond 1e15{})",
                                hidden, hidden == 1 ? "" : "s",
                                plot.x.log || plot.y.log ? ", or below 1e-15 on a log axis" : ""));
  const double end_y = legend_and_notes(entries, notes, left, kPlotWidth, bottom + 58, body, right_edge);
  return svg_document(std::ceil(right_edge + kPad), std::ceil(end_y + 4), body);
}

std::string forest_plot(const ForestPlot& plot) {
  constexpr double kRow = 22, kLabelFont = 12, kValueFont = 11, kWidth = 420;
  const bool band = plot.band_hi > plot.band_lo && placeable(plot.band_lo, false) && placeable(plot.band_hi, false);
  double lo = band ? std::min(0.0, plot.band_lo) : 0.0, hi = band ? std::max(0.0, plot.band_hi) : 0.0;
  for (const auto& r : plot.rows) {
    for (const double v : {r.value, r.lo, r.hi}) {
      if (placeable(v, false)) lo = std::min(lo, v), hi = std::max(hi, v);
    }
  }
  const double margin = 0.05 * std::max(hi - lo, 1.0);
  const Scale xs = make_scale(lo - margin, hi + margin, /*log=*/false, /*include_zero=*/true);
  std::vector<std::string> labels;
  double label_width = 0.0;
  for (const auto& r : plot.rows) {
    labels.push_back(shorten(r.label, 70));
    label_width = std::max(label_width, text_width(labels.back(), kLabelFont));
  }
  const double left = kPad + label_width + 10;
  const double bottom = kTop + kRow * static_cast<double>(plot.rows.size());
  const auto px = [&](double v) { return left + kWidth * xs.unit(v); };
  double right_edge = std::max(left + kWidth + text_width(tick_label(xs.ticks.back()), kValueFont) / 2,
                               kPad + 1.1 * text_width(plot.title, kTitleFont));

  std::string body = title_text(plot.title);
  if (band) {
    body += fmt::format(R"(<rect class="band" x="{:.1f}" y="{}" width="{:.1f}" height="{:.1f}" fill="#eee"/>)"
                        "\n",
                        px(plot.band_lo), kTop, px(plot.band_hi) - px(plot.band_lo), bottom - kTop);
  }
  for (const double t : xs.ticks) {
    body += fmt::format(R"(<line x1="{0:.1f}" y1="{1}" x2="{0:.1f}" y2="{2}" stroke="{3}"/>)"
                        "\n",
                        px(t), kTop, bottom, t == 0.0 ? "#333" : "#ddd");
    body += text(px(t), bottom + 16, kValueFont, tick_label(t), R"( text-anchor="middle")");
  }
  body += text(left + kWidth / 2, bottom + 34, kLabelFont, plot.axis_title, R"( text-anchor="middle")");
  right_edge = std::max(right_edge, left + kWidth / 2 + text_width(plot.axis_title, kLabelFont) / 2);
  for (size_t i = 0; i < plot.rows.size(); ++i) {
    const ForestRow& r = plot.rows[i];
    const double y = kTop + kRow * static_cast<double>(i) + kRow / 2;
    const char* colour = r.highlight ? kAlarm : palette(0);
    body += fmt::format(R"(<text x="{:.1f}" y="{:.1f}" font-size="{}" text-anchor="end">{}<title>{}</title></text>)"
                        "\n",
                        left - 10, y + 4, kLabelFont, xml_escape(labels[i]), xml_escape(r.label));
    if (placeable(r.lo, false) && placeable(r.hi, false)) {
      body += fmt::format(
          R"(<line class="interval" x1="{0:.1f}" y1="{1:.1f}" x2="{2:.1f}" y2="{1:.1f}" stroke="{3}" stroke-width="2"/>)"
          "\n",
          px(r.lo), y, px(r.hi), colour);
    }
    double text_x = left + kWidth + 8;
    if (placeable(r.value, false)) {
      body += fmt::format(R"(<circle class="point" cx="{:.1f}" cy="{:.1f}" r="4" fill="{}"><title>{}</title></circle>)"
                          "\n",
                          px(r.value), y, colour, xml_escape(r.label + ": " + r.value_text));
    }
    body += text(text_x, y + 4, kValueFont, r.value_text, r.highlight ? fmt::format(R"( fill="{}")", kAlarm) : "");
    right_edge = std::max(right_edge, text_x + text_width(r.value_text, kValueFont));
  }
  std::vector<std::pair<std::string, std::string>> entries;
  if (band && !plot.band_label.empty()) {
    entries.emplace_back(R"(<rect x="0" y="-6" width="14" height="12" fill="#eee" stroke="#ccc"/>)", plot.band_label);
  }
  const double end_y = legend_and_notes(entries, plot.notes, left, kWidth, bottom + 58, body, right_edge);
  return svg_document(std::ceil(right_edge + kPad), std::ceil(end_y + 4), body);
}

}  // namespace torchprobe::report
