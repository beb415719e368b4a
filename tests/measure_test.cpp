#include "torchprobe/measure.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>

#include "test_util.h"
#include "torchprobe/input_error.h"

using namespace torchprobe;

namespace {

// A virtual clock: time moves only when the work runs (by its cost), so every figure is exact.
struct FakeTime {
  double now_ms = 0.0;
  int waits = 0;
};

class FakeTimeline final : public backend::Timeline {
 public:
  explicit FakeTimeline(std::shared_ptr<FakeTime> time) : time_(std::move(time)) {}
  void mark() override { marks_.push_back(time_->now_ms); }
  std::vector<double> elapsed_ms() override {
    ++time_->waits;  // reading a device timeline waits for it once
    std::vector<double> out;
    for (size_t i = 1; i < marks_.size(); ++i) out.push_back(marks_[i] - marks_[i - 1]);
    return out;
  }
  void clear() override { marks_.clear(); }

 private:
  std::shared_ptr<FakeTime> time_;
  std::vector<double> marks_;
};

measure::Clock fake_clock(const std::shared_ptr<FakeTime>& time) {
  return {[time] { return std::make_unique<FakeTimeline>(time); },
          [time] { ++time->waits; },
          [time] { return time->now_ms / 1e3; },
          {}};
}

}  // namespace

TEST(Measure, WarmUpMeetsBothBoundsExactly) {
  auto time = std::make_shared<FakeTime>();
  int calls = 0;
  measure::Policy policy;
  policy.warmup_s = 0.010;  // 10 ms of 0.3 ms calls: 34 calls (33 make 9.9 ms)
  policy.min_warmup_calls = 3;
  measure::Sampler sampler(policy, fake_clock(time), [&] {
    ++calls;
    time->now_ms += 0.3;
  });
  EXPECT_EQ(sampler.warm_up(), 34);
  EXPECT_EQ(calls, 34);
  EXPECT_EQ(time->waits, 34) << "the host waits for the device after every warm-up call";

  policy.warmup_s = 0.0;  // the call-count bound alone
  time->now_ms = 0.0;
  measure::Sampler counted(policy, fake_clock(time), [&] { time->now_ms += 0.3; });
  EXPECT_EQ(counted.warm_up(), 3);
}

// A GPU as the host sees it: a call only queues its work (10 us to launch) and the host's clock runs on
// while the device works through the queue; waiting brings the host to the end of the queued work.
TEST(Measure, WarmUpOnAnAsynchronousDeviceLastsTheDevicesTimeNotTheLaunchQueues) {
  double host_ms = 0.0, device_done_ms = 0.0;
  int calls = 0;
  auto unused = std::make_shared<FakeTime>();
  measure::Clock clock{[unused] { return std::make_unique<FakeTimeline>(unused); },
                       [&] { host_ms = std::max(host_ms, device_done_ms); },
                       [&] { return host_ms / 1e3; },
                       {}};
  measure::Policy policy;
  policy.warmup_s = 0.2;
  policy.min_warmup_calls = 3;
  measure::Sampler sampler(policy, clock, [&] {
    ++calls;
    host_ms += 0.01;
    device_done_ms = std::max(device_done_ms, host_ms) + 21.0;  // an 8192 fp32 GEMM on an H100
  });
  // 0.2 s of 21 ms calls: 10 of them, not the ~20 000 a host could queue in 0.2 s of 10 us launches.
  EXPECT_EQ(sampler.warm_up(), 10);
  EXPECT_EQ(calls, 10);
  EXPECT_NEAR(host_ms, 10 * 21.01, 1e-6) << "the warm-up ends when its work does";
}

