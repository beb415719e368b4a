#pragma once
// The arithmetic of the memory diagnostics, free of LibTorch: the largest-batch search and the
// linear memory model fitted from peak memory at several batch sizes.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace torchprobe::diagnostics {

/// One try of a batch size: did a full training step run, and at what peak memory.
struct Trial {
  std::int64_t batch = 0;
  bool fits = false;
  std::int64_t peak_bytes = 0;  ///< allocator peak during the step (fits only)
  double seconds = 0;
  std::string error;            ///< the out-of-memory message (fails only)
  std::string allocator;        ///< which allocator failed (fails only): backend::oom_allocator, or a library that ended the process
};

struct SearchOptions {
  std::int64_t start = 1;              ///< first batch tried
  std::int64_t max_batch = 1 << 20;    ///< the doubling stops here (no limit found below it)
  double tolerance = 0.02;             ///< stop when (failing - fitting) <= tolerance * fitting
  /// Optional: a predicted boundary from the trials so far (e.g. a memory model fitted to their
  /// peaks), or 0 for none. Used once, for the first probe after the doubling.
  std::function<std::int64_t(const std::vector<Trial>&)> predict;
};

struct SearchResult {
  std::int64_t largest = 0;    ///< the largest batch that ran (0: not even `start`)
  std::int64_t smallest_failing = 0;  ///< the smallest batch that failed (0: none failed)
  std::vector<Trial> trials;   ///< in the order they ran
  int doubling_trials = 0, bisection_trials = 0;
};

/// Grows the batch by powers of two from options.start until a trial fails (or max_batch runs),
/// then bisects between the last fitting and the first failing batch until they are within the
/// tolerance. `largest` is then within `tolerance` of the true boundary, assuming "fits" is
/// monotone. Trials: with B the boundary and k = floor(log2(B / start)), the doubling takes
/// k + 2 trials (k + 1 fit, one fails) and bisection at most k more (exactly k with tolerance 0,
/// which finds B exactly).
/// With a prediction P inside the bracket, the first probe after the doubling is just below P
/// (P minus half a tolerance), the next one tolerance step beyond it (above when it
/// fit, below when it failed): a good prediction ends the search in 2 trials instead of
/// ~log2(1/tolerance); a wrong one costs at most 2 extra trials before plain bisection takes over.
/// The predictor is asked again (at most 3 rounds) while its new prediction, which may learn from
/// the trials so far, lies inside the remaining bracket.
/// `try_batch` runs one trial; exceptions from it propagate.
SearchResult find_max_batch(const std::function<Trial(std::int64_t)>& try_batch, const SearchOptions& options = {});

/// y = intercept + slope * x by least squares, with the coefficient of determination.
struct LinearFit {
  double intercept = 0, slope = 0, r2 = 0;
  int points = 0;
  double at(double x) const { return intercept + slope * x; }
};
/// Needs at least two distinct x; throws std::invalid_argument otherwise.
LinearFit fit_linear(const std::vector<double>& x, const std::vector<double>& y);

/// The memory of a training step, split: exact parts from the model, the rest fitted.
struct MemoryBreakdown {
  std::int64_t parameters = 0, gradients = 0, optimizer_state = 0;  ///< bytes, from the model
  LinearFit fit;  ///< peak bytes = fit.intercept + fit.slope * batch, over the trials that ran
  double per_sample() const { return fit.slope; }
  /// The batch-independent rest: inputs of fixed size, workspaces, the allocator's rounding.
  double fixed_other() const {
    return fit.intercept - static_cast<double>(parameters + gradients + optimizer_state);
  }
  /// The batch that would fill `capacity_bytes` by the fit (0 when the fit has no slope).
  std::int64_t batch_for(double capacity_bytes) const;
};


}  // namespace torchprobe::diagnostics
