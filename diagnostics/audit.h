#pragma once
// Which parameter, buffer or input is on the wrong device, by full name, before a single op runs.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <torch/nn/module.h>
#include <torch/types.h>

namespace torchprobe::diagnostics {

struct Placement {
  std::string name;    ///< full module path ("fc1.weight", "layer2.0.bn1.running_mean") or "input[i]"
  std::string what;    ///< "parameter", "buffer" or "input"
  std::string device;  ///< where it is
};

struct DeviceAudit {
  std::string expected;                ///< the expected device, or the majority device when none was given
  std::vector<Placement> misplaced;    ///< everything not on `expected`
  std::map<std::string, int> counts;   ///< tensors per device
  bool ok() const { return misplaced.empty(); }
  /// "ok: 62 tensors on cpu" or one line per misplaced tensor.
  std::string text() const;
};

/// Walks every parameter and buffer of `module` (recursively, by full name) and every input. With
/// `expected`, reports each one elsewhere; without, reports any mix (everything off the majority device).
DeviceAudit audit_devices(const torch::nn::Module& module, const std::vector<torch::Tensor>& inputs,
                          std::optional<torch::Device> expected = std::nullopt);

}  // namespace torchprobe::diagnostics
