// Horizontal grouped bar charts as standalone SVG: one group per training configuration,
// one bar per device, value labels, a labelled axis with units, and a legend.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "torchprobe/phases.h"
#include "torchprobe/report/plot.h"

#include "torchprobe/report/printers.h"
#include "torchprobe/report/svg_util.h"
#include "torchprobe/report/table.h"
#include "torchprobe/report/views.h"

namespace torchprobe::report {
namespace {

// Margins come from the text they hold (text_width); these are the fixed parts.
constexpr double kPad = kChartPad, kPlotWidth = 540, kTop = 56, kBarHeight = 18, kBarGap = 4, kGroupGap = 14;
constexpr double kLabelFont = 12, kValueFont = 11;
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
  /// One bar per group made of the series' values end to end (e.g. a step's phases), on a linear axis, with the
  /// group's total at its end; the legend names the segments.
  bool stacked = false;
};

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
  std::vector<double> totals(spec.groups.size(), 0.0);  // stacked: each group's bar
  for (const auto& s : spec.series) {
    for (size_t g = 0; g < s.values.size(); ++g) {
      const double v = s.values[g];
      if (charted(v)) lo = std::min(lo, v), hi = std::max(hi, v), totals[g] += v;
    }
  }
  if (spec.stacked) hi = std::max(hi, *std::max_element(totals.begin(), totals.end()));
  if (charted(spec.reference)) lo = std::min(lo, spec.reference), hi = std::max(hi, spec.reference);
  if (!(hi > 0.0)) lo = 1.0, hi = 10.0;
  // Devices can differ by 100x or more: a log axis keeps every bar readable.
  const bool log_axis = !spec.stacked && hi / lo > 30.0;
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
  for (size_t g = 0; spec.stacked && g < totals.size(); ++g) {
    right_edge = std::max(right_edge, x_of(totals[g]) + 4 + text_width(spec.format(totals[g]), kValueFont));
  }
  for (const auto& s : spec.series) {
    for (size_t g = 0; g < s.values.size(); ++g) {
      const double v = s.values[g];
      if (spec.stacked && charted(v)) continue;
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

  const double bars_per_group = spec.stacked ? 1.0 : static_cast<double>(spec.series.size());
  const double group_height = bars_per_group * (kBarHeight + kBarGap) + kGroupGap;
  const double plot_height = static_cast<double>(spec.groups.size()) * group_height;
  const double legend_y = kTop + plot_height + 54;
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
    double start = spec.stacked ? 0.0 : NAN;  // stacked: where the next segment starts
    for (size_t s = 0; s < spec.series.size(); ++s) {
      const double v = spec.series[s].values[g];
      const double y = y0 + (spec.stacked ? 0.0 : static_cast<double>(s) * (kBarHeight + kBarGap));
      if (spec.stacked && charted(v)) {
        const double x0 = x_of(start), x1 = x_of(start + v);
        body += fmt::format(
            R"(<rect class="segment" data-segment="{}" data-group="{}" x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{}" fill="{}"><title>{}: {}</title></rect>)"
            "\n",
            xml_escape(spec.series[s].name), xml_escape(spec.groups[g]), x0, y, std::max(0.5, x1 - x0), kBarHeight,
            palette(s), xml_escape(spec.series[s].name), xml_escape(spec.format(v)));
        start += v;
        continue;
      }
      if (spec.stacked) continue;
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
          R"(<rect class="bar" data-device="{}" data-group="{}" x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{}" fill="{}"><title>{}: {}</title></rect>)"
          "\n",
          xml_escape(spec.series[s].name), xml_escape(spec.groups[g]), left, y, std::max(1.0, x1 - left), kBarHeight,
          palette(s), xml_escape(spec.series[s].name), xml_escape(spec.format(v)));
      body += fmt::format(R"(<text x="{:.1f}" y="{:.1f}" font-size="{}">{}</text>)" "\n", x1 + 4, y + kBarHeight - 5,
                          kValueFont, xml_escape(spec.format(v)));
    }
  }
  for (size_t g = 0; spec.stacked && g < spec.groups.size(); ++g) {
    if (!(totals[g] > 0.0)) continue;
    const double y = kTop + static_cast<double>(g) * group_height;
    body += fmt::format(R"(<text x="{:.1f}" y="{:.1f}" font-size="{}">{}</text>)"
                        "\n",
                        x_of(totals[g]) + 4, y + kBarHeight - 5, kValueFont, xml_escape(spec.format(totals[g])));
  }
  if (std::isfinite(spec.reference)) {
    const double x = x_of(spec.reference);
    body += fmt::format(R"(<line x1="{0:.1f}" y1="{1}" x2="{0:.1f}" y2="{2:.1f}" stroke="#333" stroke-dasharray="4 3"/>)" "\n",
                        x, kTop - 10, axis_y);
  }
  double lx = left;
  for (size_t s = 0; s < spec.series.size(); ++s) {
    body += fmt::format(R"(<rect x="{:.1f}" y="{:.1f}" width="12" height="12" fill="{}"/>)"
                        "\n",
                        lx, legend_y - 10, palette(s));
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

std::string format_ms_text(double v) { return format_ms(v) + " ms"; }

// A file name part from a device label: "cuda:0@host" -> "cuda_0_host".
std::string file_part(const std::string& text) {
  std::string out;
  for (const char c : text) out += std::isalnum(static_cast<unsigned char>(c)) != 0 ? c : '_';
  return out;
}

// Each training configuration's phases end to end, per device where an instrumented pass ran.
void add_phase_chart(const TrainView& view, std::vector<Chart>& charts) {
  BarChartSpec spec{"Where a training step's time goes",
                    "ms per step, by phase",
                    "lower is better",
                    {},
                    {},
                    NAN,
                    &format_ms_text,
                    "",
                    /*stacked=*/true};
  std::vector<const Result*> steps;
  for (const auto& row : view.rows) {
    for (const auto& device : view.devices) {
      const auto it = row.by_device.find(device);
      if (it == row.by_device.end() || it->second->failed() || !it->second->has("forward_ms")) continue;
      spec.groups.push_back(view.devices.size() > 1 ? row.label() + " on " + device : row.label());
      steps.push_back(it->second);
    }
  }
  if (steps.empty() || steps.size() > kMaxSideBySideDevices) return;
  for (const std::string phase : kPhaseNames) {
    Series s{phase, {}, std::vector<std::string>(steps.size())};
    for (const Result* r : steps) s.values.push_back(r->counter(phase + "_ms"));
    if (std::any_of(s.values.begin(), s.values.end(), charted)) spec.series.push_back(std::move(s));
  }
  charts.push_back({"phases.svg", "Per-phase time of each training step", bar_chart(spec), "phases"});
}

// One roofline per device: its measured roofs (memory bandwidth, then each dtype's compute roof) and its ops.
void add_roofline_charts(const ResultSet& results, std::vector<Chart>& charts) {
  const std::vector<PeakRow> peaks = peak_rows(results);
  const auto roof = [&](const std::string& device, const std::string& what) {
    for (const auto& row : peaks) {
      if (row.device_label == device && row.what == what) return row.measured;
    }
    return static_cast<double>(NAN);
  };
  std::vector<std::string> devices;
  std::map<std::string, std::vector<const Result*>> ops;  // device -> its ops that compute
  std::map<std::string, int> copies;                      // device -> ops that only move bytes
  for (const auto& r : results.results) {
    if (r.suite != "op" || r.failed()) continue;
    if (ops.count(r.device_label) == 0 && copies.count(r.device_label) == 0) devices.push_back(r.device_label);
    if (r.counter("flops") > 0.0) {
      ops[r.device_label].push_back(&r);
    } else {
      ++copies[r.device_label];
    }
  }
  for (const auto& device : devices) {
    const auto& mine = ops[device];
    if (mine.empty()) continue;
    XYPlot plot{
        "Roofline of " + device + (mine.front()->device_name.empty() ? "" : " (" + mine.front()->device_name + ")"),
        {"arithmetic intensity (FLOP/byte, log scale)", true, false},
        {"GFLOP/s (log scale)", true, false},
        {},
        {}};
    std::vector<std::string> dtypes;
    double xlo = INFINITY, xhi = 0.0, ylo = INFINITY;
    for (const Result* r : mine) {
      const OpMetrics m = op_metrics(*r);
      const std::string dtype = r->dtype.empty() ? "fp32" : r->dtype;
      auto at = std::find(dtypes.begin(), dtypes.end(), dtype);
      if (at == dtypes.end()) {
        dtypes.push_back(dtype);
        plot.series.push_back({dtype + " ops", {}, false, true, false, false, static_cast<int>(dtypes.size() - 1)});
        at = dtypes.end() - 1;
      }
      const std::string n = r->params.count("n") != 0 ? " n:" + r->params.at("n") : "";
      plot.series[static_cast<size_t>(at - dtypes.begin())].points.push_back(
          {m.intensity, m.gflop_per_s, r->subject + n,
           fmt::format("{} {} {}: {} GFLOP/s at {} FLOP/byte{}", r->subject, shape_of(*r), dtype,
                       format_number(m.gflop_per_s), format_number(m.intensity),
                       m.label.empty() ? "" : " (" + m.label + ")")});
      if (m.intensity > 0.0 && m.gflop_per_s > 0.0) {
        xlo = std::min(xlo, m.intensity), xhi = std::max(xhi, m.intensity), ylo = std::min(ylo, m.gflop_per_s);
      }
    }
    const double bandwidth = roof(device, "memory");
    for (size_t i = 0; i < dtypes.size(); ++i) {
      const double peak = roof(device, dtypes[i]);
      if (peak > 0.0 && bandwidth > 0.0)
        xlo = std::min(xlo, peak / bandwidth / 4), xhi = std::max(xhi, peak / bandwidth * 4);
    }
    if (!(xhi > 0.0)) continue;
    xlo /= 2, xhi *= 2;
    for (size_t i = 0; i < dtypes.size(); ++i) {
      const double peak = roof(device, dtypes[i]);
      PlotSeries line{"", {}, true, false, false, false, static_cast<int>(i)};
      if (peak > 0.0 && bandwidth > 0.0) {
        const double ridge = peak / bandwidth, start = std::max(xlo, std::min(ridge, ylo / 10 / bandwidth));
        line.name = fmt::format("{} roof: {} GFLOP/s; memory {} GB/s", dtypes[i], format_number(peak),
                                format_number(bandwidth));
        line.points = {{start, bandwidth * start, "", ""}, {ridge, peak, "", ""}, {xhi, peak, "", ""}};
      } else if (peak > 0.0) {
        line.name = fmt::format("{} roof: {} GFLOP/s (no memory roof measured)", dtypes[i], format_number(peak));
        line.points = {{xlo, peak, "", ""}, {xhi, peak, "", ""}};
      } else {
        continue;
      }
      plot.series.push_back(std::move(line));
    }
    if (copies[device] > 0) {
      plot.notes.push_back(fmt::format("{} op{} that only move{} bytes (copies) not on it: see the Ops table",
                                       copies[device], copies[device] == 1 ? "" : "s", copies[device] == 1 ? "s" : ""));
    }
    plot.notes.push_back("Roofs measured in the same run: the best GEMM or convolution per dtype, a STREAM triad.");
    charts.push_back({"roofline_" + file_part(device) + ".svg", "Roofline of " + device, xy_plot(plot), "ops"});
  }
}

// Scaling efficiency vs world size, one line per configuration; all-reduce bus bandwidth vs message size.
void add_scaling_charts(const ResultSet& results, std::vector<Chart>& charts) {
  XYPlot scaling{"Scaling efficiency vs world size",
                 {"world size (ranks)", false, false},
                 {"scaling efficiency, %", false, true},
                 {},
                 {}};
  XYPlot busbw{"All-reduce bus bandwidth vs message size",
               {"message size (bytes, log scale)", true, false},
               {"busbw GB/s", false, true},
               {},
               {}};
  std::map<std::string, size_t> series_of;
  double wlo = INFINITY, whi = 0.0;
  bool above = false;
  for (const auto& r : results.results) {
    if (r.failed() || (r.suite != "dist_train" && r.suite != "dist_allreduce")) continue;
    const bool train = r.suite == "dist_train";
    XYPlot& plot = train ? scaling : busbw;
    const std::string key = r.device_label + " " + name_without(r.name, train ? "world" : "bytes");
    const auto [at, inserted] = series_of.try_emplace(key, plot.series.size());
    if (inserted)
      plot.series.push_back(
          {key.substr(key.find(' ') + 1), {}, true, true, false, false, static_cast<int>(at->second)});
    if (train) {
      const double world = r.counter("world_size"), pct = 100.0 * r.counter("scaling_efficiency");
      plot.series[at->second].points.push_back(
          {world, pct, format_pct(pct), fmt::format("world {:.0f}: {}", world, format_pct(pct))});
      wlo = std::min(wlo, world), whi = std::max(whi, world);
      above = above || efficiency_above_noise(r.counter("scaling_efficiency"));
    } else {
      const double bytes = r.counter("bytes"), bw = r.counter("busbw_gbps");
      plot.series[at->second].points.push_back(
          {bytes, bw, "", fmt::format("{:.0f} bytes: {} GB/s", bytes, format_number(bw))});
    }
  }
  if (!scaling.series.empty()) {
    for (auto& s : scaling.series) {
      std::sort(s.points.begin(), s.points.end(), [](const PlotPoint& a, const PlotPoint& b) { return a.x < b.x; });
    }
    scaling.series.push_back(
        {"linear scaling (100%)", {{wlo, 100.0, "", ""}, {whi, 100.0, "", ""}}, true, false, true, false, 7});
    if (above) scaling.notes.push_back(kScalingAboveNote);
    charts.push_back({"scaling.svg", "Scaling efficiency vs world size", xy_plot(scaling), "scaling"});
  }
  if (!busbw.series.empty()) {
    for (auto& s : busbw.series) {
      std::sort(s.points.begin(), s.points.end(), [](const PlotPoint& a, const PlotPoint& b) { return a.x < b.x; });
    }
    busbw.notes.push_back("busbw = bytes x 2(n-1)/n / time, as nccl-tests define it.");
    charts.push_back({"allreduce_busbw.svg", "All-reduce bus bandwidth vs message size", xy_plot(busbw), "other"});
  }
}

// The training charts: images/s per device, and the speedup over the CPU where a GPU ran too.
void add_training_charts(const TrainView& view, std::vector<Chart>& charts) {
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
    return;
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
}

}  // namespace

std::vector<Chart> make_charts(const ResultSet& results) {
  std::vector<Chart> charts;
  const TrainView view = train_view(results);
  if (!view.rows.empty()) add_training_charts(view, charts);
  add_phase_chart(view, charts);
  add_roofline_charts(results, charts);
  add_scaling_charts(results, charts);
  return charts;
}

}  // namespace torchprobe::report
