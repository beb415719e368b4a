#include "torchprobe/ops/counts.h"

#include <fmt/format.h>

#include <algorithm>

#include "torchprobe/input_error.h"

namespace torchprobe::ops {

double matmul_flops(std::int64_t m, std::int64_t k, std::int64_t n) {
  return 2.0 * static_cast<double>(m) * static_cast<double>(k) * static_cast<double>(n);
}

double matmul_bytes(std::int64_t m, std::int64_t k, std::int64_t n, std::int64_t element_size) {
  return static_cast<double>((m * k + k * n + m * n) * element_size);
}

double conv2d_flops(const ConvShape& s, bool backward) {
  const double forward = 2.0 * static_cast<double>(s.batch * s.out_channels * s.out_height() * s.out_width()) *
                         static_cast<double>(s.in_channels * s.kernel * s.kernel);
  return backward ? 3.0 * forward : forward;
}

double conv2d_bytes(const ConvShape& s, bool backward, std::int64_t element_size) {
  const double input = static_cast<double>(s.batch * s.in_channels * s.height * s.width);
  const double weight = static_cast<double>(s.out_channels * s.in_channels * s.kernel * s.kernel);
  const double output = static_cast<double>(s.batch * s.out_channels * s.out_height() * s.out_width());
  const double elements = backward ? 3 * input + 3 * weight + 2 * output : input + weight + output;
  return elements * static_cast<double>(element_size);
}

std::vector<ConvShape> model_conv_layers(const std::string& model) {
  if (model == "net") {
    return {{1, 3, 32, 32, 6, 5, 1, 0}, {1, 6, 14, 14, 16, 5, 1, 0}};
  }
  if (model == "resnet18") {  // CIFAR variant: 3x3 stem, no max-pool; stages at 32, 16, 8, 4
    std::vector<ConvShape> layers = {{1, 3, 32, 32, 64, 3, 1, 1}};
    std::int64_t in = 64, size = 32;
    for (const std::int64_t planes : {64, 128, 256, 512}) {
      const std::int64_t stride = planes == 64 ? 1 : 2, out = size / stride;
      // Block 1: conv1 (strided), conv2, then the 1x1 strided downsample where the shape changes.
      layers.push_back({1, in, size, size, planes, 3, stride, 1});
      layers.push_back({1, planes, out, out, planes, 3, 1, 1});
      if (stride != 1 || in != planes) layers.push_back({1, in, size, size, planes, 1, stride, 0});
      // Block 2: two convolutions at the stage's size.
      layers.push_back({1, planes, out, out, planes, 3, 1, 1});
      layers.push_back({1, planes, out, out, planes, 3, 1, 1});
      in = planes;
      size = out;
    }
    return layers;
  }
  throw InputError(fmt::format("no convolution table for model '{}'", model));
}

std::vector<ConvShape> model_conv_shapes(const std::string& model) {
  std::vector<ConvShape> distinct;
  for (const ConvShape& s : model_conv_layers(model)) {
    const auto same = [&](const ConvShape& d) {
      return d.in_channels == s.in_channels && d.height == s.height && d.width == s.width &&
             d.out_channels == s.out_channels && d.kernel == s.kernel && d.stride == s.stride && d.padding == s.padding;
    };
    if (std::find_if(distinct.begin(), distinct.end(), same) == distinct.end()) distinct.push_back(s);
  }
  return distinct;
}

std::vector<std::pair<std::int64_t, std::int64_t>> model_linear_shapes(const std::string& model) {
  if (model == "net") return {{400, 120}, {120, 84}, {84, 10}};
  if (model == "resnet18") return {{512, 10}};
  throw InputError(fmt::format("no linear-layer table for model '{}'", model));
}

double model_forward_flops(const std::string& model) {
  double flops = 0.0;
  for (const ConvShape& s : model_conv_layers(model)) flops += conv2d_flops(s, /*backward=*/false);
  for (const auto& [in, out] : model_linear_shapes(model)) flops += matmul_flops(1, in, out);
  return flops;
}

}  // namespace torchprobe::ops
