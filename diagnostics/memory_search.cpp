#include "diagnostics/memory_search.h"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

namespace torchprobe::diagnostics {

SearchResult find_max_batch(const std::function<Trial(std::int64_t)>& try_batch, const SearchOptions& options) {
  if (options.start < 1 || options.max_batch < options.start || options.tolerance < 0) {
    throw std::invalid_argument("find_max_batch: needs 1 <= start <= max_batch and tolerance >= 0");
  }
  SearchResult result;
  const auto run = [&](std::int64_t batch) {
    Trial trial = try_batch(batch);
    trial.batch = batch;
    result.trials.push_back(trial);
    return trial.fits;
  };
  std::int64_t fitting = 0, failing = 0;
  for (std::int64_t batch = options.start;; batch = std::min(batch * 2, options.max_batch)) {
    ++result.doubling_trials;
    if (!run(batch)) {
      failing = batch;
      break;
    }
    fitting = batch;
    if (batch == options.max_batch) break;
  }
  const auto done = [&] {
    return failing - fitting <= 1 ||
           static_cast<double>(failing - fitting) <= options.tolerance * static_cast<double>(fitting);
  };
  // Up to three prediction rounds, each re-asking the predictor with every trial so far. A
  // predictor that does not learn (or is wrong) stops after one round: its prediction then lies
  // outside the bracket.
  for (int round = 0; round < 3 && failing != 0 && fitting != 0 && !done() && options.predict; ++round) {
    std::int64_t predicted = options.predict(result.trials);
    // Just above a failed batch (within the tolerance): the model is off by its non-tensor overhead;
    // read it as "just below the failure".
    if (predicted > failing && static_cast<double>(predicted) <= static_cast<double>(failing) * (1 + options.tolerance) + 1) {
      predicted = failing - 1;
    }
    if (predicted <= fitting || predicted > failing) break;
    // Half a tolerance below the prediction, so that guess and guess + tolerance straddle it.
    const auto half = static_cast<std::int64_t>(std::floor(options.tolerance * static_cast<double>(predicted) / 2));
    const std::int64_t guess = std::min(std::max(fitting + 1, predicted - half), failing - 1);
    // The guess, then one tolerance step beyond it in the direction it points: a good
    // prediction brackets the boundary within the tolerance in these two trials.
    ++result.bisection_trials;
    const bool guess_fits = run(guess);
    (guess_fits ? fitting : failing) = guess;
    // Above: tolerance x guess; below: small enough that (guess - next) <= tolerance x next.
    const double span = guess_fits ? options.tolerance * static_cast<double>(guess)
                                   : options.tolerance * static_cast<double>(guess) / (1.0 + options.tolerance);
    const auto step = std::max<std::int64_t>(static_cast<std::int64_t>(std::floor(span)), 1);
    const std::int64_t next = guess_fits ? std::min(guess + step, failing - 1) : std::max(guess - step, fitting + 1);
    if (!done() && next > fitting && next < failing) {
      ++result.bisection_trials;
      (run(next) ? fitting : failing) = next;
    }
  }
  if (failing != 0 && fitting != 0) {
    while (!done()) {
      const std::int64_t mid = fitting + (failing - fitting) / 2;
      ++result.bisection_trials;
      (run(mid) ? fitting : failing) = mid;
    }
  }
  result.largest = fitting;
  result.smallest_failing = failing;
  return result;
}

LinearFit fit_linear(const std::vector<double>& x, const std::vector<double>& y) {
  if (x.size() != y.size()) throw std::invalid_argument("fit_linear: x and y differ in length");
  const auto n = static_cast<double>(x.size());
  double sx = 0, sy = 0;
  for (size_t i = 0; i < x.size(); ++i) sx += x[i], sy += y[i];
  const double mx = sx / n, my = sy / n;
  double sxx = 0, sxy = 0, syy = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    sxx += (x[i] - mx) * (x[i] - mx);
    sxy += (x[i] - mx) * (y[i] - my);
    syy += (y[i] - my) * (y[i] - my);
  }
  if (x.size() < 2 || sxx <= 0) throw std::invalid_argument("fit_linear: needs at least two distinct x values");
  LinearFit fit;
  fit.slope = sxy / sxx;
  fit.intercept = my - fit.slope * mx;
  fit.r2 = syy > 0 ? (sxy * sxy) / (sxx * syy) : 1.0;
  fit.points = static_cast<int>(x.size());
  return fit;
}

std::int64_t MemoryBreakdown::batch_for(double capacity_bytes) const {
  if (fit.slope <= 0) return 0;
  const double batch = (capacity_bytes - fit.intercept) / fit.slope;
  return batch > 0 ? static_cast<std::int64_t>(std::floor(batch)) : 0;
}

}  // namespace torchprobe::diagnostics
