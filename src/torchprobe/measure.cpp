#include "torchprobe/measure.h"

#include <fmt/format.h>
#include <malloc.h>
#include <time.h>

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <mutex>
#include <stdexcept>

#include "torchprobe/device_spec.h"
#include "torchprobe/input_error.h"
#include "torchprobe/interrupt.h"
#include "torchprobe/units.h"

namespace torchprobe::measure {
namespace {
double thread_cpu_s() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}
}  // namespace

Policy default_policy(const torch::Device& device) {
  Policy p;
  if (device.is_cuda()) {
    p.min_warmup_calls = 3;
    p.sample_s = 5e-3;
  }
  return p;
}

StopRule default_stop_rule(const torch::Device& device) {
  StopRule rule;
  if (device.is_cuda()) {
    rule.max_noise_pct = 0.5;
    rule.min_time_s = 0.25;
  }
  return rule;
}

void check_stop_rule(const StopRule& rule) {
  const auto bad = [](const char* flag, double value, const char* range) {
    return InputError(fmt::format("{}: expected {}, got {}", flag, range, value));
  };
  if (!(rule.max_noise_pct > 0.0 && rule.max_noise_pct <= 100.0))
    throw bad("--max-noise", rule.max_noise_pct, "a percentage above 0 and at most 100");
  if (rule.min_samples < 2 || rule.min_samples > 1000000) throw bad("--min-samples", rule.min_samples, "2 to 1000000");
  if (!(rule.min_time_s >= 0.0 && rule.min_time_s <= 86400.0))
    throw bad("--min-time", rule.min_time_s, "0 to 86400 seconds");
  if (!(rule.timeout_s > 0.0 && rule.timeout_s <= 86400.0))
    throw bad("--timeout", rule.timeout_s, "above 0 and at most 86400 seconds");
}

double relative_standard_error_pct(const std::vector<double>& values) {
  if (values.size() < 2) return std::numeric_limits<double>::quiet_NaN();
  const Stats s = summarize(values);
  if (!(s.mean > 0.0)) return std::numeric_limits<double>::quiet_NaN();
  return 100.0 * s.stddev / (s.mean * std::sqrt(static_cast<double>(values.size())));
}

Clock device_clock(const torch::Device& device) {
  Clock clock;
  clock.make_timeline = [device] { return backend::make_timeline(device); };
  clock.wait = [device] { backend::synchronize(device); };
  clock.now_s = [] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  };
  clock.cpu_s = thread_cpu_s;
  return clock;
}

Sampler::Sampler(Policy policy, Clock clock, std::function<void()> call, std::function<void()> before_sample,
                 std::function<void()> flush)
    : policy_(policy),
      clock_(std::move(clock)),
      call_(std::move(call)),
      before_sample_(std::move(before_sample)),
      flush_(std::move(flush)),
      timeline_(clock_.make_timeline()) {
  if (policy_.cold && !flush_) throw std::invalid_argument("Sampler: cold mode needs a cache flush");
}

int Sampler::warm_up() {
  const double start = clock_.now_s();
  int calls = 0;
  while (calls < policy_.min_warmup_calls || clock_.now_s() - start < policy_.warmup_s) {
    if (before_sample_) before_sample_();
    const double call_start = clock_.now_s();
    call_();
    ++calls;
    // Wait for each call, so the warm-up's clock is the device's: on a GPU the host only queues work, and
    // without the wait it queued up to the launch queue's ~1000 calls in warmup_s, then waited for all of
    // them (an 8192 fp32 GEMM's roof took 23 s instead of ~2 on an H100, 2026-11-27).
    clock_.wait();
    last_warmup_call_s_ = clock_.now_s() - call_start;
    interrupt::check();
  }
  return calls;
}

void Sampler::prepare_sample() {
  if (before_sample_) before_sample_();
  if (policy_.cold) flush_();
}

int Sampler::calibrate(const std::string& stable_key) {
  int calls = 1;
  if (policy_.calls_per_sample > 0) {
    calls = policy_.calls_per_sample;
  } else if (!policy_.cold && last_warmup_call_s_ >= 2.0 * policy_.sample_s) {
    calls = 1;  // the last warm-up call alone outlasted a sample: no probe needed (a 1 s training step saves 1 s)
  } else if (!policy_.cold) {
    prepare_sample();
    timeline_->clear();
    timeline_->mark();
    call_();
    timeline_->mark();
    const double probe_ms = std::max(1e-6, timeline_->elapsed_ms().front());
    calls = static_cast<int>(std::clamp(std::ceil(policy_.sample_s * 1e3 / probe_ms), 1.0,
                                        static_cast<double>(std::max(1, policy_.max_calls_per_sample))));
  }
  if (!stable_key.empty()) {
    static std::mutex mutex;
    static std::map<std::string, int> first;
    std::lock_guard<std::mutex> lock(mutex);
    calls = first.try_emplace(stable_key, calls).first->second;
  }
  calls_per_sample_ = calls;
  return calls;
}

