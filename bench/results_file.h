#pragma once
// torchprobe-bench's results file (--benchmark_out=FILE): rewritten whole after every finished benchmark,
// each time through a temporary file renamed over FILE, so FILE is always a complete document. A run
// that finishes nothing leaves an existing FILE untouched. The JSON document's context says whether the
// run is complete: torchprobe_run = "complete (12 of 12 benchmarks)" or "partial: ...".
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstddef>
#include <functional>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "torchprobe/interrupt.h"
#include "torchprobe/io.h"

namespace torchprobe::bench {

class ResultsFile {
 public:
  enum class Format { kJson, kCsv, kConsole };
  /// "json", "csv" or "console" (Google Benchmark's --benchmark_out_format values); InputError otherwise.
  static Format parse_format(const std::string& text);

  /// `planned`: how many benchmarks the run means to finish (for the status; 0 if unknown).
  ResultsFile(std::string path, Format format, size_t planned);
  ~ResultsFile();
  ResultsFile(const ResultsFile&) = delete;
  ResultsFile& operator=(const ResultsFile&) = delete;

  const std::string& path() const { return path_; }
  Format format() const { return format_; }
  size_t benchmarks() const { return benchmarks_; }

  /// The run's context (Google Benchmark's and torchprobe's custom keys), rendered as the document's head.
  void set_context(const benchmark::BenchmarkReporter::Context& context);
  /// One finished benchmark (all its repetitions and aggregates): added, and the file rewritten.
  /// Throws io::WriteError; the file then keeps its previous complete content.
  void add(const std::vector<benchmark::BenchmarkReporter::Run>& runs);
  /// Entries already rendered as Google Benchmark JSON objects ("{...},\n{...}"), counting as
  /// `benchmarks` finished benchmarks (JSON only): what an isolated child wrote.
  void add_json_entries(const std::string& entries, size_t benchmarks);
  /// Rewrites the file with its final status: "" for a complete run, else why it stopped ("interrupted
  /// by SIGINT"). Does nothing when no benchmark finished, so an existing file stays as it was.
  void finish(const std::string& stopped_because);
  /// The document as it would be written now.
  std::string document() const;

 private:
  void write(bool last = false);

  std::string path_;
  Format format_;
  size_t planned_;
  size_t benchmarks_ = 0;
  bool rewritable_ = true;    ///< a file replaced whole (not a device or a pipe): rewritten after each benchmark
  std::string last_counted_;  ///< the benchmark (run name) counted last
  std::string status_;
  std::unique_ptr<benchmark::BenchmarkReporter> renderer_;
  std::ostringstream head_, body_, discard_;
  std::string entries_;  ///< JSON: the benchmark objects, comma-separated
  std::string tail_;     ///< JSON: what closes the document
};

/// "partial: interrupted by SIGINT after 5 of 12 benchmarks", "complete (12 of 12 benchmarks)", ...
std::string run_status(size_t finished, size_t planned, const std::string& stopped_because, bool running);

/// `text` as the inside of a JSON string: quotes, backslashes and control characters escaped.
std::string json_escape(const std::string& text);

}  // namespace torchprobe::bench

namespace torchprobe::bench {

/// Whether Google Benchmark marked a run as failed (SkipWithError): error_occurred in 1.7, skipped since 1.8.
template <typename Run>
auto run_failed(const Run& run, int) -> decltype(run.error_occurred, bool()) {
  return run.error_occurred;
}
template <typename Run>
bool run_failed(const Run& run, long) {
  return static_cast<int>(run.skipped) != 0;
}

/// The sampling thread's CPU ms per call, a counter of every benchmark that samples until its noise is low: there
/// one Google Benchmark iteration is one repetition, and Google Benchmark's CPU time covers all of it.
constexpr const char* kCpuPerCallCounter = "cpu_ms_per_call";
/// Puts kCpuPerCallCounter in the place of Google Benchmark's CPU time (repetitions and the mean, median, stddev
/// and CV aggregates, which Google Benchmark computed for the counter as for the time), so "CPU" is per call as
/// "Time" is. Runs without the counter are left as they are.
std::vector<benchmark::BenchmarkReporter::Run> per_call_cpu_time(std::vector<benchmark::BenchmarkReporter::Run> runs);

/// What the console shows of one benchmark's runs (repetitions and aggregates): only the counters in `counters`
/// (all when it is empty: Google Benchmark gives each counter a column, and a training step's ~30 made the table
/// 250+ characters wide), and a millisecond benchmark whose median repetition is under 1 ms in microseconds (a 1 us
/// op read "0.00100 ms"), the same unit for all its runs. The results file keeps the runs as they are.
std::vector<benchmark::BenchmarkReporter::Run> for_display(std::vector<benchmark::BenchmarkReporter::Run> runs,
                                                           const std::set<std::string>& counters);

/// A Google Benchmark display reporter (console or JSON on stdout) that also feeds the results file
/// after each finished benchmark, counts failures, and leaves out the benchmark a stop cut short.
template <typename Base>
class RunReporter : public Base {
 public:
  template <typename... Args>
  RunReporter(ResultsFile& file, bool quiet_context, Args&&... args)
      : Base(std::forward<Args>(args)...), file_(file), quiet_context_(quiet_context) {}

  bool ReportContext(const typename Base::Context& context) override {
    file_.set_context(context);
    if (!quiet_context_) return Base::ReportContext(context);
    std::ostringstream discard;  // an isolated child: the parent printed the context once
    std::ostream& err = this->GetErrorStream();
    this->SetErrorStream(&discard);
    const bool ok = Base::ReportContext(context);
    this->SetErrorStream(&err);
    return ok;
  }

  void ReportRuns(const std::vector<typename Base::Run>& runs) override {
    before_runs();
    bool any_failed = false;
    for (const auto& run : runs) any_failed |= run_failed(run, 0);
    // The benchmark a stop cut short is not a result; nor are those skipped after it, nor the aggregates that
    // Google Benchmark reports next from its repetitions that had finished.
    if (!runs.empty() && runs.front().run_type == Base::Run::RT_Aggregate && runs.front().run_name.str() == dropped_)
      return;
    if (any_failed && interrupt::requested()) {
      if (!runs.empty()) dropped_ = runs.front().run_name.str();
      return;
    }
    failed += any_failed ? 1 : 0;
    // Every run goes to the file; the display leaves the repetitions out when only aggregates were asked for.
    const bool repetitions = std::any_of(runs.begin(), runs.end(), [](const auto& r) {
      return r.run_type == Base::Run::RT_Iteration && r.repetitions > 1;
    });
    const auto per_call = per_call_cpu_time(runs);
    if (!(display_aggregates_only && repetitions))
      Base::ReportRuns(display ? for_display(per_call, shown_counters) : per_call);
    if (!write_error.empty()) return;
    try {
      file_.add(per_call);
    } catch (const io::WriteError& e) {
      write_error = e.what();
      interrupt::request_stop("the results file cannot be written");
    }
  }

  std::function<void()> before_runs = [] {};
  bool display_aggregates_only = false;  ///< --benchmark_display_aggregates_only: the display shows aggregates only
  bool display = false;                  ///< the console: runs go through for_display first
  std::set<std::string> shown_counters;  ///< for_display's counters (all when empty)
  int failed = 0;            ///< benchmarks with a failed run
  std::string write_error;   ///< the results file could not be written: the run stopped

 private:
  ResultsFile& file_;
  bool quiet_context_;
  std::string dropped_;  ///< the benchmark a stop cut short: its aggregates are left out too
};

}  // namespace torchprobe::bench
