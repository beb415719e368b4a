#include "diagnostics/memory_diagnosis.h"

#include <nlohmann/json.hpp>

#include "diagnostics/memory_child.h"
#include "torchprobe/device_spec.h"
#include "torchprobe/models/registry.h"

namespace torchprobe::diagnostics {

bool MemoryDiagnosis::ok() const {
  if (!interrupted.empty()) return false;
  for (const auto& p : probes) {
    if (!p.ok()) return false;
  }
  for (const auto& l : leaks) {
    if (!l.as_expected()) return false;
  }
  return true;
}

MemoryDiagnosis run_memory_diagnosis(const MemoryDiagnosisOptions& options) {
  for (const auto& m : options.models) models::make_model(m);  // unknown names fail here, before any work
  MemoryDiagnosis out;
  for (const auto& device : options.devices) {
    for (const auto& model : options.models) {
      if (options.on_start) options.on_start(model, device_string(device));
      ProbeReport report;
      if (device.is_cuda()) {
        ProbeOptions probe;
        probe.model = model;
        probe.search = options.search;
        probe.on_trial = options.on_trial;
        report = run_memory_probe(device, probe);
      } else {
        report = run_probe_in_child(options.child_exe, options.child_args(model));
      }
      if (options.on_probe) options.on_probe(report);
      out.probes.push_back(report);
      LeakOptions leak_options;
      leak_options.steps = options.leak_steps;
      for (const auto loop : {LeakLoop::kCorrect, LeakLoop::kKeptLosses}) {
        if (options.on_leak_start) {
          options.on_leak_start(model, device_string(device),
                                loop == LeakLoop::kCorrect ? "the correct loop (keeps loss.item())"
                                                           : "the leaking loop (keeps each step's loss tensor)");
        }
        LeakCheck check{run_leak_scenario(loop, model, device, leak_options), loop == LeakLoop::kKeptLosses};
        if (options.on_leak) options.on_leak(check);
        out.leaks.push_back(std::move(check));
      }
    }
  }
  return out;
}

std::string leak_json(const LeakCheck& check) {
  const LeakReport& leak = check.report;
  return nlohmann::ordered_json{{"scenario", leak.scenario},
                                {"model", leak.model},
                                {"device", leak.device},
                                {"steps", leak.steps},
                                {"leak", leak.leak},
                                {"expected_leak", check.expected_leak},
                                {"tensor_bytes_per_step", leak.tensor_bytes_per_step},
                                {"live_tensors_per_step", leak.live_tensors_per_step},
                                {"heap_bytes_per_step", leak.heap_bytes_per_step},
                                {"verdict", leak.verdict}}
      .dump();
}

std::string memory_diagnosis_json(const MemoryDiagnosis& diagnosis) {
  nlohmann::ordered_json out = {{"probes", nlohmann::json::array()}, {"leaks", nlohmann::json::array()}};
  for (const auto& p : diagnosis.probes) out["probes"].push_back(nlohmann::ordered_json::parse(probe_to_json(p)));
  for (const auto& l : diagnosis.leaks) out["leaks"].push_back(nlohmann::ordered_json::parse(leak_json(l)));
  if (!diagnosis.interrupted.empty()) out["interrupted"] = diagnosis.interrupted;
  out["ok"] = diagnosis.ok();
  return out.dump(2);
}

}  // namespace torchprobe::diagnostics
