#pragma once
#include <memory>

#include <c10/util/Optional.h>
#include <torch/nn/module.h>
#include <torch/types.h>

namespace torchprobe::models {

/// An image classifier: float32 [B,3,32,32] in, logits [B,10] out.
class ClassifierImpl : public torch::nn::Module {
 public:
  virtual torch::Tensor forward(torch::Tensor x) = 0;

  /// A deep copy (on `device` when given): the same architecture, its own parameters and buffers
  /// holding this model's values (memory format kept), the same train/eval mode; what
  /// torch::nn::Cloneable gives, and what LibTorch's data_parallel replicates the model with.
  std::shared_ptr<torch::nn::Module> clone(const c10::optional<torch::Device>& device = c10::nullopt) const override;

 protected:
  /// A newly built (freshly initialised) model of the same architecture and configuration.
  virtual std::shared_ptr<ClassifierImpl> fresh() const = 0;
};
using Classifier = std::shared_ptr<ClassifierImpl>;

}  // namespace torchprobe::models
