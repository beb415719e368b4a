#include "torchprobe/models/resnet.h"

#include <torch/nn/functional/pooling.h>

namespace torchprobe::models {
namespace {

torch::nn::Conv2d conv3x3(int64_t in, int64_t out, int64_t stride) {
  return torch::nn::Conv2d(torch::nn::Conv2dOptions(in, out, /*kernel_size=*/3).stride(stride).padding(1).bias(false));
}

}  // namespace

BasicBlockImpl::BasicBlockImpl(int64_t in_planes, int64_t planes, int64_t stride) {
  conv1 = register_module("conv1", conv3x3(in_planes, planes, stride));
  bn1 = register_module("bn1", torch::nn::BatchNorm2d(planes));
  conv2 = register_module("conv2", conv3x3(planes, planes, /*stride=*/1));
  bn2 = register_module("bn2", torch::nn::BatchNorm2d(planes));
  if (stride != 1 || in_planes != planes) {
    downsample = register_module(
        "downsample",
        torch::nn::Sequential(
            torch::nn::Conv2d(torch::nn::Conv2dOptions(in_planes, planes, /*kernel_size=*/1).stride(stride).bias(false)),
            torch::nn::BatchNorm2d(planes)));
  }
}

torch::Tensor BasicBlockImpl::forward(torch::Tensor x) {
  torch::Tensor out = torch::relu(bn1->forward(conv1->forward(x)));
  out = bn2->forward(conv2->forward(out));
  out += downsample ? downsample->forward(x) : x;
  return torch::relu(out);
}

ResNet18Impl::ResNet18Impl(int64_t num_classes) : num_classes_(num_classes) {
  conv1 = register_module("conv1", conv3x3(3, 64, /*stride=*/1));
  bn1 = register_module("bn1", torch::nn::BatchNorm2d(64));
  layer1 = register_module("layer1", make_stage(64, /*stride=*/1));
  layer2 = register_module("layer2", make_stage(128, /*stride=*/2));
  layer3 = register_module("layer3", make_stage(256, /*stride=*/2));
  layer4 = register_module("layer4", make_stage(512, /*stride=*/2));
  fc = register_module("fc", torch::nn::Linear(512, num_classes));
}

torch::nn::Sequential ResNet18Impl::make_stage(int64_t planes, int64_t stride) {
  torch::nn::Sequential stage;
  stage->push_back(BasicBlock(in_planes_, planes, stride));
  stage->push_back(BasicBlock(planes, planes, /*stride=*/1));
  in_planes_ = planes;
  return stage;
}

torch::Tensor ResNet18Impl::forward(torch::Tensor x) {
  x = torch::relu(bn1->forward(conv1->forward(x)));
  x = layer4->forward(layer3->forward(layer2->forward(layer1->forward(x))));
  x = torch::nn::functional::adaptive_avg_pool2d(x, torch::nn::functional::AdaptiveAvgPool2dFuncOptions(1));
  return fc->forward(torch::flatten(x, /*start_dim=*/1));
}

}  // namespace torchprobe::models
