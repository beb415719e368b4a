// Before training a model of your own: which of its tensors are not where they should be (by name,
// before a single op runs), and what a device error you met means.
#include <torch/torch.h>

#include <iostream>

#include "diagnostics/audit.h"
#include "diagnostics/classify.h"

namespace {

// A small classifier whose `scale` was created on the meta device, as an init-empty-weights loader or
// a model built under a meta-device context leaves a tensor: a shape without data.
struct ModelImpl : torch::nn::Module {
  ModelImpl() {
    fc = register_module("fc", torch::nn::Linear(8, 4));
    scale = register_buffer("scale", torch::ones({4}, torch::TensorOptions().device(torch::kMeta)));
  }
  torch::Tensor forward(const torch::Tensor& x) { return fc->forward(x) * scale; }
  torch::nn::Linear fc{nullptr};
  torch::Tensor scale;
};
TORCH_MODULE(Model);

}  // namespace

int main() {
  namespace dx = torchprobe::diagnostics;
  Model model;
  const auto audit = dx::audit_devices(*model, {torch::randn({2, 8})}, torch::Device(torch::kCPU));
  std::cout << "audit: " << audit.text() << "\n";

  const auto diagnosis = dx::explain_error(
      "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!");
  std::cout << dx::diagnosis_text(diagnosis);

  // The example checks itself: the meta buffer is named, and the error is read as a device mismatch.
  const bool found = !audit.ok() && audit.misplaced.front().name == "scale";
  return found && diagnosis.kind == dx::ErrorKind::kDeviceMismatch ? 0 : 1;
}
