#include "torchprobe/models/net.h"

#include <torch/nn/functional/activation.h>

namespace torchprobe::models {

NetImpl::NetImpl() {
  conv1 = register_module("conv1", torch::nn::Conv2d(torch::nn::Conv2dOptions(3, 6, /*kernel_size=*/5)));
  pool = register_module("pool", torch::nn::MaxPool2d(torch::nn::MaxPool2dOptions(2).stride(2)));
  conv2 = register_module("conv2", torch::nn::Conv2d(torch::nn::Conv2dOptions(6, 16, /*kernel_size=*/5)));
  fc1 = register_module("fc1", torch::nn::Linear(16 * 5 * 5, 120));
  fc2 = register_module("fc2", torch::nn::Linear(120, 84));
  fc3 = register_module("fc3", torch::nn::Linear(84, 10));
}

torch::Tensor NetImpl::forward(torch::Tensor x) {
  x = pool->forward(torch::relu(conv1->forward(x)));
  x = pool->forward(torch::relu(conv2->forward(x)));
  x = torch::flatten(x, /*start_dim=*/1);
  x = torch::relu(fc1->forward(x));
  x = torch::relu(fc2->forward(x));
  return fc3->forward(x);
}

}  // namespace torchprobe::models
