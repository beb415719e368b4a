// torchprobe-bench: Google Benchmark program for the training-step, data and op suites. Flags (options.h) -> the
// command line Google Benchmark and CLI11 each read (arguments.h) -> the run (runner.h). Our flags are parsed after
// Google Benchmark has taken its own (--benchmark_*), except the results file (--benchmark_out,
// --benchmark_out_format): torchprobe writes it itself, after every benchmark.
#include <benchmark/benchmark.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "arguments.h"
#include "options.h"
#include "runner.h"
#include "torchprobe/interrupt.h"

int main(int argc, char** argv) {
  torchprobe::interrupt::install(torchprobe::interrupt::Mode::kGraceful);
  torchprobe::bench::SuiteOptions options;
  torchprobe::bench::ProgramFlags flags;
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
  torchprobe::bench::add_flags(app, flags, options);

  for (int i = 1; i < argc; ++i) {  // our help, not Google Benchmark's
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      std::printf("%s", app.help().c_str());
      return 0;
    }
  }
  const torchprobe::bench::Arguments args = torchprobe::bench::take_arguments(argc, argv);
  std::vector<char*> kept(argv, argv + argc);
  std::string one_iteration = torchprobe::bench::kOneIterationPerRepetition;
  kept.insert(kept.begin() + 1, one_iteration.data());  // the caller's own --benchmark_min_time was taken out above
  kept.push_back(nullptr);
  int kept_count = argc + 1;
  benchmark::Initialize(&kept_count, kept.data());
  return torchprobe::bench::run_suites(kept_count, kept.data(), app, args, options, flags);
}
