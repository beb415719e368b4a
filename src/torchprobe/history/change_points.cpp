#include "torchprobe/history/change_points.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <tuple>
#include <numeric>
#include <random>

#include "torchprobe/change_interval.h"
#include "torchprobe/stats.h"

namespace torchprobe::history {
namespace {

// Counts and sums of the values inserted so far, by rank: the sum of |v - x| over them in O(log n).
class DistanceSums {
 public:
  explicit DistanceSums(size_t n) : count_(n + 1), sum_(n + 1) {}
  void clear() {
    std::fill(count_.begin(), count_.end(), 0.0);
    std::fill(sum_.begin(), sum_.end(), 0.0);
    total_count_ = total_sum_ = 0.0;
  }
  void insert(size_t rank, double value) {
    for (size_t i = rank + 1; i < count_.size(); i += i & (~i + 1)) count_[i] += 1.0, sum_[i] += value;
    total_count_ += 1.0;
    total_sum_ += value;
  }
  /// Sum of |value - x| over the inserted x; `rank` is value's rank (ties: any order gives the same sum).
  double distance(size_t rank, double value) const {
    double below_count = 0.0, below_sum = 0.0;
    for (size_t i = rank; i > 0; i -= i & (~i + 1)) below_count += count_[i], below_sum += sum_[i];
    return value * below_count - below_sum + (total_sum_ - below_sum) - value * (total_count_ - below_count);
  }

 private:
  std::vector<double> count_, sum_;
  double total_count_ = 0.0, total_sum_ = 0.0;
};

// Q(tau) for every tau of values[order[0..n)], where rank[i] is the rank of values[i].
std::vector<double> divergence_of(const std::vector<double>& values, const std::vector<size_t>& rank,
                                  const std::vector<size_t>& order, DistanceSums& sums) {
  const size_t n = order.size();
  std::vector<double> within_left(n + 1, 0.0), within_right(n + 1, 0.0), q(n, 0.0);
  sums.clear();
  for (size_t t = 0; t < n; ++t) {
    const size_t i = order[t];
    within_left[t + 1] = within_left[t] + sums.distance(rank[i], values[i]);
    sums.insert(rank[i], values[i]);
  }
  sums.clear();
  for (size_t t = n; t-- > 0;) {
    const size_t i = order[t];
    within_right[t] = within_right[t + 1] + sums.distance(rank[i], values[i]);
    sums.insert(rank[i], values[i]);
  }
  const double total = within_left[n];
  for (size_t tau = 1; tau < n; ++tau) {
    const double m = static_cast<double>(tau), k = static_cast<double>(n - tau);
    const double between = total - within_left[tau] - within_right[tau];
    const double left = m >= 2 ? within_left[tau] / (m * (m - 1) / 2) : 0.0;
    const double right = k >= 2 ? within_right[tau] / (k * (k - 1) / 2) : 0.0;
    q[tau] = m * k / (m + k) * (2.0 * between / (m * k) - left - right);
  }
  return q;
}

std::vector<size_t> ranks_of(const std::vector<double>& values) {
  std::vector<size_t> by_value(values.size()), rank(values.size());
  std::iota(by_value.begin(), by_value.end(), 0);
  std::stable_sort(by_value.begin(), by_value.end(), [&](size_t a, size_t b) { return values[a] < values[b]; });
  for (size_t r = 0; r < by_value.size(); ++r) rank[by_value[r]] = r;
  return rank;
}

size_t best_split(const std::vector<double>& q) {
  return static_cast<size_t>(std::max_element(q.begin() + 1, q.end()) - q.begin());
}

// Matteson & James's full search: the right side of a split need not run to the segment's end, so a block in the
// middle (a regression undone later) stands out against its own surroundings. Q(tau, kappa) for the left side
// [0, tau) and the right side [tau, kappa), from prefix sums of the distance matrix: O(n^2) per segment.
struct Split {
  double q = 0.0;
  size_t tau = 0;
};

class KappaSearch {
 public:
  explicit KappaSearch(size_t n) : n_(n), prefix_((n + 1) * (n + 1), 0.0) {}
  /// The largest Q(tau, kappa) over 1 <= tau < kappa <= n for the values in `order`.
  Split best(const std::vector<double>& values, const std::vector<size_t>& order) {
    const size_t w = n_ + 1;
    for (size_t i = 0; i < n_; ++i) {
      for (size_t j = 0; j < n_; ++j) {
        prefix_[(i + 1) * w + j + 1] = prefix_[i * w + j + 1] + prefix_[(i + 1) * w + j] - prefix_[i * w + j] +
                                       std::fabs(values[order[i]] - values[order[j]]);
      }
    }
    const auto at = [&](size_t i, size_t j) { return prefix_[i * w + j]; };
    const auto within = [&](size_t a, size_t b) { return (at(b, b) - at(a, b) - at(b, a) + at(a, a)) / 2.0; };
    Split out;
    for (size_t kappa = 2; kappa <= n_; ++kappa) {
      for (size_t tau = 1; tau < kappa; ++tau) {
        const double m = static_cast<double>(tau), k = static_cast<double>(kappa - tau);
        const double between = at(tau, kappa) - at(tau, tau);
        const double left = m >= 2 ? within(0, tau) / (m * (m - 1) / 2) : 0.0;
        const double right = k >= 2 ? within(tau, kappa) / (k * (k - 1) / 2) : 0.0;
        const double q = m * k / (m + k) * (2.0 * between / (m * k) - left - right);
        if (q > out.q) out = {q, tau};
      }
    }
    return out;
  }

