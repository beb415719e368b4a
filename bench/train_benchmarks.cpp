// train_step/<model>/<device>/batch:<B>/dtype:<p>/layout:<l>[/cudnn:<on|off>/graph:<on|off>]: one full
// tutorial training step per iteration, in one of the variants users tune for.
#include <ATen/Parallel.h>
#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include <torch/utils.h>

#include <ATen/Context.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>

#include "diagnostics/audit.h"
#include "suite.h"
#include "torchprobe/backend.h"
#include "torchprobe/data/batcher.h"
#include "torchprobe/elapsed.h"
#include "torchprobe/input_error.h"
#include "torchprobe/io.h"
#include "torchprobe/measure.h"
#include "torchprobe/stats.h"
#include "torchprobe/models/registry.h"
#include "torchprobe/nvtx.h"
#include "torchprobe/ops/peaks.h"
#include "torchprobe/trace.h"
#include "torchprobe/trace_files.h"
#include "torchprobe/train/train_step.h"

namespace torchprobe::bench {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kRotatingBatches = 4;  // distinct host batches cycled through

// --trace: kTraceSteps steps under LibTorch's profiler, once per benchmark and process (not per repetition),
// after the timed region. The trace is a file beside the results, not part of them.
void write_trace(const std::string& dir, const std::string& name, const torch::Device& device,
                 const std::function<void()>& step) {
  static std::mutex mutex;
  static std::set<std::string> written;
  {
    const std::lock_guard<std::mutex> lock(mutex);
    if (!written.insert(name).second) return;
  }
  const std::string text = trace::record(
      [&] {
        for (int i = 0; i < kTraceSteps; ++i) step();
        backend::synchronize(device);
      },
      device.is_cuda());
  io::write_text_file((std::filesystem::path(dir) / trace_file_name(name)).string(), text);
}

// One training benchmark as its repetitions share it (keep_between_repetitions): the model and optimizer, made from
// seed 0 and checked to be on the device; kRotatingBatches host batches; the sampler, warmed up (first-touch
// allocations, cuDNN/cuBLAS handles, caching-allocator growth) and calibrated (K steps per sample) once; and the
// training state the warm-up left (`start`), which every repetition starts from: training changes what a step costs
// (a kept `net` at batch 4 slowed from 0.77 to 0.89 ms over ten repetitions on the CPU, while fresh ones held 0.77).
struct PreparedStep {
  PreparedStep(const TrainConfig& config, const std::shared_ptr<const data::Dataset>& dataset,
               int requested_steps_per_sample, const std::string& name)
      : step(make_step(config)),
        batcher(dataset, config.batch_size, backend::wants_pinned_staging(config.device), /*seed=*/1,
                kRotatingBatches) {
    // Preflight: every parameter and buffer where the step will run, named if not.
    const auto audit = diagnostics::audit_devices(*step.model(), {}, config.device);
    if (!audit.ok()) throw std::runtime_error("device preflight failed: " + audit.text());
    for (int i = 0; i < kRotatingBatches; ++i) batches.push_back(&batcher.next());
    measure::Policy policy = measure::default_policy(config.device);
    policy.calls_per_sample = requested_steps_per_sample;
    sampler.emplace(policy, measure::device_clock(config.device), [this] { loss = step.run(next_batch()); });
    sampler->warm_up();
    steps_per_sample = sampler->calibrate(name);
    // The peak over the model's making and its warm-up, whose steps are the timed ones: read before the snapshot, a
    // copy of the weights and momentum that no training run holds.
    peak_bytes = backend::peak_memory_bytes(config.device);
    start = step.snapshot();
  }
  data::HostBatch& next_batch() { return *batches[next++ % batches.size()]; }

  static train::TrainStep make_step(const TrainConfig& config) {
    backend::reset_peak_memory(config.device);
    torch::manual_seed(0);
    train::StepOptions options;
    options.precision = config.variant.precision;
    options.layout = config.variant.layout;
    options.cuda_graph = config.variant.graph;
    return train::TrainStep(models::make_model(config.model), config.device, options);
  }

