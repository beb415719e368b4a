// torchprobe-bench: Google Benchmark program for the training-step, data and op suites.
// Our flags are parsed after Google Benchmark has taken its own (--benchmark_*), except the results
// file (--benchmark_out, --benchmark_out_format): torchprobe writes it itself, after every benchmark.
#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "isolate.h"
#include "progress.h"
#include "results_file.h"
#include "suite.h"
#include "torchprobe/cli_support.h"
#include "torchprobe/config.h"
#include "torchprobe/data/cifar10.h"
#include "torchprobe/device_spec.h"
#include "torchprobe/error.h"
#include "torchprobe/flags.h"
#include "torchprobe/interrupt.h"
#include "torchprobe/inventory.h"
#include "torchprobe/measure.h"
#include "torchprobe/models/registry.h"
#include "torchprobe/nvtx.h"
#include "torchprobe/ops/peaks.h"
#include "torchprobe/run_context.h"
#include "torchprobe/trust.h"

namespace {

constexpr std::int64_t kSyntheticImages = 10000;
constexpr std::int64_t kMaxBatch = 65536;

bool starts_with(const char* arg, const char* prefix) { return std::strncmp(arg, prefix, std::strlen(prefix)) == 0; }

/// The arguments as given, before Google Benchmark takes its own, with torchprobe's handling of some.
struct Arguments {
  std::string out, out_format, format, filter;
  std::string min_time;  ///< --benchmark_min_time's value: our samplers' minimum measured time (unless --min-time)
  int repetitions = 1;   ///< --benchmark_repetitions, for the time bound said before the run
  std::vector<std::string> for_children;  ///< what an isolated child gets (it adds its own filter and output)
  std::string invalid;  ///< a Google Benchmark flag with a bad value: the error, raised before any work
  /// --benchmark_display_aggregates_only: taken here, not by Google Benchmark, which would then hand the
  /// results file (written by our display reporter) only the aggregates, never the repetitions.
  bool display_aggregates_only = false;
};

/// Google Benchmark's numeric flags, checked as ours are: its own parsing takes NaN for --benchmark_min_time
/// (the run never ends) and a negative repetition count (std::vector::reserve fails).
std::string check_benchmark_flag(const char* arg) {
  struct Bound {
    const char* flag;
    double min, max;
    bool whole;
  };
  static const Bound kBounds[] = {{"--benchmark_min_time=", 0.0, 86400.0, false},
                                  {"--benchmark_min_warmup_time=", 0.0, 86400.0, false},
                                  {"--benchmark_repetitions=", 1, 100000, true}};
  for (const auto& b : kBounds) {
    if (!starts_with(arg, b.flag)) continue;
    std::string value(arg + std::strlen(b.flag));
    const std::string error = b.whole ? torchprobe::in_range<std::int64_t>(static_cast<std::int64_t>(b.min),
                                                                           static_cast<std::int64_t>(b.max))(value)
                                      : torchprobe::in_range(b.min, b.max)(value);
    if (!error.empty()) return std::string(b.flag, std::strlen(b.flag) - 1) + ": " + error;
  }
  return "";
}

/// Every benchmark runs one Google Benchmark iteration per repetition, in which its sampler decides how many
/// samples it takes (measure::StopRule) and sets the iteration's time to their mean per call. A zero minimum
/// time makes Google Benchmark stop after that first iteration; Iterations(1) would do the same but append
/// "/iterations:1" to every name. The caller's --benchmark_min_time becomes the samplers' --min-time.
constexpr const char* kOneIterationPerRepetition = "--benchmark_min_time=0";

/// Takes --benchmark_out[=FILE] and --benchmark_out_format out of argv (torchprobe writes the file) and
/// notes the display format and filter; the rest stays for Google Benchmark and CLI11.
Arguments take_arguments(int& argc, char** argv) {
  Arguments a;
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    const char* arg = argv[i];
    const auto value = [&](const char* flag) { return std::string(arg + std::strlen(flag)); };
    if (starts_with(arg, "--benchmark_out_format=")) {
      a.out_format = value("--benchmark_out_format=");
      continue;
    }
    if (starts_with(arg, "--benchmark_out=")) {
      a.out = value("--benchmark_out=");
      continue;
    }
    if (a.invalid.empty()) a.invalid = check_benchmark_flag(arg);
    if (starts_with(arg, "--benchmark_display_aggregates_only")) {
      const std::string value = std::strchr(arg, '=') ? std::strchr(arg, '=') + 1 : "true";
      a.display_aggregates_only = value == "true" || value == "1" || value == "yes";
      a.for_children.emplace_back(arg);
      continue;
    }
    if (starts_with(arg, "--benchmark_format=")) a.format = value("--benchmark_format=");
    if (starts_with(arg, "--benchmark_min_time=")) {  // ours (see kOneIterationPerRepetition), not Google Benchmark's
      a.min_time = value("--benchmark_min_time=");
      a.for_children.emplace_back(arg);
      continue;
    }
    if (starts_with(arg, "--benchmark_repetitions=") && a.invalid.empty()) {
      a.repetitions = std::atoi(value("--benchmark_repetitions=").c_str());
    }
    if (starts_with(arg, "--benchmark_filter=")) a.filter = value("--benchmark_filter=");
    if (!starts_with(arg, "--benchmark_format=") && !starts_with(arg, "--benchmark_filter=") &&
        std::strcmp(arg, "--isolate") != 0 && std::strcmp(arg, "--isolate=true") != 0) {
      a.for_children.emplace_back(arg);
    }
    argv[kept++] = argv[i];
  }
  argc = kept;
  argv[argc] = nullptr;
  return a;
}

