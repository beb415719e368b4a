#include "torchprobe/models/classifier.h"

#include <torch/utils.h>

#include <stdexcept>
#include <string>

namespace torchprobe::models {
namespace {

/// Gives each tensor of `target` the values of the same-named tensor of `source` (a copy).
void copy_values(const torch::OrderedDict<std::string, torch::Tensor>& source,
                 torch::OrderedDict<std::string, torch::Tensor> target, const c10::optional<torch::Device>& device,
                 const char* what) {
  if (source.size() != target.size()) {
    throw std::logic_error(std::string("clone: a fresh model has a different number of ") + what);
  }
  for (const auto& item : source) {
    const torch::Tensor& value = item.value();
    const torch::Tensor* slot = target.find(item.key());
    if (slot == nullptr || slot->sizes() != value.sizes()) {
      throw std::logic_error(std::string("clone: a fresh model has no ") + what + " " + item.key() + " of that shape");
    }
    // set_data on the registered handle replaces the tensor's storage for the module too.
    torch::Tensor handle = *slot;
    handle.set_data(device && value.device() != *device ? value.to(*device) : value.clone());
  }
}

}  // namespace

std::shared_ptr<torch::nn::Module> ClassifierImpl::clone(const c10::optional<torch::Device>& device) const {
  torch::NoGradGuard no_grad;
  std::shared_ptr<ClassifierImpl> copy = fresh();
  copy_values(named_parameters(), copy->named_parameters(), device, "parameters");
  copy_values(named_buffers(), copy->named_buffers(), device, "buffers");
  copy->train(is_training());
  return copy;
}

}  // namespace torchprobe::models
