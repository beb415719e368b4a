#include "torchprobe/report/compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include "torchprobe/input_error.h"
#include "torchprobe/report/table.h"

namespace torchprobe::report {
namespace {

constexpr size_t kMaxExactCells = 2500;  // bounds the exact distribution's table

// Number of arrangements of n1 x-values and n2 y-values giving each U = 0..n1*n2, built up one
// value at a time: the largest value is either an x (beating all j y-values) or a y.
std::vector<double> exact_u_counts(size_t n1, size_t n2) {
  std::vector<std::vector<double>> previous(n2 + 1), current(n2 + 1);  // [j][k] for i-1 and i x-values
  for (size_t i = 0; i <= n1; ++i) {
    for (size_t j = 0; j <= n2; ++j) {
      current[j].assign(i * j + 1, 0.0);
      if (i == 0 || j == 0) {
        current[j][0] = 1.0;
        continue;
      }
      for (size_t k = 0; k <= i * j; ++k) {
        const double with_x = k >= j && k - j < previous[j].size() ? previous[j][k - j] : 0.0;
        const double with_y = k < current[j - 1].size() ? current[j - 1][k] : 0.0;
        current[j][k] = with_x + with_y;
      }
    }
    std::swap(previous, current);
  }
  return previous[n2];
}

std::string verdict_text(Verdict v) {
  switch (v) {
    case Verdict::kSlower: return "SLOWER";
    case Verdict::kFaster: return "faster";
    case Verdict::kUnchanged: return "same";
  }
  return "";
}

std::string p_text(const Comparison& c) {
  if (!c.tested) return "-";
  return fmt::format("{:.3g}", c.test.p);
}

Table comparison_table(const CompareReport& report) {
  Table t;
  t.header = {"benchmark", "baseline ms", "current ms", "change", "reps", "p (U test)", "verdict"};
  t.right_aligned = {false, true, true, true, true, true, false};
  for (const auto& c : report.rows) {
    std::string verdict = verdict_text(c.verdict);
    if (!c.note.empty()) verdict += " (" + c.note + ")";
    t.add({c.name, format_ms(c.baseline_ms), format_ms(c.current_ms), format_pct(c.change_pct, /*sign=*/true),
           fmt::format("{}/{}", c.baseline_reps, c.current_reps), p_text(c), verdict});
  }
  if (!report.rows.empty()) {
    t.add({fmt::format("geometric mean ({} benchmarks)", report.rows.size()), "", "",
           format_pct(100.0 * (report.geomean_ratio - 1.0), /*sign=*/true), "", "", ""});
  }
  return t;
}

std::string lists_text(const CompareReport& report, const std::string& bullet, const std::string& code) {
  std::string out;
  for (const auto& n : report.only_baseline) out += fmt::format("{}only in the baseline: {}{}{}\n", bullet, code, n, code);
  for (const auto& n : report.only_current) out += fmt::format("{}only in the current run: {}{}{}\n", bullet, code, n, code);
  for (const auto& [n, why] : report.not_compared) out += fmt::format("{}not compared: {}{}{}: {}\n", bullet, code, n, code, why);
  return out;
}

std::string summary_line(const CompareReport& report, const CompareOptions& options) {
  const int slower = report.regressions();
  return slower > 0 ? fmt::format("FAIL: {} benchmark(s) slower by more than {}% (alpha {})", slower,
                                  fmt::format("{:g}", options.threshold_pct), options.alpha)
                    : fmt::format("OK: no benchmark slower by more than {}% (alpha {})",
                                  fmt::format("{:g}", options.threshold_pct), options.alpha);
}

}  // namespace

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
  if (!ties && (n1 <= 8 || n2 <= 8) && n1 * n2 <= kMaxExactCells) {
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

int CompareReport::regressions() const {
  return static_cast<int>(std::count_if(rows.begin(), rows.end(), [](const Comparison& c) { return c.verdict == Verdict::kSlower; }));
}

CompareReport compare_results(const ResultSet& baseline, const ResultSet& current, const CompareOptions& options) {
  std::map<std::string, const Result*> base_by_name, current_by_name;
  for (const auto& r : baseline.results) base_by_name[r.name] = &r;
  for (const auto& r : current.results) current_by_name[r.name] = &r;

  CompareReport report;
  double log_sum = 0.0;
  for (const auto& r : baseline.results) {
    if (!current_by_name.count(r.name)) report.only_baseline.push_back(r.name);
  }
  for (const auto& cur : current.results) {
    const auto it = base_by_name.find(cur.name);
    if (it == base_by_name.end()) {
      report.only_current.push_back(cur.name);
      continue;
    }
    const Result& base = *it->second;
    if (base.failed() || cur.failed()) {
      report.not_compared.emplace_back(cur.name, base.failed() ? "failed in the baseline: " + base.error
                                                               : "failed in the current run: " + cur.error);
      continue;
    }
    Comparison c;
    c.name = cur.name;
    c.baseline_ms = base.median_ms;
    c.current_ms = cur.median_ms;
    c.change_pct = 100.0 * (cur.median_ms - base.median_ms) / base.median_ms;
    c.baseline_reps = base.repetitions;
    c.current_reps = cur.repetitions;
    // Significance decides only where the U test can reach alpha at all; otherwise the threshold alone.
    bool significant = true;
    if (base.samples_ms.size() >= 2 && cur.samples_ms.size() >= 2) {
      c.tested = true;
      c.test = mann_whitney_u(cur.samples_ms, base.samples_ms);
      const double min_p = mann_whitney_min_p(base.samples_ms.size(), cur.samples_ms.size());
      if (min_p > options.alpha) {
        c.note = fmt::format("{}+{} repetitions cannot reach p<{} (min p {:.2g}): threshold only", base.samples_ms.size(),
                             cur.samples_ms.size(), options.alpha, min_p);
      } else {
        significant = c.test.p < options.alpha;
      }
    } else {
      c.note = "fewer than 2 repetitions: threshold only";
    }
    if (c.change_pct > options.threshold_pct && significant) {
      c.verdict = Verdict::kSlower;
    } else if (c.change_pct < -options.threshold_pct && significant) {
      c.verdict = Verdict::kFaster;
    } else if (std::fabs(c.change_pct) > options.threshold_pct && c.note.empty()) {
      c.note = fmt::format("not significant, p={:.3g}", c.test.p);
    }
    if (c.verdict == Verdict::kUnchanged && std::fabs(c.change_pct) <= options.threshold_pct) c.note.clear();
    log_sum += std::log(cur.median_ms / base.median_ms);
    report.rows.push_back(c);
  }
  if (!report.rows.empty()) report.geomean_ratio = std::exp(log_sum / static_cast<double>(report.rows.size()));
  return report;
}

std::string compare_console(const CompareReport& report, const CompareOptions& options) {
  return comparison_table(report).console() + lists_text(report, "", "") + summary_line(report, options) + "\n";
}

std::string compare_markdown(const CompareReport& report, const CompareOptions& options) {
  std::string out = "# torchprobe compare\n\n";
  out += fmt::format("Threshold {}%, alpha {}; change = (current - baseline) / baseline of the median time, "
                     "positive is slower.\n\n", fmt::format("{:g}", options.threshold_pct), options.alpha);
  out += comparison_table(report).markdown();
  const std::string lists = lists_text(report, "- ", "`");
  if (!lists.empty()) out += "\n" + lists;
  out += "\n**" + summary_line(report, options) + "**\n";
  return out;
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
