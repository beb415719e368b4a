#pragma once
#include <array>
#include <string>

#include <torch/types.h>

#include "torchprobe/backend.h"
#include "torchprobe/data/batcher.h"
#include "torchprobe/models/classifier.h"

namespace torchprobe::train {

/// The phases of one step, in order. Names are used in counters, reports and NVTX ranges.
enum class Phase { kH2D = 0, kForward, kLoss, kBackward, kOptimizer };
constexpr int kPhaseCount = 5;
constexpr std::array<const char*, kPhaseCount> kPhaseNames = {"h2d", "forward", "loss", "backward", "optimizer"};

struct StepOptions {
  double learning_rate = 0.001;  ///< the tutorial's SGD(lr=0.001, momentum=0.9)
  double momentum = 0.9;
};

/// One tutorial training step on a device: host-to-device copy of the batch (non_blocking
/// from pinned memory on a GPU; nothing to copy on the CPU), forward, cross-entropy loss,
/// backward, SGD step with momentum (then gradients zeroed for the next step), with
/// torch::optim::SGD's exact arithmetic. Parameters and gradients live in one flat buffer each
/// (every parameter and its .grad is a view into it), so zeroing and the SGD update are four
/// tensor operations instead of three per parameter. Device input buffers are reused.
class TrainStep {
 public:
  TrainStep(models::Classifier model, torch::Device device, StepOptions options = {});

  /// Queues one step; returns the loss (on the device: reading it waits for the step).
  torch::Tensor run(data::HostBatch& batch);
  /// The same step with a timeline mark at each phase boundary; returns per-phase ms.
  /// Waits for the device once, at the end.
  std::array<double, kPhaseCount> run_instrumented(data::HostBatch& batch, backend::Timeline& timeline);

  /// Zeroes the gradients: after a step that failed part-way (an out-of-memory error in backward),
  /// so the next step starts clean. Weights and optimizer state are untouched by a failed step.
  void zero_grad() { flat_grads_.zero_(); }
  /// Bytes of the parameters, of their gradients and of the optimizer state (momentum, after the first step).
  std::int64_t parameter_bytes() const { return flat_params_.numel() * flat_params_.element_size(); }
  std::int64_t optimizer_state_bytes() const {
    return momentum_.defined() ? momentum_.numel() * momentum_.element_size() : 0;
  }

  const torch::Device& device() const { return device_; }
  const models::Classifier& model() const { return model_; }

 private:
  template <typename Mark>
  torch::Tensor step(data::HostBatch& batch, Mark&& mark);

  void flatten_parameters();
  void sgd_step();

  models::Classifier model_;
  torch::Device device_;
  StepOptions options_;
  torch::Tensor flat_params_, flat_grads_, momentum_;  // momentum_ is undefined until the first step
  torch::Tensor device_images_, device_labels_;
};

/// Top-1 accuracy of `model` on `dataset` (eval mode, no grad), in [0, 1]. Restores train mode.
double evaluate_accuracy(const models::Classifier& model, const data::Dataset& dataset,
                         const torch::Device& device, std::int64_t batch_size = 500);

}  // namespace torchprobe::train
