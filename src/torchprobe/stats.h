#pragma once
// The sample statistics every benchmark and every printer uses (header-only: the reporter has no LibTorch).
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

namespace torchprobe {

struct Stats {
  int samples = 0;
  double median = 0, mean = 0, min = 0, max = 0;
  double stddev = 0;  ///< sample standard deviation (n - 1); 0 for one value
  double cv_pct = 0;  ///< stddev / mean in %; 0 for one value or a mean <= 0
};

/// Median (mean of the two middle values for even sizes), mean, min, max, stddev and CV.
/// Throws std::invalid_argument for an empty sample.
inline Stats summarize(const std::vector<double>& values) {
  if (values.empty()) throw std::invalid_argument("statistics of an empty sample");
  Stats s;
  s.samples = static_cast<int>(values.size());
  std::vector<double> sorted = values;
  std::sort(sorted.begin(), sorted.end());
  const size_t mid = sorted.size() / 2;
  s.median = sorted.size() % 2 == 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2.0;
  s.min = sorted.front();
  s.max = sorted.back();
  double sum = 0.0;
  for (const double v : values) sum += v;
  s.mean = sum / static_cast<double>(values.size());
  if (values.size() > 1) {
    double sq = 0.0;
    for (const double v : values) sq += (v - s.mean) * (v - s.mean);
    s.stddev = std::sqrt(sq / static_cast<double>(values.size() - 1));
    s.cv_pct = s.mean > 0.0 ? 100.0 * s.stddev / s.mean : 0.0;
  }
  return s;
}

/// summarize(values).median.
inline double median(const std::vector<double>& values) { return summarize(values).median; }

}  // namespace torchprobe
