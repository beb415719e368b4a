#include "torchprobe/history/change_points.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

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

// p of the permutation test: how often a shuffled segment has a split at least as divergent.
double permutation_p(const std::vector<double>& segment, double observed, const ChangePointOptions& options,
                     std::uint64_t seed) {
  const std::vector<size_t> rank = ranks_of(segment);
  std::vector<size_t> order(segment.size());
  std::iota(order.begin(), order.end(), 0);
  DistanceSums sums(segment.size());
  std::mt19937_64 rng(seed);
  // Stop once p cannot fall below alpha any more: (1 + exceeding) / (1 + permutations) >= alpha.
  const int enough = static_cast<int>(std::ceil(options.alpha * (options.permutations + 1) - 1.0 - 1e-9));
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

// Every significant split, recursively: the best split of the segment is kept when the permutation test
// gives p < alpha, then each side is searched in turn. The size of a change is judged afterwards, between
// neighbouring change points (prune_small), so a step that a later step undoes (a regression fixed
// fifteen commits on) is still found: judged on the whole segment, its medians barely differ.
void bisect(const std::vector<double>& values, size_t begin, size_t end, const ChangePointOptions& options,
            std::vector<ChangePoint>& found) {
  if (end - begin < 3) return;
  const std::vector<double> segment(values.begin() + static_cast<std::ptrdiff_t>(begin),
                                    values.begin() + static_cast<std::ptrdiff_t>(end));
  const std::vector<double> q = divergence(segment);
  const size_t tau = best_split(q);
  const double p = permutation_p(segment, q[tau], options, options.seed ^ (begin * 0x9E3779B97F4A7C15ULL) ^ end);
  if (p >= options.alpha) return;
  found.push_back({begin + tau, p});
  bisect(values, begin, begin + tau, options, found);
  bisect(values, begin + tau, end, options, found);
}

double median_of(const std::vector<double>& values, size_t begin, size_t end) {
  return median(std::vector<double>(values.begin() + static_cast<std::ptrdiff_t>(begin),
                                    values.begin() + static_cast<std::ptrdiff_t>(end)));
}

// Drops, smallest first, the change points whose medians on either side (up to the neighbouring change
// points) differ by less than min_change_pct; each drop merges two segments, so the neighbours are judged again.
void prune_small(const std::vector<double>& values, const ChangePointOptions& options, std::vector<ChangePoint>& found) {
  while (!found.empty()) {
    size_t smallest = 0;
    double smallest_pct = INFINITY;
    for (size_t i = 0; i < found.size(); ++i) {
      const size_t begin = i == 0 ? 0 : found[i - 1].index, end = i + 1 == found.size() ? values.size() : found[i + 1].index;
      const double before = median_of(values, begin, found[i].index), after = median_of(values, found[i].index, end);
      const double pct = before > 0.0 ? std::fabs(100.0 * (after - before) / before) : 0.0;
      if (pct < smallest_pct) smallest_pct = pct, smallest = i;
    }
    if (smallest_pct >= options.min_change_pct) return;
    found.erase(found.begin() + static_cast<std::ptrdiff_t>(smallest));
  }
}

}  // namespace

std::vector<double> divergence(const std::vector<double>& values) {
  if (values.size() < 2) return std::vector<double>(values.size(), 0.0);
  std::vector<size_t> order(values.size());
  std::iota(order.begin(), order.end(), 0);
  DistanceSums sums(values.size());
  return divergence_of(values, ranks_of(values), order, sums);
}

std::vector<ChangePoint> e_divisive(const std::vector<double>& values, const ChangePointOptions& options) {
  std::vector<ChangePoint> found;
  bisect(values, 0, values.size(), options, found);
  std::sort(found.begin(), found.end(), [](const ChangePoint& a, const ChangePoint& b) { return a.index < b.index; });
  prune_small(values, options, found);
  return found;
}

}  // namespace torchprobe::history
