#pragma once
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>

#include "torchprobe/models/classifier.h"

namespace torchprobe::models {

/// torchvision's BasicBlock: two 3x3 conv+BN, identity or 1x1 conv+BN shortcut ("downsample").
class BasicBlockImpl : public torch::nn::Module {
 public:
  BasicBlockImpl(int64_t in_planes, int64_t planes, int64_t stride);
  torch::Tensor forward(torch::Tensor x);

 private:
  torch::nn::Conv2d conv1{nullptr}, conv2{nullptr};
  torch::nn::BatchNorm2d bn1{nullptr}, bn2{nullptr};
  torch::nn::Sequential downsample{nullptr};
};
TORCH_MODULE(BasicBlock);

/// ResNet-18 for 32x32 inputs (the common CIFAR variant): 3x3 stem with stride 1 and no
/// max-pool, stages of 64/128/256/512 channels (2 blocks each), global average pool, fc 512->10.
/// Module names follow torchvision (conv1, bn1, layer1.0.conv1, layer2.0.downsample.0, fc).
class ResNet18Impl : public ClassifierImpl {
 public:
  explicit ResNet18Impl(int64_t num_classes = 10);
  torch::Tensor forward(torch::Tensor x) override;

 protected:
  std::shared_ptr<ClassifierImpl> fresh() const override { return std::make_shared<ResNet18Impl>(num_classes_); }

 private:
  torch::nn::Sequential make_stage(int64_t planes, int64_t stride);
  int64_t num_classes_;
  int64_t in_planes_ = 64;
  torch::nn::Conv2d conv1{nullptr};
  torch::nn::BatchNorm2d bn1{nullptr};
  torch::nn::Sequential layer1{nullptr}, layer2{nullptr}, layer3{nullptr}, layer4{nullptr};
  torch::nn::Linear fc{nullptr};
};

}  // namespace torchprobe::models
