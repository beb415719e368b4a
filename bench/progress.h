#pragma once
// A one-line progress display on stderr for long runs: "[3/12] name (9 left, 0:42 so far, ~2:06 to go)". On a
// terminal the line is rewritten in place; otherwise (CI logs) one line per benchmark.
#include <chrono>
#include <cstddef>
#include <set>
#include <string>
#include <vector>

namespace torchprobe::bench {

class Progress {
 public:
  static Progress& instance();
  /// How many benchmarks will run: the registered names the --benchmark_filter regex selects.
  void set_total(const std::vector<std::string>& names, const std::string& filter);
  size_t total() const { return total_; }
  /// Called at the top of each benchmark call; counts each name once.
  void start(const std::string& name);
  /// Erases the in-place line before a reporter prints (no-op when not on a terminal).
  void clear_line();
  /// An isolated child prints no progress: its parent does.
  void set_silent(bool silent) { silent_ = silent; }

 private:
  Progress();
  std::set<std::string> started_;
  size_t total_ = 0;
  bool tty_ = false;
  bool line_shown_ = false;
  bool silent_ = false;
  std::chrono::steady_clock::time_point begin_;
};

/// The progress line for the `index`th of `total` benchmarks (1-based; total 0: unknown), `elapsed_s` after the
/// first started: what is left, the time so far and, once one has finished, the time to go at the finished ones'
/// average (benchmarks differ, so it is marked as an estimate: "~").
std::string progress_text(size_t index, size_t total, const std::string& name, double elapsed_s);

/// Google Benchmark's filter semantics on our names: a regex search, "-REGEX" negates, "" and "all" keep all.
std::vector<std::string> filter_names(const std::vector<std::string>& names, const std::string& filter);

}  // namespace torchprobe::bench
