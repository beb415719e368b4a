#include "torchprobe/report/compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <stdexcept>

#include "torchprobe/change_interval.h"
#include "torchprobe/input_error.h"
#include "torchprobe/report/compare_detail.h"

namespace torchprobe::report {
namespace {

using detail::fails_gate;

// Arrangements of m values of one sample and n of the other giving each U = 0..m*n (the coefficients
// of the Gaussian binomial [m+n choose m]; symmetric in m and n). c[i] holds the counts for i values
// of the small sample against the j values seen so far: c(i, j) = c(i-1, j) shifted by j + c(i, j-1).
// O(m^2 n^2) time, O(m^2 n) memory: cheap for m <= 8, the only case the exact test is used for.
std::vector<double> exact_u_counts(size_t n1, size_t n2) {
  const size_t m = std::min(n1, n2), n = std::max(n1, n2);
  std::vector<std::vector<double>> c(m + 1, std::vector<double>(1, 1.0));
  for (size_t j = 1; j <= n; ++j) {
    for (size_t i = 1; i <= m; ++i) {
      std::vector<double>& counts = c[i];
      counts.resize(i * j + 1, 0.0);  // c(i, j-1) padded: the U beyond i*(j-1) were impossible
      const std::vector<double>& fewer = c[i - 1];  // c(i-1, j), already updated for this j
      for (size_t k = 0; k < fewer.size(); ++k) counts[k + j] += fewer[k];
    }
  }
  return c[m];
}

// The regularized incomplete beta function I_x(a, b), by its continued fraction (Lentz's method).
double incomplete_beta(double a, double b, double x) {
  if (x <= 0.0) return 0.0;
  if (x >= 1.0) return 1.0;
  const auto fraction = [](double a_, double b_, double x_) {
    constexpr double kTiny = 1e-300;
    double c = 1.0, d = 1.0 - (a_ + b_) * x_ / (a_ + 1.0);
    if (std::fabs(d) < kTiny) d = kTiny;
    d = 1.0 / d;
    double h = d;
    for (int m = 1; m <= 10000; ++m) {
      const double m2 = 2.0 * m;
      double aa = m * (b_ - m) * x_ / ((a_ + m2 - 1.0) * (a_ + m2));
      d = 1.0 + aa * d;
      d = std::fabs(d) < kTiny ? kTiny : d;
      c = 1.0 + aa / c;
      c = std::fabs(c) < kTiny ? kTiny : c;
      d = 1.0 / d;
      h *= d * c;
      aa = -(a_ + m) * (a_ + b_ + m) * x_ / ((a_ + m2) * (a_ + m2 + 1.0));
      d = 1.0 + aa * d;
      d = std::fabs(d) < kTiny ? kTiny : d;
      c = 1.0 + aa / c;
      c = std::fabs(c) < kTiny ? kTiny : c;
      d = 1.0 / d;
      const double delta = d * c;
      h *= delta;
      if (std::fabs(delta - 1.0) < 1e-15) break;
    }
    return h;
  };
  const double front = std::exp(std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) + b * std::log1p(-x));
  if (x < (a + 1.0) / (a + b + 2.0)) return front * fraction(a, b, x) / a;
  return 1.0 - front * fraction(b, a, 1.0 - x) / b;
}

Side side_of(const Result* r) {
  Side s;
  if (r == nullptr) return s;
  s.present = true;
  s.error = r->error;
  s.median_ms = r->median_ms;
  s.cv_pct = r->cv_pct;
  s.repetitions = r->repetitions;
  s.failed_repetitions = r->failed_repetitions;
  s.aggregates_only = r->aggregates_only;
  return s;
}

// Decides a row whose benchmark ran on both sides.
void judge(Comparison& c, const Result& base, const Result& cur, const CompareOptions& options) {
  c.change_pct = 100.0 * (cur.median_ms - base.median_ms) / base.median_ms;
  std::vector<std::string> notes;
  for (const auto& [side, r] : {std::pair<const char*, const Result*>{"baseline", &base}, {"current", &cur}}) {
    if (r->failed_repetitions > 0) {
      notes.push_back(fmt::format("{} of {} {} repetitions failed and were dropped ({})", r->failed_repetitions,
                                  r->failed_repetitions + r->repetitions, side, r->failed_reason.substr(0, 120)));
    }
  }
  // The test the data allows: ranks over the repetitions; from the files' own mean and stddev when
  // either kept only aggregates; none with a single repetition.
  bool tested = false;
  c.min_p = 0.0;
  if (!base.aggregates_only && !cur.aggregates_only && base.samples_ms.size() >= 2 && cur.samples_ms.size() >= 2) {
    c.test = "Mann-Whitney U";
    c.p = mann_whitney_u(cur.samples_ms, base.samples_ms).p;
    c.min_p = mann_whitney_min_p(base.samples_ms.size(), cur.samples_ms.size());
    tested = c.min_p < options.alpha;  // a smallest p equal to alpha can never be below it
    if (!tested) {
      notes.push_back(fmt::format("{}+{} repetitions cannot reach p < {} (the smallest p they can give is {:.2g}); use >= 4 "
                                  "on each side",
                                  base.samples_ms.size(), cur.samples_ms.size(), options.alpha, c.min_p));
    }
  } else if (base.repetitions >= 2 && cur.repetitions >= 2) {
    c.test = "Welch t";
    c.p = welch_p(cur.mean_ms, cur.stddev_ms, cur.repetitions, base.mean_ms, base.stddev_ms, base.repetitions);
    tested = true;
    notes.push_back("aggregates only: Welch's t-test on the files' means and standard deviations");
  } else {
    c.min_p = 1.0;
    notes.push_back(fmt::format("{}+{} repetitions: no test possible", base.repetitions, cur.repetitions));
  }
  const bool significant = tested && c.p < options.alpha;
  // "Beyond the threshold" as `history` judges a change: the measured change, or, from the repetitions, a change
  // whose 95% bootstrap interval (kChangeConfidence) excludes zero and reaches past the threshold (a real 5%
  // slowdown measured at 4.2% in noisy repetitions is not waved through). Only a significant change is called slower on
  // its interval.
  bool slower = c.change_pct > options.threshold_pct, faster = c.change_pct < -options.threshold_pct;
  if (c.test == "Mann-Whitney U") {
    std::uint64_t seed = 1469598103934665603ULL;  // FNV-1a of the name: the same files give the same verdict
    for (const char ch : c.name) seed = (seed ^ static_cast<unsigned char>(ch)) * 1099511628211ULL;
    const ChangeInterval interval =
        bootstrap_median_change(base.samples_ms, cur.samples_ms, kChangeConfidence, 400, seed);
    c.change_lo_pct = interval.low_pct, c.change_hi_pct = interval.high_pct;
    const bool on_interval = significant && !slower && !faster;  // else the verdict stands on the measured change
    if (on_interval && interval.low_pct > 0.0 && interval.high_pct > options.threshold_pct) {
      slower = true;
      notes.push_back(fmt::format("measured {:+.1f}%; its {:g}% interval reaches {:+.1f}%", c.change_pct,
                                  100.0 * kChangeConfidence, interval.high_pct));
    } else if (on_interval && interval.high_pct < 0.0 && interval.low_pct < -options.threshold_pct) {
      faster = true;
      notes.push_back(fmt::format("measured {:+.1f}%; its {:g}% interval reaches {:+.1f}%", c.change_pct,
                                  100.0 * kChangeConfidence, interval.low_pct));
    }
  }
  if (slower) {
    if (significant) {
      c.verdict = Verdict::kSlower;
    } else if (tested) {
      c.verdict = Verdict::kSame;
      notes.push_back(fmt::format("slower by {:.1f}% but not significant (p = {:.3g})", c.change_pct, c.p));
    } else {
      c.verdict = Verdict::kUnconfirmed;
    }
  } else if (faster) {
    c.verdict = significant ? Verdict::kFaster : Verdict::kSame;
    if (!significant) notes.push_back(fmt::format("faster by {:.1f}% but not confirmed", -c.change_pct));
  } else {
    c.verdict = Verdict::kSame;
  }
  for (const auto& n : notes) c.note += (c.note.empty() ? "" : "; ") + n;
}

}  // namespace

