#include "torchprobe/train/loss_scaler.h"

#include <fmt/format.h>

#include <cmath>

#include "torchprobe/input_error.h"

namespace torchprobe::train {

LossScaler::LossScaler(const torch::Device& device, LossScalerOptions options) : options_(options) {
  if (!(options.init_scale > 0.0) || !std::isfinite(options.init_scale)) {
    throw InputError(fmt::format("loss scale must be a positive finite number, got {}", options.init_scale));
  }
  if (!(options.growth_factor > 1.0)) {
    throw InputError(fmt::format("loss-scale growth factor must be > 1, got {}", options.growth_factor));
  }
  if (!(options.backoff_factor > 0.0 && options.backoff_factor < 1.0)) {
    throw InputError(fmt::format("loss-scale backoff factor must be in (0, 1), got {}", options.backoff_factor));
  }
  if (options.growth_interval < 1) {
    throw InputError(fmt::format("loss-scale growth interval must be >= 1 step, got {}", options.growth_interval));
  }
  const auto f32 = torch::TensorOptions().dtype(torch::kFloat32).device(device);
  scale_ = torch::full({}, options.init_scale, f32);
  good_steps_ = torch::zeros({}, f32);
  skipped_ = torch::zeros({}, f32);
}

torch::Tensor LossScaler::scale(const torch::Tensor& loss) const { return loss * scale_.to(loss.scalar_type()); }

torch::Tensor LossScaler::unscale_(torch::Tensor& grads) const {
  torch::NoGradGuard no_grad;
  grads.mul_(scale_.reciprocal());
  return torch::isfinite(grads).all().logical_not().to(torch::kFloat32);
}

void LossScaler::update(const torch::Tensor& found_inf) {
  torch::NoGradGuard no_grad;
  const torch::Tensor bad = found_inf.gt(0);
  const torch::Tensor counted = good_steps_ + 1;
  const torch::Tensor grown = scale_ * options_.growth_factor;
  const torch::Tensor grow = bad.logical_not().logical_and(counted.ge(options_.growth_interval));
  // Each step's new values are computed before any state changes, then written in place so the
  // tensors keep their addresses (a captured graph refers to them).
  const torch::Tensor new_scale =
      torch::where(bad, scale_ * options_.backoff_factor,
                   torch::where(grow.logical_and(torch::isfinite(grown)), grown, scale_));
  const torch::Tensor new_count = torch::where(bad.logical_or(grow), torch::zeros_like(counted), counted);
  scale_.copy_(new_scale);
  good_steps_.copy_(new_count);
  skipped_.add_(found_inf);
}

double LossScaler::scale_value() const { return scale_.item<double>(); }
std::int64_t LossScaler::good_steps() const { return static_cast<std::int64_t>(good_steps_.item<double>()); }
std::int64_t LossScaler::skipped_steps() const { return static_cast<std::int64_t>(skipped_.item<double>()); }

}  // namespace torchprobe::train
