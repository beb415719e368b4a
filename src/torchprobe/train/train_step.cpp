#include "torchprobe/train/train_step.h"

#include <torch/nn/functional/loss.h>
#include <torch/utils.h>

#include <stdexcept>

#include "torchprobe/input_error.h"
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

constexpr int kGraphWarmupRuns = 3;  // eager runs on the capture stream before capture, as torch.cuda.graphs advises

/// A 4-D view of `flat` (numel = product of sizes) laid out channels_last: NHWC in memory.
torch::Tensor channels_last_view(const torch::Tensor& flat, torch::IntArrayRef sizes) {
  return flat.view({sizes[0], sizes[2], sizes[3], sizes[1]}).permute({0, 3, 1, 2});
}

}  // namespace

std::string precision_name(Precision precision) {
  switch (precision) {
    case Precision::kFp32: return "fp32";
    case Precision::kBf16: return "bf16";
    case Precision::kFp16: return "fp16";
  }
  return "?";
}

std::string layout_name(Layout layout) { return layout == Layout::kChannelsLast ? "cl" : "nchw"; }

Precision parse_precision(const std::string& name) {
  for (auto p : {Precision::kFp32, Precision::kBf16, Precision::kFp16}) {
    if (name == precision_name(p)) return p;
  }
  throw InputError("unknown precision '" + name + "' (expected fp32, bf16 or fp16)");
}

Layout parse_layout(const std::string& name) {
  if (name == "nchw") return Layout::kNchw;
  if (name == "cl" || name == "channels_last") return Layout::kChannelsLast;
  throw InputError("unknown memory layout '" + name + "' (expected nchw, or cl for channels_last)");
}

torch::ScalarType compute_dtype(Precision precision) {
  switch (precision) {
    case Precision::kBf16: return torch::kBFloat16;
    case Precision::kFp16: return torch::kHalf;
    case Precision::kFp32: break;
  }
  return torch::kFloat32;
}

TrainStep::TrainStep(models::Classifier model, torch::Device device, StepOptions options)
    : model_(std::move(model)), device_(device), options_(options) {
  if (options_.precision != Precision::kFp32) {
    const std::string reason = backend::autocast_unsupported_reason(device_, compute_dtype(options_.precision));
    if (!reason.empty()) throw InputError(precision_name(options_.precision) + " on " + device_.str() + ": " + reason);
  }
  if (options_.cuda_graph) {
    const std::string reason = backend::capture_unsupported_reason(device_);
    if (!reason.empty()) throw InputError(reason);
    if (options_.reduce_gradients) throw InputError("a CUDA-graph step cannot call a host-side gradient all-reduce");
  }
  if (!options_.data_parallel.empty()) {
    const std::string reason = backend::data_parallel_unsupported_reason(options_.data_parallel);
    if (!reason.empty()) throw InputError(reason);
    if (options_.data_parallel.front() != device_) {
      throw InputError("data_parallel's first device (" + options_.data_parallel.front().str() +
                       ") must be the step's device (" + device_.str() + ")");
    }
    if (options_.cuda_graph) throw InputError("data_parallel replicates the model on every step: it cannot be captured as a CUDA graph");
    if (options_.precision != Precision::kFp32) {
      // Autocast is thread-local state, and data_parallel runs the replicas on other threads.
      throw InputError("data_parallel steps run in fp32: autocast does not reach data_parallel's replica threads");
    }
  }
  model_->to(device_);
  model_->train();
  flatten_parameters();
  if (options_.precision == Precision::kFp16 || options_.force_loss_scaling) scaler_.emplace(device_, options_.scaler);
  // The masked (loss-scaled) update and a captured graph need the momentum buffer to exist before
  // the first step: zeros make the first update buf = 0 * momentum + grad = grad, as SGD's clone does.
  if (scaler_ || options_.cuda_graph) momentum_ = torch::zeros_like(flat_params_);
}