double Sampler::sample() {
  prepare_sample();
  timeline_->clear();
  timeline_->mark();
  for (int k = 0; k < calls_per_sample_; ++k) call_();
  timeline_->mark();
  return timeline_->elapsed_ms().front();
}

std::vector<double> Sampler::run(int samples, double min_seconds) {
  warm_up();
  calibrate();
  std::vector<double> per_call_ms;
  const double start = clock_.now_s();
  while (static_cast<int>(per_call_ms.size()) < samples || clock_.now_s() - start < min_seconds) {
    per_call_ms.push_back(sample() / calls_per_sample_);
    interrupt::check();
  }
  return per_call_ms;
}

Measurement Sampler::measure(const StopRule& rule) {
  Measurement m;
  // Running sums (Welford's update) so each check costs the same at sample 10 and at sample 100 000.
  double mean = 0.0, m2 = 0.0;
  const double start = clock_.now_s();
  const std::function<double()> cpu_s = clock_.cpu_s ? clock_.cpu_s : thread_cpu_s;
  const double cpu_start = cpu_s();
  for (;;) {
    const double ms = sample() / calls_per_sample_;
    m.per_call_ms.push_back(ms);
    m.measured_s += ms * calls_per_sample_ / 1e3;
    const auto n = static_cast<double>(m.per_call_ms.size());
    const double delta = ms - mean;
    mean += delta / n;
    m2 += delta * (ms - mean);
    m.noise_pct = n >= 2 && mean > 0.0 ? 100.0 * std::sqrt(m2 / (n - 1.0)) / (mean * std::sqrt(n))
                                       : std::numeric_limits<double>::quiet_NaN();
    m.wall_s = clock_.now_s() - start;
    interrupt::check();
    if (n < 2) continue;
    if (m.noise_pct <= rule.max_noise_pct && n >= rule.min_samples && m.measured_s >= rule.min_time_s) break;
    if (m.wall_s >= rule.timeout_s) {
      m.timed_out = !(m.noise_pct <= rule.max_noise_pct);
      break;
    }
  }
  m.mean_ms = mean;
  m.cpu_ms = (cpu_s() - cpu_start) * 1e3 / (static_cast<double>(m.per_call_ms.size()) * calls_per_sample_);
  return m;
}

std::vector<double> Sampler::per_call(int calls) {
  timeline_->clear();
  timeline_->mark();
  for (int i = 0; i < calls; ++i) {
    call_();
    timeline_->mark();
  }
  return timeline_->elapsed_ms();
}

std::string steady_state_allocator() {
#if defined(__GLIBC__)
  constexpr int kMmapThreshold = 32 << 20;  // glibc's DEFAULT_MMAP_THRESHOLD_MAX on 64-bit: where its own rule stops
  constexpr int kTrimThreshold = 2 * kMmapThreshold;  // what that rule sets beside it
  if (mallopt(M_MMAP_THRESHOLD, kMmapThreshold) == 1 && mallopt(M_TRIM_THRESHOLD, kTrimThreshold) == 1) {
    return "glibc malloc: mmap threshold 32 MiB, trim threshold 64 MiB (a long-running process's steady state)";
  }
#endif
  return "";
}

std::int64_t cache_bytes(const torch::Device& device) {
  using units::kMiB;
  if (device.is_cuda()) {
    const auto l2 = backend::cuda_device_info(device.index()).l2_cache_bytes;
    return l2 > 0 ? l2 : 64 * kMiB;
  }
  std::ifstream in("/sys/devices/system/cpu/cpu0/cache/index3/size");
  std::string text;
  if (in >> text && !text.empty()) {
    try {
      const std::int64_t value = std::stoll(text);
      const char unit = text.back();
      return unit == 'K' ? value * 1024 : unit == 'M' ? value * kMiB : value;
    } catch (const std::exception&) {
    }
  }
  return 32 * kMiB;
}

void flush_cache(const torch::Device& device) {
  static std::mutex mutex;
  static std::map<std::string, torch::Tensor> buffers;
  std::lock_guard<std::mutex> lock(mutex);
  auto& buffer = buffers[device_string(device)];
  if (!buffer.defined()) buffer = torch::empty({2 * cache_bytes(device)}, torch::TensorOptions().device(device).dtype(torch::kUInt8));
  buffer.fill_(1);
}

}  // namespace torchprobe::measure
