#pragma once
// The one result schema: every printer (CSV, Markdown, SVG, console, compare) reads these records,
// loaded from Google Benchmark JSON files written by torchprobe-bench (or any gbench program).
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace torchprobe::report {

/// A device as the run's inventory described it.
struct DeviceInfo {
  std::string id;       ///< "cpu", "cuda:0", ...
  std::string name;     ///< CPU model or GPU name
  std::string details;  ///< e.g. "2 logical cores, AVX2" or "80 GiB, cc 9.0, 132 SMs"
};

/// Where and how one input file was measured (Google Benchmark's context + our custom context).
struct RunContext {
  std::string source;  ///< the file it came from
  std::string host, date, executable, build_type;
  std::string torchprobe_version, libtorch_version, threads, blas, data;
  int num_cpus = 0;
  std::vector<DeviceInfo> devices;  ///< from the inventory; empty for plain gbench files
  std::vector<std::string> trust_warnings;  ///< what the run found on its host at start (torchprobe-bench's context)
  /// torchprobe-bench's context.torchprobe_run: "complete (12 of 12 benchmarks)", or "partial: ..." for a
  /// run that was interrupted, stopped or is still going; empty for other programs' files.
  std::string run_status;
  bool partial() const { return run_status.rfind("partial", 0) == 0; }
};

/// One benchmark (all its repetitions) on one device.
struct Result {
  /// The benchmark's name as its program registered it, without the timing suffix Google Benchmark
  /// appends (/manual_time, /real_time, /process_time), e.g. "train_step/net/cpu/batch:64/...";
  /// every other part (arguments, /threads:N, /iterations:N, /repeats:N, /min_time:...) is kept, since
  /// it can tell two benchmarks of one program apart. Where two entries of one file differ only in their
  /// timing suffix, both keep it.
  std::string name;
  std::string suite;    ///< first name component: "train_step", "op", "data", ...
  std::string subject;  ///< model (train_step), op name (op) or step (data)
  std::string device;   ///< "cpu", "cuda:0"; "cpu" when the name has none (host-side work)
  std::string device_label;  ///< device, or device@host when inputs come from several hosts
  std::string device_name;
  std::int64_t batch = 0;  ///< 0: not applicable
  std::string dtype;       ///< from the name's dtype:; "fp32" for training steps without one; else ""
  std::map<std::string, std::string> params;  ///< every key:value name component (batch, dtype, n, ...)
  std::vector<double> samples_ms;             ///< per valid repetition: time per iteration in ms
  int repetitions = 0;                        ///< valid repetitions (from the aggregates' count in aggregate-only files)
  double median_ms = 0.0;
  double mean_ms = 0.0, stddev_ms = 0.0;      ///< over the valid repetitions (or the file's mean and stddev aggregates)
  double cv_pct = -1.0;  ///< coefficient of variation over repetitions; < 0 when fewer than 2
  bool aggregates_only = false;  ///< the file had only the aggregates (--benchmark_report_aggregates_only)
  int failed_repetitions = 0;    ///< repetitions that failed while others ran (those are used)
  std::string failed_reason;     ///< why they failed
  /// Counters, median over repetitions; absent when the benchmark did not report them.
  std::map<std::string, double> counters;
  std::string error;  ///< non-empty: every repetition failed or was skipped, with this reason
  size_t context = 0; ///< index into ResultSet::contexts

  bool failed() const { return !error.empty(); }
  bool has(const std::string& counter) const { return counters.count(counter) != 0; }
  /// The counter's value, or NaN when absent.
  double counter(const std::string& name) const;
};


struct ResultSet {
  std::vector<RunContext> contexts;
  std::vector<Result> results;  ///< in file order, then benchmark order
  /// "FILE: interrupted by SIGINT after 5 of 12 benchmarks" for each partial input, joined
  /// with "; "; empty when every input is a complete run.
  std::string partial_runs() const;
};

/// Parses one Google Benchmark JSON document; `source` names it in errors (InputError).
ResultSet parse_results(const std::string& json_text, const std::string& source);
/// Reads and merges files. Throws InputError naming the file when one is unreadable or malformed.
ResultSet load_results(const std::vector<std::string>& paths);

/// Sets each result's device_label (its device, or device@host when the set holds several hosts) and
/// device_name (from its run's inventory). load_results does it; call it after merging sets by hand.
void label_devices(ResultSet& set);
/// The label of `device` as run `context` of the set measured it: the device; device@host when the set holds
/// several hosts; with the part's name added where that would still name two parts ("cuda:0 (NVIDIA H200)").
std::string device_label(const ResultSet& set, size_t context, const std::string& device);

/// Splits "train_step/net/cuda:0/batch:64" into suite, subject, device and key:value params; sets the
/// name (without the timing suffix). Plain scanning: any length of name.
void parse_benchmark_name(const std::string& name, Result& result);
/// The name without a final /manual_time, /real_time or /process_time.
std::string without_timing_suffix(const std::string& name);

}  // namespace torchprobe::report
