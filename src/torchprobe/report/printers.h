#pragma once
// Printers of a ResultSet. They format; they never measure.
#include <string>
#include <vector>

#include "torchprobe/report/results.h"
#include "torchprobe/report/traces.h"

namespace torchprobe::report {

struct ReportOptions {
  double noise_cv_pct = 5.0;  ///< warn when a benchmark's CV over repetitions exceeds this
  std::vector<TraceSummary> traces;  ///< --traces: where each traced training step's time goes
};

/// An SVG chart and the file name it is written under, next to report.md.
struct Chart {
  std::string file;   ///< e.g. "images_per_s.svg"
  std::string title;  ///< alt text in the Markdown
  std::string svg;
  std::string section = "training";  ///< where report.md shows it: "training", "phases", "ops", "scaling"
};

/// Tidy CSV: one row per benchmark x device (phase "step" for training steps, empty for others),
/// plus one row per training phase (phase h2d, forward, ...).
std::string to_csv(const ResultSet& results);
/// Charts: images/s per device per training configuration; speedup vs the CPU when a GPU ran; each step's phases
/// stacked; a roofline per device with its ops; scaling efficiency vs world size; all-reduce busbw vs message size.
std::vector<Chart> make_charts(const ResultSet& results);
/// The Markdown report, linking the given charts by file name.
std::string to_markdown(const ResultSet& results, const std::vector<Chart>& charts, const ReportOptions& options);
/// The short console summary (training images/s per device and speedup, ops, warning count).
std::string to_console_summary(const ResultSet& results, const ReportOptions& options);

}  // namespace torchprobe::report
