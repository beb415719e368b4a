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

/// Where time comes from: the device's timeline for samples, a wait for queued work, and the host's
/// steady clock for the warm-up's time budget. Tests substitute a fake.
struct Clock {
  std::function<std::unique_ptr<backend::Timeline>()> make_timeline;
  std::function<void()> wait;
  std::function<double()> now_s;
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
  /// Sets the calls per sample: the policy's fixed count, 1 in cold mode, or from one timed call,
  /// clamped to [1, max_calls_per_sample]. With a `stable_key`, the first count chosen for that key
  /// in this process is kept for every later calibration with the same key: Google Benchmark needs
  /// every repetition of a benchmark to count the same iterations per sample.
  int calibrate(const std::string& stable_key = "");
  int calls_per_sample() const { return calls_per_sample_; }
  /// One sample: calls_per_sample() calls between two marks; returns the sample's ms (all its calls).
  double sample();
  /// warm_up(), calibrate(), then `samples` samples (and more until `min_seconds` of the clock have
  /// passed); returns the per-call ms of each sample.
  std::vector<double> run(int samples, double min_seconds = 0.0);
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
