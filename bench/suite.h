#pragma once
// What torchprobe-bench registers: the training-step suite and the data-pipeline suite.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <torch/types.h>

#include <benchmark/benchmark.h>

#include "torchprobe/data/cifar10.h"
#include "torchprobe/cpu.h"
#include "torchprobe/measure.h"
#include "torchprobe/ops/ops.h"
#include "torchprobe/ops/peaks.h"
#include "torchprobe/train/train_step.h"

namespace torchprobe::bench {

/// Which training-step variants to run. Each axis list, when given, is used as is (values
/// a device cannot run are dropped for it); an axis not given takes every value in the full sweep
/// and only its baseline (fp32, nchw, cudnn off, graph off) otherwise. With no axis given and
/// no full sweep, the quick subset: the baseline at every batch size, plus bf16 + channels_last
/// (with cuDNN autotuning on GPUs; on the CPU only where it computes bf16 natively: SuiteOptions::cpu_native_bf16)
/// at the largest batch and, on GPUs, a CUDA graph at the smallest.
struct VariantSelection {
  bool full = false;
  std::vector<std::string> dtypes;   ///< fp32, bf16, fp16
  std::vector<std::string> layouts;  ///< nchw, cl
  std::vector<std::string> cudnn;    ///< off, on (cuDNN autotuning; GPUs)
  std::vector<std::string> graphs;   ///< off, on (CUDA graphs; GPUs)
};

/// No axis given and no full sweep: the quick subset.
bool quick_subset(const VariantSelection& selection);
/// Whether the CPU computes bf16 natively: `setting` (TORCHPROBE_CPU_BF16) "native" or "emulated" where given,
/// else from its FLOP/cycle (emulated: a known fp32 figure and no bf16 one). Throws InputError for another setting.
bool cpu_native_bf16(const CoreFlops& flops, const char* setting);

/// The stopping flags as given; an unset one takes the device's default.
struct StopFlags {
  std::optional<double> max_noise_pct, min_time_s, timeout_s;
  std::optional<int> min_samples;
};
/// The device's default rule with the flags given applied.
measure::StopRule stop_rule(const StopFlags& flags, const torch::Device& device);

/// The suites torchprobe-bench has (train, data, op), in the order they run; every one runs by default.
const std::vector<std::string>& suite_names();

struct SuiteOptions {
  std::vector<torch::Device> devices;
  std::vector<std::string> models = {"net", "resnet18"};
  std::vector<std::int64_t> batch_sizes = {4, 64, 256};
  std::vector<std::string> suites = suite_names();
  VariantSelection variants;
  /// Training steps per timed sample; 0 picks one per device (1 on the CPU, enough for
  /// ~5 ms of GPU work per sample so the closing synchronisation is amortised).
  int steps_per_sample = 0;
  /// Profiling mode (as nvbench's --profile): each training benchmark runs a fixed, small number
  /// of samples once, with no statistics and no instrumented phase pass, for use under nsys.
  bool profile = false;
  /// Op suite: which ops (core set or all), and at which batch sizes the model-shaped ops run.
  ops::OpSelection op_selection;
  /// Op suite: flush the last-level cache before each sample (nvbench's cold mode), one call per sample.
  bool cold = false;
  /// Op suite: rotating input sets per op; 0 picks enough to exceed twice the last-level cache.
  int op_input_sets = 0;
  /// When each repetition stops sampling: the flags given (--max-noise, --min-samples, --min-time, --timeout)
  /// over each device's measure::default_stop_rule.
  StopFlags stop;
  /// Training suite: after timing, a Chrome trace of kTraceSteps steps per benchmark in this directory ("": none).
  std::string trace_dir;
  /// Whether the CPU computes bf16 natively (AVX512_BF16, AMX, Arm's BF16). Without it LibTorch emulates bf16 through
  /// fp32 at a few GFLOP/s (resnet18's batch-64 bf16 step: minutes on a Zen 3 VM), so the quick subset leaves the
  /// CPU's bf16 variant out; asked for by --dtypes or the full sweep, it runs.
  bool cpu_native_bf16 = true;
};

/// Training steps in a --trace profile (after the timed region, never inside it).
constexpr int kTraceSteps = 3;

/// Training steps per benchmark in profiling mode (rounded up to whole samples of K steps).
constexpr int kProfileSteps = 10;

/// Images in one epoch: CIFAR-10's training set.
constexpr std::int64_t kEpochImages = 50000;
/// The figures of one training-step repetition from its mean step time (ms), the batch, the model's forward FLOP per
/// image and the roofs of its precision (nullptr: none for it), as result counters, as op_counters gives an op's:
/// images_per_s = batch / step time; ms_per_step; epoch_s = step time x ceil(kEpochImages / batch), the steps of one
/// pass, the last one partial; model_gflop_per_step = 3 x forward x batch (the forward, and the backward at twice its
/// work); model_tflop_per_s; peak_mem_mib (the device's peak allocated bytes in MiB); with roofs, their parts
/// (ops::roof_counters) and, where the compute roof is above 0, peak_tflop_per_s and mfu_pct = 100 x the model's FLOP
/// rate over it.
std::vector<std::pair<std::string, double>> train_step_counters(double mean_ms, std::int64_t batch_size,
                                                                double forward_flop_per_image, const ops::Peak* peak,
                                                                std::int64_t peak_bytes);

/// The per-phase split's instrumented pass: at most kMaxPhaseSteps steps, the first always, a later one only if it
/// would end within kPhaseBudgetSeconds of the pass's start, judged by the step before it (`last_step_s`).
constexpr double kPhaseBudgetSeconds = 1.0;
constexpr int kMaxPhaseSteps = 5;
bool another_phase_step(int steps_done, double elapsed_s, double last_step_s);

/// Op suite: how many input sets an op rotates through. `requested` (--op-input-sets) when > 0; otherwise enough
/// sets of `set_bytes` to fill twice the last-level cache (`cache_bytes`), so each call reads inputs from memory:
/// ceil(2 x cache / set), at least 1, at most kMaxInputSets and at most kMaxRotationBytes in all (but 1 set always).
constexpr int kMaxInputSets = 64;
constexpr std::int64_t kMaxRotationBytes = std::int64_t{2} << 30;
int op_input_set_count(int requested, std::int64_t cache_bytes, std::int64_t set_bytes);

/// The counters of one op benchmark's repetition from its mean time per call (ms): its FLOP and bytes per call as
/// counted (`flops`, `bytes`), gb_per_s, and for an op that counts FLOPs gflop_per_s, flop_per_byte, the compute roof
/// (peak_gflop_per_s and ops::roof_counters' parts); peak_gb_per_s where the op is judged against the memory roof
/// (`bandwidth_roof`); pct_of_roof, the roofline's verdict (roofline.h), where a roof applies.
std::vector<std::pair<std::string, double>> op_counters(double flops, double bytes, bool bandwidth_roof, double mean_ms,
                                                        const ops::Peak& peak);

/// One point of the training-step variant space.
struct TrainVariant {
  train::Precision precision = train::Precision::kFp32;
  train::Layout layout = train::Layout::kNchw;
  bool cudnn_benchmark = false;  ///< GPUs only
  bool graph = false;            ///< GPUs only
};

struct TrainConfig {
  std::string model;
  torch::Device device;
  std::int64_t batch_size;
  TrainVariant variant = {};
};

/// e.g. "train_step/net/cpu/batch:64/dtype:fp32/layout:nchw" or
/// "train_step/resnet18/cuda:0/batch:256/dtype:bf16/layout:cl/cudnn:on/graph:off" (GPUs add those two axes).
std::string train_benchmark_name(const TrainConfig& config);
/// One config per device x model x batch size x variant, in that nesting order. Throws InputError
/// for unknown axis values, or when the train suite is selected and no variant runs on any device.
std::vector<TrainConfig> plan_train_benchmarks(const SuiteOptions& options);
/// Profile mode's loop (a fixed iteration count): each sample of a calibrated sampler counts as
/// calls_per_sample() iterations (KeepRunningBatch) with its measured time, so reported times are per
/// call. Returns the total ms of every sample.
double time_samples(benchmark::State& state, measure::Sampler& sampler);
/// One repetition as one Google Benchmark iteration (main.cpp runs Google Benchmark with a zero minimum time, so
/// it stops after one): the sampler samples until
/// `rule` says stop, and the iteration's time is the measured mean per call. Adds the counters samples,
/// noise_pct (the mean's relative standard error), max_noise_pct (the target), timed_out (1: the timeout
/// stopped it above the target) and kCpuPerCallCounter (results_file.h).
measure::Measurement time_until_stable(benchmark::State& state, measure::Sampler& sampler,
                                       const measure::StopRule& rule);
/// What a run will take at most, said before it starts: `benchmarks` x (`repetitions` x `timeout_s` plus one warm-up:
/// the repetitions after the first start warm, keep_between_repetitions), e.g. "at most 4:19 of sampling (17
/// benchmark(s) x 3 repetition(s), each stopping once its noise is under its target, or at 5 s; most stop well before;
/// where one call takes over 2.5 s, longer: a repetition takes at least 2 samples)".
std::string sampling_bound_text(size_t benchmarks, int repetitions, double timeout_s);

/// What a benchmark keeps between its repetitions: its model and optimizer mid-training, or its input sets, with the
/// sampler that warmed them up and calibrated on them. The repetitions after the first start where the last one left
/// off, with nothing to build and no warm-up to run (the state is exactly what the last timed sample left), so they
/// cost only their samples and differ only by what the host did meanwhile. One benchmark's state at a time: a
/// repetition of another benchmark (the next one, or an interleaved repetition) drops it before making its own, and a
/// failed repetition drops it (run_guarded), so a broken state is never reused. Never destroyed at exit: device
/// tensors must not outlive their allocator in the static destructors.
struct KeptState {
  std::string name;
  std::shared_ptr<void> state;
};
KeptState& kept_state();
/// `name`'s kept state, and whether it was kept (false: made now by `make`, the previous benchmark's dropped first).
template <class T, class Make>
std::pair<T&, bool> keep_between_repetitions(const std::string& name, Make make) {
  KeptState& kept = kept_state();
  if (kept.state && kept.name == name) return {*static_cast<T*>(kept.state.get()), true};
  kept.name.clear();
  kept.state.reset();  // the previous benchmark's memory goes before this one's is taken
  std::shared_ptr<T> made = make();
  kept.state = made;
  kept.name = name;
  return {*made, false};
}

/// What every benchmark function does around its work: the progress line; a requested stop (a signal)
/// honoured before it starts; every failure turned into Google Benchmark's SkipWithError with a one-line
/// reason, so the suite goes on (the state kept between repetitions is dropped). For tests of crash handling,
/// TORCHPROBE_TEST_FAULT=SUBSTRING:KIND makes benchmarks whose name contains SUBSTRING fail that way instead of
/// running: throw, abort or segv.
void run_guarded(benchmark::State& state, const std::string& name, const std::function<void()>& body);

/// Validates suite names; throws InputError for unknown ones.
void check_suites(const std::vector<std::string>& suites);

/// Where the training steps' images come from: called by the first training benchmark that runs (a
/// process that runs none, e.g. an isolated op benchmark, never makes them).
using DatasetSource = std::function<std::shared_ptr<const data::Dataset>()>;
/// A source that makes the dataset once, on first use, and then hands out that one.
DatasetSource make_once(std::function<data::Dataset()> make);

/// Registers the selected suites with Google Benchmark and returns the registered names.
/// `train_data` feeds the training steps; `data_label` says where it came from.
std::vector<std::string> register_suites(const SuiteOptions& options,
                                         DatasetSource train_data,
                                         const std::string& data_label);

/// Registration of each suite (called by register_suites).
std::vector<std::string> register_train_benchmarks(const SuiteOptions& options,
                                                   DatasetSource train_data,
                                                   const std::string& data_label);
std::vector<std::string> register_data_benchmarks(const SuiteOptions& options);
std::vector<std::string> register_op_benchmarks(const SuiteOptions& options);

}  // namespace torchprobe::bench
