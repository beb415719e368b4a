#pragma once
// The device-error catalogue: each scenario runs real LibTorch code that triggers a classic
// device error, catches it, classifies and explains it, and names the culprit where it can.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <torch/types.h>

#include "diagnostics/classify.h"

namespace torchprobe::diagnostics {

enum class ScenarioStatus { kReproduced, kSkipped, kFailed };

struct ScenarioResult {
  std::string name, title;
  ScenarioStatus status = ScenarioStatus::kFailed;
  std::string raw;            ///< the real error message (no backtrace)
  ErrorKind expected = ErrorKind::kUnknown;
  Diagnosis diagnosis;
  std::string culprit;        ///< from audit_devices or the scenario: which tensor is where
  std::string note;           ///< why skipped or failed; silent meta results; what the fix did
};

struct Scenario {
  std::string name;
  std::string title;
  int needs_gpus = 0;
  /// Runs on `device` (a CUDA device for GPU scenarios) and fills raw, expected, culprit and note.
  std::function<void(const torch::Device& device, ScenarioResult& result)> run;
};

const std::vector<Scenario>& scenarios();
std::vector<std::string> scenario_names();

/// Runs one scenario by name or "all". GPU scenarios run on `gpu` (default cuda:0) and are skipped
/// on hosts with too few CUDA devices. Throws InputError for an unknown name.
std::vector<ScenarioResult> run_scenarios(const std::string& selection, std::optional<torch::Device> gpu);

std::string scenario_text(const ScenarioResult& result);
std::string scenarios_json(const std::vector<ScenarioResult>& results);

}  // namespace torchprobe::diagnostics
