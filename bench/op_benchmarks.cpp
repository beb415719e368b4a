// op/<op>/<device>/...: single ops at the models' shapes, with FLOP/s, bytes/s and the device's
// measured peaks recorded alongside so reports can place each op on the roofline.
#include <ATen/Parallel.h>
#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include <torch/torch.h>

#include <cmath>
#include <memory>
#include <optional>

#include "suite.h"
#include "torchprobe/backend.h"
#include "torchprobe/measure.h"
#include "torchprobe/nvtx.h"
#include "torchprobe/ops/peaks.h"
#include "torchprobe/roofline.h"

namespace torchprobe::bench {
namespace {

std::int64_t bytes_of(const ops::OpInputs& inputs) {
  std::int64_t total = 0;
  for (const auto& t : inputs.tensors) total += t.numel() * static_cast<std::int64_t>(t.element_size());
  return total;
}

// One op benchmark as its repetitions share it (keep_between_repetitions): rotating input sets, so consecutive calls
// read inputs that are not in the last-level cache (unless --op-input-sets says otherwise; --cold also flushes that
// cache before each sample), made once (up to 2 GiB of random numbers took ~1 s per repetition); and the sampler,
// warmed up (allocator growth, library handles, kernel selection) and calibrated once. One call per sample when each
// needs an untimed reset, or with --cold.
struct PreparedOp {
  PreparedOp(const ops::OpCase& op, const SuiteOptions& options) : c(op) {
    sets.push_back(c.make_inputs());
    const int wanted =
        op_input_set_count(options.op_input_sets, measure::cache_bytes(c.device), bytes_of(sets.front()));
    while (static_cast<int>(sets.size()) < wanted) sets.push_back(c.make_inputs());
    measure::Policy policy = measure::default_policy(c.device);
    policy.cold = options.cold;
    if (c.reset) policy.calls_per_sample = 1;
    sampler.emplace(
        policy, measure::device_clock(c.device), [this] { c.run(sets[next++ % sets.size()]); },
        [this] {
          if (c.reset) c.reset(sets[next % sets.size()]);
        },
        [device = c.device] { measure::flush_cache(device); });
    sampler->warm_up();
    calls = sampler->calibrate(c.name());
  }

  ops::OpCase c;
  std::vector<ops::OpInputs> sets;
  size_t next = 0;
  std::optional<measure::Sampler> sampler;
  int calls = 1;
};

void run_op(benchmark::State& state, const ops::OpCase& c, const SuiteOptions& options) {
  const torch::Device device = c.device;
  ops::MathModeGuard math(c.dtype);
  const ops::Peak peak = ops::measured_peak(device, c.dtype);  // once per device and dtype, before our inputs exist
  PreparedOp& prepared =
      keep_between_repetitions<PreparedOp>(c.name(), [&] { return std::make_shared<PreparedOp>(c, options); }).first;
  const double mean_ms = time_until_stable(state, *prepared.sampler, stop_rule(options.stop, device)).mean_ms;
  for (const auto& [key, value] : op_counters(c.flops, c.bytes, c.bandwidth_roof, mean_ms, peak)) {
    state.counters[key] = value;
  }
  state.counters["calls_per_sample"] = prepared.calls;
  state.counters["input_sets"] = static_cast<double>(prepared.sets.size());
  state.counters["cold"] = options.cold ? 1 : 0;
  state.counters["threads"] = at::get_num_threads();
}

}  // namespace

std::vector<std::pair<std::string, double>> op_counters(double flops, double bytes, bool bandwidth_roof, double mean_ms,
                                                        const ops::Peak& peak) {
  // Raw counts and peaks go into the JSON so reports recompute from the median; the rates here
  // (from the mean) are for the console.
  const double peak_flops = flops > 0 ? peak.gflop_per_s : NAN, peak_bytes = bandwidth_roof ? peak.gb_per_s : NAN;
  const RooflinePoint point = roofline(flops, bytes, mean_ms / 1e3, peak_flops, peak_bytes);
  std::vector<std::pair<std::string, double>> counters = {
      {"flops", flops}, {"bytes", bytes}, {"gb_per_s", point.gb_per_s}};
  if (flops > 0) {
    counters.insert(
        counters.end(),
        {{"gflop_per_s", point.gflop_per_s}, {"flop_per_byte", point.intensity}, {"peak_gflop_per_s", peak_flops}});
    // What the compute roof is made of, so a reader can see which backend (or the theory) set it.
    for (const auto& counter : ops::roof_counters(peak)) counters.push_back(counter);
  }
  if (bandwidth_roof) counters.emplace_back("peak_gb_per_s", peak_bytes);
  if (std::isfinite(point.pct_of_roof)) counters.emplace_back("pct_of_roof", point.pct_of_roof);
  return counters;
}

int op_input_set_count(int requested, std::int64_t cache_bytes, std::int64_t set_bytes) {
  if (requested > 0) return requested;
  set_bytes = std::max<std::int64_t>(1, set_bytes);
  const double needed = std::ceil(2.0 * static_cast<double>(cache_bytes) / static_cast<double>(set_bytes));
  const auto wanted = static_cast<std::int64_t>(std::clamp(needed, 1.0, static_cast<double>(kMaxInputSets)));
  return static_cast<int>(std::max<std::int64_t>(1, std::min(wanted, kMaxRotationBytes / set_bytes)));
}

std::vector<std::string> register_op_benchmarks(const SuiteOptions& options) {
  std::vector<std::string> names;
  for (const auto& c : ops::plan_ops(options.devices, options.op_selection)) {
    const std::string name = c.name();
    const auto op = std::make_shared<const ops::OpCase>(c);
    const auto range = std::make_shared<const nvtx::Name>(name, nvtx::colors::kBenchmark);
    auto* benchmark = benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& state) {
      {
        nvtx::Range outer(*range);
        run_guarded(state, name, [&] { run_op(state, *op, options); });
      }
      if (op->device.is_cuda()) backend::release_cached_memory(op->device);
    });
    benchmark->UseManualTime()->Unit(benchmark::kMicrosecond);
    names.push_back(name);
  }
  return names;
}

}  // namespace torchprobe::bench
