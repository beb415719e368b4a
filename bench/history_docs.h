#pragma once
// Synthetic Google Benchmark JSON documents for the history's tests and its speed benchmark: any number of
// runs of any benchmarks, with the torchprobe context a real run writes.
#include <fmt/format.h>

#include <map>
#include <random>
#include <string>
#include <vector>

namespace torchprobe::history_docs {

struct Bench {
  std::string name;                         ///< e.g. "op/add/cpu/n:1024"
  std::vector<double> samples_ms;           ///< one per repetition
  std::map<std::string, double> counters;  ///< e.g. images_per_s
};

/// Run `i`'s date: 2026-01-01T00:00Z plus i minutes (i < 1440 stays on one day).
inline std::string run_date(int i) { return fmt::format("2026-01-0{}T{:02}:{:02}:00Z", 1 + i / 1440, i / 60 % 24, i % 60); }

/// A results file of one run on `host`, as torchprobe-bench writes it (every repetition an entry).
inline std::string document(const std::string& host, const std::string& date, const std::vector<Bench>& benchmarks,
                            const std::string& extra_devices = "") {
  std::string entries;
  for (const auto& b : benchmarks) {
    for (size_t rep = 0; rep < b.samples_ms.size(); ++rep) {
      std::string counters;
      for (const auto& [k, v] : b.counters) counters += fmt::format(R"(, "{}": {})", k, v);
      entries += fmt::format(R"({}{{"name": "{}/manual_time", "run_name": "{}/manual_time", "run_type": "iteration", )"
                             R"("repetitions": {}, "repetition_index": {}, "iterations": 10, "real_time": {:.9g}, )"
                             R"("cpu_time": {:.9g}, "time_unit": "ms"{}}})",
                             entries.empty() ? "" : ",\n", b.name, b.name, b.samples_ms.size(), rep, b.samples_ms[rep],
                             b.samples_ms[rep], counters);
    }
  }
  const std::string inventory = fmt::format(
      R"({{\"cpu\": {{\"device\": \"cpu\", \"logical_cores\": 2, \"model\": \"Test CPU\", \"torch_threads\": 2}}{}}})", extra_devices);
  return fmt::format(R"({{"context": {{"date": "{}", "host_name": "{}", "executable": "torchprobe-bench", "num_cpus": 2, )"
                     R"("library_build_type": "release", "torchprobe_version": "0.1.0", "libtorch_version": "1.13.1", )"
                     R"("torch_threads": "2", "blas": "OpenBLAS", "inventory": "{}"}},
"benchmarks": [
{}
]}}
)",
                     date, host, inventory, entries);
}

/// `repetitions` samples around `median_ms` with relative noise `cv` (normal).
inline std::vector<double> samples(std::mt19937_64& rng, double median_ms, double cv, int repetitions) {
  std::normal_distribution<double> noise(0.0, cv);
  std::vector<double> out;
  for (int r = 0; r < repetitions; ++r) out.push_back(median_ms * (1.0 + noise(rng)));
  return out;
}

}  // namespace torchprobe::history_docs