TEST(Measure, CalibrationFillsTheTargetSampleAndStaysStablePerKey) {
  auto time = std::make_shared<FakeTime>();
  double cost = 0.3;
  measure::Policy policy;
  policy.sample_s = 1e-3;  // ceil(1 / 0.3) = 4 calls per sample
  measure::Sampler sampler(policy, fake_clock(time), [&] { time->now_ms += cost; });
  EXPECT_EQ(sampler.calibrate("measure_test/stable"), 4);
  EXPECT_DOUBLE_EQ(sampler.sample(), 1.2);

  cost = 0.125;  // a later calibration of the same benchmark keeps the first count (gbench repetitions)
  EXPECT_EQ(sampler.calibrate("measure_test/stable"), 4);
  EXPECT_EQ(sampler.calibrate(), 8) << "without a key: ceil(1 / 0.125)";
  cost = 1.0 / 128;
  policy.max_calls_per_sample = 64;
  measure::Sampler capped(policy, fake_clock(time), [&] { time->now_ms += cost; });
  EXPECT_EQ(capped.calibrate(), 64);
  policy.calls_per_sample = 7;
  measure::Sampler fixed(policy, fake_clock(time), [&] { time->now_ms += cost; });
  EXPECT_EQ(fixed.calibrate(), 7);
}

TEST(Measure, ColdModeFlushesBeforeEverySampleOfOneCall) {
  auto time = std::make_shared<FakeTime>();
  int flushes = 0, resets = 0;
  measure::Policy policy;
  policy.cold = true;
  policy.warmup_s = 0.0;
  measure::Sampler sampler(
      policy, fake_clock(time), [&] { time->now_ms += 2.0; }, [&] { ++resets; },
      [&] {
        ++flushes;
        time->now_ms += 50.0;  // the flush is untimed: outside the marks
      });
  const auto ms = sampler.run(5);
  EXPECT_EQ(sampler.calls_per_sample(), 1);
  EXPECT_EQ(flushes, 5);
  EXPECT_EQ(resets, 1 + 5) << "before the warm-up call and before each sample";
  ASSERT_EQ(ms.size(), 5u);
  for (const double v : ms) EXPECT_DOUBLE_EQ(v, 2.0);
  EXPECT_THROW(measure::Sampler(policy, fake_clock(time), [] {}), std::invalid_argument);
}

TEST(Measure, PerCallTimesEveryCallWithOneWait) {
  auto time = std::make_shared<FakeTime>();
  int i = 0;
  measure::Sampler sampler(measure::Policy{}, fake_clock(time), [&] { time->now_ms += ++i; });
  const auto ms = sampler.per_call(4);
  EXPECT_EQ(ms, (std::vector<double>{1, 2, 3, 4}));
  EXPECT_EQ(time->waits, 1);
}

TEST(Measure, RunReturnsPerCallTimesOfEachSample) {
  auto time = std::make_shared<FakeTime>();
  measure::Policy policy;
  policy.warmup_s = 0.0;
  policy.min_warmup_calls = 2;
  policy.sample_s = 1e-3;
  int calls = 0;
  measure::Sampler sampler(policy, fake_clock(time), [&] {
    ++calls;
    time->now_ms += 0.25;
  });
  const auto ms = sampler.run(3);
  EXPECT_EQ(sampler.calls_per_sample(), 4);
  EXPECT_EQ(calls, 2 + 1 + 3 * 4) << "warm-up, the calibration probe, 3 samples of 4";
  for (const double v : ms) EXPECT_DOUBLE_EQ(v, 0.25);
}

TEST(Measure, RunSamplesForAtLeastTheTimeGiven) {
  auto time = std::make_shared<FakeTime>();
  measure::Policy policy;
  policy.warmup_s = 0.0;
  policy.calls_per_sample = 1;
  measure::Sampler sampler(policy, fake_clock(time), [&] { time->now_ms += 100.0; });
  EXPECT_EQ(sampler.run(/*samples=*/2, /*min_seconds=*/1.0).size(), 10u) << "10 samples of 0.1 s make the second";
  EXPECT_EQ(sampler.run(/*samples=*/12, /*min_seconds=*/1.0).size(), 12u) << "and never fewer than asked";
}

