#include "options.h"

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "torchprobe/device_spec.h"
#include "torchprobe/cli_support.h"
#include "torchprobe/flags.h"
#include "torchprobe/input_error.h"
#include "torchprobe/models/registry.h"

namespace torchprobe::bench {
namespace {
constexpr std::int64_t kMaxBatch = 65536;
}  // namespace

void add_flags(CLI::App& app, ProgramFlags& flags, SuiteOptions& options) {
  // A flag given twice: the last one wins (scripts/run.sh passes the suite's defaults first, the caller's flags after).
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.add_option("--devices", flags.devices, "cpu, cuda, cuda:N or all, comma-separated")->capture_default_str();
  app.add_option("--models", flags.models, "Models to train: net, resnet18 (comma-separated)")->capture_default_str();
  app.add_option("--batch-sizes", flags.batch_sizes, fmt::format("Batch sizes, 1 to {}", kMaxBatch))
      ->capture_default_str();
  app.add_option("--variants", flags.variants,
                 "Training-step variants: quick (baseline at every batch, bf16+channels_last at the largest where the "
                 "device computes bf16 natively, a CUDA graph at the smallest on GPUs) or full (every combination the "
                 "device runs)")
      ->check(CLI::IsMember({"quick", "full"}))
      ->capture_default_str();
  app.add_option("--dtypes", options.variants.dtypes,
                 "Training precisions: fp32, bf16 (autocast), fp16 (autocast + loss scaling, GPUs)")
      ->delimiter(',');
  app.add_option("--layouts", options.variants.layouts, "Training memory formats: nchw, cl (channels_last)")
      ->delimiter(',');
  app.add_option("--cudnn", options.variants.cudnn, "cuDNN autotuning (GPUs): off, on")->delimiter(',');
  app.add_option("--graphs", options.variants.graphs, "CUDA-graph replay of the whole step (GPUs): off, on")
      ->delimiter(',');
  app.add_option("--suites", flags.suites,
                 fmt::format("Suites to run: {} (comma-separated)", fmt::join(suite_names(), ", ")))
      ->capture_default_str();
  app.add_option("--ops", options.op_selection.ops,
                 "Ops to time (default: all of: " + fmt::format("{}", fmt::join(ops::op_names(), ", ")) + ")")
      ->delimiter(',');
  app.add_option("--op-set", flags.op_set, "core (a quick set: one shape per op) or all (the full sweep)")
      ->check(CLI::IsMember({"core", "all"}))
      ->capture_default_str();
  app.add_option("--op-batch-sizes", flags.op_batch_sizes, "Batch sizes of the model-shaped ops")
      ->capture_default_str();
  app.add_flag("--cold", options.cold, "Op suite: flush the last-level cache before each sample (one call per sample)");
  app.add_option("--op-input-sets", options.op_input_sets,
                 "Op suite: rotating input sets (0: enough to exceed twice the last-level cache)")
      ->check(in_range(0, 4096))
      ->capture_default_str();
  app.add_option("--threads", flags.threads,
                 fmt::format("LibTorch intra-op threads, 1 to {} ({})", kMaxThreads, kDefaultThreadsHelp))
      ->check(in_range(1, kMaxThreads));
  app.add_option("--data", flags.data_dir, "Directory with the CIFAR-10 binary files (default: synthetic data)");
  app.add_option("--steps-per-sample", options.steps_per_sample,
                 "Training steps per timed sample (0: ~1 ms of work on the CPU, ~5 ms on a GPU)")
      ->check(in_range(0, 100000))
      ->capture_default_str();
  app.add_option("--max-noise", flags.max_noise,
                 "Each repetition samples until the noise of its mean (relative standard error, %) is at most this "
                 "(default: 1 on the CPU, 0.5 on GPUs)")
      ->check(in_range(0.001, 100.0));
  app.add_option("--min-samples", flags.min_samples, "... with at least this many samples (default 10)")
      ->check(in_range(2, 1000000));
  app.add_option("--min-time", flags.min_time,
                 "... and at least this many seconds of measured time (default: 0.2 on the CPU, 0.25 on GPUs; "
                 "--benchmark_min_time=S says the same)")
      ->check(in_range(0.0, 86400.0));
  app.add_option("--timeout", flags.timeout,
                 "Stop a repetition's sampling after this many seconds whatever its noise (default 5; it keeps "
                 "at least 2 samples, and says its noise)")
      ->check(in_range(0.001, 86400.0));
  app.add_flag("--profile", options.profile,
               "Profiling mode: a few samples per benchmark, no statistics (for nsys; see scripts/profile.sh)");
  app.add_flag("--aten-nvtx", flags.aten_nvtx, "Also an NVTX range per ATen op with input shapes (CUDA LibTorch only)");
  app.add_option(
      "--trace", options.trace_dir,
      "After timing each training benchmark, profile 3 steps with LibTorch's profiler and write DIR/<name>.json "
      "(Chrome trace: open it in ui.perfetto.dev)");
  app.add_flag("--isolate", flags.isolate,
               "Run each benchmark in a child process of its own: a crash or a sticky CUDA error fails that benchmark "
               "only, and the suite goes on");
  app.add_flag("--isolated-child", flags.isolated_child, "internal: one benchmark of an --isolate run")->group("");
  app.add_option("--peak-store", flags.peak_store, "internal: the measured roofs shared by an --isolate run")
      ->group("");
}

void read_flags(const ProgramFlags& flags, SuiteOptions& options) {
  options.devices = parse_device_list(flags.devices);
  options.models = list_flag("--models", flags.models);
  const auto known = models::model_names();
  for (const auto& m : options.models) {
    if (std::find(known.begin(), known.end(), m) == known.end()) {
      throw InputError(fmt::format("--models: unknown model '{}' (known: {})", m, fmt::join(known, ", ")));
    }
  }
  options.batch_sizes = int_list_flag("--batch-sizes", flags.batch_sizes, 1, kMaxBatch);
  options.op_selection.batch_sizes = int_list_flag("--op-batch-sizes", flags.op_batch_sizes, 1, kMaxBatch);
  options.suites = list_flag("--suites", flags.suites);
  check_suites(options.suites);
  // The lists CLI11 splits itself (it drops empty items): the same rule and words as every other list flag.
  const std::pair<const char*, const std::vector<std::string>*> split_by_cli11[] = {
      {"--dtypes", &options.variants.dtypes},
      {"--layouts", &options.variants.layouts},
      {"--cudnn", &options.variants.cudnn},
      {"--graphs", &options.variants.graphs},
      {"--ops", &options.op_selection.ops}};
  for (const auto& [flag, items] : split_by_cli11) {
    check_list_items(flag, *items, fmt::format("{}", fmt::join(*items, ",")));
  }
  if (flags.max_noise >= 0.0) options.stop.max_noise_pct = flags.max_noise;
  if (flags.min_samples >= 0) options.stop.min_samples = flags.min_samples;
  if (flags.min_time >= 0.0) options.stop.min_time_s = flags.min_time;
  if (flags.timeout >= 0.0) options.stop.timeout_s = flags.timeout;
  options.op_selection.all = flags.op_set == "all";
  options.variants.full = flags.variants == "full";
}

}  // namespace torchprobe::bench
