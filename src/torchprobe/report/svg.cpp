// Horizontal grouped bar charts as standalone SVG: one group per training configuration,
// one bar per device, value labels, a labelled axis with units, and a legend.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "torchprobe/report/printers.h"
#include "torchprobe/report/table.h"
#include "torchprobe/report/views.h"

namespace torchprobe::report {
namespace {

const char* const kPalette[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#9c755f"};
constexpr double kLeft = 190, kRight = 90, kTop = 56, kBarHeight = 18, kBarGap = 4, kGroupGap = 14, kWidth = 820;

std::string xml_escape(const std::string& text) {
  std::string out;
  for (const char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

struct Series {
  std::string name;
  std::vector<double> values;  // one per group; NaN: no bar
  std::vector<std::string> notes;  // per group: shown instead of a missing bar, e.g. "failed"
};

struct BarChartSpec {
  std::string title, axis_label;
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

std::string bar_chart(const BarChartSpec& spec) {
  double lo = INFINITY, hi = 0.0;
  for (const auto& s : spec.series) {
    for (const double v : s.values) {
      if (std::isfinite(v) && v > 0.0) lo = std::min(lo, v), hi = std::max(hi, v);
    }
  }
  if (std::isfinite(spec.reference)) lo = std::min(lo, spec.reference), hi = std::max(hi, spec.reference);
  if (!(hi > 0.0)) lo = 1.0, hi = 10.0;
  // Devices can differ by 100x or more: a log axis keeps every bar readable.
  const bool log_axis = hi / lo > 30.0;
  const double axis_lo = log_axis ? std::pow(10.0, std::floor(std::log10(lo))) : 0.0;
  const double axis_hi = log_axis ? std::pow(10.0, std::ceil(std::log10(hi))) : hi * 1.1;
  const double plot_width = kWidth - kLeft - kRight;
  const auto x_of = [&](double v) {
    const double t = log_axis ? (std::log10(v) - std::log10(axis_lo)) / (std::log10(axis_hi) - std::log10(axis_lo))
                              : (v - axis_lo) / (axis_hi - axis_lo);
    return kLeft + plot_width * std::clamp(t, 0.0, 1.0);
  };

  const double group_height = static_cast<double>(spec.series.size()) * (kBarHeight + kBarGap) + kGroupGap;
  const double plot_height = static_cast<double>(spec.groups.size()) * group_height;
  const double legend_y = kTop + plot_height + 46;
  const double height = legend_y + 24;
  std::string body;
  body += fmt::format(R"(<text x="{}" y="24" font-size="16" font-weight="bold">{}</text>)" "\n", kLeft / 4, xml_escape(spec.title));

  // Axis ticks and grid.
  std::vector<double> ticks;
  if (log_axis) {
    for (double t = axis_lo; t <= axis_hi * 1.001; t *= 10.0) ticks.push_back(t);
  } else {
    const double raw = axis_hi / 5.0, mag = std::pow(10.0, std::floor(std::log10(raw)));
    const double step = raw / mag < 2 ? 2 * mag : raw / mag < 5 ? 5 * mag : 10 * mag;
    for (double t = 0.0; t <= axis_hi * 1.001; t += step) ticks.push_back(t);
  }
  const double axis_y = kTop + plot_height;
  for (const double t : ticks) {
    const double x = x_of(t);
    body += fmt::format(R"(<line x1="{0:.1f}" y1="{1}" x2="{0:.1f}" y2="{2:.1f}" stroke="#ddd"/>)" "\n", x, kTop - 6, axis_y);
    body += fmt::format(R"(<text x="{:.1f}" y="{:.1f}" font-size="11" text-anchor="middle">{}</text>)" "\n", x, axis_y + 16,
                        xml_escape(tick_label(t, spec.tick_suffix)));
  }
  body += fmt::format(R"(<line x1="{0}" y1="{1:.1f}" x2="{2}" y2="{1:.1f}" stroke="#333"/>)" "\n", kLeft, axis_y, kWidth - kRight);
  body += fmt::format(R"(<text x="{:.1f}" y="{:.1f}" font-size="12" text-anchor="middle">{}{}</text>)" "\n",
                      kLeft + plot_width / 2, axis_y + 34, xml_escape(spec.axis_label), log_axis ? " (log scale)" : "");

  for (size_t g = 0; g < spec.groups.size(); ++g) {
    const double y0 = kTop + static_cast<double>(g) * group_height;
    body += fmt::format(R"(<text x="{}" y="{:.1f}" font-size="12" text-anchor="end">{}</text>)" "\n", kLeft - 8,
                        y0 + (group_height - kGroupGap) / 2 + 4, xml_escape(spec.groups[g]));
    for (size_t s = 0; s < spec.series.size(); ++s) {
      const double v = spec.series[s].values[g];
      const double y = y0 + static_cast<double>(s) * (kBarHeight + kBarGap);
      if (!std::isfinite(v) || v <= 0.0) {
        const std::string& note = spec.series[s].notes[g];
        if (!note.empty()) {
          body += fmt::format(R"(<text x="{}" y="{:.1f}" font-size="11" fill="#b00">{}: {}</text>)" "\n", kLeft + 4,
                              y + kBarHeight - 5, xml_escape(spec.series[s].name), xml_escape(note));
        }
        continue;
      }
      const double x1 = x_of(v);
      body += fmt::format(
          R"(<rect class="bar" data-device="{}" data-group="{}" x="{}" y="{:.1f}" width="{:.1f}" height="{}" fill="{}"><title>{}: {}</title></rect>)" "\n",
          xml_escape(spec.series[s].name), xml_escape(spec.groups[g]), kLeft, y, std::max(1.0, x1 - kLeft), kBarHeight,
          kPalette[s % 8], xml_escape(spec.series[s].name), xml_escape(spec.format(v)));
      body += fmt::format(R"(<text x="{:.1f}" y="{:.1f}" font-size="11">{}</text>)" "\n", x1 + 4, y + kBarHeight - 5,
                          xml_escape(spec.format(v)));
    }
  }
  if (std::isfinite(spec.reference)) {
    const double x = x_of(spec.reference);
    body += fmt::format(R"(<line x1="{0:.1f}" y1="{1}" x2="{0:.1f}" y2="{2:.1f}" stroke="#333" stroke-dasharray="4 3"/>)" "\n",
                        x, kTop - 10, axis_y);
  }
  double lx = kLeft;
  for (size_t s = 0; s < spec.series.size(); ++s) {
    body += fmt::format(R"(<rect x="{:.1f}" y="{:.1f}" width="12" height="12" fill="{}"/>)" "\n", lx, legend_y - 10, kPalette[s % 8]);
    body += fmt::format(R"(<text x="{:.1f}" y="{:.1f}" font-size="12">{}</text>)" "\n", lx + 16, legend_y, xml_escape(spec.series[s].name));
    lx += 28 + 7.0 * static_cast<double>(spec.series[s].name.size());
  }
  return fmt::format(R"(<?xml version="1.0" encoding="UTF-8"?>)" "\n"
                     R"(<svg xmlns="http://www.w3.org/2000/svg" width="{0}" height="{1:.0f}" viewBox="0 0 {0} {1:.0f}" font-family="sans-serif">)" "\n"
                     R"(<rect width="100%" height="100%" fill="white"/>)" "\n{2}</svg>\n",
                     kWidth, height, body);
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
  BarChartSpec rate{"Training step throughput per device", "images/s (higher is better)", {}, {}, NAN, &format_rate, ""};
  for (const auto& row : view.rows) rate.groups.push_back(row.label());
  for (const auto& device : view.devices) {
    rate.series.push_back(series(view, device, [&](const TrainRow& row) { return images_per_s(row, device); }));
  }
  charts.push_back({"images_per_s.svg", "Training images/s per device", bar_chart(rate)});

  if (!view.baseline.empty() && view.devices.size() > 1) {
    BarChartSpec gain{"Training step speedup vs " + view.baseline, "speedup vs " + view.baseline + " (x, higher is better)",
                      rate.groups, {}, 1.0, &format_speedup, "x"};
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
