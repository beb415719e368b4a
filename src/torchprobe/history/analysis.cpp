#include "torchprobe/history/analysis.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "torchprobe/escape.h"
#include "torchprobe/report/table.h"
#include "torchprobe/stats.h"

namespace torchprobe::history {
namespace {

using report::format_duration;
using report::format_pct;

double segment_median(const std::vector<Point>& points, size_t begin, size_t end) {
  std::vector<double> values;
  for (size_t i = begin; i < end; ++i) values.push_back(points[i].median_ms);
  return median(values);
}

// The change points as show and check print them: the medians between neighbouring change points (e_divisive has
// already dropped those too small, judged on the same segments).
std::vector<SeriesChange> changes_of(const Series& series, const std::vector<ChangePoint>& found) {
  const auto& points = series.points;
  std::vector<SeriesChange> changes;
  for (size_t c = 0; c < found.size(); ++c) {
    const size_t begin = c == 0 ? 0 : found[c - 1].index;
    const size_t end = c + 1 == found.size() ? points.size() : found[c + 1].index;
    SeriesChange change;
    change.index = found[c].index;
    change.commit = points[change.index].commit;
    change.date = points[change.index].date;
    change.before_ms = segment_median(points, begin, change.index);
    change.after_ms = segment_median(points, change.index, end);
    change.change_pct = found[c].change_pct;
    change.low_pct = found[c].low_pct;
    change.high_pct = found[c].high_pct;
    change.p_value = found[c].p_value;
    changes.push_back(change);
  }
  return changes;
}

std::string points_table(const Series& series, const std::vector<SeriesChange>& changes, size_t last) {
  report::Table table{{"commit", "branch", "date", "median", "CV", "reps", ""}, {false, false, false, true, true, true, false}, {}};
  const size_t n = series.points.size();
  const size_t first = last == 0 || last >= n ? 0 : n - last;
  for (size_t i = first; i < n; ++i) {
    const Point& p = series.points[i];
    std::string mark;
    for (const auto& c : changes) {
      if (c.index == i) mark = fmt::format("<- change {}", format_pct(c.change_pct, /*sign=*/true));
    }
    table.add({short_commit(p.commit), p.branch, p.date, format_duration(p.median_ms), report::format_cv(p.cv_pct),
               std::to_string(p.repetitions), mark});
  }
  std::string out = first > 0 ? fmt::format("  ({} earlier runs not listed)\n", first) : "";
  std::string text = table.console();
  for (size_t start = 0; start < text.size();) {  // indented under the series' header
    const size_t nl = std::min(text.find('\n', start), text.size());
    out += "  " + text.substr(start, nl - start) + "\n";
    start = nl + 1;
  }
  return out;
}

// Console lines: the commit, date, name, device and host come from the database, so each is escaped.
std::string change_line(const SeriesChange& c) {
  return fmt::format("change point at {} ({}): {} -> {} ({}, interval {} to {}, p = {:.3f}){}",
                     terminal_line(short_commit(c.commit)), terminal_line(c.date), format_duration(c.before_ms),
                     format_duration(c.after_ms), format_pct(c.change_pct, /*sign=*/true),
                     format_pct(c.low_pct, /*sign=*/true), format_pct(c.high_pct, /*sign=*/true), c.p_value,
                     c.slowdown() ? " SLOWER" : " faster");
}

std::string series_header(const Series& s) {
  return fmt::format("{}  device {}  host {}  ({} run{})", terminal_line(s.name), terminal_line(s.device),
                     terminal_line(s.host), s.points.size(),
                     s.points.size() == 1 ? "" : "s");
}

}  // namespace

std::vector<SeriesReport> analyze(std::vector<Series> series, const ChangePointOptions& options,
                                  const SampleLoader& samples_of) {
  std::vector<SeriesReport> reports;
  reports.reserve(series.size());
  for (auto& s : series) {
    std::vector<double> values;
    values.reserve(s.points.size());
    for (const auto& p : s.points) values.push_back(p.median_ms);
    std::vector<ChangePoint> found = significant_splits(values, options);
    // The repetitions of the runs the size rule may draw: those within its reach of a split.
    std::vector<std::vector<double>> samples(s.points.size());
    const size_t reach = few_runs_reach();
    for (const auto& c : found) {
      const size_t from = c.index > reach ? c.index - reach : 0, to = std::min(s.points.size(), c.index + reach);
      for (size_t i = from; i < to; ++i) {
        if (samples[i].empty()) samples[i] = samples_of ? samples_of(s.points[i]) : s.points[i].samples_ms;
      }
    }
    keep_large_enough(values, samples, options, found);
    SeriesReport r{std::move(s), {}};
    r.changes = changes_of(r.series, found);
    reports.push_back(std::move(r));
  }
  return reports;
}

std::string show_console(const std::vector<SeriesReport>& reports, size_t last) {
  std::string out;
  size_t with_changes = 0;
  for (const auto& r : reports) {
    out += series_header(r.series) + "\n" + points_table(r.series, r.changes, last);
    for (const auto& c : r.changes) out += "  " + change_line(c) + "\n";
    if (r.changes.empty()) out += "  no change point\n";
    out += "\n";
    with_changes += r.changes.empty() ? 0 : 1;
  }
  out += fmt::format("{} series, {} with change points\n", reports.size(), with_changes);
  return out;
}

std::string show_json(const std::vector<SeriesReport>& reports) {
  using nlohmann::json;
  json benchmarks = json::array();
  for (const auto& r : reports) {
    json points = json::array();
    for (const auto& p : r.series.points) {
      points.push_back({{"run_id", p.run_id}, {"commit", p.commit}, {"branch", p.branch}, {"date", p.date},
                        {"median_ms", p.median_ms}, {"cv_pct", p.cv_pct < 0.0 ? json(nullptr) : json(p.cv_pct)},
                        {"repetitions", p.repetitions}});
    }
    json changes = json::array();
    for (const auto& c : r.changes) {
      changes.push_back({{"commit", c.commit}, {"date", c.date}, {"index", c.index}, {"before_ms", c.before_ms},
                         {"after_ms", c.after_ms}, {"change_pct", c.change_pct}, {"change_low_pct", c.low_pct},
                         {"change_high_pct", c.high_pct}, {"p_value", c.p_value}});
    }
    benchmarks.push_back({{"name", r.series.name}, {"device", r.series.device}, {"host", r.series.host},
                          {"points", points}, {"change_points", changes}});
  }
  return json{{"benchmarks", benchmarks}}.dump(1) + "\n";
}

std::vector<Slowdown> slowdowns_at(const std::vector<SeriesReport>& reports, const std::string& commit) {
  std::vector<Slowdown> out;
  for (const auto& r : reports) {
    for (const auto& c : r.changes) {
      if (c.commit == commit && c.slowdown()) out.push_back({&r, &c});
    }
  }
  return out;
}

std::string check_console(const std::vector<Slowdown>& slowdowns, const std::string& commit, size_t series_checked,
                          const ChangePointOptions& options) {
  std::string out;
  for (const auto& s : slowdowns) {
    out += "SLOWER  " + series_header(s.report->series) + "\n";
    out += "  " + change_line(*s.change) + "\n";
    out += points_table(s.report->series, s.report->changes, /*last=*/8) + "\n";
  }
  const std::string settings = fmt::format("min change {} on the {:g}% interval, alpha {}", format_pct(options.min_change_pct),
                                           100.0 * options.confidence, options.alpha);
  if (slowdowns.empty()) {
    out += fmt::format("OK: no slowdown change point at commit {} in {} series ({}; exit 0)\n", terminal_line(short_commit(commit)),
                       series_checked, settings);
  } else {
    out += fmt::format("FAIL: {} of {} series slowed down at commit {} ({}; exit 1)\n", slowdowns.size(), series_checked,
                       terminal_line(short_commit(commit)), settings);
  }
  return out;
}

}  // namespace torchprobe::history
