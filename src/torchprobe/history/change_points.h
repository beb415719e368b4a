#pragma once
// Change points of a performance series: E-divisive means (Matteson & James 2014), the method MongoDB's
// performance CI and Apache Otava use, with a permutation test for significance and a minimum change.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace torchprobe::history {

struct ChangePointOptions {
  double min_change_pct = 5.0;  ///< a split whose medians differ by less is not a change point
  double alpha = 0.05;          ///< significance level of the permutation test
  int permutations = 199;       ///< permutations per candidate (p = (1 + exceeding) / (1 + permutations))
  std::uint64_t seed = 0x7063686eULL;  ///< fixed: the same series always gives the same change points
};

struct ChangePoint {
  size_t index = 0;     ///< the first point after the change
  double p_value = 1.0; ///< of the permutation test when the split was accepted
};

/// Matteson & James's divergence Q(tau) for every split tau of `values` into [0, tau) and [tau, n), with
/// alpha = 1 (|x - y|): q[tau] for tau in 1..n-1 (q[0] = 0). O(n log n): sums of distances kept in Fenwick
/// trees over the values' ranks. A side of one point has no within-side term.
std::vector<double> divergence(const std::vector<double>& values);

/// Change points by recursive bisection: the split of largest Q, accepted when the permutation test gives
/// p < alpha, then each side in turn; then, smallest first, those whose medians up to the neighbouring
/// change points differ by less than min_change_pct are dropped. Sorted by index.
std::vector<ChangePoint> e_divisive(const std::vector<double>& values, const ChangePointOptions& options);

}  // namespace torchprobe::history
