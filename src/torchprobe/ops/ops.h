#pragma once
// The op catalogue: single ops at the shapes the models use (and square GEMMs), with analytic
// FLOP and minimal-byte counts, inputs made on any device, and the device's measured peaks.
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <torch/types.h>

namespace torchprobe::ops {

/// Precision of an op: tf32 is fp32 storage with TF32 tensor-core math allowed (GPUs).
enum class DType { kFp32, kTf32, kBf16, kFp16 };
std::string dtype_name(DType dtype);
torch::ScalarType storage_type(DType dtype);
/// The dtypes an op can run at on this device: fp32 on the CPU; fp32, tf32, bf16, fp16 on GPUs.
std::vector<DType> supported_dtypes(const torch::Device& device);

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

/// One input set of an op; the op reads tensors (and writes its output into `out` where it has one).
struct OpInputs {
  std::vector<torch::Tensor> tensors;
};

/// One op at one shape and dtype on one device.
struct OpCase {
  std::string op;                                          ///< "matmul", "conv2d", "copy", ...
  std::vector<std::pair<std::string, std::string>> params;  ///< name components, in order
  DType dtype = DType::kFp32;
  torch::Device device{torch::kCPU};
  double flops = 0.0;  ///< per call
  double bytes = 0.0;  ///< per call, minimal
  bool core = false;   ///< part of the quick op set
  bool bandwidth_roof = true;  ///< compare with the device's copy bandwidth (false: host<->device copies)
  /// Allocates one input set on the case's device (random values from the global generator).
  std::function<OpInputs()> make_inputs;
  /// Runs the op once on an input set and returns its result (for backward passes: the input gradient).
  std::function<torch::Tensor(OpInputs&)> run;
  /// Optional: restores a state the op changes, untimed, before each call (e.g. moves a model back).
  std::function<void(OpInputs&)> reset;

  /// e.g. "op/matmul/cuda:0/n:4096/dtype:bf16"
  std::string name() const;
};

struct OpSelection {
  bool all = false;                ///< the full sweep; otherwise the core set
  std::vector<std::string> ops;    ///< op names to keep; empty: every op
  std::vector<std::int64_t> batch_sizes = {64, 256};
};
/// The op names the catalogue knows.
std::vector<std::string> op_names();
/// Every op case for these devices, in device, op, shape, dtype order. Throws InputError for an unknown op name.
std::vector<OpCase> plan_ops(const std::vector<torch::Device>& devices, const OpSelection& selection);

/// Peak throughput measured on the device: the best of several large GEMMs at a dtype, and the
/// best of several large STREAM copy and add kernels (bytes read + written).
struct Peak {
  double gflop_per_s = 0.0;
  double gb_per_s = 0.0;
};
/// Measured once per device and dtype per process, then cached.
Peak measured_peak(const torch::Device& device, DType dtype);

/// Sets the math mode an op case needs (TF32 in cuBLAS and cuDNN for kTf32, strict IEEE fp32
/// otherwise) and restores LibTorch's defaults (cuBLAS strict, cuDNN TF32) on exit. Only the
/// setters are used: LibTorch 2.9+ rejects mixing its legacy and new TF32 getters and setters.
class MathModeGuard {
 public:
  explicit MathModeGuard(DType dtype);
  ~MathModeGuard();
  MathModeGuard(const MathModeGuard&) = delete;
  MathModeGuard& operator=(const MathModeGuard&) = delete;
};

}  // namespace torchprobe::ops

namespace torchprobe::ops {

/// Bytes of the last-level cache that repeated calls could be served from: the GPU's L2, or the
/// CPU's L3 (from sysfs; 32 MiB when unknown).
std::int64_t cache_bytes(const torch::Device& device);
/// Evicts that cache by overwriting a buffer twice its size (queued on the device's current stream).
void flush_cache(const torch::Device& device);

}  // namespace torchprobe::ops
