#pragma once
// Change points of a performance series: E-divisive means (Matteson & James 2014), the method MongoDB's
// performance CI and Apache Otava use, with a permutation test for significance and a minimum change judged on
// the change's bootstrap interval (so a real 5% step is not lost to noise in its estimate).
#include <cstddef>
#include <cstdint>
#include <vector>

#include "torchprobe/change_interval.h"

namespace torchprobe::history {

struct ChangePointOptions {
  /// A significant split is reported when its change could be this large: the bootstrap interval of the change
  /// (options.confidence) excludes zero and its end farther from zero reaches this. 0: significance alone.
  double min_change_pct = 3.0;
  double alpha = 0.05;          ///< significance level of the permutation test
  int permutations = 199;       ///< permutations per candidate (p = (1 + exceeding) / (1 + permutations))
  double confidence = kChangeConfidence;  ///< of the change's two-sided bootstrap interval
  int resamples = 400;          ///< bootstrap resamples per change
  bool use_repetitions = true;  ///< the bootstrap draws a drawn run's repetitions (sides of < 30 runs)
  std::uint64_t seed = 0x7063686eULL;  ///< fixed: the same series always gives the same change points
};

struct ChangePoint {
  size_t index = 0;       ///< the first point after the change
  double p_value = 1.0;   ///< of the permutation test when the split was accepted
  /// The relative change of the segment medians (from the previous change point up to the next), in percent,
  /// and its bootstrap interval.
  double change_pct = 0.0, low_pct = 0.0, high_pct = 0.0;
};

/// The change from runs [begin, at) to [at, end) of a series: medians of the run medians on either side, and a
/// bootstrap interval: runs resampled with replacement and, when either side has fewer than 30 runs, each drawn
/// run's repetitions too (where it has two or more), so a few runs' within-run noise widens it. `samples[i]` holds run i's repetitions (may be empty, or
/// `samples` itself: medians only). Deterministic for given options.
using ChangeEstimate = ChangeInterval;
ChangeEstimate estimate_change(const std::vector<double>& medians, const std::vector<std::vector<double>>& samples,
                               size_t begin, size_t at, size_t end, const ChangePointOptions& options);

/// The practical-size rule: min_change_pct <= 0, or the interval excludes zero and its end farther from zero
/// reaches min_change_pct (exactly the minimum counts).
bool large_enough(const ChangeEstimate& estimate, double min_change_pct);

/// Matteson & James's divergence Q(tau) for every split tau of `values` into [0, tau) and [tau, n), with
/// alpha = 1 (|x - y|): q[tau] for tau in 1..n-1 (q[0] = 0). O(n log n): sums of distances kept in Fenwick
/// trees over the values' ranks. A side of one point has no within-side term.
std::vector<double> divergence(const std::vector<double>& values);

/// Change points by recursive bisection: the split of largest Q, accepted when a permutation test on the run
/// medians gives p < alpha (Q with the right side to the segment's end; where the segment ends at the newest run, the
/// largest mean shift among its last three splits; for segments of up to 128 runs, the largest Q(tau, kappa) of
/// Matteson & James's full search; held to alpha together by min-p), then each side in
/// turn. Then, weakest first (the smallest reach of its interval), the splits that are not large_enough between
/// their neighbouring change points are dropped, each drop merging two segments whose neighbours are judged again.
/// Sorted by index. `samples`: see estimate_change.
std::vector<ChangePoint> e_divisive(const std::vector<double>& values, const ChangePointOptions& options,
                                    const std::vector<std::vector<double>>& samples = {});

/// e_divisive in its two steps: the significant splits (sorted, with their p), then the size rule, which fills in
/// each kept split's change and interval. Between them a caller can fetch the repetitions the size rule draws:
/// only runs within few_runs_reach() of a split are ever drawn.
std::vector<ChangePoint> significant_splits(const std::vector<double>& values, const ChangePointOptions& options);
void keep_large_enough(const std::vector<double>& values, const std::vector<std::vector<double>>& samples,
                       const ChangePointOptions& options, std::vector<ChangePoint>& found);
size_t few_runs_reach();

}  // namespace torchprobe::history
