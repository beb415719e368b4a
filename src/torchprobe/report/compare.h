#pragma once
// Baseline vs current: a verdict per benchmark for the CI gate. Only significant slow-downs beyond the
// threshold, and benchmarks that ran in the baseline and fail now, fail the gate.
#include <limits>
#include <string>
#include <vector>

#include "torchprobe/report/results.h"

namespace torchprobe::report {

struct UTest {
  double u = 0.0;      ///< U of the first sample
  double p = 1.0;      ///< two-sided p-value
  bool exact = false;  ///< exact distribution (no ties, a small sample) or normal approximation
};
/// Two-sided Mann-Whitney U test, as scipy.stats.mannwhitneyu(x, y) with its default method: exact
/// when either sample has <= 8 values and there are no ties (whatever the other's size), else the
/// tie-corrected normal approximation with continuity correction. Both samples need >= 1 value.
UTest mann_whitney_u(const std::vector<double>& x, const std::vector<double>& y);
/// The smallest two-sided p the exact test can give for these sample sizes (2 / C(n1+n2, n1)).
double mann_whitney_min_p(size_t n1, size_t n2);
/// Welch's two-sided t-test from summary statistics, as scipy.stats.ttest_ind_from_stats(...,
/// equal_var=False): for files that keep only the mean, stddev and count. Needs n >= 2 on both sides.
double welch_p(double mean1, double stddev1, int n1, double mean2, double stddev2, int n2);

struct CompareOptions {
  double threshold_pct = 5.0;     ///< a change of the median beyond this is a regression candidate
  double alpha = 0.05;            ///< significance level
  bool fail_unconfirmed = false;  ///< UNCONFIRMED fails the gate too
};

/// SLOWER: significant and beyond the threshold. UNCONFIRMED: slower beyond the threshold, but too few
/// repetitions to test it. FAILED: ran in the baseline, fails now (or the current file has no
/// benchmarks). FASTER: significant and beyond the threshold. SAME: anything else that ran on both
/// sides. NEW: only in the current file (or failed in the baseline). GONE: only in the baseline.
enum class Verdict { kSlower, kUnconfirmed, kFailed, kFaster, kSame, kNew, kGone };
std::string verdict_name(Verdict verdict);

/// One benchmark on one side.
struct Side {
  bool present = false;
  std::string error;  ///< every repetition failed
  double median_ms = 0.0, cv_pct = -1.0;
  int repetitions = 0, failed_repetitions = 0;
  bool aggregates_only = false;
};

struct Comparison {
  std::string name;
  Verdict verdict = Verdict::kSame;
  Side baseline, current;
  double change_pct = 0.0;  ///< (current - baseline) / baseline of the medians; > 0 is slower
  /// The change's 95% bootstrap interval (kChangeConfidence) from the repetitions (NaN: fewer than 2 on a side, or
  /// aggregates only).
  double change_lo_pct = std::numeric_limits<double>::quiet_NaN(),
         change_hi_pct = std::numeric_limits<double>::quiet_NaN();
  std::string test;         ///< "Mann-Whitney U", "Welch t" or "" (none possible)
  double p = 1.0;           ///< the test's p (1 when none ran)
  double min_p = 0.0;       ///< UNCONFIRMED: the smallest p these repetitions could reach (1: none)
  std::string note;         ///< what the reader should know: dropped repetitions, why not tested, ...
  bool paired() const { return baseline.present && current.present && baseline.error.empty() && current.error.empty(); }
};

struct CompareReport {
  std::vector<Comparison> rows;  ///< the baseline's benchmarks in its order, then the new ones
  bool current_empty = false;    ///< the current file has no benchmark at all
  std::string current_partial;   ///< the current run's partial_runs(): it stopped before its end
  std::string baseline_partial;  ///< the baseline's (a note only: it still gates what it has)
  double geomean_ratio = 1.0;    ///< geometric mean of current/baseline medians over the paired rows
  int paired = 0;
  int count(Verdict verdict) const;
  /// Why the current run as a whole fails the gate ("the current file has no benchmarks", "the current
  /// run is partial: ..."), or "".
  std::string current_failure() const;
  /// 1 when a benchmark is SLOWER or FAILED (or UNCONFIRMED with fail_unconfirmed), or the current run
  /// fails as a whole (empty or partial), else 0.
  int exit_code(const CompareOptions& options) const;
};

/// Throws InputError when the baseline has no benchmark (there is nothing to gate against).
CompareReport compare_results(const ResultSet& baseline, const ResultSet& current, const CompareOptions& options);

/// Printers of a CompareReport. The console table and Markdown end in the one-line summary a CI log
/// reader sees first; JUnit XML has one test case per benchmark (failure for what fails the gate);
/// JSON has every row with both sides' statistics.
std::string compare_console(const CompareReport& report, const CompareOptions& options);
/// `chart_file`: the forest plot's file name, linked as an image ("" : none).
std::string compare_markdown(const CompareReport& report, const CompareOptions& options,
                             const std::string& chart_file = "");
/// A forest plot: each benchmark's change with its 95% interval, the threshold band shaded, what fails the gate in red.
std::string compare_chart(const CompareReport& report, const CompareOptions& options);
std::string compare_junit(const CompareReport& report, const CompareOptions& options);
std::string compare_json(const CompareReport& report, const CompareOptions& options);
/// "FAIL: 1 SLOWER, 1 FAILED; ..." or "OK: ...": the one-line summary.
std::string compare_summary(const CompareReport& report, const CompareOptions& options);

/// "5%", "5" or "2.5%" -> 5.0 / 2.5 (percent); InputError otherwise.
double parse_percent(const std::string& text, const std::string& flag);

}  // namespace torchprobe::report
