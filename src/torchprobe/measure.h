#pragma once
// The one measurement policy of every torchprobe benchmark (as nvbench's measure_hot / measure_cold
// serve all of its benchmarks): warm up, calibrate how many calls make one sample, then time samples
// of that many calls queued back to back between two timeline marks (host clock on the CPU, CUDA
// events on a GPU), with a single wait per sample. Hot mode: inputs rotate and caches stay warm;
// cold mode: the last-level cache is flushed before each sample, which then holds one call.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <torch/types.h>

#include "torchprobe/backend.h"
#include "torchprobe/stats.h"

namespace torchprobe::measure {

struct Policy {
  double warmup_s = 0.2;            ///< warm-up lasts at least this long ...
  int min_warmup_calls = 1;         ///< ... and at least this many calls
  double sample_s = 1e-3;           ///< calibration: calls per sample so that a sample lasts about this long
  int max_calls_per_sample = 1000;  ///< calibration's upper bound
  int calls_per_sample = 0;         ///< > 0: fixed (e.g. 1 when each call needs an untimed reset); 0: calibrate
  bool cold = false;                ///< flush the last-level cache before every sample; one call per sample
};
/// The policy for work on `device`: warm-up >= 0.2 s and >= 1 call on the CPU (>= 3 on a GPU, where
/// the first calls create handles and select kernels); samples of ~1 ms on the CPU and ~5 ms on a GPU,
/// so the one synchronisation that closes a sample is amortised.
Policy default_policy(const torch::Device& device);

/// When a measurement has enough samples (nvbench's stopping criterion, judged on the mean the benchmark
/// reports): once its noise, the relative standard error of the mean per-call time (s / (mean * sqrt(n)),
/// over the samples), is at most max_noise_pct, with at least min_samples samples and at least min_time_s of
/// measured time; or, whatever the noise, once timeout_s of host time have passed since the first sample (with
/// at least 2 samples, so the noise is known). A measurement that hit the timeout keeps its noise, above the target.
struct StopRule {
  double max_noise_pct = 1.0;
  int min_samples = 10;
  double min_time_s = 0.2;
  double timeout_s = 5.0;
};
/// The defaults, chosen by measurement (docs/measurement.md): on the CPU 1% noise, 10 samples, 0.2 s, 5 s;
/// on a GPU, whose kernels repeat more tightly, 0.5%, 10 samples, 0.25 s, 5 s.
StopRule default_stop_rule(const torch::Device& device);
/// The rule's values checked as flags are (one line naming the flag; exit 2 at the CLI): noise in (0, 100],
/// samples 2 to 1e6, times 0 to 86400 s. Throws InputError.
void check_stop_rule(const StopRule& rule);

/// The relative standard error of the mean of `values` in %: s / (mean * sqrt(n)) with the sample standard
/// deviation (n - 1); NaN for fewer than 2 values or a mean <= 0.
double relative_standard_error_pct(const std::vector<double>& values);

/// What a noise-stopped measurement took and found.
struct Measurement {
  std::vector<double> per_call_ms;  ///< each sample's time per call
  double mean_ms = 0.0;             ///< per call: the samples' total time over their calls
  double noise_pct = 0.0;           ///< relative standard error of mean_ms in % (NaN with one sample)
  double measured_s = 0.0;          ///< the samples' total time
  double wall_s = 0.0;              ///< host time from the first sample's start to the last one's end
  double cpu_ms = 0.0;     ///< per call: the sampling thread's CPU time over all calls (Google Benchmark's "CPU")
  bool timed_out = false;  ///< stopped by the timeout with the noise above the target
};

/// Where time comes from: the device's timeline for samples, a wait for queued work, the host's steady clock for
/// the warm-up's time budget, and the sampling thread's CPU time (seconds; unset: CLOCK_THREAD_CPUTIME_ID). Tests
/// substitute a fake.
struct Clock {
  std::function<std::unique_ptr<backend::Timeline>()> make_timeline;
  std::function<void()> wait;
  std::function<double()> now_s;
  std::function<double()> cpu_s;
};
Clock device_clock(const torch::Device& device);

class Sampler {
 public:
  /// `call` runs the work once and may return before it finishes on the device. `before_sample`
  /// (optional) runs untimed before each sample, e.g. restoring state the call changes; with it,
  /// use calls_per_sample = 1. `flush` (cold mode) evicts the cache, untimed.
  Sampler(Policy policy, Clock clock, std::function<void()> call, std::function<void()> before_sample = {},
          std::function<void()> flush = {});

  /// Runs calls until both warm-up bounds are met, then waits for the device; returns the calls made.
  int warm_up();
  /// Sets the calls per sample: the policy's fixed count, 1 in cold mode, 1 when the last warm-up call took
  /// at least two samples' time, or else from one timed call, clamped to [1, max_calls_per_sample]. With a
  /// `stable_key`, the first count chosen for that key in this process is kept for every later calibration with the
  /// same key: Google Benchmark needs every repetition of a benchmark to count the same iterations per sample.
  int calibrate(const std::string& stable_key = "");
  int calls_per_sample() const { return calls_per_sample_; }
  /// One sample: calls_per_sample() calls between two marks; returns the sample's ms (all its calls).
  double sample();
  /// warm_up(), calibrate(), then `samples` samples (and more until `min_seconds` of the clock have
  /// passed); returns the per-call ms of each sample.
  std::vector<double> run(int samples, double min_seconds = 0.0);
  /// Samples (after warm_up() and calibrate()) until `rule` says stop; see StopRule.
  Measurement measure(const StopRule& rule);
  /// `calls` calls with a mark after each and a single wait at the end (no synchronisation between
  /// calls, so GPU work stays queued); returns each call's ms. For loops that must see every call.
  std::vector<double> per_call(int calls);

 private:
  void prepare_sample();
  Policy policy_;
  Clock clock_;
  std::function<void()> call_, before_sample_, flush_;
  std::unique_ptr<backend::Timeline> timeline_;
  int calls_per_sample_ = 1;
  double last_warmup_call_s_ = 0.0;  ///< host time of the last warm-up call and its wait
};

/// Puts glibc's allocator where a long-running training process ends up by itself, before anything is
/// measured: glibc raises its mmap threshold as large blocks are freed (up to 32 MiB), and until it
/// has, every tensor above it is a fresh mmap that page-faults on each call. Without this an op's
/// time depends on what ran before it in the process (resnet18's 64x64x32x32 convolution: 39 ms or
/// 23 ms). Sets M_MMAP_THRESHOLD to 32 MiB and M_TRIM_THRESHOLD to 64 MiB; returns a description
/// for the run's context ("" where glibc is not the allocator).
std::string steady_state_allocator();

/// Bytes of the last-level cache that repeated calls could be served from: the GPU's L2, or the
/// CPU's L3 (from sysfs; 32 MiB when unknown).
std::int64_t cache_bytes(const torch::Device& device);
/// Evicts that cache by overwriting a buffer twice its size (queued on the device's current stream).
void flush_cache(const torch::Device& device);

}  // namespace torchprobe::measure
