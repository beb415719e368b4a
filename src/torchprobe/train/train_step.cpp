#include "torchprobe/train/train_step.h"

#include <torch/nn/functional/loss.h>
#include <torch/utils.h>

#include "torchprobe/nvtx.h"

namespace torchprobe::train {
namespace {

/// The NVTX range of each phase, registered once per process.
const nvtx::Name& phase_range(Phase phase) {
  static const nvtx::Name names[kPhaseCount] = {
      {kPhaseNames[0], nvtx::colors::kH2D},      {kPhaseNames[1], nvtx::colors::kForward},
      {kPhaseNames[2], nvtx::colors::kLoss},     {kPhaseNames[3], nvtx::colors::kBackward},
      {kPhaseNames[4], nvtx::colors::kOptimizer}};
  return names[static_cast<int>(phase)];
}

}  // namespace

TrainStep::TrainStep(models::Classifier model, torch::Device device, StepOptions options)
    : model_(std::move(model)), device_(device), options_(options) {
  model_->to(device_);
  model_->train();
  flatten_parameters();
}

void TrainStep::flatten_parameters() {
  torch::NoGradGuard no_grad;
  const auto params = model_->parameters();
  std::int64_t total = 0;
  for (const auto& p : params) total += p.numel();
  const auto options = params.front().options();
  flat_params_ = torch::empty({total}, options);
  flat_grads_ = torch::zeros({total}, options);
  std::int64_t offset = 0;
  for (auto p : params) {
    const std::int64_t n = p.numel();
    torch::Tensor slot = flat_params_.narrow(0, offset, n);
    slot.copy_(p.reshape({n}));
    p.set_data(slot.view(p.sizes()));
    // Autograd accumulates in place into a defined .grad, so backward fills flat_grads_.
    p.mutable_grad() = flat_grads_.narrow(0, offset, n).view(p.sizes());
    offset += n;
  }
}

void TrainStep::sgd_step() {
  // torch::optim::SGD with momentum, no dampening, weight decay or Nesterov:
  // buf = grad on the first step, then buf = momentum * buf + grad; p -= lr * buf.
  torch::NoGradGuard no_grad;
  if (!momentum_.defined()) {
    momentum_ = flat_grads_.clone();
  } else {
    momentum_.mul_(options_.momentum).add_(flat_grads_);
  }
  flat_params_.add_(momentum_, -options_.learning_rate);
  flat_grads_.zero_();
}

template <typename Mark>
torch::Tensor TrainStep::step(data::HostBatch& batch, Mark&& mark) {
  torch::Tensor images = batch.images, labels = batch.labels;
  {
    nvtx::Range range(phase_range(Phase::kH2D));
    if (device_.is_cuda()) {
      if (!device_images_.defined() || device_images_.sizes() != batch.images.sizes()) {
        device_images_ = torch::empty(batch.images.sizes(), batch.images.options().device(device_).pinned_memory(false));
        device_labels_ = torch::empty(batch.labels.sizes(), batch.labels.options().device(device_).pinned_memory(false));
      }
      device_images_.copy_(batch.images, /*non_blocking=*/true);
      device_labels_.copy_(batch.labels, /*non_blocking=*/true);
      batch.in_flight = backend::record_fence(device_);
      images = device_images_;
      labels = device_labels_;
    }
  }
  mark();
  torch::Tensor logits, loss;
  {
    nvtx::Range range(phase_range(Phase::kForward));
    logits = model_->forward(images);
  }
  mark();
  {
    nvtx::Range range(phase_range(Phase::kLoss));
    loss = torch::nn::functional::cross_entropy(logits, labels);
  }
  mark();
  {
    nvtx::Range range(phase_range(Phase::kBackward));
    loss.backward();
  }
  mark();
  {
    nvtx::Range range(phase_range(Phase::kOptimizer));
    sgd_step();
  }
  mark();
  return loss.detach();
}

torch::Tensor TrainStep::run(data::HostBatch& batch) {
  return step(batch, [] {});
}

std::array<double, kPhaseCount> TrainStep::run_instrumented(data::HostBatch& batch, backend::Timeline& timeline) {
  timeline.clear();
  timeline.mark();
  step(batch, [&timeline] { timeline.mark(); });
  const std::vector<double> ms = timeline.elapsed_ms();
  std::array<double, kPhaseCount> out{};
  for (int i = 0; i < kPhaseCount; ++i) out[i] = ms.at(static_cast<size_t>(i));
  return out;
}

double evaluate_accuracy(const models::Classifier& model, const data::Dataset& dataset,
                         const torch::Device& device, std::int64_t batch_size) {
  torch::NoGradGuard no_grad;
  model->eval();
  std::int64_t correct = 0;
  for (std::int64_t start = 0; start < dataset.size(); start += batch_size) {
    const std::int64_t end = std::min(start + batch_size, dataset.size());
    const torch::Tensor images = data::normalize_images(dataset.images.slice(0, start, end)).to(device);
    const torch::Tensor predicted = model->forward(images).argmax(/*dim=*/1).cpu();
    correct += predicted.eq(dataset.labels.slice(0, start, end)).sum().item<std::int64_t>();
  }
  model->train();
  return dataset.size() ? static_cast<double>(correct) / static_cast<double>(dataset.size()) : 0.0;
}

}  // namespace torchprobe::train
