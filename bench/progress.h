#pragma once
// A one-line progress display on stderr for long runs: "[3/12] name (9 left, 0:42)". On a
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

/// Google Benchmark's filter semantics on our names: a regex search, "-REGEX" negates, "" and "all" keep all.
std::vector<std::string> filter_names(const std::vector<std::string>& names, const std::string& filter);

}  // namespace torchprobe::bench
