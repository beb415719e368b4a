#pragma once
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/pooling.h>

#include "torchprobe/models/classifier.h"

namespace torchprobe::models {

/// The PyTorch CIFAR-10 tutorial CNN, layer for layer and with the same module names:
/// conv1 3->6 k5, pool 2x2, conv2 6->16 k5, pool, fc1 400->120, fc2 120->84, fc3 84->10, ReLU.
class NetImpl : public ClassifierImpl {
 public:
  NetImpl();
  torch::Tensor forward(torch::Tensor x) override;

 protected:
  std::shared_ptr<ClassifierImpl> fresh() const override { return std::make_shared<NetImpl>(); }

 private:
  torch::nn::Conv2d conv1{nullptr}, conv2{nullptr};
  torch::nn::MaxPool2d pool{nullptr};
  torch::nn::Linear fc1{nullptr}, fc2{nullptr}, fc3{nullptr};
};

}  // namespace torchprobe::models
