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

/// torchprobe's own context keys, as torchprobe_context() writes them and the reader reads them.
inline constexpr std::string_view kRunStatusKey =
    "torchprobe_run";                                           ///< "complete (12 of 12 benchmarks)" or "partial: ..."
inline constexpr std::string_view kInventoryKey = "inventory";  ///< the host's inventory, one-line JSON

}  // namespace torchprobe::report::schema
