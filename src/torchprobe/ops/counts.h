#pragma once
// The analytic model of the ops and the models: FLOP counts (a multiply-add is 2 FLOP), minimal
// bytes moved (each input read once, each output written once), and the models' layer tables.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace torchprobe::ops {

/// A 2-D convolution (no groups, no dilation) at one input size.
struct ConvShape {
  std::int64_t batch, in_channels, height, width, out_channels, kernel, stride, padding;
  std::int64_t out_height() const { return (height + 2 * padding - kernel) / stride + 1; }
  std::int64_t out_width() const { return (width + 2 * padding - kernel) / stride + 1; }
};

/// FLOP counts (a multiply-add is 2 FLOP) and minimal bytes moved (each input read once, each
/// output written once), per call.
double matmul_flops(std::int64_t m, std::int64_t k, std::int64_t n);
double matmul_bytes(std::int64_t m, std::int64_t k, std::int64_t n, std::int64_t element_size);
/// Forward; forward+backward adds the input and weight gradients (2x the forward FLOP).
double conv2d_flops(const ConvShape& s, bool backward);
/// Forward: input + weight + output. Forward+backward: also read grad-output, input and weight,
/// write grad-input and grad-weight: 3 x input + 3 x weight + 2 x output.
double conv2d_bytes(const ConvShape& s, bool backward, std::int64_t element_size);

/// Every convolution of a model at CIFAR-10's 32x32 input, in the order the model registers them (batch 1).
std::vector<ConvShape> model_conv_layers(const std::string& model);
/// The same, one entry per distinct shape, in first-use order.
std::vector<ConvShape> model_conv_shapes(const std::string& model);
/// The linear layers of a model as (in_features, out_features), distinct, in forward order.
std::vector<std::pair<std::int64_t, std::int64_t>> model_linear_shapes(const std::string& model);
/// Forward FLOP of one image through a model's convolutions and linear layers (multiply-add = 2;
/// BatchNorm, activations and pooling, under 1% for these models, are left out, as MFU
/// conventions do). A training step costs 3x this per image: backward is twice the forward.
double model_forward_flops(const std::string& model);

}  // namespace torchprobe::ops
