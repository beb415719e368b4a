#pragma once
// The relative change between two samples' medians with a percentile-bootstrap interval: what `compare` (the
// repetitions of two result files) and `history` (the runs of a series) both call a change's size, so that
// "slower" means one thing in both (header-only: no library of its own, no LibTorch).
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "torchprobe/stats.h"

namespace torchprobe {

/// The two-sided confidence of a change's interval, in `compare` and `history` alike: 95%, so its far end is a
/// 97.5% one-sided bound, and a real change of exactly the minimum is called too small at most 2.5% of the time
/// when the bootstrap is right (with 90%, 5%: a +5% step in 0.5-2% noise was found 92% of the time against 95%
/// with 95%, on scripts/change_points_peers.sh's series; pure noise gave 0 and 1 detections in 96 series).
constexpr double kChangeConfidence = 0.95;

/// A relative change in percent (> 0: the second sample is slower) and its interval.
struct ChangeInterval {
  double change_pct = 0.0, low_pct = 0.0, high_pct = 0.0;
};

/// 100 * (after - before) / before; 0 for before <= 0.
inline double relative_change_pct(double before, double after) {
  return before > 0.0 ? 100.0 * (after - before) / before : 0.0;
}

/// The median of `values` (mean of the two middle ones for even sizes), reordering them: nth_element, no copy, for
/// the bootstrap's hundreds of thousands of medians. Non-empty.
inline double median_in_place(std::vector<double>& values) {
  const size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid), values.end());
  const double upper = values[mid];
  if (values.size() % 2 == 1) return upper;
  return (*std::max_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid)) + upper) / 2.0;
}

/// The value at quantile q (0..1) of sorted values, linear between neighbours.
inline double quantile_of_sorted(const std::vector<double>& sorted, double q) {
  const double at = q * static_cast<double>(sorted.size() - 1);
  const auto below = static_cast<size_t>(std::floor(at));
  const size_t above = std::min(below + 1, sorted.size() - 1);
  return sorted[below] + (at - static_cast<double>(below)) * (sorted[above] - sorted[below]);
}

/// The interval's ends from bootstrap draws of the change: the two-sided `confidence` percentiles, widened to hold
/// the point estimate.
inline ChangeInterval interval_of(double change_pct, std::vector<double> draws, double confidence) {
  ChangeInterval out{change_pct, change_pct, change_pct};
  if (draws.empty()) return out;
  std::sort(draws.begin(), draws.end());
  const double tail = (1.0 - confidence) / 2.0;
  out.low_pct = std::min(quantile_of_sorted(draws, tail), change_pct);
  out.high_pct = std::max(quantile_of_sorted(draws, 1.0 - tail), change_pct);
  return out;
}

/// The change of the median from `before` to `after`, each resampled with replacement `resamples` times
/// (deterministic for a given seed). Both must be non-empty.
inline ChangeInterval bootstrap_median_change(const std::vector<double>& before, const std::vector<double>& after,
                                              double confidence, int resamples, std::uint64_t seed) {
  const double point = relative_change_pct(median(before), median(after));
  std::mt19937_64 rng(seed);
  std::vector<double> draws, a, b;
  for (int r = 0; r < resamples; ++r) {
    a.clear();
    b.clear();
    for (size_t i = 0; i < before.size(); ++i) a.push_back(before[rng() % before.size()]);
    for (size_t i = 0; i < after.size(); ++i) b.push_back(after[rng() % after.size()]);
    draws.push_back(relative_change_pct(median_in_place(a), median_in_place(b)));
  }
  return interval_of(point, std::move(draws), confidence);
}

}  // namespace torchprobe
