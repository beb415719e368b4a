#pragma once
// Dynamic loss scaling for fp16 training, as torch.cuda.amp.GradScaler does it (LibTorch's C++
// API has no GradScaler). All state lives on the device and no call waits for it, so a scaled
// step can be captured in a CUDA graph.
#include <cstdint>
#include <vector>

#include <torch/types.h>

namespace torchprobe::train {

struct LossScalerOptions {
  double init_scale = 65536.0;  ///< GradScaler's defaults
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  int growth_interval = 2000;  ///< consecutive steps without inf/NaN before the scale grows
};

class LossScaler {
 public:
  /// Throws InputError for a non-positive scale, growth <= 1, backoff outside (0, 1) or interval < 1.
  LossScaler(const torch::Device& device, LossScalerOptions options = {});

  /// loss x scale: backward of this gives gradients x scale, lifting small fp16 ones above underflow.
  torch::Tensor scale(const torch::Tensor& loss) const;
  /// Divides `grads` by the scale in place and returns a 0-dim float tensor on the device: 1 when
  /// any gradient is inf or NaN (the step must be skipped), else 0.
  torch::Tensor unscale_(torch::Tensor& grads) const;
  /// After each step: on inf/NaN multiplies the scale by the backoff factor and restarts the
  /// count of good steps; after growth_interval good steps in a row multiplies it by the growth
  /// factor (unless that would overflow to inf) and restarts the count.
  void update(const torch::Tensor& found_inf);

  /// The device tensors, for saving and restoring around a CUDA-graph capture.
  std::vector<torch::Tensor> state() const { return {scale_, good_steps_, skipped_}; }

  // Host reads: each waits for the device.
  double scale_value() const;
  std::int64_t good_steps() const;
  std::int64_t skipped_steps() const;  ///< steps skipped for inf/NaN gradients so far
  const LossScalerOptions& options() const { return options_; }

 private:
  LossScalerOptions options_;
  torch::Tensor scale_;       // 0-dim float32
  torch::Tensor good_steps_;  // 0-dim float32 (a count; exact up to 2^24)
  torch::Tensor skipped_;     // 0-dim float32
};

}  // namespace torchprobe::train