namespace detail {

bool fails_gate(Verdict v, const CompareOptions& options) {
  return v == Verdict::kSlower || v == Verdict::kFailed || (v == Verdict::kUnconfirmed && options.fail_unconfirmed);
}

}  // namespace detail

UTest mann_whitney_u(const std::vector<double>& x, const std::vector<double>& y) {
  const size_t n1 = x.size(), n2 = y.size();
  if (n1 == 0 || n2 == 0) throw std::invalid_argument("mann_whitney_u needs two non-empty samples");
  std::vector<std::pair<double, int>> all;
  for (const double v : x) all.emplace_back(v, 0);
  for (const double v : y) all.emplace_back(v, 1);
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  const size_t n = all.size();
  double rank_sum_x = 0.0, tie_term = 0.0;
  bool ties = false;
  for (size_t i = 0; i < n;) {
    size_t j = i;
    while (j < n && all[j].first == all[i].first) ++j;
    const double average_rank = (static_cast<double>(i + 1) + static_cast<double>(j)) / 2.0;
    for (size_t k = i; k < j; ++k) {
      if (all[k].second == 0) rank_sum_x += average_rank;
    }
    const double t = static_cast<double>(j - i);
    tie_term += t * t * t - t;
    ties = ties || j - i > 1;
    i = j;
  }
  const double d1 = static_cast<double>(n1), d2 = static_cast<double>(n2), dn = static_cast<double>(n);
  UTest result;
  result.u = rank_sum_x - d1 * (d1 + 1.0) / 2.0;
  const double u_max = std::max(result.u, d1 * d2 - result.u);
  if (!ties && (n1 <= 8 || n2 <= 8)) {
    const auto counts = exact_u_counts(n1, n2);
    const double total = std::accumulate(counts.begin(), counts.end(), 0.0);
    double upper = 0.0;  // P(U >= u_max)
    for (size_t k = static_cast<size_t>(std::lround(u_max)); k < counts.size(); ++k) upper += counts[k];
    result.p = std::min(1.0, 2.0 * upper / total);
    result.exact = true;
    return result;
  }
  const double mean = d1 * d2 / 2.0;
  const double sd = std::sqrt(d1 * d2 / 12.0 * ((dn + 1.0) - tie_term / (dn * (dn - 1.0))));
  if (sd == 0.0) return result;  // every value equal: p = 1
  const double z = (u_max - mean - 0.5) / sd;
  result.p = std::min(1.0, std::erfc(z / std::sqrt(2.0)));
  return result;
}