  train::TrainStep step;
  data::Batcher batcher;
  std::vector<data::HostBatch*> batches;
  size_t next = 0;
  torch::Tensor loss;
  std::optional<measure::Sampler> sampler;
  int steps_per_sample = 1;
  std::int64_t peak_bytes = 0;
  std::vector<torch::Tensor> start;
};

void run_train_step(benchmark::State& state, const TrainConfig& config,
                    const std::shared_ptr<const data::Dataset>& dataset, int requested_steps_per_sample, bool profile,
                    const std::string& trace_dir, const measure::StopRule& stop) {
  if (config.batch_size < 1) throw InputError(fmt::format("batch size must be >= 1, got {}", config.batch_size));
  const std::string name = train_benchmark_name(config);
  const torch::Device device = config.device;
  const TrainVariant& variant = config.variant;
  // The roof for the model-FLOPs utilisation: the compute roof at the precision the convolutions run in
  // (fp32 or bf16 on the CPU; TF32 on GPUs where LibTorch lets cuDNN use it, its default).
  std::optional<ops::DType> peak_dtype;
  switch (variant.precision) {
    case train::Precision::kFp32:
      peak_dtype = device.is_cuda() && at::globalContext().allowTF32CuDNN() ? ops::DType::kTf32 : ops::DType::kFp32;
      break;
    case train::Precision::kBf16: peak_dtype = ops::DType::kBf16; break;
    case train::Precision::kFp16: peak_dtype = ops::DType::kFp16; break;
  }
  const auto supported = ops::roof_dtypes(device);
  if (std::find(supported.begin(), supported.end(), *peak_dtype) == supported.end()) peak_dtype.reset();
  const std::optional<ops::Peak> peak =
      peak_dtype ? std::optional(ops::measured_peak(device, *peak_dtype)) : std::nullopt;

  backend::CudnnBenchmarkGuard autotune(variant.cudnn_benchmark);
  const auto kept = keep_between_repetitions<PreparedStep>(
      name, [&] { return std::make_shared<PreparedStep>(config, dataset, requested_steps_per_sample, name); });
  PreparedStep& prepared = kept.first;  // a reference, not a structured binding: lambdas below capture it (C++17)
  if (kept.second) prepared.step.restore(prepared.start);  // untimed: the same start as the first repetition
  measure::Sampler& sampler = *prepared.sampler;
  backend::profiler_capture_start();
  // Profile mode: a fixed number of steps (Google Benchmark's iterations); otherwise samples until the noise is low.
  const double mean_ms = profile ? time_samples(state, sampler) /
                                       static_cast<double>(std::max<benchmark::IterationCount>(1, state.iterations()))
                                 : time_until_stable(state, sampler, stop).mean_ms;
  backend::profiler_capture_stop();
  const float last_loss = prepared.loss.item<float>();
  if (!std::isfinite(last_loss)) throw std::runtime_error(fmt::format("the loss became {} during the run", last_loss));

  for (const auto& [key, value] :
       train_step_counters(mean_ms, config.batch_size, ops::model_forward_flops(config.model), peak ? &*peak : nullptr,
                           prepared.peak_bytes)) {
    state.counters[key] = value;
  }
  if (const train::LossScaler* scaler = prepared.step.scaler()) {
    state.counters["loss_scale"] = scaler->scale_value();
    state.counters["skipped_steps"] = static_cast<double>(scaler->skipped_steps());
  }
  if (!profile && !variant.graph) {  // a replayed graph is one unit: no phase split
    // Per-phase split, in a separate instrumented pass so the headline figure is unperturbed; once per benchmark
    // and process (its first repetition), the same split reported by every repetition.
    static std::mutex mutex;
    static std::map<std::string, std::array<double, train::kPhaseCount>> measured;
    const std::lock_guard<std::mutex> lock(mutex);
    auto split = measured.find(name);
    if (split == measured.end()) {
      std::array<std::vector<double>, train::kPhaseCount> phase_ms;
      const auto timeline = backend::make_timeline(device);
      const auto phase_start = Clock::now();
      double last_s = 0.0;  // the previous step's time: a step that would end past the budget is not started
      for (int i = 0; another_phase_step(i, seconds_since(phase_start), last_s); ++i) {
        const auto step_start = Clock::now();
        const auto phases = prepared.step.run_instrumented(prepared.next_batch(), *timeline);
        last_s = seconds_since(step_start);
        for (int p = 0; p < train::kPhaseCount; ++p) phase_ms[p].push_back(phases[p]);
      }
      std::array<double, train::kPhaseCount> medians{};
      for (int p = 0; p < train::kPhaseCount; ++p) medians[p] = median(phase_ms[p]);
      split = measured.emplace(name, medians).first;
    }
    for (int p = 0; p < train::kPhaseCount; ++p) {
      state.counters[std::string(train::kPhaseNames[p]) + "_ms"] = split->second[p];
    }
  }
  if (!trace_dir.empty()) write_trace(trace_dir, name, device, [&] { (void)prepared.step.run(prepared.next_batch()); });
  state.counters["batch"] = static_cast<double>(config.batch_size);
  state.counters["threads"] = at::get_num_threads();
  state.counters["steps_per_sample"] = prepared.steps_per_sample;
}

}  // namespace

