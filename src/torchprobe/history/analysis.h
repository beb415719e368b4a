#pragma once
// Series with their change points, and what `torchprobe history show` and `check` print of them.
#include <functional>
#include <string>
#include <vector>

#include "torchprobe/history/change_points.h"
#include "torchprobe/history/store.h"

namespace torchprobe::history {

/// A change point of a series, with the medians of the segments on either side of it.
struct SeriesChange {
  size_t index = 0;  ///< the first point after the change
  std::string commit, date;
  double before_ms = 0.0, after_ms = 0.0;
  double change_pct = 0.0;  ///< > 0: slower
  double low_pct = 0.0, high_pct = 0.0;  ///< its bootstrap interval (ChangePointOptions::confidence)
  double p_value = 1.0;
  bool slowdown() const { return change_pct > 0.0; }
};

struct SeriesReport {
  Series series;
  std::vector<SeriesChange> changes;
};

/// E-divisive on each series' per-run medians, each change's size judged on its bootstrap interval over the runs
/// and their stored repetitions (e_divisive). Segment medians are taken between neighbouring change points.
/// `samples_of` gives a point's stored repetitions when the size rule needs them (Store::samples, read only for
/// runs near a split); without it, each point's samples_ms.
using SampleLoader = std::function<std::vector<double>(const Point&)>;
std::vector<SeriesReport> analyze(std::vector<Series> series, const ChangePointOptions& options,
                                  const SampleLoader& samples_of = nullptr);

/// Per series: its runs (the last `last` of them; 0: all) with median and CV, and its change points.
std::string show_console(const std::vector<SeriesReport>& reports, size_t last);
/// {"benchmarks": [{"name", "device", "host", "points": [...], "change_points": [...]}]}
std::string show_json(const std::vector<SeriesReport>& reports);

/// The slowdown change points that fall on `commit`, as (series, change).
struct Slowdown {
  const SeriesReport* report = nullptr;
  const SeriesChange* change = nullptr;
};
std::vector<Slowdown> slowdowns_at(const std::vector<SeriesReport>& reports, const std::string& commit);
/// What `history check` prints: each offending series with its last runs, and a verdict line.
std::string check_console(const std::vector<Slowdown>& slowdowns, const std::string& commit, size_t series_checked,
                          const ChangePointOptions& options);

}  // namespace torchprobe::history