double mann_whitney_min_p(size_t n1, size_t n2) {
  // 2 / C(n1+n2, n1), computed in floating point.
  double arrangements = 1.0;
  for (size_t k = 1; k <= n1; ++k) arrangements *= static_cast<double>(n2 + k) / static_cast<double>(k);
  return std::min(1.0, 2.0 / arrangements);
}

double welch_p(double mean1, double stddev1, int n1, double mean2, double stddev2, int n2) {
  if (n1 < 2 || n2 < 2) throw std::invalid_argument("welch_p needs at least 2 values on each side");
  const double v1 = stddev1 * stddev1 / n1, v2 = stddev2 * stddev2 / n2, se2 = v1 + v2;
  if (se2 <= 0.0) return mean1 == mean2 ? 1.0 : 0.0;
  const double t = (mean1 - mean2) / std::sqrt(se2);
  const double df = se2 * se2 / (v1 * v1 / (n1 - 1) + v2 * v2 / (n2 - 1));
  return std::min(1.0, incomplete_beta(df / 2.0, 0.5, df / (df + t * t)));
}

std::string verdict_name(Verdict v) {
  switch (v) {
    case Verdict::kSlower: return "SLOWER";
    case Verdict::kUnconfirmed: return "UNCONFIRMED";
    case Verdict::kFailed: return "FAILED";
    case Verdict::kFaster: return "FASTER";
    case Verdict::kSame: return "SAME";
    case Verdict::kNew: return "NEW";
    case Verdict::kGone: return "GONE";
  }
  return "";
}

