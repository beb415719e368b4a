#pragma once
// Baseline vs current: median change per benchmark, a Mann-Whitney U test on the repetitions,
// and the CI verdict (only significant slow-downs beyond the threshold fail).
#include <string>
#include <utility>
#include <vector>

#include "torchprobe/report/results.h"

namespace torchprobe::report {

struct UTest {
  double u = 0.0;      ///< U of the first sample
  double p = 1.0;      ///< two-sided p-value
  bool exact = false;  ///< exact distribution (no ties, a small sample) or normal approximation
};
/// Two-sided Mann-Whitney U test, as scipy.stats.mannwhitneyu(x, y) with its default method:
/// exact without ties when either sample has <= 8 values (and n1*n2 <= 2500), else the tie-corrected normal
/// approximation with continuity correction. Both samples need >= 1 value.
UTest mann_whitney_u(const std::vector<double>& x, const std::vector<double>& y);
/// The smallest two-sided p the exact test can give for these sample sizes (2 / C(n1+n2, n1)).
double mann_whitney_min_p(size_t n1, size_t n2);

struct CompareOptions {
  double threshold_pct = 5.0;  ///< a change of the median beyond this is a regression candidate
  double alpha = 0.05;         ///< significance level of the U test
};

enum class Verdict { kSlower, kFaster, kUnchanged };

struct Comparison {
  std::string name;
  double baseline_ms = 0.0, current_ms = 0.0;
  double change_pct = 0.0;  ///< (current - baseline) / baseline; > 0 is slower
  int baseline_reps = 0, current_reps = 0;
  bool tested = false;  ///< a U test ran (both sides have >= 2 repetitions)
  UTest test;
  std::string note;  ///< why the U test did not decide, when it did not
  Verdict verdict = Verdict::kUnchanged;
};

struct CompareReport {
  std::vector<Comparison> rows;
  std::vector<std::string> only_baseline, only_current;
  std::vector<std::pair<std::string, std::string>> not_compared;  ///< name, reason (failed runs)
  double geomean_ratio = 1.0;  ///< geometric mean of current/baseline over the compared rows
  int regressions() const;
};

CompareReport compare_results(const ResultSet& baseline, const ResultSet& current, const CompareOptions& options);

/// Printers of a CompareReport: an aligned console table and GitHub Markdown.
std::string compare_console(const CompareReport& report, const CompareOptions& options);
std::string compare_markdown(const CompareReport& report, const CompareOptions& options);

/// "5%", "5" or "2.5%" -> 5.0 / 2.5 (percent); InputError otherwise.
double parse_percent(const std::string& text, const std::string& flag);

}  // namespace torchprobe::report
