#pragma once
// `diagnose memory` as a library: for each device and model, the memory probe (on a GPU in this
// process, on the CPU in a child under an address-space limit) and the leak checks, with printers.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <torch/types.h>

#include "diagnostics/leak.h"
#include "diagnostics/memory_probe.h"

namespace torchprobe::diagnostics {

struct LeakCheck {
  LeakReport report;
  bool expected_leak = false;  ///< the scenario keeps its losses: a leak must be found
  bool as_expected() const { return report.leak == expected_leak; }
};

struct MemoryDiagnosisOptions {
  std::vector<torch::Device> devices;
  std::vector<std::string> models;
  SearchOptions search;
  int leak_steps = 15;
  /// The CPU probe's child: the program and its arguments for one model (the torchprobe CLI's
  /// `diagnose memory --child ...`, which calls run_memory_child).
  std::string child_exe = "/proc/self/exe";
  std::function<std::vector<std::string>(const std::string& model)> child_args;
  /// Progress: a device and model starts; a trial ends (GPU probes; the CPU child prints its own).
  std::function<void(const std::string& model, const std::string& device)> on_start;
  std::function<void(const Trial&)> on_trial;
  /// Each result as soon as it is ready, for output that streams.
  std::function<void(const ProbeReport&)> on_probe;
  std::function<void(const LeakCheck&)> on_leak;
  /// Called before each leak scenario runs (a progress line: it takes ~30 s on a CPU), with the loop's name.
  std::function<void(const std::string& model, const std::string& device, const std::string& loop)> on_leak_start;
};

struct MemoryDiagnosis {
  std::vector<ProbeReport> probes;
  std::vector<LeakCheck> leaks;
  /// Why the diagnosis stopped before the end ("SIGINT"): it holds what had finished. Empty: complete.
  std::string interrupted;
  /// Every probe reproduced, classified and recovered, every leak check came out as expected, and it ran to the end.
  bool ok() const;
};

/// Throws InputError for an unknown model before any work.
MemoryDiagnosis run_memory_diagnosis(const MemoryDiagnosisOptions& options);

/// {"probes": [probe_to_json...], "leaks": [...], "interrupted" (when it is), "ok"}
std::string memory_diagnosis_json(const MemoryDiagnosis& diagnosis);
std::string leak_json(const LeakCheck& check);

}  // namespace torchprobe::diagnostics
