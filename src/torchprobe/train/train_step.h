#pragma once
#include <array>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <torch/types.h>

#include "torchprobe/backend.h"
#include "torchprobe/data/batcher.h"
#include "torchprobe/models/classifier.h"
#include "torchprobe/phases.h"
#include "torchprobe/train/loss_scaler.h"

namespace torchprobe::train {

/// The phases of one step, in the order of torchprobe::kPhaseNames (phases.h).
enum class Phase { kH2D = 0, kForward, kLoss, kBackward, kOptimizer };
using torchprobe::kPhaseCount;
using torchprobe::kPhaseNames;

/// The arithmetic of the step: fp32 throughout, or autocast (fp32 master weights, eligible ops
/// in bf16 or fp16).
enum class Precision { kFp32, kBf16, kFp16 };
/// Memory format of the activations and 4-D weights: NCHW (PyTorch's default) or channels_last (NHWC).
enum class Layout { kNchw, kChannelsLast };
/// Names as in benchmark names: "fp32", "bf16", "fp16"; "nchw", "cl".
std::string precision_name(Precision precision);
std::string layout_name(Layout layout);
/// Parse those names (and "channels_last"); throw InputError naming the accepted ones.
Precision parse_precision(const std::string& name);
Layout parse_layout(const std::string& name);
/// The dtype autocast runs eligible ops in; kFloat32 for kFp32.
torch::ScalarType compute_dtype(Precision precision);

struct StepOptions {
  double learning_rate = 0.001;  ///< the tutorial's SGD(lr=0.001, momentum=0.9)
  double momentum = 0.9;
  Precision precision = Precision::kFp32;
  Layout layout = Layout::kNchw;
  /// Capture forward, loss, backward and optimizer once as a CUDA graph and replay it each step
  /// (CUDA devices only); only the host-to-device copy runs eagerly.
  bool cuda_graph = false;
  /// Dynamic loss scaling: always with fp16, where small gradients would underflow; `force` turns
  /// it on for the other precisions too (tests, or bf16 users who want it).
  bool force_loss_scaling = false;
  LossScalerOptions scaler;
  /// Data parallelism: called with the flat gradient buffer after backward and before the
  /// update, to average it over the ranks in place (dist::ProcessGroup::average_). Not with graphs.
  std::function<void(torch::Tensor&)> reduce_gradients;
  /// Data parallelism in one process: the forward through LibTorch's
  /// torch::nn::parallel::data_parallel over these CUDA devices (the first must be the step's
  /// device, where the batch, loss, gradients and update live). fp32 only; not with graphs.
  std::vector<torch::Device> data_parallel;

  /// Plain SGD with these hyper-parameters, every variant at its default.
  static StepOptions sgd(double learning_rate, double momentum) {
    StepOptions o;
    o.learning_rate = learning_rate;
    o.momentum = momentum;
    return o;
  }
};

/// One tutorial training step on a device: host-to-device copy of the batch (non_blocking
/// from pinned memory on a GPU; on the CPU only the conversion to channels_last, if chosen),
/// forward, cross-entropy loss, backward, SGD step with momentum (then gradients zeroed for the
/// next step), with torch::optim::SGD's exact arithmetic. Parameters and gradients live in one
/// flat fp32 buffer each (every parameter and its .grad is a view into it, in the chosen memory
/// format), so zeroing and the SGD update are four tensor operations instead of three per
/// parameter. Device input buffers are reused.
///
/// Variants (StepOptions): autocast precision; channels_last; dynamic loss scaling, where a step
/// whose unscaled gradients hold inf/NaN leaves weights and momentum untouched; CUDA-graph replay.
/// Throws InputError for a variant the device cannot run.
class TrainStep {
 public:
  TrainStep(models::Classifier model, torch::Device device, StepOptions options = {});

  /// Queues one step; returns the loss (on the device: reading it waits for the step).
  torch::Tensor run(data::HostBatch& batch);
  /// The same step with a timeline mark at each phase boundary; returns per-phase ms.
  /// Waits for the device once, at the end. Not for CUDA-graph steps (one replay has no phases).
  std::array<double, kPhaseCount> run_instrumented(data::HostBatch& batch, backend::Timeline& timeline);

  /// A copy of everything a step changes (weights, momentum, BatchNorm statistics, the scaler's state), taken after at
  /// least one step (before it the momentum does not exist yet: std::logic_error).
  std::vector<torch::Tensor> snapshot() const;
  /// Puts a snapshot back, in place (the same buffers, so a captured graph stays valid): the next step is the one that
  /// followed the snapshot. A benchmark's repetitions each start from one (training changes what a step costs: a
  /// kept `net` slowed by 16% over ten repetitions of ~150 steps on the CPU).
  void restore(const std::vector<torch::Tensor>& snapshot);

  /// Zeroes the gradients: after a step that failed part-way (an out-of-memory error in backward),
  /// so the next step starts clean. Weights and optimizer state are untouched by a failed step.
  void zero_grad() { flat_grads_.zero_(); }
  /// Bytes of the parameters, of their gradients and of the optimizer state (momentum, after the first step).
  std::int64_t parameter_bytes() const { return flat_params_.numel() * flat_params_.element_size(); }
  std::int64_t optimizer_state_bytes() const {
    return momentum_.defined() ? momentum_.numel() * momentum_.element_size() : 0;
  }

  const torch::Device& device() const { return device_; }
  const StepOptions& options() const { return options_; }
  /// Every parameter as one flat buffer (the parameters are views into it): broadcast it from
  /// rank 0 so all ranks start equal.
  torch::Tensor& flat_parameters() { return flat_params_; }
  /// The loss scaler, or nullptr when the step does not scale.
  const LossScaler* scaler() const { return scaler_ ? &*scaler_ : nullptr; }
  const models::Classifier& model() const { return model_; }

 private:
  template <typename Mark>
  torch::Tensor step(data::HostBatch& batch, Mark&& mark);
  torch::Tensor copy_inputs(data::HostBatch& batch, torch::Tensor& images);
  template <typename Mark>
  torch::Tensor compute(const torch::Tensor& images, const torch::Tensor& labels, Mark&& mark);
  torch::Tensor graph_step(data::HostBatch& batch);

  void flatten_parameters();
  void sgd_step();
  void masked_sgd_step(const torch::Tensor& found_inf);
  /// Everything a step changes (weights, momentum, BatchNorm statistics, scaler state).
  std::vector<torch::Tensor> mutable_state() const;

  models::Classifier model_;
  torch::Device device_;
  StepOptions options_;
  torch::Tensor flat_params_, flat_grads_, momentum_;  // momentum_ is undefined until the first step
  torch::Tensor device_images_, device_labels_;
  std::optional<LossScaler> scaler_;
  std::unique_ptr<backend::CapturedWork> graph_;
  torch::Tensor graph_loss_;  // the captured step's loss: overwritten by each replay
};

/// Top-1 accuracy of `model` on `dataset` (eval mode, no grad), in [0, 1]. Restores train mode.
double evaluate_accuracy(const models::Classifier& model, const data::Dataset& dataset,
                         const torch::Device& device, std::int64_t batch_size = 500);

}  // namespace torchprobe::train
