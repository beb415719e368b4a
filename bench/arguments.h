#pragma once
// torchprobe-bench's command line before CLI11 reads it: Google Benchmark's own flags (--benchmark_*), of which
// torchprobe takes the results file and notes the display format, the filter and --benchmark_min_time; the rest stays
// for Google Benchmark, which takes its own first.
#include <string>
#include <vector>

namespace torchprobe::bench {

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

/// Takes --benchmark_out[=FILE] and --benchmark_out_format out of argv (torchprobe writes the file) and
/// notes the display format and filter; the rest stays for Google Benchmark and CLI11.
Arguments take_arguments(int& argc, char** argv);

/// Every benchmark runs one Google Benchmark iteration per repetition, in which its sampler decides how many
/// samples it takes (measure::StopRule) and sets the iteration's time to their mean per call. A zero minimum
/// time makes Google Benchmark stop after that first iteration; Iterations(1) would do the same but append
/// "/iterations:1" to every name. The caller's --benchmark_min_time becomes the samplers' --min-time.
constexpr const char* kOneIterationPerRepetition = "--benchmark_min_time=0";

}  // namespace torchprobe::bench