/// Flags of this program besides the suite options; filled in by CLI11 during run_cli's parse.
struct ProgramFlags {
  std::string devices = "all";
  std::string models = "net,resnet18", batch_sizes = "4,64,256", suites = "train,data,op", op_batch_sizes = "64,256";
  std::string data_dir;
  int threads = 0;
  bool aten_nvtx = false;
  std::string op_set = "core";
  std::string variants = "quick";
  bool isolate = false, isolated_child = false;
  std::string peak_store;
  double max_noise = -1.0, min_time = -1.0, timeout = -1.0;  ///< < 0: not given (the device's default)
  int min_samples = -1;
};

/// Every flag checked before any work: one line and exit 2 for a bad value.
void read_flags(const ProgramFlags& flags, torchprobe::bench::SuiteOptions& options) {
  using namespace torchprobe;
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
  bench::check_suites(options.suites);
  for (const auto* axis : {&options.variants.dtypes, &options.variants.layouts, &options.variants.cudnn,
                           &options.variants.graphs, &options.op_selection.ops}) {
    std::vector<std::string> seen;
    for (const auto& v : *axis) {
      if (v.empty()) throw InputError("an empty item in a list flag (--dtypes, --layouts, --cudnn, --graphs or --ops)");
      if (std::find(seen.begin(), seen.end(), v) != seen.end()) throw InputError(fmt::format("'{}' is listed twice", v));
      seen.push_back(v);
    }
  }
  if (flags.max_noise >= 0.0) options.stop.max_noise_pct = flags.max_noise;
  if (flags.min_samples >= 0) options.stop.min_samples = flags.min_samples;
  if (flags.min_time >= 0.0) options.stop.min_time_s = flags.min_time;
  if (flags.timeout >= 0.0) options.stop.timeout_s = flags.timeout;
  options.op_selection.all = flags.op_set == "all";
  options.variants.full = flags.variants == "full";
}

