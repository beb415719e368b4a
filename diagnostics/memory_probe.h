#pragma once
// diagnose memory: reproduce a real out-of-memory error in a training step, explain it with
// numbers, find the largest batch that fits, and train on at it in the same process.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <torch/types.h>

#include "diagnostics/classify.h"
#include "diagnostics/memory_search.h"
#include "torchprobe/backend.h"

namespace torchprobe::diagnostics {

struct ProbeOptions {
  std::string model = "net";
  SearchOptions search;
  int recovery_steps = 2;  ///< steps trained at the largest batch after the OOM
  /// Called once after the warm-up step (everything the step needs is initialised), before the
  /// first trial; the CPU child sets its address-space limit here and returns the budget it allows.
  std::function<std::int64_t()> on_ready;
  /// Called after each trial (progress lines).
  std::function<void(const Trial&)> on_trial;
};

struct ProbeReport {
  std::string model, device, device_name;
  int threads = 0;
  std::int64_t capacity_bytes = 0;  ///< GPU: total memory; CPU: the address-space budget of the child
  std::int64_t free_at_start = -1;  ///< GPU: free memory before the first trial
  // The first failing trial: the real error, as caught.
  bool oom_reproduced = false;
  std::int64_t oom_batch = 0;
  std::string oom_message;
  Diagnosis oom;
  backend::AllocatorStats at_oom;  ///< allocator statistics right after the error was caught
  SearchResult search;
  MemoryBreakdown breakdown;
  // Recovery: the same process, the same model, trains on at the largest batch.
  std::int64_t recovery_batch = 0;  ///< the search's largest, or a little below when it failed on the second run
  std::vector<double> recovery_losses;
  std::string recovery_error;
  backend::AllocatorStats after;  ///< memory_summary after the recovery steps
  double seconds = 0;

  bool recovered() const;
  /// Everything the command promises: reproduced, classified as OOM, largest batch found, recovered.
  bool ok() const;
};

/// Runs the probe in this process on `device` (any allocator limit applies: the GPU's memory,
/// or the CPU address-space limit that on_ready sets). Errors other than out-of-memory propagate.
ProbeReport run_memory_probe(const torch::Device& device, const ProbeOptions& options);

/// The CPU probe in a child process (`exe` run with `args`, which must print probe_to_json on
/// stdout; the torchprobe CLI does with `diagnose memory --child`), so the real allocator error
/// appears under an address-space limit without endangering this process. Throws
/// std::runtime_error when the child fails or dies (its exit status or signal in the message).
ProbeReport run_probe_in_child(const std::string& exe, const std::vector<std::string>& args);

std::string probe_to_json(const ProbeReport& report, int indent = -1);
ProbeReport probe_from_json(const std::string& text);

/// The human report: the error as caught, the explanation with numbers and the breakdown, the
/// search, the recovery and the memory_summary-style table.
std::string probe_text(const ProbeReport& report);
/// allocated / reserved / active, current and peak (the CPU has only allocated).
std::string memory_summary_table(const backend::AllocatorStats& stats);

}  // namespace torchprobe::diagnostics
