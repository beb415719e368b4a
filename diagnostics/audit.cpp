#include "diagnostics/audit.h"

#include <fmt/format.h>

#include <algorithm>

#include "torchprobe/device_spec.h"

namespace torchprobe::diagnostics {

std::string DeviceAudit::text() const {
  if (ok()) {
    int total = 0;
    for (const auto& [device, n] : counts) total += n;
    return fmt::format("ok: all {} tensors on {}\n", total, expected);
  }
  std::string out;
  for (const auto& p : misplaced) {
    out += fmt::format("{} `{}` is on {}, expected {}\n", p.what, p.name, p.device, expected);
  }
  return out;
}

DeviceAudit audit_devices(const torch::nn::Module& module, const std::vector<torch::Tensor>& inputs,
                          std::optional<torch::Device> expected) {
  std::vector<Placement> all;
  for (const auto& item : module.named_parameters(/*recurse=*/true)) {
    all.push_back({item.key(), "parameter", device_string(item.value().device())});
  }
  for (const auto& item : module.named_buffers(/*recurse=*/true)) {
    all.push_back({item.key(), "buffer", device_string(item.value().device())});
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].defined()) all.push_back({fmt::format("input[{}]", i), "input", device_string(inputs[i].device())});
  }
  DeviceAudit audit;
  for (const auto& p : all) ++audit.counts[p.device];
  if (expected) {
    audit.expected = device_string(*expected);
  } else if (!audit.counts.empty()) {
    audit.expected = std::max_element(audit.counts.begin(), audit.counts.end(), [](const auto& a, const auto& b) {
                       return a.second < b.second;
                     })->first;
  }
  for (const auto& p : all) {
    if (p.device != audit.expected) audit.misplaced.push_back(p);
  }
  return audit;
}

}  // namespace torchprobe::diagnostics
