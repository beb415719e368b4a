#include "torchprobe/history/dashboard.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "torchprobe/digest.h"
#include "torchprobe/flags.h"
#include "torchprobe/input_error.h"
#include "torchprobe/report/printers.h"
#include "torchprobe/report/svg_util.h"
#include "torchprobe/report/table.h"
#include "torchprobe/report/views.h"

namespace torchprobe::history {
namespace {

using report::text_width;
using report::xml_escape;

constexpr double kChartWidth = 760, kPlotTop = 34, kPlotHeight = 150, kPad = 8, kFont = 11;
constexpr double kSecondsPerHour = 3600.0;

// The page runs nothing from outside and nothing but its own style and script: the policy blocks any load and
// admits only the inline <style> and <script> whose SHA-256 it names (no 'unsafe-inline'), so markup that got
// into the page some other way stays inert, and a stray reference shows as a console error.
const char* const kStyle = R"(
body{font-family:sans-serif;margin:16px;color:#222}
h1{font-size:20px}h2{font-size:17px;margin-top:28px}h3{font-size:13px;margin:18px 0 4px;font-weight:normal;word-break:break-all}
section.series svg,section.device svg{display:block;max-width:100%;height:auto}
table{border-collapse:collapse;font-size:13px}th,td{border:1px solid #ccc;padding:3px 8px}td.num,th.num{text-align:right}
#filter{font-size:14px;width:28em;padding:3px}
.note{color:#555;font-size:13px}
)";

// Filter box; self-check on "#selftest=filter:TEXT[,clip-canary]" for the browser test.
const char* const kScript = R"(
(function () {
  var errors = [];
  window.addEventListener('error', function (e) { errors.push(String(e.message)); });
  var box = document.getElementById('filter');
  var charts = Array.prototype.slice.call(document.querySelectorAll('section.series'));
  function apply() {
    var q = box.value.toLowerCase(), shown = 0;
    charts.forEach(function (c) {
      var show = c.getAttribute('data-key').toLowerCase().indexOf(q) >= 0;
      c.style.display = show ? '' : 'none';
      if (show) shown++;
    });
    document.getElementById('shown').textContent = shown + ' of ' + charts.length + ' series';
  }
  box.addEventListener('input', apply);
  apply();
  function clipped() {
    var out = [], checked = 0;
    Array.prototype.forEach.call(document.querySelectorAll('svg'), function (svg) {
      var vb = svg.viewBox.baseVal;
      Array.prototype.forEach.call(svg.querySelectorAll('text'), function (t) {
        var b = t.getBBox();
        checked++;
        if (b.x < vb.x - 0.5 || b.y < vb.y - 0.5 || b.x + b.width > vb.x + vb.width + 0.5 || b.y + b.height > vb.y + vb.height + 0.5) {
          out.push({chart: svg.id, text: t.firstChild ? t.firstChild.nodeValue : '', x: b.x, y: b.y, width: b.width, height: b.height,
                    view: [vb.x, vb.y, vb.width, vb.height]});
        }
      });
    });
    return {checked: checked, clipped: out};
  }
  var m = /selftest=([^&]*)/.exec(location.hash);
  if (!m) return;
  var args = decodeURIComponent(m[1]), result = {charts_total: charts.length};
  if (args.indexOf('clip-canary') >= 0) {
    var svg = document.querySelector('svg'), t = document.createElementNS('http://www.w3.org/2000/svg', 'text');
    t.setAttribute('x', svg.viewBox.baseVal.width - 10); t.setAttribute('y', 20); t.textContent = 'canary text past the edge';
    svg.appendChild(t);
  }
  var fit = clipped();
  result.texts_checked = fit.checked;
  result.clipped = fit.clipped;
  var f = /filter:([^,]*)/.exec(args);
  if (f) { box.value = f[1]; box.dispatchEvent(new Event('input')); }
  result.charts_visible = charts.filter(function (c) { return c.getBoundingClientRect().height > 0; }).length;
  result.errors = errors;
  document.getElementById('selftest').textContent = JSON.stringify(result);
})();
)";

// A CSP hash source for an inline element's exact text.
std::string hash_source(const std::string& text) { return "'sha256-" + base64(sha256(text)) + "'"; }

std::string head() {
  return fmt::format(R"(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src {}; style-src {}; img-src data:">
<title>torchprobe performance history</title>
<style>{}</style></head>
<body>
<h1>torchprobe performance history</h1>
)",
                     hash_source(kScript), hash_source(kStyle), kStyle);
}

// One series: median per run as a line, median +- CV as a band, change points as dashed lines with labels.
std::string series_svg(const SeriesReport& report, size_t id) {
  const auto& points = report.series.points;
  double lo = INFINITY, hi = 0.0;
  for (const auto& p : points) {
    const double cv = std::max(0.0, p.cv_pct) / 100.0;
    lo = std::min(lo, p.median_ms * (1.0 - cv));
    hi = std::max(hi, p.median_ms * (1.0 + cv));
  }
  if (!(hi > lo)) lo = lo * 0.9, hi = hi * 1.1 + 1e-9;
  const double span = hi - lo;
  const std::vector<double> ticks = report::linear_ticks(lo - 0.05 * span, hi + 0.05 * span, /*target=*/4);
  const double y_lo = std::min(ticks.front(), lo), y_hi = std::max(ticks.back(), hi);
  double label_width = 0.0;
  for (const double t : ticks) label_width = std::max(label_width, text_width(report::format_duration(t), kFont));
  const double left = kPad + label_width + 6, right = kChartWidth - kPad - 4;
  const double n = static_cast<double>(points.size());
  const auto x_of = [&](size_t i) { return points.size() < 2 ? (left + right) / 2 : left + (right - left) * static_cast<double>(i) / (n - 1); };
  const auto y_of = [&](double v) { return kPlotTop + kPlotHeight * (1.0 - (v - y_lo) / (y_hi - y_lo)); };
  const double axis_y = kPlotTop + kPlotHeight, height = axis_y + 36;

  std::string body;
  for (const double t : ticks) {
    body += fmt::format(R"(<line x1="{0:.1f}" y1="{1:.1f}" x2="{2:.1f}" y2="{1:.1f}" stroke="#e4e4e4"/>)"
                        R"(<text x="{3:.1f}" y="{4:.1f}" font-size="{5}" text-anchor="end">{6}</text>)" "\n",
                        left, y_of(t), right, left - 6, y_of(t) + 4, kFont, xml_escape(report::format_duration(t)));
  }
  std::string upper, lower, line;
  for (size_t i = 0; i < points.size(); ++i) {
    const double cv = std::max(0.0, points[i].cv_pct) / 100.0, m = points[i].median_ms;
    upper += fmt::format("{:.1f},{:.1f} ", x_of(i), y_of(m * (1.0 + cv)));
    lower = fmt::format("{:.1f},{:.1f} ", x_of(i), y_of(m * (1.0 - cv))) + lower;
    line += fmt::format("{:.1f},{:.1f} ", x_of(i), y_of(m));
  }
  body += fmt::format(R"(<polygon class="cv-band" points="{}{}" fill="#4e79a7" fill-opacity="0.18" stroke="none"/>)" "\n", upper, lower);
  body += fmt::format(R"(<polyline class="median" points="{}" fill="none" stroke="#4e79a7" stroke-width="1.5"/>)" "\n", line);
  if (points.size() <= 60) {  // markers with tooltips while they stay readable
    for (size_t i = 0; i < points.size(); ++i) {
      const Point& p = points[i];
      body += fmt::format(R"(<circle cx="{:.1f}" cy="{:.1f}" r="2.5" fill="#4e79a7"><title>{} {}: {} (CV {})</title></circle>)" "\n",
                          x_of(i), y_of(p.median_ms), xml_escape(short_commit(p.commit)), xml_escape(p.date),
                          xml_escape(report::format_duration(p.median_ms)), report::format_cv(p.cv_pct));
    }
  }
  // Change points: a label above the plot, placed so it stays inside the chart; labels alternate rows.
  for (size_t c = 0; c < report.changes.size(); ++c) {
    const SeriesChange& change = report.changes[c];
    const double x = points.size() < 2 ? x_of(0) : left + (right - left) * (static_cast<double>(change.index) - 0.5) / (n - 1);
    const char* colour = change.slowdown() ? "#d62728" : "#2ca02c";
    const std::string label = fmt::format("{} {}", short_commit(change.commit), report::format_pct(change.change_pct, /*sign=*/true));
    const double w = text_width(label, kFont);
    const double label_x = std::clamp(x - w / 2, kPad, kChartWidth - kPad - w);
    body += fmt::format(R"(<line class="change-point" data-commit="{}" x1="{:.1f}" y1="{:.1f}" x2="{:.1f}" y2="{:.1f}" stroke="{}" stroke-dasharray="4 3"/>)"
                        R"(<text x="{:.1f}" y="{:.1f}" font-size="{}" fill="{}">{}<title>{} -&gt; {}, p = {:.3f}</title></text>)" "\n",
                        xml_escape(change.commit), x, kPlotTop - 4, x, axis_y, colour, label_x, c % 2 == 0 ? 14.0 : 28.0, kFont,
                        colour, xml_escape(label), xml_escape(report::format_duration(change.before_ms)),
                        xml_escape(report::format_duration(change.after_ms)), change.p_value);
  }
  body += fmt::format(R"(<line x1="{0:.1f}" y1="{1:.1f}" x2="{2:.1f}" y2="{1:.1f}" stroke="#333"/>)" "\n", left, axis_y, right);
  if (!points.empty()) {
    body += fmt::format(R"(<text x="{:.1f}" y="{:.1f}" font-size="{}">{}</text>)" "\n", left, axis_y + 15, kFont,
                        xml_escape(short_commit(points.front().commit)));
    body += fmt::format(R"(<text x="{:.1f}" y="{:.1f}" font-size="{}" text-anchor="end">{}</text>)" "\n", right, axis_y + 15, kFont,
                        xml_escape(short_commit(points.back().commit)));
  }
  const std::string axis = fmt::format("{} runs, oldest to newest; median per run (ms, lower is better), band: +-CV", points.size());
  body += fmt::format(R"(<text x="{:.1f}" y="{:.1f}" font-size="{}" text-anchor="middle" fill="#555">{}</text>)" "\n",
                      (left + right) / 2, axis_y + 30, kFont, xml_escape(axis));
  return fmt::format(R"(<svg id="chart-{0}" xmlns="http://www.w3.org/2000/svg" width="{1:.0f}" height="{2:.0f}" viewBox="0 0 {1:.0f} {2:.0f}" font-family="sans-serif">)"
                     "\n{3}</svg>\n",
                     id, kChartWidth, height, body);
}

// One line of the report's Markdown (report::warnings: markdown_text's backslash escapes, markdown_code's spans,
// fenced by a run of backticks and literal inside) as HTML.
std::string markdown_line_html(const std::string& line) {
  std::string out;
  for (size_t i = 0; i < line.size();) {
    if (line[i] == '\\' && i + 1 < line.size()) {
      out += xml_escape(line.substr(i + 1, 1));
      i += 2;
    } else if (line[i] == '`') {
      const size_t fence_end = line.find_first_not_of('`', i);
      const std::string fence = line.substr(i, fence_end == std::string::npos ? std::string::npos : fence_end - i);
      const size_t close = fence_end == std::string::npos ? std::string::npos : line.find(fence, fence_end);
      if (close == std::string::npos) {  // no closing fence: the backticks are text
        out += xml_escape(fence);
        i += fence.size();
        continue;
      }
      out += "<code>" + xml_escape(line.substr(fence_end, close - fence_end)) + "</code>";
      i = close + fence.size();
    } else {
      const size_t next = line.find_first_of("\\`", i + 1);
      const size_t end = next == std::string::npos ? line.size() : next;
      out += xml_escape(line.substr(i, end - i));
      i = end;
    }
  }
  return out;
}

// Dollars as people write them: cents from 1 USD up, else 3 significant digits in plain decimals (0.000449, never
// 4.49e-04: a GPU's cost per epoch is a fraction of a cent).
std::string format_usd(double usd) {
  if (!(usd > 0.0)) return "0";
  if (usd >= 1.0) return fmt::format("{:.2f}", usd);
  const int decimals = std::min(15, 2 - static_cast<int>(std::floor(std::log10(usd))));
  std::string text = fmt::format("{:.{}f}", usd, decimals);
  while (text.size() > 4 && text.back() == '0') text.pop_back();  // 0.360 -> 0.36, keeping the cents
  return text;
}

std::string cost_cell(double seconds, double usd_per_hour) {
  if (!std::isfinite(seconds) || seconds <= 0.0 || !std::isfinite(usd_per_hour)) return "-";
  return format_usd(seconds / kSecondsPerHour * usd_per_hour);
}

// The latest runs' training throughput per device, with costs where the device has a price.
std::string device_section(const report::ResultSet& latest, const DashboardOptions& options) {
  const report::TrainView view = report::train_view(latest);
  if (view.rows.empty()) return "<p class=\"note\">No training-step results in the latest runs.</p>\n";
  report::Table table{{"configuration", "device", "device name", "images/s", "CV"}, {false, false, false, true, true}, {}};
  const bool priced = !options.usd_per_hour.empty();
  if (priced) {
    table.header.insert(table.header.end(), {"USD/hour", "USD per epoch", "USD per million images"});
    table.right_aligned.insert(table.right_aligned.end(), {true, true, true});
  }
  for (const auto& row : view.rows) {
    for (const auto& device : view.devices) {
      const auto it = row.by_device.find(device);
      if (it == row.by_device.end()) continue;
      const report::Result& r = *it->second;
      const double rate = report::images_per_s(row, device);
      std::vector<std::string> cells{row.label(), device, r.device_name, r.failed() ? "failed" : report::format_rate(rate),
                                     report::format_cv(r.cv_pct)};
      if (priced) {
        const auto price = options.usd_per_hour.find(device);
        const double usd = price == options.usd_per_hour.end() ? NAN : price->second;
        cells.push_back(std::isfinite(usd) ? format_usd(usd) : "-");
        cells.push_back(cost_cell(r.counter("epoch_s"), usd));
        cells.push_back(cost_cell(1e6 / rate, usd));
      }
      table.add(cells);
    }
  }
  std::string out = table.html();
  // What the report would warn about these figures (a busy host, noisy repetitions, figures above their roof, ...).
  const auto warnings = report::warnings(latest, report::ReportOptions{}.noise_cv_pct);
  if (!warnings.empty()) {
    out += fmt::format(R"(<details class="warnings" open><summary>{} warning{} about these figures</summary><ul>)"
                       "\n",
                       warnings.size(), warnings.size() == 1 ? "" : "s");
    for (const auto& line : warnings) out += "<li>" + markdown_line_html(line) + "</li>\n";
    out += "</ul></details>\n";
  }
  for (const auto& chart : report::make_charts(latest)) {
    std::string svg = chart.svg;
    const size_t start = svg.find("<svg");  // inline: without the XML declaration, with an id for the self-check
    svg = svg.substr(start);
    svg.insert(4, fmt::format(R"( id="device-{}")", chart.file.substr(0, chart.file.find('.'))));
    out += "<section class=\"device\">\n" + svg + "</section>\n";
  }
  return out;
}

}  // namespace

std::map<std::string, double> parse_prices(const std::string& text) {
  std::map<std::string, double> prices;
  for (const auto& item : list_flag("--price", text)) {
    const size_t eq = item.rfind('=');
    double value = NAN;
    size_t used = 0;
    if (eq != std::string::npos && eq > 0 && eq + 1 < item.size()) {
      try {
        value = std::stod(item.substr(eq + 1), &used);
      } catch (const std::exception&) {
        used = 0;
      }
    }
    if (eq == std::string::npos || eq == 0 || used == 0 || eq + 1 + used != item.size() || !std::isfinite(value) || value < 0.0) {
      throw InputError(fmt::format("--price: expected DEVICE=USD_PER_HOUR (e.g. cuda:0=2.50), got '{}'", item.substr(0, 80)));
    }
    prices[item.substr(0, eq)] = value;
  }
  return prices;
}

std::string dashboard_html(const std::vector<SeriesReport>& reports, const report::ResultSet& latest,
                           const DashboardOptions& options) {
  size_t runs = 0, changes = 0;
  for (const auto& r : reports) runs = std::max(runs, r.series.points.size()), changes += r.changes.size();
  std::string out = head();
  out += fmt::format("<p class=\"note\">{} series, up to {} runs each, {} change points (E-divisive means).</p>\n",
                     reports.size(), runs, changes);
  out += "<h2>Latest device comparison</h2>\n" + device_section(latest, options);
  out += "<h2>History per benchmark</h2>\n";
  out += R"(<p><label>Filter: <input id="filter" type="search" placeholder="part of a name, device or host"></label> <span id="shown"></span></p>)" "\n";
  for (size_t i = 0; i < reports.size(); ++i) {
    const Series& s = reports[i].series;
    const std::string key = fmt::format("{} {} {}", s.name, s.device, s.host);
    out += fmt::format("<section class=\"series\" data-key=\"{}\">\n<h3>{} <span class=\"note\">on {} @ {}</span></h3>\n{}</section>\n",
                       xml_escape(key), xml_escape(s.name), xml_escape(s.device), xml_escape(s.host), series_svg(reports[i], i));
  }
  out += "<pre id=\"selftest\" hidden></pre>\n";
  out += std::string("<script>") + kScript + "</script>\n";
  out += "</body></html>\n";
  return out;
}

}  // namespace torchprobe::history
