#pragma once
// torchprobe-bench --isolate: each benchmark in a child process of its own (as TorchBench runs its
// models), so a crash (SIGSEGV, abort) or a sticky CUDA error (an illegal address poisons the whole
// process's CUDA context) in one configuration is recorded as that benchmark's failure and the suite
// goes on. The children share the measured roofs through a file, so peaks are measured once per run.
#include <functional>
#include <string>
#include <vector>

#include "results_file.h"

namespace torchprobe::bench {

/// A Google Benchmark filter (POSIX extended regex) that selects exactly the benchmark registered as
/// `name`, whatever suffixes Google Benchmark appends (/manual_time, /repeats:N, /threads:N, ...).
std::string exact_filter(const std::string& name);

/// A failed benchmark as a Google Benchmark JSON object (error_occurred, error_message): report::Entry through
/// the one results writer (report/results_writer.h), which also reads a child's entries (benchmark_entries).
std::string failure_entry(const std::string& name, const std::string& message);

struct IsolateOptions {
  std::string program;                 ///< this program's path (/proc/self/exe)
  std::vector<std::string> args;       ///< the run's arguments, less --isolate and every --benchmark_out/filter/format
  bool pass_stdout = true;             ///< the children's console tables go to our stdout
  std::function<void(const std::string&)> on_start;  ///< progress: called before each benchmark
};

struct IsolatedRun {
  size_t finished = 0;  ///< benchmarks with results (or a recorded failure) in `file`
  int failed = 0;       ///< benchmarks that failed or crashed
  bool stopped = false; ///< a stop was requested (a signal): the rest did not run
};

/// Runs each of `names` in its own child and adds its results (or its failure) to `file` as it finishes.
IsolatedRun run_isolated(const std::vector<std::string>& names, const IsolateOptions& options, ResultsFile& file);

}  // namespace torchprobe::bench