int CompareReport::count(Verdict verdict) const {
  return static_cast<int>(std::count_if(rows.begin(), rows.end(), [&](const Comparison& c) { return c.verdict == verdict; }));
}

std::string CompareReport::current_failure() const {
  if (current_empty) return "the current file has no benchmarks";
  if (!current_partial.empty()) return "the current run is partial: " + current_partial;
  return "";
}

int CompareReport::exit_code(const CompareOptions& options) const {
  if (!current_failure().empty()) return 1;
  return std::any_of(rows.begin(), rows.end(), [&](const Comparison& c) { return fails_gate(c.verdict, options); }) ? 1 : 0;
}

CompareReport compare_results(const ResultSet& baseline, const ResultSet& current, const CompareOptions& options) {
  if (baseline.results.empty()) throw InputError("the baseline has no benchmarks: there is nothing to compare against");
  std::map<std::string, const Result*> current_by_name;
  for (const auto& r : current.results) current_by_name[r.name] = &r;
  std::map<std::string, bool> in_baseline;
  CompareReport report;
  report.current_empty = current.results.empty();
  report.current_partial = current.partial_runs();
  report.baseline_partial = baseline.partial_runs();
  double log_sum = 0.0;
  for (const auto& base : baseline.results) {
    in_baseline[base.name] = true;
    const auto it = current_by_name.find(base.name);
    const Result* cur = it == current_by_name.end() ? nullptr : it->second;
    Comparison c;
    c.name = base.name;
    c.baseline = side_of(&base);
    c.current = side_of(cur);
    if (cur == nullptr) {
      c.verdict = report.current_empty ? Verdict::kFailed : Verdict::kGone;
      if (report.current_empty) c.note = "the current file has no benchmarks at all";
      if (!report.current_empty && !report.current_partial.empty()) c.note = "not reached: the current run is partial";
    } else if (!base.failed() && cur->failed()) {
      c.verdict = Verdict::kFailed;
      c.note = "ran in the baseline, fails now: " + cur->error;
    } else if (base.failed()) {
      c.verdict = cur->failed() ? Verdict::kSame : Verdict::kNew;
      c.note = cur->failed() ? "failed in both runs: " + cur->error : "failed in the baseline: " + base.error;
    } else {
      judge(c, base, *cur, options);
      log_sum += std::log(cur->median_ms / base.median_ms);
      ++report.paired;
    }
    report.rows.push_back(c);
  }
  for (const auto& cur : current.results) {
    if (in_baseline.count(cur.name)) continue;
    Comparison c;
    c.name = cur.name;
    c.current = side_of(&cur);
    c.verdict = Verdict::kNew;
    if (cur.failed()) c.note = "fails: " + cur.error;
    report.rows.push_back(c);
  }
  if (report.paired > 0) report.geomean_ratio = std::exp(log_sum / report.paired);
  return report;
}

double parse_percent(const std::string& text, const std::string& flag) {
  std::string number = text;
  if (!number.empty() && number.back() == '%') number.pop_back();
  size_t used = 0;
  double value = 0.0;
  try {
    value = std::stod(number, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (number.empty() || used != number.size() || !std::isfinite(value) || value < 0.0) {
    throw InputError(fmt::format("{}: '{}' is not a percentage (e.g. 5% or 2.5)", flag, text));
  }
  return value;
}

}  // namespace torchprobe::report
