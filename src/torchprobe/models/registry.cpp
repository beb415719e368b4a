#include "torchprobe/models/registry.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "torchprobe/error.h"
#include "torchprobe/models/net.h"
#include "torchprobe/models/resnet.h"

namespace torchprobe::models {

const std::vector<ModelInfo>& model_registry() {
  static const std::vector<ModelInfo> registry = {
      {"net", "PyTorch CIFAR-10 tutorial CNN (62k parameters)", [] { return Classifier(std::make_shared<NetImpl>()); }},
      {"resnet18", "ResNet-18, CIFAR variant (11.2M parameters)",
       [] { return Classifier(std::make_shared<ResNet18Impl>()); }},
  };
  return registry;
}

std::vector<std::string> model_names() {
  std::vector<std::string> names;
  for (const auto& m : model_registry()) names.push_back(m.name);
  return names;
}

Classifier make_model(const std::string& name) {
  for (const auto& m : model_registry()) {
    if (m.name == name) return m.make();
  }
  throw InputError(fmt::format("unknown model '{}' (known: {})", name, fmt::join(model_names(), ", ")));
}

}  // namespace torchprobe::models
