#pragma once
// The results schema's names, in one place (header-only, layer 0): Google Benchmark's JSON with torchprobe's
// context keys. Every writer (torchprobe-bench through Google Benchmark's reporter, the dist commands and
// --isolate through results_writer.h) and the one reader (results.h) take them from here.
#include <array>
#include <string_view>

namespace torchprobe::report::schema {

/// The schema version every torchprobe results file carries in its context ("torchprobe_schema": "1"). The reader
/// refuses a file of a newer version (it would misread it) and reads files without one (older torchprobe runs,
/// any Google Benchmark program) as version 1's predecessors, which it still understands.
inline constexpr int kVersion = 1;
inline constexpr std::string_view kVersionKey = "torchprobe_schema";

/// The timing suffixes Google Benchmark appends to a benchmark's name; the reader drops them, --isolate's
/// filter allows them.
inline constexpr std::array<std::string_view, 3> kTimingSuffixes = {"manual_time", "real_time", "process_time"};

/// A training step's variant axes, in the order its name carries them after the batch
/// ("train_step/net/cuda:0/batch:64/dtype:bf16/layout:cl/cudnn:on/graph:off"): the key, its values in the order the
/// full sweep runs them with the baseline first (what a name from before the axis existed ran), and whether only GPUs
/// have it. torchprobe-bench names its steps by this table, the reader completes old names by it, and the report
/// leaves baselines out of a variant's label by it.
struct TrainAxis {
  std::string_view key;
  std::array<std::string_view, 3> values;  ///< "" after the last
  bool gpu_only;
  constexpr std::string_view baseline() const { return values[0]; }
};
inline constexpr std::array<TrainAxis, 4> kTrainAxes = {{
    {"dtype", {"fp32", "bf16", "fp16"}, false},
    {"layout", {"nchw", "cl", ""}, false},
    {"cudnn", {"off", "on", ""}, true},
    {"graph", {"off", "on", ""}, true},
}};

/// torchprobe's own context keys, as torchprobe_context() writes them and the reader reads them.
inline constexpr std::string_view kRunStatusKey =
    "torchprobe_run";                                           ///< "complete (12 of 12 benchmarks)" or "partial: ..."
inline constexpr std::string_view kInventoryKey = "inventory";  ///< the host's inventory, one-line JSON

}  // namespace torchprobe::report::schema