int run_suites(int argc, char** argv, CLI::App& app, const Arguments& args, torchprobe::bench::SuiteOptions& options,
               const ProgramFlags& flags) {
  return torchprobe::run_cli(app, argc, argv, [&] {
    using namespace torchprobe;
    using bench::ResultsFile;
    if (!args.invalid.empty()) throw InputError(args.invalid);
    // Before anything allocates or calls the BLAS: the allocator's steady state, LibTorch's threads and
    // no second pool beside them. A thread count above the cores is said at once (LibTorch's pools take
    // long to start with many threads).
    if (flags.threads > available_cores()) {
      std::fprintf(stderr,
                   "torchprobe: warning: --threads %d on %d cores: threads will time-slice and CPU figures "
                   "drop and scatter\n",
                   flags.threads, available_cores());
    }
    const std::string allocator = measure::steady_state_allocator();
    const ThreadSetup threads = configure_threads(flags.threads);
    if (!args.format.empty() && args.format != "console" && args.format != "json") {
      throw InputError(fmt::format("--benchmark_format={} is not supported (console or json; for CSV use "
                                   "--benchmark_out_format=csv or torchprobe report)", args.format));
    }
    const ResultsFile::Format out_format = ResultsFile::parse_format(args.out_format);
    if (!args.out_format.empty() && args.out.empty()) throw InputError("--benchmark_out_format needs --benchmark_out=FILE");
    if (flags.isolate && out_format != ResultsFile::Format::kJson) {
      throw InputError("--isolate writes JSON results (for CSV, run torchprobe report on them)");
    }
    if (!args.out.empty()) io::check_writable(args.out);  // now, not after an hour of benchmarks
    read_flags(flags, options);
    // Google Benchmark's --benchmark_min_time means what our --min-time does (every benchmark runs one iteration
    // per repetition, in which the sampler decides how long it samples).
    if (!args.min_time.empty() && !options.stop.min_time_s) options.stop.min_time_s = std::stod(args.min_time);
    // A CPU without bf16 instructions emulates bf16 at a few GFLOP/s: the quick subset leaves it out (said below).
    // TORCHPROBE_CPU_BF16=native|emulated says which instead of /proc/cpuinfo (the tests pin it, so the quick plan
    // is the same on every host).
    const CoreFlops cpu_flops = core_flops(read_cpu_info());
    options.cpu_native_bf16 = bench::cpu_native_bf16(cpu_flops, std::getenv("TORCHPROBE_CPU_BF16"));
    if (!options.trace_dir.empty()) {
      if (flags.aten_nvtx) throw InputError("--trace and --aten-nvtx both use LibTorch's profiler: choose one");
      if (options.profile) throw InputError("--trace and --profile: profile mode is for nsys; --trace profiles by itself");
      std::error_code error;
      std::filesystem::create_directories(options.trace_dir, error);
      if (error || !std::filesystem::is_directory(options.trace_dir)) {
        throw InputError(fmt::format("--trace: '{}' is not a directory that can be made ({})", options.trace_dir,
                                     error ? error.message() : "a file of that name exists"));
      }
      io::check_writable((std::filesystem::path(options.trace_dir) / ".torchprobe-write-check").string());
    }
    if (flags.aten_nvtx) backend::enable_aten_nvtx_ranges();
    if (!flags.peak_store.empty()) ops::set_peak_store(flags.peak_store);
    if (!flags.isolated_child) {  // progress: a roof can take tens of seconds (the first cuDNN convolution...)
      ops::set_peak_log([](const std::string& line) { std::fprintf(stderr, "torchprobe-bench: %s\n", line.c_str()); });
    }
    bench::Progress::instance().set_silent(flags.isolated_child);

    // Real data is read now (a bad file fails before any benchmark); synthetic data is made when a training
    // benchmark first needs it.
    bench::DatasetSource train;
    std::string data_label;
    if (flags.data_dir.empty()) {
      train = bench::make_once([] { return data::make_synthetic(kSyntheticImages, /*seed=*/1); });
      data_label = fmt::format("synthetic data ({} images)", kSyntheticImages);
    } else {
      auto loaded = std::make_shared<const data::Dataset>(data::load_cifar10(flags.data_dir, data::Split::kTrain));
      train = [loaded] { return loaded; };
      data_label = fmt::format("CIFAR-10 {} ({} images)", flags.data_dir, loaded->size());
    }
    const auto names = bench::filter_names(bench::register_suites(options, train, data_label), args.filter);
    bench::Progress::instance().set_total(names, "");

    const Inventory inventory = collect_inventory();
    // What would make these figures untrustworthy, checked on the host before the first benchmark (once
    // per run: an isolated child leaves it to its parent).
    const auto trust_warnings = flags.isolated_child ? std::vector<trust::Warning>{} : trust::host_warnings(threads);
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
    if (!flags.isolated_child) {
      std::fprintf(stderr, "torchprobe-bench: devices %s; LibTorch %s, %d intra-op threads on %d cores, BLAS %s (%s, %d thread(s)); %s%s\n",
                   device_names.c_str(), inventory.libtorch_version.c_str(), threads.intra_op, threads.cores,
                   threads.blas.vendor.c_str(), blas_threading_name(threads.blas.threading).c_str(), threads.blas.threads,
                   data_label.c_str(), flags.isolate ? "; each benchmark in its own process" : "");
      for (const auto& w : trust_warnings) {
        const bool said = w.code == "threads_exceed_cores" && flags.threads > available_cores();
        if (!said) std::fprintf(stderr, "torchprobe: warning: %s\n", w.message.c_str());
      }
      const bool cpu_trains =
          std::any_of(options.devices.begin(), options.devices.end(), [](const auto& d) { return d.is_cpu(); }) &&
          std::find(options.suites.begin(), options.suites.end(), "train") != options.suites.end();
      if (cpu_trains && !options.cpu_native_bf16 && bench::quick_subset(options.variants)) {
        std::fprintf(stderr,
                     "torchprobe-bench: cpu: the quick subset leaves bf16 out: this CPU (%s) has no bf16 instructions "
                     "(AVX512_BF16, AMX), so LibTorch emulates bf16 at a small fraction of fp32's speed (--dtypes "
                     "fp32,bf16 or --variants full times it anyway)\n",
                     cpu_flops.core.empty() ? "unknown core" : cpu_flops.core.c_str());
      }
      if (!options.profile && !names.empty()) {
        double timeout_s = bench::stop_rule(options.stop, torch::Device(torch::kCPU)).timeout_s;  // data: host work
        for (const auto& d : options.devices)
          timeout_s = std::max(timeout_s, bench::stop_rule(options.stop, d).timeout_s);
        std::fprintf(stderr, "torchprobe-bench: %s\n",
                     bench::sampling_bound_text(names.size(), args.repetitions, timeout_s).c_str());
      }
      if (options.profile) {
        std::fprintf(stderr, "torchprobe-bench: profile mode: %d steps per training benchmark, no statistics%s\n",
                     bench::kProfileSteps, nvtx::enabled() ? "" : " (this build has no NVTX ranges)");
      }
    }

    ResultsFile file(args.out, out_format, names.size());
    const bool json_display = args.format == "json";
    int failed = 0;
    size_t ran = 0;
    std::string write_error;
    if (flags.isolate) {
      const benchmark::BenchmarkReporter::Context context;
      file.set_context(context);
      if (!json_display) benchmark::ConsoleReporter(benchmark::ConsoleReporter::OO_None).ReportContext(context);
      bench::IsolateOptions isolate;
      isolate.program = std::filesystem::read_symlink("/proc/self/exe").string();
      isolate.args = args.for_children;
      isolate.pass_stdout = !json_display;
      isolate.on_start = [](const std::string& name) { bench::Progress::instance().start(name); };
      try {
        const bench::IsolatedRun run = bench::run_isolated(names, isolate, file);
        failed = run.failed;
        ran = run.finished + (run.stopped ? 1 : 0);
      } catch (const io::WriteError& e) {
        write_error = e.what();
      }
      if (json_display) std::printf("%s", file.document().c_str());
    } else if (json_display) {
      bench::RunReporter<benchmark::JSONReporter> reporter(file, flags.isolated_child);
      reporter.display_aggregates_only = args.display_aggregates_only;
      ran = benchmark::RunSpecifiedBenchmarks(&reporter);
      failed = reporter.failed;
      write_error = reporter.write_error;
    } else {
      const auto color = isatty(STDOUT_FILENO) ? benchmark::ConsoleReporter::OO_Color : benchmark::ConsoleReporter::OO_None;
      bench::RunReporter<benchmark::ConsoleReporter> reporter(
          file, flags.isolated_child,
          static_cast<benchmark::ConsoleReporter::OutputOptions>(color | benchmark::ConsoleReporter::OO_Tabular));
      reporter.before_runs = [] { bench::Progress::instance().clear_line(); };
      // The headline figures; every counter is in the results file (--benchmark_out) and `torchprobe report`.
      reporter.display = true;
      reporter.shown_counters = {"images_per_s", "mfu_pct",     "epoch_s",       "peak_mem_mib", "gflop_per_s",
                                 "gb_per_s",     "pct_of_roof", "skipped_steps", "samples",      "noise_pct"};
      reporter.display_aggregates_only = args.display_aggregates_only;
      ran = benchmark::RunSpecifiedBenchmarks(&reporter);
      failed = reporter.failed;
      write_error = reporter.write_error;
    }
    benchmark::Shutdown();
    bench::Progress::instance().clear_line();
    // A write that fails after benchmarks ran (a disk that filled up) is a failed run, exit 1, not bad input:
    // the file keeps every benchmark written before. An output unwritable from the start was refused up front.
    if (!write_error.empty()) throw std::runtime_error(write_error + " (the run stopped there)");

    const std::string kept = args.out.empty() ? "" : file.benchmarks() > 0 ? "; written to " + args.out
                                                                           : "; " + args.out + " left as it was";
    if (interrupt::signal_number() != 0) {
      file.finish("interrupted by " + interrupt::signal_name(interrupt::signal_number()));
      std::fprintf(stderr, "torchprobe-bench: interrupted by %s: %zu of %zu benchmark(s) finished%s\n",
                   interrupt::signal_name(interrupt::signal_number()).c_str(), file.benchmarks(), names.size(), kept.c_str());
      return interrupt::exit_code();
    }
    if (ran == 0) {
      std::fprintf(stderr, "torchprobe: error: no benchmark matches%s%s\n",
                   args.filter.empty() ? " the selected suites" : (" --benchmark_filter=" + args.filter).c_str(), kept.c_str());
      return 1;
    }
    file.finish("");
    if (failed > 0) {
      std::fprintf(stderr, "torchprobe: error: %d benchmark(s) failed (their ERROR OCCURRED lines say why)%s\n", failed,
                   kept.c_str());
      return 1;
    }
    return 0;
  });
}

}  // namespace