TEST(Measure, DefaultPolicyPerDevice) {
  const auto cpu = measure::default_policy(torch::Device(torch::kCPU));
  EXPECT_DOUBLE_EQ(cpu.warmup_s, 0.2);
  EXPECT_EQ(cpu.min_warmup_calls, 1);
  EXPECT_DOUBLE_EQ(cpu.sample_s, 1e-3);
  const auto gpu = measure::default_policy(torch::Device(torch::kCUDA, 0));
  EXPECT_EQ(gpu.min_warmup_calls, 3);
  EXPECT_DOUBLE_EQ(gpu.sample_s, 5e-3);
}

namespace {

// A sampler of one call per sample whose n-th call costs cost(n) ms of the fake clock; no warm-up.
struct NoisyWork {
  std::shared_ptr<FakeTime> time = std::make_shared<FakeTime>();
  std::function<double(int)> cost;
  int calls = 0;
  measure::Sampler sampler() {
    measure::Policy policy;
    policy.warmup_s = 0.0;
    policy.min_warmup_calls = 0;
    policy.calls_per_sample = 1;
    measure::Sampler s(policy, fake_clock(time), [this] { time->now_ms += cost(calls++); });
    s.calibrate();
    return s;
  }
};

measure::StopRule rule(double max_noise_pct, int min_samples, double min_time_s, double timeout_s) {
  measure::StopRule r;
  r.max_noise_pct = max_noise_pct;
  r.min_samples = min_samples;
  r.min_time_s = min_time_s;
  r.timeout_s = timeout_s;
  return r;
}

}  // namespace

TEST(Measure, RelativeStandardErrorIsTheMeansSpread) {
  // mean 2.5, s = sqrt(5/3): s / (mean * sqrt(4)) = 25.8199%.
  EXPECT_NEAR(measure::relative_standard_error_pct({4.0, 1.0, 3.0, 2.0}), 25.819888974716, 1e-9);
  EXPECT_DOUBLE_EQ(measure::relative_standard_error_pct({2.0, 2.0, 2.0}), 0.0);
  EXPECT_TRUE(std::isnan(measure::relative_standard_error_pct({2.0})));
  EXPECT_TRUE(std::isnan(measure::relative_standard_error_pct({})));
  EXPECT_TRUE(std::isnan(measure::relative_standard_error_pct({0.0, 0.0})));
}

TEST(Measure, SteadyWorkStopsAtTheMinimumCountOrTime) {
  NoisyWork work;
  work.cost = [](int) { return 2.0; };
  auto sampler = work.sampler();
  const auto m = sampler.measure(rule(1.0, 10, 0.0, 5.0));
  EXPECT_EQ(m.per_call_ms.size(), 10u) << "no noise: the minimum count";
  EXPECT_DOUBLE_EQ(m.noise_pct, 0.0);
  EXPECT_DOUBLE_EQ(m.mean_ms, 2.0);
  EXPECT_DOUBLE_EQ(m.measured_s, 0.02);
  EXPECT_FALSE(m.timed_out);
  EXPECT_EQ(sampler.measure(rule(1.0, 10, 0.1, 5.0)).per_call_ms.size(), 50u) << "0.1 s of 2 ms samples";
}

// Google Benchmark's CPU column is the sampling thread's CPU time per call, as the wall figure is: over every call of
// every sample, whatever the calls per sample (4 here, each 0.3 ms of wall time and 0.1 ms of CPU time).
TEST(Measure, CpuTimeIsPerCallLikeTheWallTime) {
  auto time = std::make_shared<FakeTime>();
  double cpu_ms = 0.0;
  measure::Clock clock = fake_clock(time);
  clock.cpu_s = [&cpu_ms] { return cpu_ms / 1e3; };
  measure::Policy policy;
  policy.warmup_s = 0.0;
  policy.min_warmup_calls = 0;
  policy.calls_per_sample = 4;
  measure::Sampler sampler(policy, clock, [&] {
    time->now_ms += 0.3;
    cpu_ms += 0.1;
  });
  sampler.calibrate();
  const auto m = sampler.measure(rule(1.0, 10, 0.0, 5.0));
  ASSERT_EQ(m.per_call_ms.size(), 10u);
  EXPECT_DOUBLE_EQ(m.mean_ms, 0.3);
  EXPECT_NEAR(m.cpu_ms, 0.1, 1e-12) << "per call, not per sample of 4 calls";
}

