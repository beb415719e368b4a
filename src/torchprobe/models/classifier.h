#pragma once
#include <memory>

#include <torch/nn/module.h>
#include <torch/types.h>

namespace torchprobe::models {

/// An image classifier: float32 [B,3,32,32] in, logits [B,10] out.
class ClassifierImpl : public torch::nn::Module {
 public:
  virtual torch::Tensor forward(torch::Tensor x) = 0;
};
using Classifier = std::shared_ptr<ClassifierImpl>;

}  // namespace torchprobe::models
