// torchprobe-bench: Google Benchmark program for the training-step and data suites.
// Our flags are parsed after Google Benchmark has taken its own (--benchmark_*).
#include <ATen/Parallel.h>
#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstring>
#include <memory>
#include <type_traits>

#include "progress.h"
#include "suite.h"
#include "torchprobe/cli_support.h"
#include "torchprobe/config.h"
#include "torchprobe/data/cifar10.h"
#include "torchprobe/device_spec.h"
#include "torchprobe/inventory.h"
#include "torchprobe/error.h"
#include "torchprobe/measure.h"
#include "torchprobe/nvtx.h"
#include "torchprobe/run_context.h"
#include "torchprobe/trust.h"

namespace {

constexpr std::int64_t kSyntheticImages = 10000;

// google/benchmark 1.7 marks a failed run with error_occurred, 1.8+ with skipped.
template <typename Run>
auto run_failed(const Run& run, int) -> decltype(run.error_occurred, bool()) {
  return run.error_occurred;
}
template <typename Run>
bool run_failed(const Run& run, long) {
  return static_cast<int>(run.skipped) != 0;
}

/// Any Google Benchmark display reporter, counting the runs that failed (SkipWithError).
template <typename Base>
class CountingReporter : public Base {
 public:
  using Base::Base;
  void ReportRuns(const std::vector<benchmark::BenchmarkReporter::Run>& runs) override {
    torchprobe::bench::Progress::instance().clear_line();
    for (const auto& run : runs) failed += run_failed(run, 0) ? 1 : 0;
    Base::ReportRuns(runs);
  }
  int failed = 0;
};

std::string flag_value(int argc, char** argv, const char* flag) {
  const size_t n = std::strlen(flag);
  std::string value;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], flag, n) == 0 && argv[i][n] == '=') value = argv[i] + n + 1;
  }
  return value;
}

/// Flags of this program besides the suite options; filled in by CLI11 during run_cli's parse.
struct ProgramFlags {
  std::string devices = "all";
  std::string data_dir;
  int threads = 0;
  bool aten_nvtx = false;
  std::string op_set = "core";
  std::string variants = "quick";
};

int run_suites(int argc, char** argv, CLI::App& app, const std::string& format, const std::string& filter,
               torchprobe::bench::SuiteOptions& options, const ProgramFlags& flags) {
  return torchprobe::run_cli(app, argc, argv, [&] {
    using namespace torchprobe;
    // Before anything allocates or calls the BLAS: the allocator's steady state, LibTorch's threads and
    // no second pool beside them.
    const std::string allocator = measure::steady_state_allocator();
    const ThreadSetup threads = configure_threads(flags.threads);
    if (!format.empty() && format != "console" && format != "json") {
      throw InputError(fmt::format("--benchmark_format={} is not supported (console or json; for CSV use "
                                   "--benchmark_out_format=csv or torchprobe report)", format));
    }
    options.devices = parse_device_list(flags.devices);
    bench::check_suites(options.suites);
    if (flags.aten_nvtx) backend::enable_aten_nvtx_ranges();

    std::shared_ptr<const data::Dataset> train;
    std::string data_label;
    if (flags.data_dir.empty()) {
      train = std::make_shared<const data::Dataset>(data::make_synthetic(kSyntheticImages, /*seed=*/1));
      data_label = fmt::format("synthetic data ({} images)", kSyntheticImages);
    } else {
      train = std::make_shared<const data::Dataset>(data::load_cifar10(flags.data_dir, data::Split::kTrain));
      data_label = fmt::format("CIFAR-10 {} ({} images)", flags.data_dir, train->size());
    }
    options.op_selection.all = flags.op_set == "all";
    options.variants.full = flags.variants == "full";
    bench::Progress::instance().set_total(bench::register_suites(options, train, data_label), filter);

    const Inventory inventory = collect_inventory();
    // What would make these figures untrustworthy, checked on the host before the first benchmark.
    const auto trust_warnings = trust::host_warnings(threads);
    for (const auto& [key, value] : torchprobe_context(threads, allocator, trust_warnings)) {
      benchmark::AddCustomContext(key, value);
    }
    benchmark::AddCustomContext("data", data_label);
    std::string device_names;
    for (const auto& d : options.devices) {
      device_names += (device_names.empty() ? "" : ", ") + device_string(d) +
                      (d.is_cuda() ? " (" + inventory.gpus.at(static_cast<size_t>(d.index())).name + ")" : "");
    }
    benchmark::AddCustomContext("devices", device_names);
    std::fprintf(stderr, "torchprobe-bench: devices %s; LibTorch %s, %d intra-op threads on %d cores, BLAS %s (%s, %d thread(s)); %s\n",
                 device_names.c_str(), inventory.libtorch_version.c_str(), threads.intra_op, threads.cores,
                 threads.blas.vendor.c_str(), blas_threading_name(threads.blas.threading).c_str(), threads.blas.threads,
                 data_label.c_str());
    for (const auto& w : trust_warnings) std::fprintf(stderr, "torchprobe-bench: WARNING: %s\n", w.message.c_str());
    if (options.profile) {
      std::fprintf(stderr, "torchprobe-bench: profile mode: %d steps per training benchmark, no statistics%s\n",
                   bench::kProfileSteps, nvtx::enabled() ? "" : " (this build has no NVTX ranges)");
    }

    int failed = 0;
    if (format == "json") {
      CountingReporter<benchmark::JSONReporter> reporter;
      benchmark::RunSpecifiedBenchmarks(&reporter);
      failed = reporter.failed;
    } else {
      const auto color = isatty(STDOUT_FILENO) ? benchmark::ConsoleReporter::OO_Color : benchmark::ConsoleReporter::OO_None;
      CountingReporter<benchmark::ConsoleReporter> reporter(
          static_cast<benchmark::ConsoleReporter::OutputOptions>(color | benchmark::ConsoleReporter::OO_Tabular));
      benchmark::RunSpecifiedBenchmarks(&reporter);
      failed = reporter.failed;
    }
    benchmark::Shutdown();
    bench::Progress::instance().clear_line();
    if (failed > 0) {
      std::fprintf(stderr, "torchprobe: error: %d benchmark run(s) failed (their ERROR OCCURRED lines say why)\n",
                   failed);
      return 1;
    }
    return 0;
  });
}

}  // namespace