TEST(Measure, NoisyWorkSamplesUntilTheMeansNoiseIsUnderTheTarget) {
  // Samples of 0.9 and 1.1 ms in turn, every seventh 1.6 ms (a CV of ~17%): the stop is the first count, from
  // the minimum on, whose relative standard error is at most 1%; the reported noise is exactly that of the samples.
  NoisyWork work;
  work.cost = [](int n) { return n % 7 == 6 ? 1.6 : n % 2 == 0 ? 0.9 : 1.1; };
  auto sampler = work.sampler();
  const auto m = sampler.measure(rule(1.0, 10, 0.0, 60.0));
  const size_t n = m.per_call_ms.size();
  ASSERT_GT(n, 100u) << "a ~17% CV needs ~(17/1)^2 samples";
  EXPECT_FALSE(m.timed_out);
  EXPECT_NEAR(m.noise_pct, measure::relative_standard_error_pct(m.per_call_ms), 1e-9);
  EXPECT_LE(m.noise_pct, 1.0);
  const std::vector<double> one_fewer(m.per_call_ms.begin(), m.per_call_ms.end() - 1);
  EXPECT_GT(measure::relative_standard_error_pct(one_fewer), 1.0)
      << "it stops at the first count that meets the target";
  double sum = 0.0;
  for (const double v : m.per_call_ms) sum += v;
  EXPECT_NEAR(m.mean_ms, sum / static_cast<double>(n), 1e-12);
  EXPECT_NEAR(m.wall_s, sum / 1e3, 1e-12) << "the fake host clock moves only with the work";

  // A looser target stops sooner.
  NoisyWork loose;
  loose.cost = work.cost;
  auto loose_sampler = loose.sampler();
  EXPECT_LT(loose_sampler.measure(rule(3.0, 10, 0.0, 60.0)).per_call_ms.size(), n / 4);
}

TEST(Measure, TheTimeoutStopsANoisyMeasurementAndSaysItsNoise) {
  NoisyWork work;
  work.cost = [](int n) { return n % 2 == 0 ? 1.0 : 3.0; };
  auto sampler = work.sampler();
  const auto m = sampler.measure(rule(0.01, 10, 0.0, 0.05));
  EXPECT_TRUE(m.timed_out);
  EXPECT_EQ(m.per_call_ms.size(), 26u) << "25 samples of 1 and 3 ms make 49 ms, the 26th passes the 50 ms timeout";
  EXPECT_GT(m.noise_pct, 0.01);
  EXPECT_NEAR(m.noise_pct, measure::relative_standard_error_pct(m.per_call_ms), 1e-9);

  // The timeout keeps at least 2 samples, so the noise is known, even when one sample outlasts it.
  NoisyWork slow;
  slow.cost = [](int n) { return n % 2 == 0 ? 100.0 : 120.0; };
  auto slow_sampler = slow.sampler();
  const auto two = slow_sampler.measure(rule(1.0, 10, 0.0, 0.01));
  EXPECT_EQ(two.per_call_ms.size(), 2u);
  EXPECT_TRUE(two.timed_out);
  EXPECT_TRUE(std::isfinite(two.noise_pct));
}

