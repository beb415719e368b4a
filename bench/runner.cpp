#include "runner.h"

#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "isolate.h"
#include "progress.h"
#include "results_file.h"
#include "torchprobe/cli_support.h"
#include "torchprobe/data/cifar10.h"
#include "torchprobe/device_spec.h"
#include "torchprobe/error.h"
#include "torchprobe/interrupt.h"
#include "torchprobe/inventory.h"
#include "torchprobe/measure.h"
#include "torchprobe/nvtx.h"
#include "torchprobe/ops/peaks.h"
#include "torchprobe/run_context.h"
#include "torchprobe/trust.h"

namespace torchprobe::bench {
namespace {
constexpr std::int64_t kSyntheticImages = 10000;
}  // namespace

int run_suites(int argc, char** argv, CLI::App& app, const Arguments& args, SuiteOptions& options,
               const ProgramFlags& flags) {
  return torchprobe::run_cli(app, argc, argv, [&] {
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
      throw InputError(
          fmt::format("--benchmark_format={} is not supported (console or json; for CSV use "
                      "--benchmark_out_format=csv or torchprobe report)",
                      args.format));
    }
    const ResultsFile::Format out_format = ResultsFile::parse_format(args.out_format);
    if (!args.out_format.empty() && args.out.empty())
      throw InputError("--benchmark_out_format needs --benchmark_out=FILE");
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
      if (options.profile)
        throw InputError("--trace and --profile: profile mode is for nsys; --trace profiles by itself");
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
      std::fprintf(stderr,
                   "torchprobe-bench: devices %s; LibTorch %s, %d intra-op threads on %d cores, BLAS %s (%s, %d "
                   "thread(s)); %s%s\n",
                   device_names.c_str(), inventory.libtorch_version.c_str(), threads.intra_op, threads.cores,
                   threads.blas.vendor.c_str(), blas_threading_name(threads.blas.threading).c_str(),
                   threads.blas.threads, data_label.c_str(),
                   flags.isolate ? "; each benchmark in its own process" : "");
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
      const auto color =
          isatty(STDOUT_FILENO) ? benchmark::ConsoleReporter::OO_Color : benchmark::ConsoleReporter::OO_None;
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

    const std::string kept = args.out.empty()        ? ""
                             : file.benchmarks() > 0 ? "; written to " + args.out
                                                     : "; " + args.out + " left as it was";
    if (interrupt::signal_number() != 0) {
      file.finish("interrupted by " + interrupt::signal_name(interrupt::signal_number()));
      std::fprintf(stderr, "torchprobe-bench: interrupted by %s: %zu of %zu benchmark(s) finished%s\n",
                   interrupt::signal_name(interrupt::signal_number()).c_str(), file.benchmarks(), names.size(),
                   kept.c_str());
      return interrupt::exit_code();
    }
    if (ran == 0) {
      std::fprintf(stderr, "torchprobe: error: no benchmark matches%s%s\n",
                   args.filter.empty() ? " the selected suites" : (" --benchmark_filter=" + args.filter).c_str(),
                   kept.c_str());
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

}  // namespace torchprobe::bench