int main(int argc, char** argv) {
  torchprobe::bench::SuiteOptions options;
  ProgramFlags flags;
  CLI::App app{"torchprobe-bench: full CIFAR-10 training steps, single ops and the data pipeline on the CPU and every GPU"};
  app.footer(
      "Google Benchmark's own flags work as usual, e.g. --benchmark_filter=REGEX, --benchmark_repetitions=N,\n"
      "--benchmark_out=FILE --benchmark_out_format=json, --benchmark_min_time=SECONDS, --benchmark_list_tests.");
  app.add_option("--devices", flags.devices, "cpu, cuda, cuda:N or all, comma-separated")->capture_default_str();
  app.add_option("--models", options.models, "Models to train (net, resnet18)")->delimiter(',')->capture_default_str();
  app.add_option("--batch-sizes", options.batch_sizes, "Batch sizes")->delimiter(',')->capture_default_str();
  app.add_option("--variants", flags.variants,
                 "Training-step variants: quick (baseline at every batch, bf16+channels_last at the largest, a CUDA "
                 "graph at the smallest on GPUs) or full (every combination the device runs)")
      ->check(CLI::IsMember({"quick", "full"}))
      ->capture_default_str();
  app.add_option("--dtypes", options.variants.dtypes, "Training precisions: fp32, bf16 (autocast), fp16 (autocast + loss scaling, GPUs)")
      ->delimiter(',');
  app.add_option("--layouts", options.variants.layouts, "Training memory formats: nchw, cl (channels_last)")->delimiter(',');
  app.add_option("--cudnn", options.variants.cudnn, "cuDNN autotuning (GPUs): off, on")->delimiter(',');
  app.add_option("--graphs", options.variants.graphs, "CUDA-graph replay of the whole step (GPUs): off, on")->delimiter(',');
  app.add_option("--suites", options.suites, "Suites to run (train, data, op)")->delimiter(',')->capture_default_str();
  app.add_option("--ops", options.op_selection.ops, "Ops to time (default: all of: " + fmt::format("{}", fmt::join(torchprobe::ops::op_names(), ", ")) + ")")
      ->delimiter(',');
  app.add_option("--op-set", flags.op_set, "core (a quick set: one shape per op) or all (the full sweep)")
      ->check(CLI::IsMember({"core", "all"}))
      ->capture_default_str();
  app.add_option("--op-batch-sizes", options.op_selection.batch_sizes, "Batch sizes of the model-shaped ops")
      ->delimiter(',')
      ->capture_default_str();
  app.add_flag("--cold", options.cold, "Op suite: flush the last-level cache before each sample (one call per sample)");
  app.add_option("--op-input-sets", options.op_input_sets,
                 "Op suite: rotating input sets (0: enough to exceed twice the last-level cache)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--threads", flags.threads, "LibTorch intra-op threads (default: LibTorch's own)")->check(CLI::PositiveNumber);
  app.add_option("--data", flags.data_dir, "Directory with the CIFAR-10 binary files (default: synthetic data)");
  app.add_option("--steps-per-sample", options.steps_per_sample,
                 "Training steps per timed sample (0: 1 on the CPU, ~5 ms of work on a GPU)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_flag("--profile", options.profile,
               "Profiling mode: a few samples per benchmark, no statistics (for nsys; see scripts/profile.sh)");
  app.add_flag("--aten-nvtx", flags.aten_nvtx, "Also an NVTX range per ATen op with input shapes (CUDA LibTorch only)");

  for (int i = 1; i < argc; ++i) {  // our help, not Google Benchmark's
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      std::printf("%s", app.help().c_str());
      return 0;
    }
  }
  const std::string format = flag_value(argc, argv, "--benchmark_format");
  const std::string filter = flag_value(argc, argv, "--benchmark_filter");
  benchmark::Initialize(&argc, argv);
  return run_suites(argc, argv, app, format, filter, options, flags);
}
