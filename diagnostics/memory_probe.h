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
  /// Called before a trial, and before each batch the recovery tries (a child announces them, so
  /// its parent knows what was running if a library ends the process).
  std::function<void(std::int64_t batch)> on_trial_start, on_recovery_start;
  /// Trials already run (by an earlier process that a library ended): replayed, not run again, so
  /// the search takes the same path and goes on from where it stopped.
  std::vector<Trial> known_trials;
  /// Recovery batches that already failed that way, with the error: stepped down from, not run.
  std::vector<Trial> known_recovery_failures;
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
  std::string oom_allocator;  ///< which allocator failed: LibTorch's caching or CPU allocator, a BLAS or cuDNN workspace, ...
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
  /// CPU probe: how often a library ended the child with an allocation failure and a new child went on.
  int child_restarts = 0;

  bool recovered() const;
  /// Everything the command promises: reproduced, classified as OOM, largest batch found, recovered.
  bool ok() const;
};

/// Runs the probe in this process on `device` (any allocator limit applies: the GPU's memory,
/// or the CPU address-space limit that on_ready sets). Errors other than out-of-memory propagate.
ProbeReport run_memory_probe(const torch::Device& device, const ProbeOptions& options);

std::string probe_to_json(const ProbeReport& report, int indent = -1);
ProbeReport probe_from_json(const std::string& text);

/// The human report: the error as caught, the explanation with numbers and the breakdown, the
/// search, the recovery and the memory_summary-style table.
std::string probe_text(const ProbeReport& report);
/// The probe's chart (report/memory_chart.h): peak memory vs batch, the fit, the budget, the largest batch.
std::string probe_chart(const ProbeReport& report);
/// allocated / reserved / active, current and peak (the CPU has only allocated).
std::string memory_summary_table(const backend::AllocatorStats& stats);

}  // namespace torchprobe::diagnostics