std::vector<std::pair<std::string, double>> train_step_counters(double mean_ms, std::int64_t batch_size,
                                                                double forward_flop_per_image, const ops::Peak* peak,
                                                                std::int64_t peak_bytes) {
  // Rates from the mean step time (plain values: one Google Benchmark iteration is one repetition).
  const double step_s = mean_ms / 1e3;
  const auto batch = static_cast<double>(batch_size);
  const double flop_per_step = 3.0 * forward_flop_per_image * batch;
  std::vector<std::pair<std::string, double>> counters = {
      {"images_per_s", batch / step_s},
      {"ms_per_step", mean_ms},
      {"epoch_s", step_s * std::ceil(static_cast<double>(kEpochImages) / batch)},
      {"model_gflop_per_step", flop_per_step / 1e9},
      {"model_tflop_per_s", flop_per_step / step_s / 1e12},
      {"peak_mem_mib", static_cast<double>(peak_bytes) / (1024.0 * 1024.0)},
  };
  if (peak == nullptr) return counters;
  // What the compute roof is made of, so a reader can see which backend (or the theory) set it.
  for (const auto& counter : ops::roof_counters(*peak)) counters.push_back(counter);
  const double roof_gflop_per_s = peak->gflop_per_s;
  if (std::isfinite(roof_gflop_per_s) && roof_gflop_per_s > 0.0) {
    counters.emplace_back("peak_tflop_per_s", roof_gflop_per_s / 1e3);
    // A plain value, not a rate counter: the console would print a percentage as "0.83/s".
    if (step_s > 0.0) counters.emplace_back("mfu_pct", 100.0 * flop_per_step / step_s / (roof_gflop_per_s * 1e9));
  }
  return counters;
}

bool another_phase_step(int steps_done, double elapsed_s, double last_step_s) {
  if (steps_done >= kMaxPhaseSteps) return false;
  return steps_done == 0 || elapsed_s + last_step_s <= kPhaseBudgetSeconds;
}

std::vector<std::string> register_train_benchmarks(const SuiteOptions& options,
                                                   DatasetSource train_data,
                                                   const std::string& data_label) {
  std::vector<std::string> names;
  const auto plan = plan_train_benchmarks(options);
  for (const auto& config : plan) {
    const std::string name = train_benchmark_name(config);
    const int steps_per_sample = options.steps_per_sample;
    const bool profile = options.profile;
    const std::string trace_dir = options.trace_dir;
    const measure::StopRule stop = stop_rule(options.stop, config.device);
    // The benchmark's outer NVTX range, registered once here rather than formatted per call.
    const auto range = std::make_shared<const nvtx::Name>(name, nvtx::colors::kBenchmark);
    auto* benchmark = benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& state) {
      state.SetLabel(data_label);
      {
        nvtx::Range outer(*range);
        run_guarded(state, name,
                    [&] { run_train_step(state, config, train_data(), steps_per_sample, profile, trace_dir, stop); });
      }
      // After an OOM, hand cached blocks back so later configs start clean.
      if (config.device.is_cuda()) backend::release_cached_memory(config.device);
    });
    benchmark->UseManualTime()->Unit(benchmark::kMillisecond);
    if (profile) benchmark->Iterations(kProfileSteps)->Repetitions(1);
    names.push_back(name);
  }
  return names;
}

}  // namespace torchprobe::bench