TEST(Measure, StopRulesPerDeviceAndTheirChecks) {
  const auto cpu = measure::default_stop_rule(torch::Device(torch::kCPU));
  EXPECT_DOUBLE_EQ(cpu.max_noise_pct, 1.0);
  EXPECT_EQ(cpu.min_samples, 10);
  EXPECT_DOUBLE_EQ(cpu.min_time_s, 0.2);
  EXPECT_DOUBLE_EQ(cpu.timeout_s, 5.0);
  const auto gpu = measure::default_stop_rule(torch::Device(torch::kCUDA, 0));
  EXPECT_DOUBLE_EQ(gpu.max_noise_pct, 0.5);
  EXPECT_DOUBLE_EQ(gpu.min_time_s, 0.25);
  EXPECT_NO_THROW(measure::check_stop_rule(cpu));
  EXPECT_THROW_WITH(measure::check_stop_rule(rule(0.0, 10, 0.2, 5.0)), InputError,
                    "--max-noise: expected a percentage");
  EXPECT_THROW_WITH(measure::check_stop_rule(rule(NAN, 10, 0.2, 5.0)), InputError, "--max-noise");
  EXPECT_THROW_WITH(measure::check_stop_rule(rule(1.0, 1, 0.2, 5.0)), InputError,
                    "--min-samples: expected 2 to 1000000, got 1");
  EXPECT_THROW_WITH(measure::check_stop_rule(rule(1.0, 10, -1.0, 5.0)), InputError, "--min-time");
  EXPECT_THROW_WITH(measure::check_stop_rule(rule(1.0, 10, 0.2, 0.0)), InputError, "--timeout");
  EXPECT_THROW_WITH(measure::check_stop_rule(rule(1.0, 10, 0.2, INFINITY)), InputError, "--timeout");
}

// Every bound of the stop rule is inclusive ("at most", "at least"), and the timeout flags a measurement only when
// its noise is above the target: one stopped by the timeout before its minimum count, with the noise met, is not
// timed out. Samples of 1 s (or 1 and 3 ms) keep the sums exact.
TEST(Measure, TheStopRuleStopsExactlyAtEachBoundAndTheTimeoutFlagsOnlyNoise) {
  const auto measure = [](std::function<double(int)> cost, const measure::StopRule& r) {
    NoisyWork work;
    work.cost = std::move(cost);
    auto sampler = work.sampler();
    return sampler.measure(r);
  };
  const auto steady = [](int) { return 1000.0; };
  auto m = measure(steady, rule(1.0, 2, 3.0, 100.0));
  EXPECT_EQ(m.per_call_ms.size(), 3u) << "3 s measured: exactly the minimum time";
  EXPECT_FALSE(m.timed_out);
  m = measure(steady, rule(1.0, 4, 0.0, 100.0));
  EXPECT_EQ(m.per_call_ms.size(), 4u) << "exactly the minimum count";
  m = measure(steady, rule(1.0, 100, 0.0, 3.0));
  EXPECT_EQ(m.per_call_ms.size(), 3u) << "3 s of host time: exactly the timeout";
  EXPECT_DOUBLE_EQ(m.wall_s, 3.0);
  EXPECT_FALSE(m.timed_out) << "the noise (0) met its target; the timeout only cut the count short";
  EXPECT_DOUBLE_EQ(m.noise_pct, 0.0);

  // Noise exactly at the target stops; a hair above it samples on (1, 3 ms: 50% at 2 samples, 40% at 3).
  const auto alternating = [](int n) { return n % 2 == 0 ? 1.0 : 3.0; };
  const double two_sample_noise = measure(alternating, rule(100.0, 2, 0.0, 100.0)).noise_pct;
  ASSERT_NEAR(two_sample_noise, 50.0, 1e-9);
  m = measure(alternating, rule(two_sample_noise, 2, 0.0, 100.0));
  EXPECT_EQ(m.per_call_ms.size(), 2u);
  EXPECT_FALSE(m.timed_out);
  m = measure(alternating, rule(std::nextafter(two_sample_noise, 0.0), 2, 0.0, 100.0));
  EXPECT_EQ(m.per_call_ms.size(), 3u);
  EXPECT_NEAR(m.noise_pct, 40.0, 1e-9);
  // The timeout with the noise above the target: flagged, the noise kept.
  m = measure(alternating, rule(1.0, 2, 0.0, 0.004));
  EXPECT_EQ(m.per_call_ms.size(), 2u);
  EXPECT_TRUE(m.timed_out);
  EXPECT_NEAR(m.noise_pct, 50.0, 1e-9);
}
