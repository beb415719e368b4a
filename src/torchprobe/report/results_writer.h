#pragma once
// The one writer of results files that Google Benchmark's own reporter does not write: the dist commands'
// files and --isolate's entries for a child that wrote nothing. Same schema as torchprobe-bench's files
// (schema.h), so `torchprobe report`, `compare` and `history` read them alike. No LibTorch.
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace torchprobe {

/// A results file's context: key and value in order (values are strings, as Google Benchmark's custom context).
using ContextEntries = std::vector<std::pair<std::string, std::string>>;

namespace report {

/// One benchmark entry, one repetition of it, in Google Benchmark's JSON schema.
struct Entry {
  std::string name;
  size_t repetition_index = 0;
  size_t repetitions = 1;
  int iterations = 1;
  double time = 0.0;  ///< real_time and cpu_time, in time_unit
  std::string time_unit = "ms";
  std::vector<std::pair<std::string, double>> counters;  ///< in this order after the standard fields
  std::string error;  ///< not empty: a failed benchmark (error_occurred true, error_message this)
};

/// {"context": {...}, "benchmarks": [...]}: the context as given (num_cpus as a number, as Google Benchmark
/// writes it; everything else a string), then the entries. Indented, with a final newline.
std::string results_document(const ContextEntries& context, const std::vector<Entry>& entries);

/// The entries as Google Benchmark JSON objects, comma-separated: the inside of a "benchmarks" array.
std::string entries_json(const std::vector<Entry>& entries);

/// The inside of a results document's "benchmarks" array (its objects, comma-separated; "" where it has none):
/// what an isolated child wrote, for the parent's file. "" for a document that is not valid JSON or has no
/// such array (a child killed while writing; the rename makes that rare).
std::string benchmark_entries(const std::string& document);

}  // namespace report
}  // namespace torchprobe
