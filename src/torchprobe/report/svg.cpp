// Horizontal grouped bar charts as standalone SVG: one group per training configuration,
// one bar per device, value labels, a labelled axis with units, and a legend.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "torchprobe/report/printers.h"
#include "torchprobe/report/svg_util.h"
#include "torchprobe/report/table.h"
#include "torchprobe/report/views.h"

namespace torchprobe::report {
namespace {

const char* const kPalette[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#9c755f"};
// Margins come from the text they hold (text_width); these are the fixed parts.
constexpr double kPad = 10, kPlotWidth = 540, kTop = 56, kBarHeight = 18, kBarGap = 4, kGroupGap = 14;
constexpr double kLabelFont = 12, kValueFont = 11, kTitleFont = 16;
constexpr size_t kMaxLabelChars = 80;  // longer group labels are cut (the full one is the bar's tooltip)
// Values drawn as bars. No throughput or speedup comes near either end; beyond them the axis arithmetic (x1.1,
// powers of ten) leaves a double's range. A value outside is noted in its bar's place instead.
constexpr double kLowestCharted = 1e-9, kHighestCharted = 1e12;

bool charted(double v) { return v >= kLowestCharted && v <= kHighestCharted; }

struct Series {
  std::string name;
  std::vector<double> values;  // one per group; NaN: no bar
  std::vector<std::string> notes;  // per group: shown instead of a missing bar, e.g. "failed"
};

struct BarChartSpec {
  std::string title;
  std::string axis_label;  ///< the quantity and unit, e.g. "images/s"
  std::string direction;   ///< e.g. "higher is better"; joined with "log scale" in one parenthesis
  std::vector<std::string> groups;
  std::vector<Series> series;
  double reference = NAN;  // a vertical line, e.g. 1x for speedups
  std::string (*format)(double) = nullptr;
  std::string tick_suffix;
};

// Axis ticks: integers with SI-style thousands spaces, otherwise the shortest form.
std::string tick_label(double v, const std::string& suffix) {
  if (v == std::floor(v)) return (v >= 1000.0 ? format_rate(v) : fmt::format("{:.0f}", v)) + suffix;
  return fmt::format("{:g}", v) + suffix;
}

std::string svg_document(double width, double height, const std::string& body) {
  return fmt::format(R"(<?xml version="1.0" encoding="UTF-8"?>)" "\n"
                     R"(<svg xmlns="http://www.w3.org/2000/svg" width="{0:.0f}" height="{1:.0f}" viewBox="0 0 {0:.0f} {1:.0f}" font-family="sans-serif">)" "\n"
                     R"(<rect width="100%" height="100%" fill="white"/>)" "\n{2}</svg>\n",
                     width, height, body);
}

std::string title_text(const std::string& title) {
  return fmt::format(R"(<text x="{}" y="24" font-size="{}" font-weight="bold">{}</text>)" "\n", kPad, kTitleFont,
                     xml_escape(title));
}

// A chart that is not drawn: its title, and why, in the red of a missing bar's note.
std::string note_chart(const std::string& title, const std::string& note) {
  const std::string body =
      title_text(title) + fmt::format(R"(<text x="{}" y="{}" font-size="{}" fill="#b00">{}</text>)" "\n", kPad, kTop,
                                      kLabelFont, xml_escape(note));
  const double right_edge = std::max(kPad + 1.1 * text_width(title, kTitleFont), kPad + text_width(note, kLabelFont));
  return svg_document(std::ceil(right_edge + kPad), kTop + 24, body);
}

std::string bar_chart(const BarChartSpec& spec) {
  double lo = INFINITY, hi = 0.0;
  for (const auto& s : spec.series) {
    for (const double v : s.values) {
      if (charted(v)) lo = std::min(lo, v), hi = std::max(hi, v);
    }
  }
  if (charted(spec.reference)) lo = std::min(lo, spec.reference), hi = std::max(hi, spec.reference);
  if (!(hi > 0.0)) lo = 1.0, hi = 10.0;
  // Devices can differ by 100x or more: a log axis keeps every bar readable.
  const bool log_axis = hi / lo > 30.0;
  const double axis_lo = log_axis ? std::pow(10.0, std::floor(std::log10(lo))) : 0.0;
  const double axis_hi = log_axis ? std::pow(10.0, std::ceil(std::log10(hi))) : hi * 1.1;
  const std::vector<double> ticks = log_axis ? log_ticks(lo, hi) : linear_ticks(0.0, axis_hi, /*target=*/5);
  // What shows in place of a missing bar: the series' note ("failed"), or that the value is off the chart.
  const auto note_of = [](const Series& s, size_t g) {
    const double v = s.values[g];
    if (!s.notes[g].empty() || charted(v) || !(v > 0.0)) return s.notes[g];
    return fmt::format("{:.3g} is outside the charted range", v);
  };

  // The margins hold the text: group labels on the left; value labels, notes and the last tick on the right.
  std::vector<std::string> labels;
  double label_width = 0.0;
  for (const auto& g : spec.groups) {
    labels.push_back(shorten(g, kMaxLabelChars));
    label_width = std::max(label_width, text_width(labels.back(), kLabelFont));
  }
  const double left = kPad + label_width + 8;
  const double plot_width = kPlotWidth;
  const auto x_of = [&](double v) {
    const double t = log_axis ? (std::log10(v) - std::log10(axis_lo)) / (std::log10(axis_hi) - std::log10(axis_lo))
                              : (v - axis_lo) / (axis_hi - axis_lo);
    return left + plot_width * std::clamp(t, 0.0, 1.0);
  };
  double right_edge = left + plot_width + text_width(tick_label(ticks.back(), spec.tick_suffix), kValueFont) / 2;
  for (const auto& s : spec.series) {
    for (size_t g = 0; g < s.values.size(); ++g) {
      const double v = s.values[g];
      if (charted(v)) {
        right_edge = std::max(right_edge, x_of(v) + 4 + text_width(spec.format(v), kValueFont));
        continue;
      }
      const std::string note = note_of(s, g);  // only what is drawn is measured: most groups lack most devices
      if (!note.empty()) right_edge = std::max(right_edge, left + 4 + text_width(s.name + ": " + note, kValueFont));
    }
  }
  const std::string axis_title = spec.axis_label + " (" + spec.direction + (log_axis ? ", log scale" : "") + ")";
  right_edge = std::max(right_edge, left + plot_width / 2 + text_width(axis_title, kLabelFont) / 2);
  right_edge = std::max(right_edge, kPad + 1.1 * text_width(spec.title, kTitleFont));  // bold: 10% wider

  const double group_height = static_cast<double>(spec.series.size()) * (kBarHeight + kBarGap) + kGroupGap;
  const double plot_height = static_cast<double>(spec.groups.size()) * group_height;
  const double legend_y = kTop + plot_height + 46;
  const double height = legend_y + 24;
  std::string body = title_text(spec.title);

  const double axis_y = kTop + plot_height;
  for (const double t : ticks) {
    const double x = x_of(t);
    body += fmt::format(R"(<line x1="{0:.1f}" y1="{1}" x2="{0:.1f}" y2="{2:.1f}" stroke="#ddd"/>)" "\n", x, kTop - 6, axis_y);
    body += fmt::format(R"(<text x="{:.1f}" y="{:.1f}" font-size="{}" text-anchor="middle">{}</text>)" "\n", x, axis_y + 16,
                        kValueFont, xml_escape(tick_label(t, spec.tick_suffix)));
  }
  body += fmt::format(R"(<line x1="{0:.1f}" y1="{1:.1f}" x2="{2:.1f}" y2="{1:.1f}" stroke="#333"/>)" "\n", left, axis_y,
                      left + plot_width);
  body += fmt::format(R"(<text x="{:.1f}" y="{:.1f}" font-size="{}" text-anchor="middle">{}</text>)" "\n",
                      left + plot_width / 2, axis_y + 34, kLabelFont, xml_escape(axis_title));

  for (size_t g = 0; g < spec.groups.size(); ++g) {
    const double y0 = kTop + static_cast<double>(g) * group_height;
    body += fmt::format(R"(<text x="{:.1f}" y="{:.1f}" font-size="{}" text-anchor="end">{}<title>{}</title></text>)" "\n",
                        left - 8, y0 + (group_height - kGroupGap) / 2 + 4, kLabelFont, xml_escape(labels[g]),
                        xml_escape(spec.groups[g]));
    for (size_t s = 0; s < spec.series.size(); ++s) {
      const double v = spec.series[s].values[g];
      const double y = y0 + static_cast<double>(s) * (kBarHeight + kBarGap);
      if (!charted(v)) {
        const std::string note = note_of(spec.series[s], g);
        if (!note.empty()) {
          body += fmt::format(R"(<text x="{:.1f}" y="{:.1f}" font-size="{}" fill="#b00">{}: {}</text>)" "\n", left + 4,
                              y + kBarHeight - 5, kValueFont, xml_escape(spec.series[s].name), xml_escape(note));
        }
        continue;
      }
      const double x1 = x_of(v);
      body += fmt::format(
          R"(<rect class="bar" data-device="{}" data-group="{}" x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{}" fill="{}"><title>{}: {}</title></rect>)" "\n",
          xml_escape(spec.series[s].name), xml_escape(spec.groups[g]), left, y, std::max(1.0, x1 - left), kBarHeight,
          kPalette[s % 8], xml_escape(spec.series[s].name), xml_escape(spec.format(v)));
      body += fmt::format(R"(<text x="{:.1f}" y="{:.1f}" font-size="{}">{}</text>)" "\n", x1 + 4, y + kBarHeight - 5,
                          kValueFont, xml_escape(spec.format(v)));
    }
  }
  if (std::isfinite(spec.reference)) {
    const double x = x_of(spec.reference);
    body += fmt::format(R"(<line x1="{0:.1f}" y1="{1}" x2="{0:.1f}" y2="{2:.1f}" stroke="#333" stroke-dasharray="4 3"/>)" "\n",
                        x, kTop - 10, axis_y);
  }
  double lx = left;
  for (size_t s = 0; s < spec.series.size(); ++s) {
    body += fmt::format(R"(<rect x="{:.1f}" y="{:.1f}" width="12" height="12" fill="{}"/>)" "\n", lx, legend_y - 10, kPalette[s % 8]);
    body += fmt::format(R"(<text x="{:.1f}" y="{:.1f}" font-size="{}">{}</text>)" "\n", lx + 16, legend_y, kLabelFont,
                        xml_escape(spec.series[s].name));
    lx += 16 + text_width(spec.series[s].name, kLabelFont) + 12;
  }
  right_edge = std::max(right_edge, lx);
  return svg_document(std::ceil(right_edge + kPad), height, body);
}

std::string format_speedup(double v) { return format_ratio(v); }

template <typename Value>
Series series(const TrainView& view, const std::string& device, Value value) {
  Series s{device, {}, {}};
  for (const auto& row : view.rows) {
    s.values.push_back(value(row));
    const auto it = row.by_device.find(device);
    s.notes.push_back(it != row.by_device.end() && it->second->failed() ? "failed" : "");
  }
  return s;
}

}  // namespace

std::vector<Chart> make_charts(const ResultSet& results) {
  std::vector<Chart> charts;
  const TrainView view = train_view(results);
  if (view.rows.empty()) return charts;
  const std::string rate_title = "Training step throughput per device";
  const std::string gain_title = "Training step speedup vs " + view.baseline;
  const bool gains = !view.baseline.empty() && view.devices.size() > 1;
  // A bar per device and configuration: with this many devices the chart would be unreadable (and as large as
  // devices x configurations); the same files say so, for report.md's links and the dashboard.
  if (view.devices.size() > kMaxSideBySideDevices) {
    const std::string note = fmt::format("Not drawn: {} devices, more than the {} a chart shows; the training tables "
                                         "list each.", view.devices.size(), kMaxSideBySideDevices);
    charts.push_back({"images_per_s.svg", "Training images/s per device", note_chart(rate_title, note)});
    if (gains) charts.push_back({"speedup_vs_cpu.svg", "Training speedup vs the CPU", note_chart(gain_title, note)});
    return charts;
  }
  BarChartSpec rate{rate_title, "images/s", "higher is better", {}, {}, NAN, &format_rate, ""};
  for (const auto& row : view.rows) rate.groups.push_back(row.label());
  for (const auto& device : view.devices) {
    rate.series.push_back(series(view, device, [&](const TrainRow& row) { return images_per_s(row, device); }));
  }
  charts.push_back({"images_per_s.svg", "Training images/s per device", bar_chart(rate)});

  if (gains) {
    BarChartSpec gain{gain_title, "speedup vs " + view.baseline, "x, higher is better", rate.groups, {}, 1.0,
                      &format_speedup, "x"};
    for (const auto& device : view.devices) {
      if (device == view.baseline) continue;
      gain.series.push_back(
          series(view, device, [&](const TrainRow& row) { return speedup(row, device, view.baseline); }));
    }
    charts.push_back({"speedup_vs_cpu.svg", "Training speedup vs the CPU", bar_chart(gain)});
  }
  return charts;
}

}  // namespace torchprobe::report