int main(int argc, char** argv) {
  torchprobe::interrupt::install(torchprobe::interrupt::Mode::kGraceful);
  torchprobe::bench::SuiteOptions options;
  ProgramFlags flags;
  CLI::App app{
      "torchprobe-bench: full CIFAR-10 training steps, single ops and the data pipeline on the CPU and every GPU",
      "torchprobe-bench"};
  app.footer(
      "Google Benchmark's own flags work as usual, e.g. --benchmark_filter=REGEX, --benchmark_repetitions=N,\n"
      "--benchmark_list_tests; --benchmark_min_time=SECONDS sets --min-time. --benchmark_out=FILE\n"
      "(--benchmark_out_format=json, csv or console) is rewritten after every finished benchmark and always\n"
      "holds a complete document (a device, a pipe or /dev/stdout gets it once, at the end); a run that finishes\n"
      "nothing leaves it untouched.\n"
      "SIGINT/SIGTERM: the current sample finishes, the finished benchmarks are kept, exit 130/143 (a second\n"
      "signal stops at once).");
  // A flag given twice: the last one wins (scripts/run.sh passes the suite's defaults first, the caller's flags after).
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.add_option("--devices", flags.devices, "cpu, cuda, cuda:N or all, comma-separated")->capture_default_str();
  app.add_option("--models", flags.models, "Models to train: net, resnet18 (comma-separated)")->capture_default_str();
  app.add_option("--batch-sizes", flags.batch_sizes, fmt::format("Batch sizes, 1 to {}", kMaxBatch))->capture_default_str();
  app.add_option("--variants", flags.variants,
                 "Training-step variants: quick (baseline at every batch, bf16+channels_last at the largest where the "
                 "device computes bf16 natively, a CUDA graph at the smallest on GPUs) or full (every combination the "
                 "device runs)")
      ->check(CLI::IsMember({"quick", "full"}))
      ->capture_default_str();
  app.add_option("--dtypes", options.variants.dtypes, "Training precisions: fp32, bf16 (autocast), fp16 (autocast + loss scaling, GPUs)")
      ->delimiter(',');
  app.add_option("--layouts", options.variants.layouts, "Training memory formats: nchw, cl (channels_last)")->delimiter(',');
  app.add_option("--cudnn", options.variants.cudnn, "cuDNN autotuning (GPUs): off, on")->delimiter(',');
  app.add_option("--graphs", options.variants.graphs, "CUDA-graph replay of the whole step (GPUs): off, on")->delimiter(',');
  app.add_option("--suites", flags.suites, "Suites to run: train, data, op (comma-separated)")->capture_default_str();
  app.add_option("--ops", options.op_selection.ops, "Ops to time (default: all of: " + fmt::format("{}", fmt::join(torchprobe::ops::op_names(), ", ")) + ")")
      ->delimiter(',');
  app.add_option("--op-set", flags.op_set, "core (a quick set: one shape per op) or all (the full sweep)")
      ->check(CLI::IsMember({"core", "all"}))
      ->capture_default_str();
  app.add_option("--op-batch-sizes", flags.op_batch_sizes, "Batch sizes of the model-shaped ops")->capture_default_str();
  app.add_flag("--cold", options.cold, "Op suite: flush the last-level cache before each sample (one call per sample)");
  app.add_option("--op-input-sets", options.op_input_sets,
                 "Op suite: rotating input sets (0: enough to exceed twice the last-level cache)")
      ->check(torchprobe::in_range(0, 4096))
      ->capture_default_str();
  app.add_option("--threads", flags.threads,
                 fmt::format("LibTorch intra-op threads, 1 to {} ({})", torchprobe::kMaxThreads,
                             torchprobe::kDefaultThreadsHelp))
      ->check(torchprobe::in_range(1, torchprobe::kMaxThreads));
  app.add_option("--data", flags.data_dir, "Directory with the CIFAR-10 binary files (default: synthetic data)");
  app.add_option("--steps-per-sample", options.steps_per_sample,
                 "Training steps per timed sample (0: ~1 ms of work on the CPU, ~5 ms on a GPU)")
      ->check(torchprobe::in_range(0, 100000))
      ->capture_default_str();
  app.add_option("--max-noise", flags.max_noise,
                 "Each repetition samples until the noise of its mean (relative standard error, %) is at most this "
                 "(default: 1 on the CPU, 0.5 on GPUs)")
      ->check(torchprobe::in_range(0.001, 100.0));
  app.add_option("--min-samples", flags.min_samples, "... with at least this many samples (default 10)")
      ->check(torchprobe::in_range(2, 1000000));
  app.add_option("--min-time", flags.min_time,
                 "... and at least this many seconds of measured time (default: 0.2 on the CPU, 0.25 on GPUs; "
                 "--benchmark_min_time=S says the same)")
      ->check(torchprobe::in_range(0.0, 86400.0));
  app.add_option("--timeout", flags.timeout,
                 "Stop a repetition's sampling after this many seconds whatever its noise (default 5; it keeps "
                 "at least 2 samples, and says its noise)")
      ->check(torchprobe::in_range(0.001, 86400.0));
  app.add_flag("--profile", options.profile,
               "Profiling mode: a few samples per benchmark, no statistics (for nsys; see scripts/profile.sh)");
  app.add_flag("--aten-nvtx", flags.aten_nvtx, "Also an NVTX range per ATen op with input shapes (CUDA LibTorch only)");
  app.add_option("--trace", options.trace_dir,
                 "After timing each training benchmark, profile 3 steps with LibTorch's profiler and write DIR/<name>.json "
                 "(Chrome trace: open it in ui.perfetto.dev)");
  app.add_flag("--isolate", flags.isolate,
               "Run each benchmark in a child process of its own: a crash or a sticky CUDA error fails that benchmark "
               "only, and the suite goes on");
  app.add_flag("--isolated-child", flags.isolated_child, "internal: one benchmark of an --isolate run")->group("");
  app.add_option("--peak-store", flags.peak_store, "internal: the measured roofs shared by an --isolate run")->group("");

  for (int i = 1; i < argc; ++i) {  // our help, not Google Benchmark's
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      std::printf("%s", app.help().c_str());
      return 0;
    }
  }
  const Arguments args = take_arguments(argc, argv);
  std::vector<char*> kept(argv, argv + argc);
  std::string one_iteration = kOneIterationPerRepetition;
  kept.insert(kept.begin() + 1, one_iteration.data());  // the caller's own --benchmark_min_time was taken out above
  kept.push_back(nullptr);
  int kept_count = argc + 1;
  benchmark::Initialize(&kept_count, kept.data());
  return run_suites(kept_count, kept.data(), app, args, options, flags);
}