void TrainStep::flatten_parameters() {
  torch::NoGradGuard no_grad;
  const auto params = model_->parameters();
  std::int64_t total = 0;
  for (const auto& p : params) total += p.numel();
  const auto options = params.front().options();
  flat_params_ = torch::empty({total}, options);
  flat_grads_ = torch::zeros({total}, options);
  const bool channels_last = options_.layout == Layout::kChannelsLast;
  std::int64_t offset = 0;
  for (auto p : params) {
    const std::int64_t n = p.numel();
    const auto view = [&](const torch::Tensor& flat) {
      torch::Tensor slot = flat.narrow(0, offset, n);
      return channels_last && p.dim() == 4 ? channels_last_view(slot, p.sizes()) : slot.view(p.sizes());
    };
    torch::Tensor param_view = view(flat_params_);
    param_view.copy_(p);
    p.set_data(param_view);
    // Autograd accumulates in place into a defined .grad, so backward fills flat_grads_.
    p.mutable_grad() = view(flat_grads_);
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

void TrainStep::masked_sgd_step(const torch::Tensor& found_inf) {
  // The same update, skipped on the device (no host round trip) when found_inf is 1: the momentum
  // keeps its old value and the parameters move by 0 x momentum.
  torch::NoGradGuard no_grad;
  momentum_.copy_(torch::where(found_inf.gt(0), momentum_, momentum_ * options_.momentum + flat_grads_));
  flat_params_.add_(momentum_ * (1 - found_inf), -options_.learning_rate);
  flat_grads_.zero_();
}

std::vector<torch::Tensor> TrainStep::mutable_state() const {
  std::vector<torch::Tensor> state = {flat_params_, momentum_};
  for (const auto& b : model_->buffers()) state.push_back(b);
  if (scaler_) {
    for (const auto& t : scaler_->state()) state.push_back(t);
  }
  return state;
}

std::vector<torch::Tensor> TrainStep::snapshot() const {
  std::vector<torch::Tensor> saved;
  for (const auto& t : mutable_state()) {
    if (!t.defined()) throw std::logic_error("TrainStep::snapshot: take it after the first step");
    saved.push_back(t.clone());
  }
  return saved;
}

void TrainStep::restore(const std::vector<torch::Tensor>& snapshot) {
  torch::NoGradGuard no_grad;
  const auto state = mutable_state();
  if (snapshot.size() != state.size()) throw std::logic_error("TrainStep::restore: not this step's snapshot");
  for (size_t i = 0; i < state.size(); ++i) state[i].copy_(snapshot[i]);
}

torch::Tensor TrainStep::copy_inputs(data::HostBatch& batch, torch::Tensor& images) {
  const bool channels_last = options_.layout == Layout::kChannelsLast;
  if (!device_.is_cuda()) {
    images = channels_last ? batch.images.contiguous(torch::MemoryFormat::ChannelsLast) : batch.images;
    return batch.labels;
  }
  if (!device_images_.defined() || device_images_.sizes() != batch.images.sizes()) {
    if (graph_) throw InputError("a CUDA-graph step replays one batch size; build a new TrainStep for another");
    const auto format = channels_last ? torch::MemoryFormat::ChannelsLast : torch::MemoryFormat::Contiguous;
    device_images_ = torch::empty(batch.images.sizes(),
                                  batch.images.options().device(device_).pinned_memory(false).memory_format(format));
    device_labels_ = torch::empty(batch.labels.sizes(), batch.labels.options().device(device_).pinned_memory(false));
  }
  device_images_.copy_(batch.images, /*non_blocking=*/true);
  device_labels_.copy_(batch.labels, /*non_blocking=*/true);
  batch.in_flight = backend::record_fence(device_);
  images = device_images_;
  return device_labels_;
}

template <typename Mark>
torch::Tensor TrainStep::compute(const torch::Tensor& images, const torch::Tensor& labels, Mark&& mark) {
  torch::Tensor logits, loss;
  {
    // As torch.autocast: forward and loss in the region, backward outside it.
    std::optional<backend::AutocastGuard> autocast;
    if (options_.precision != Precision::kFp32) {
      autocast.emplace(device_, compute_dtype(options_.precision), /*cache=*/!options_.cuda_graph);
    }
    {
      nvtx::Range range(phase_range(Phase::kForward));
      logits = options_.data_parallel.empty() ? model_->forward(images)
                                              : backend::data_parallel_forward(model_, images, options_.data_parallel);
    }
    mark();
    {
      nvtx::Range range(phase_range(Phase::kLoss));
      loss = torch::nn::functional::cross_entropy(logits, labels);
    }
  }
  mark();
  {
    nvtx::Range range(phase_range(Phase::kBackward));
    (scaler_ ? scaler_->scale(loss) : loss).backward();
  }
  mark();
  {
    nvtx::Range range(phase_range(Phase::kOptimizer));
    if (options_.reduce_gradients) options_.reduce_gradients(flat_grads_);
    if (scaler_) {
      const torch::Tensor found_inf = scaler_->unscale_(flat_grads_);
      masked_sgd_step(found_inf);
      scaler_->update(found_inf);
    } else {
      sgd_step();
    }
  }
  mark();
  return loss.detach();
}

template <typename Mark>
torch::Tensor TrainStep::step(data::HostBatch& batch, Mark&& mark) {
  torch::Tensor images, labels;
  {
    nvtx::Range range(phase_range(Phase::kH2D));
    labels = copy_inputs(batch, images);
  }
  mark();
  return compute(images, labels, mark);
}

torch::Tensor TrainStep::graph_step(data::HostBatch& batch) {
  {
    nvtx::Range range(phase_range(Phase::kH2D));
    torch::Tensor images;
    copy_inputs(batch, images);
  }
  if (!graph_) {
    // The warm-up runs before capture are real steps: undo them, so the first replay is step one.
    const auto saved = snapshot();  // the momentum exists from the start with a graph
    graph_ = backend::capture_work(
        device_, [this] { graph_loss_ = compute(device_images_, device_labels_, [] {}); }, kGraphWarmupRuns);
    restore(saved);
  }
  graph_->replay();
  return graph_loss_;
}

torch::Tensor TrainStep::run(data::HostBatch& batch) {
  if (options_.cuda_graph) return graph_step(batch);
  return step(batch, [] {});
}

std::array<double, kPhaseCount> TrainStep::run_instrumented(data::HostBatch& batch, backend::Timeline& timeline) {
  if (options_.cuda_graph) throw std::logic_error("run_instrumented: a CUDA-graph step replays as one unit, without phases");
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
