// op/<op>/<device>/...: single ops at the models' shapes, with FLOP/s, bytes/s and the device's
// measured peaks recorded alongside so reports can place each op on the roofline.
#include <ATen/Parallel.h>
#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include <torch/torch.h>

#include <cmath>

#include "suite.h"
#include "torchprobe/backend.h"
#include "torchprobe/measure.h"
#include "torchprobe/nvtx.h"
#include "torchprobe/ops/peaks.h"
#include "torchprobe/roofline.h"

namespace torchprobe::bench {
namespace {

constexpr int kMaxInputSets = 64;
constexpr std::int64_t kMaxRotationBytes = std::int64_t{2} << 30;

std::int64_t bytes_of(const ops::OpInputs& inputs) {
  std::int64_t total = 0;
  for (const auto& t : inputs.tensors) total += t.numel() * static_cast<std::int64_t>(t.element_size());
  return total;
}

void run_op(benchmark::State& state, const ops::OpCase& c, const SuiteOptions& options) {
  const torch::Device device = c.device;
  ops::MathModeGuard math(c.dtype);
  const ops::Peak peak = ops::measured_peak(device, c.dtype);  // once per device and dtype, before our inputs exist

  // Rotating input sets: consecutive calls read inputs that are not in the last-level cache
  // (unless --op-input-sets says otherwise); --cold also flushes that cache before each sample.
  // Made once per op and kept for its later repetitions (up to 2 GiB of random numbers took ~1 s per
  // repetition); the next op's sets replace them.
  // Never destroyed: device tensors must not outlive their allocator in the static destructors at exit.
  struct Inputs {
    std::string op;  ///< whose sets these are ("" while they are being made)
    std::vector<ops::OpInputs> sets;
  };
  static Inputs& kept = *new Inputs;
  std::vector<ops::OpInputs>& sets = kept.sets;
  if (kept.op != c.name()) {
    kept.op.clear();
    sets.clear();
    sets.push_back(c.make_inputs());
    const std::int64_t set_bytes = std::max<std::int64_t>(1, bytes_of(sets.front()));
    int wanted = options.op_input_sets;
    if (wanted <= 0) {
      const double needed =
          std::ceil(2.0 * static_cast<double>(measure::cache_bytes(device)) / static_cast<double>(set_bytes));
      wanted = static_cast<int>(std::clamp(needed, 1.0, static_cast<double>(kMaxInputSets)));
      wanted =
          static_cast<int>(std::max<std::int64_t>(1, std::min<std::int64_t>(wanted, kMaxRotationBytes / set_bytes)));
    }
    while (static_cast<int>(sets.size()) < wanted) sets.push_back(c.make_inputs());
    kept.op = c.name();
  }
  size_t next = 0;

  // The one measurement policy (warm-up: allocator growth, library handles, kernel selection). One call
  // per sample when each needs an untimed reset; --cold also flushes the last-level cache before each.
  measure::Policy policy = measure::default_policy(device);
  policy.cold = options.cold;
  if (c.reset) policy.calls_per_sample = 1;
  measure::Sampler sampler(
      policy, measure::device_clock(device), [&] { c.run(sets[next++ % sets.size()]); },
      [&] {
        if (c.reset) c.reset(sets[next % sets.size()]);
      },
      [device] { measure::flush_cache(device); });
  sampler.warm_up();
  const int calls = sampler.calibrate(c.name());
  const double mean_s = time_until_stable(state, sampler, stop_rule(options.stop, device)).mean_ms / 1e3;
  // Raw counts and peaks go into the JSON so reports recompute from the median; the rates here
  // (from the mean) are for the console.
  const double peak_flops = c.flops > 0 ? peak.gflop_per_s : NAN, peak_bytes = c.bandwidth_roof ? peak.gb_per_s : NAN;
  const RooflinePoint point = roofline(c.flops, c.bytes, mean_s, peak_flops, peak_bytes);
  state.counters["flops"] = c.flops;
  state.counters["bytes"] = c.bytes;
  state.counters["gb_per_s"] = point.gb_per_s;
  if (c.flops > 0) {
    state.counters["gflop_per_s"] = point.gflop_per_s;
    state.counters["flop_per_byte"] = point.intensity;
    state.counters["peak_gflop_per_s"] = peak_flops;
    // What the compute roof is made of, so a reader can see which backend (or the theory) set it.
    for (const auto& [key, value] : ops::roof_counters(peak)) state.counters[key] = value;
  }
  if (c.bandwidth_roof) state.counters["peak_gb_per_s"] = peak_bytes;
  if (std::isfinite(point.pct_of_roof)) state.counters["pct_of_roof"] = point.pct_of_roof;
  state.counters["calls_per_sample"] = calls;
  state.counters["input_sets"] = static_cast<double>(sets.size());
  state.counters["cold"] = options.cold ? 1 : 0;
  state.counters["threads"] = at::get_num_threads();
}

}  // namespace

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
