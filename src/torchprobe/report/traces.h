#pragma once
// What `torchprobe report --traces DIR` makes of torchprobe-bench --trace files: per training configuration,
// where a step's time goes (the ops with the most self time), read from the Chrome trace.
#include <string>
#include <vector>

namespace torchprobe::report {

struct OpTime {
  std::string name;
  double self_ms_per_step = 0.0;  ///< time in the op itself, not in the ops it called
  double calls_per_step = 0.0;
};

struct TraceSummary {
  std::string benchmark;  ///< the training benchmark's name
  std::string file;  ///< the trace's path: report.md's link to it (the CLI makes it relative to the report's folder)
  int steps = 0;          ///< profiled steps (forward phases in the trace)
  double step_ms = 0.0;   ///< the phases' time per step
  std::vector<OpTime> top;  ///< by self time, largest first
};

/// Reads a --trace file (Chrome trace JSON: complete "X" events; cat "torchprobe" for the step's phases). Self
/// time: an event's duration less that of the events directly inside it on its thread. Throws InputError naming
/// `file` for a document that is not such a trace or that holds no training phase.
TraceSummary summarize_trace(const std::string& benchmark, const std::string& file, const std::string& text,
                             size_t top = 8);

/// The report's section for the summaries ("" for none), each trace linked by its `file`.
std::string traces_markdown(const std::vector<TraceSummary>& traces);

}  // namespace torchprobe::report
