#pragma once
#include <functional>
#include <string>
#include <vector>

#include "torchprobe/models/classifier.h"

namespace torchprobe::models {

struct ModelInfo {
  std::string name;
  std::string description;
  std::function<Classifier()> make;
};

/// Every model torchprobe knows, by name; shared by benchmarks and diagnostics.
const std::vector<ModelInfo>& model_registry();
std::vector<std::string> model_names();
/// A freshly initialised model. Throws InputError naming the known models if `name` is unknown.
Classifier make_model(const std::string& name);

}  // namespace torchprobe::models
