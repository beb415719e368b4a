#pragma once
// The op catalogue: single ops at the shapes the models use (and square GEMMs), with their analytic
// FLOP and minimal-byte counts (ops/counts.h) and inputs made on any device.
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <torch/types.h>

#include "torchprobe/ops/counts.h"

namespace torchprobe::ops {

/// Precision of an op: tf32 is fp32 storage with TF32 tensor-core math allowed (GPUs).
enum class DType { kFp32, kTf32, kBf16, kFp16 };
std::string dtype_name(DType dtype);
torch::ScalarType storage_type(DType dtype);
/// The dtypes an op can run at on this device: fp32 on the CPU; fp32, tf32, bf16, fp16 on GPUs.
std::vector<DType> supported_dtypes(const torch::Device& device);
/// The dtypes whose compute roof ops::measured_peak measures on this device: the op dtypes, and on the CPU
/// also bf16 (the training step's bf16 variants run there and get an MFU against it).
std::vector<DType> roof_dtypes(const torch::Device& device);

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
/// The op names the catalogue knows: every op it has a case of (on the CPU or a GPU), in the order it plans them.
std::vector<std::string> op_names();
/// Every op case for these devices, in device, op, shape, dtype order. Throws InputError for an unknown op name.
std::vector<OpCase> plan_ops(const std::vector<torch::Device>& devices, const OpSelection& selection);

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