 private:
  size_t n_;
  std::vector<double> prefix_;
};

// Segments up to this many runs get the full (tau, kappa) search; longer ones the right side to the end (O(n log n)
// per permutation instead of O(n^2)), so a history of thousands of runs stays fast.
constexpr size_t kKappaSearchLimit = 128;

// p of the permutation test: how often a shuffled segment has a split at least as divergent. It stops once p cannot
// fall below `alpha` any more.
double permutation_p(const std::vector<double>& segment, double observed, const ChangePointOptions& options,
                     double alpha, std::uint64_t seed) {
  const std::vector<size_t> rank = ranks_of(segment);
  std::vector<size_t> order(segment.size());
  std::iota(order.begin(), order.end(), 0);
  DistanceSums sums(segment.size());
  std::mt19937_64 rng(seed);
  // Stop once p cannot fall below alpha any more: (1 + exceeding) / (1 + permutations) >= alpha.
  const int enough = static_cast<int>(std::ceil(alpha * (options.permutations + 1) - 1.0 - 1e-9));
  int exceeding = 0, done = 0;
  for (; done < options.permutations; ++done) {
    for (size_t i = order.size() - 1; i > 0; --i) std::swap(order[i], order[rng() % (i + 1)]);  // Fisher-Yates
    const std::vector<double> q = divergence_of(segment, rank, order, sums);
    if (q[best_split(q)] >= observed * (1.0 - 1e-12) && ++exceeding >= std::max(enough, 1)) {
      ++done;
      break;
    }
  }
  return (1.0 + exceeding) / (1.0 + done);
}

// The newest runs of a series, tested on their own as well: a change among its last kTailRuns runs is the case a CI
// gate meets every day, and the maximum of Q over every split must beat the shuffles' maximum over every split,
// which three runs after a +5% step in 2% noise seldom do; a statistic over the last three splits only has far fewer
// places to come from by chance. It is the shift of the mean (the between-sides sum of squares, for a fixed split a
// monotone function of Student's t, since the total is the same in every shuffle), not Q: with three runs on one
// side, Q's within-side term rests on three distances. Simulated (scripts/change_points_tail_sim.py: 3 runs after a
// step, 20-80 runs, 199 shuffles, next to the end-anchored Q in min-p), it found +5% steps in 2% Gaussian noise
// 87-98% of the time where Q found 79-89%, and +3% steps 43-52% where Q found 39-47%, at the same rate on pure noise;
// in heavy-tailed noise (Student t, 3 df) a little less (+5% in 2%: 89-91% against 89-94%).
constexpr size_t kTailRuns = 3;

// The first split among the last kTailRuns of n runs.
size_t first_tail_split(size_t n) { return n > kTailRuns + 1 ? n - kTailRuns : 1; }

// The mean shift of a split at tau of n runs whose sum is `total`, `after` of it in [tau, n): m k / n (mean after -
// mean before)^2.
double mean_shift(double after, double total, size_t tau, size_t n) {
  const double m = static_cast<double>(tau), k = static_cast<double>(n - tau);
  const double shift = after / k - (total - after) / m;
  return m * k / static_cast<double>(n) * shift * shift;
}

// The largest mean shift among the splits of the last kTailRuns of values[order[0..n)].
Split tail_shift(const std::vector<double>& values, const std::vector<size_t>& order) {
  const size_t n = order.size();
  double total = 0.0;
  for (size_t i : order) total += values[i];
  double after = 0.0;
  Split out;
  for (size_t tau = n, first = first_tail_split(n); tau-- > first;) {
    after += values[order[tau]];
    const double q = mean_shift(after, total, tau, n);
    if (q > out.q || out.tau == 0) out = {q, tau};
  }
  return out;
}

// p of the tail's shift alone: only the last kTailRuns places of a shuffle matter (the total is every shuffle's), so
// each shuffle draws just those, the last steps of a Fisher-Yates shuffle: O(1) per shuffle at any length.
double tail_permutation_p(const std::vector<double>& segment, double observed, const ChangePointOptions& options,
                          std::uint64_t seed) {
  const size_t n = segment.size();
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 rng(seed);
  const double total = std::accumulate(segment.begin(), segment.end(), 0.0);
  int exceeding = 0;
  for (int b = 0; b < options.permutations; ++b) {
    double after = 0.0, best = 0.0;
    for (size_t tau = n, first = first_tail_split(n); tau-- > first;) {
      std::swap(order[tau], order[rng() % (tau + 1)]);  // Fisher-Yates, its last steps only
      after += segment[order[tau]];
      best = std::max(best, mean_shift(after, total, tau, n));
    }
    exceeding += best >= observed * (1.0 - 1e-12) ? 1 : 0;
  }
  return (1.0 + exceeding) / (1.0 + options.permutations);
}

// The statistics on the same shuffles, combined by Westfall & Young's min-p, so together they are held to alpha:
// each statistic's p is its rank among the shuffles; the segment's p is how often a shuffle's smallest p is at most
// the observed smallest p. observed: Q of the end-anchored split, the tail's shift and Q of the full search; the
// tail's takes part only `with_tail`. `winner`: the statistic that gave the observed smallest p (ties go to the earlier
// one).
enum Statistic : size_t { kEndAnchored, kTail, kFullSearch, kStatistics };
double min_p(const std::vector<double>& segment, const std::array<double, kStatistics>& observed, bool with_tail,
             const ChangePointOptions& options, std::uint64_t seed, size_t& winner) {
  const size_t n = segment.size();
  const std::vector<size_t> rank = ranks_of(segment);
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  DistanceSums sums(n);
  KappaSearch search(n);
  std::mt19937_64 rng(seed);
  const auto draws = static_cast<size_t>(options.permutations);
  std::vector<std::vector<double>> drawn(kStatistics, std::vector<double>(draws, 0.0));
  for (size_t b = 0; b < draws; ++b) {
    for (size_t i = n - 1; i > 0; --i) std::swap(order[i], order[rng() % (i + 1)]);  // Fisher-Yates
    const std::vector<double> q = divergence_of(segment, rank, order, sums);
    drawn[kEndAnchored][b] = q[best_split(q)];
    if (with_tail) drawn[kTail][b] = tail_shift(segment, order).q;
    drawn[kFullSearch][b] = search.best(segment, order).q;
  }
  // p of a value among the shuffles: (1 + how many are at least it, less a tolerance for rounding) / (1 + draws).
  std::vector<std::vector<double>> sorted = drawn;
  for (auto& s : sorted) std::sort(s.begin(), s.end());
  const auto p_of = [&](size_t stat, double x) {
    const auto& s = sorted[stat];
    const auto at_least = s.end() - std::lower_bound(s.begin(), s.end(), x * (1.0 - 1e-12));
    return (1.0 + static_cast<double>(at_least)) / (1.0 + static_cast<double>(draws));
  };
  const auto used = [&](size_t stat) { return stat != kTail || with_tail; };
  double smallest = INFINITY;
  for (size_t k = 0; k < kStatistics; ++k) {
    if (!used(k)) continue;
    const double p = p_of(k, observed[k]);
    if (p < smallest) smallest = p, winner = k;
  }
  size_t as_small = 0;
  for (size_t b = 0; b < draws; ++b) {
    double p = INFINITY;
    for (size_t k = 0; k < kStatistics; ++k) {
      if (used(k)) p = std::min(p, p_of(k, drawn[k][b]));
    }
    as_small += p <= smallest * (1.0 + 1e-12) ? 1 : 0;
  }
  return (1.0 + static_cast<double>(as_small)) / (1.0 + static_cast<double>(draws));
}

// Every significant split, recursively: the best split of the segment is kept when the permutation test
// gives p < alpha, then each side is searched in turn. The size of a change is judged afterwards, between
// neighbouring change points (keep_large_enough), so a step that a later step undoes (a regression fixed
// fifteen commits on) is still found: judged on the whole segment, its medians barely differ.
void bisect(const std::vector<double>& values, size_t begin, size_t end, const ChangePointOptions& options,
            std::vector<ChangePoint>& found) {
  if (end - begin < 3) return;
  const std::vector<double> segment(values.begin() + static_cast<std::ptrdiff_t>(begin),
                                    values.begin() + static_cast<std::ptrdiff_t>(end));
  // A constant segment has no split: its Q is 0 but for rounding in the sums, which a shuffle may not match.
  const auto [lowest, highest] = std::minmax_element(segment.begin(), segment.end());
  if (*lowest == *highest) return;
  // Up to three statistics, held to alpha together by min_p: Q with the right side running to the segment's end (the
  // most power for a change near an end); where the segment ends at the newest run, the mean shift among the last
  // kTailRuns splits (elsewhere its last runs are merely the runs before a change already found, and it would cost
  // the others power for nothing); for segments of up to kKappaSearchLimit runs, the full (tau, kappa) search (a block
  // in the middle: a regression undone later). A longer segment inside the history: the end-anchored Q alone, with an
  // early stop (a long history stays fast).
  const std::uint64_t seed = options.seed ^ (begin * 0x9E3779B97F4A7C15ULL) ^ end;
  const std::vector<double> q = divergence(segment);
  const size_t end_tau = best_split(q);
  Split split{q[end_tau], end_tau};
  const bool newest = end == values.size(), short_enough = segment.size() <= kKappaSearchLimit;
  std::vector<size_t> order(segment.size());
  std::iota(order.begin(), order.end(), 0);
  const Split tail = newest ? tail_shift(segment, order) : Split{};
  double p = 1.0;
  if (short_enough) {
    const Split full = KappaSearch(segment.size()).best(segment, order);
    size_t winner = kEndAnchored;
    p = min_p(segment, {split.q, tail.q, full.q}, newest, options, seed, winner);
    if (winner == kTail) split = tail;
    if (winner == kFullSearch && full.tau > 0) split = full;
  } else if (newest && 2.0 / (1.0 + options.permutations) < options.alpha) {
    // A long history's newest segment: min-p would need all its shuffles' Q (O(n log n) each; `history show` over
    // 1 000 runs x 200 series took 3.3 s instead of 1.3) where the end-anchored test alone stops early, so the two are
    // held to alpha by Bonferroni instead, each at alpha / 2; the tail's test costs O(1) a shuffle. Its smallest p is
    // 2 / (1 + permutations): where that cannot be below alpha, the end-anchored test alone.
    const double p_end = permutation_p(segment, split.q, options, options.alpha / 2.0, seed);
    const double p_tail = tail_permutation_p(segment, tail.q, options, seed ^ 0x5DEECE66DULL);
    if (p_tail < p_end) split = tail;
    p = std::min(1.0, 2.0 * std::min(p_end, p_tail));
  } else {
    p = permutation_p(segment, split.q, options, options.alpha, seed);
  }
  if (p >= options.alpha) return;
  const size_t tau = split.tau;
  found.push_back({begin + tau, p});
  bisect(values, begin, begin + tau, options, found);
  bisect(values, begin + tau, end, options, found);
}

double median_of(const std::vector<double>& values, size_t begin, size_t end) {
  return median(std::vector<double>(values.begin() + static_cast<std::ptrdiff_t>(begin),
                                    values.begin() + static_cast<std::ptrdiff_t>(end)));
}

// Below this many runs on either side, estimate_change draws the repetitions too.
constexpr size_t kFewRuns = 30;

// One bootstrap draw of a segment's level: its runs drawn with replacement, each drawn run's level the median of
// its repetitions drawn with replacement (its median where it has fewer than two), then the median of those.
double resampled_level(const std::vector<double>& medians, const std::vector<std::vector<double>>& samples, size_t begin,
                       size_t end, std::mt19937_64& rng, std::vector<double>& levels, std::vector<double>& reps) {
  const size_t n = end - begin;
  levels.clear();
  for (size_t i = 0; i < n; ++i) {
    const size_t run = begin + rng() % n;
    const std::vector<double>* own = run < samples.size() ? &samples[run] : nullptr;
    if (own == nullptr || own->size() < 2) {
      levels.push_back(medians[run]);
      continue;
    }
    reps.clear();
    for (size_t r = 0; r < own->size(); ++r) reps.push_back((*own)[rng() % own->size()]);
    levels.push_back(median_in_place(reps));
  }
  return median_in_place(levels);
}

}  // namespace

// Drops, weakest first, the change points that are not large_enough between their neighbours; each drop merges
// two segments, so the neighbours are judged again (estimates are kept per segment triple).
void keep_large_enough(const std::vector<double>& values, const std::vector<std::vector<double>>& samples,
                       const ChangePointOptions& options, std::vector<ChangePoint>& found) {
  std::map<std::tuple<size_t, size_t, size_t>, ChangeEstimate> known;
  while (!found.empty()) {
    size_t weakest = found.size();
    double weakest_reach = INFINITY;
    for (size_t i = 0; i < found.size(); ++i) {
      const size_t begin = i == 0 ? 0 : found[i - 1].index, end = i + 1 == found.size() ? values.size() : found[i + 1].index;
      const auto key = std::make_tuple(begin, found[i].index, end);
      auto at = known.find(key);
      if (at == known.end()) at = known.emplace(key, estimate_change(values, samples, begin, found[i].index, end, options)).first;
      const ChangeEstimate& e = at->second;
      found[i].change_pct = e.change_pct;
      found[i].low_pct = e.low_pct;
      found[i].high_pct = e.high_pct;
      if (large_enough(e, options.min_change_pct)) continue;
      const double reach = std::max(std::fabs(e.low_pct), std::fabs(e.high_pct));
      if (reach < weakest_reach) weakest_reach = reach, weakest = i;
    }
    if (weakest == found.size()) return;
    found.erase(found.begin() + static_cast<std::ptrdiff_t>(weakest));
  }
}

std::vector<double> divergence(const std::vector<double>& values) {
  if (values.size() < 2) return std::vector<double>(values.size(), 0.0);
  std::vector<size_t> order(values.size());
  std::iota(order.begin(), order.end(), 0);
  DistanceSums sums(values.size());
  return divergence_of(values, ranks_of(values), order, sums);
}

ChangeEstimate estimate_change(const std::vector<double>& medians, const std::vector<std::vector<double>>& samples,
                               size_t begin, size_t at, size_t end, const ChangePointOptions& options) {
  ChangeEstimate e;
  const double before = median_of(medians, begin, at), after = median_of(medians, at, end);
  e.change_pct = e.low_pct = e.high_pct = relative_change_pct(before, after);
  if (options.resamples < 1 || before <= 0.0) return e;
  std::mt19937_64 rng(options.seed ^ (begin * 0x9E3779B97F4A7C15ULL) ^ (at * 0xC2B2AE3D27D4EB4FULL) ^ end);
  static const std::vector<std::vector<double>> kMediansOnly;
  // Repetitions are drawn where a side has few runs (the newest runs of a CI gate): there the run medians alone
  // give a coarse bootstrap; with many runs they already carry the within-run noise, and drawing both levels
  // would count it twice (and cost the most).
  const bool few_runs = std::min(at - begin, end - at) < kFewRuns;
  const auto& drawn = options.use_repetitions && few_runs ? samples : kMediansOnly;
  std::vector<double> draws, levels, reps;
  draws.reserve(static_cast<size_t>(options.resamples));
  for (int b = 0; b < options.resamples; ++b) {
    const double left = resampled_level(medians, drawn, begin, at, rng, levels, reps);
    const double right = resampled_level(medians, drawn, at, end, rng, levels, reps);
    draws.push_back(relative_change_pct(left, right));
  }
  return interval_of(e.change_pct, std::move(draws), options.confidence);
}

bool large_enough(const ChangeEstimate& estimate, double min_change_pct) {
  if (min_change_pct <= 0.0) return true;
  if (estimate.low_pct > 0.0) return estimate.high_pct >= min_change_pct;
  if (estimate.high_pct < 0.0) return -estimate.low_pct >= min_change_pct;
  return false;
}

std::vector<ChangePoint> significant_splits(const std::vector<double>& values, const ChangePointOptions& options) {
  std::vector<ChangePoint> found;
  bisect(values, 0, values.size(), options, found);
  std::sort(found.begin(), found.end(), [](const ChangePoint& a, const ChangePoint& b) { return a.index < b.index; });
  return found;
}

std::vector<ChangePoint> e_divisive(const std::vector<double>& values, const ChangePointOptions& options,
                                    const std::vector<std::vector<double>>& samples) {
  std::vector<ChangePoint> found = significant_splits(values, options);
  keep_large_enough(values, samples, options, found);
  return found;
}

size_t few_runs_reach() { return kFewRuns; }

}  // namespace torchprobe::history
