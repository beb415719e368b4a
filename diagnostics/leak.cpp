#include "diagnostics/leak.h"

#include <fmt/format.h>
#include <torch/nn/functional/loss.h>
#include <torch/optim/sgd.h>

#include "diagnostics/memory_search.h"
#include "torchprobe/units.h"
#include "torchprobe/backend.h"
#include "torchprobe/device_spec.h"
#include "torchprobe/memory.h"
#include "torchprobe/models/registry.h"

namespace torchprobe::diagnostics {
namespace {

struct Growth {
  double per_step = 0;
  bool steady = false;
};

// Growth per step from the first to the last sample; steady when it rose in at least
// `share` of the intervals and never fell back below the first sample.
template <typename Field>
Growth growth_of(const std::vector<LeakSample>& samples, Field field, double share) {
  Growth g;
  if (samples.size() < 2) return g;
  int rises = 0;
  bool fell_below_start = false;
  const double first = static_cast<double>(field(samples.front()));
  for (size_t i = 1; i < samples.size(); ++i) {
    rises += field(samples[i]) > field(samples[i - 1]);
    fell_below_start |= static_cast<double>(field(samples[i])) < first;
  }
  const auto intervals = static_cast<double>(samples.size() - 1);
  g.per_step = (static_cast<double>(field(samples.back())) - first) / intervals;
  g.steady = g.per_step > 0 && !fell_below_start && rises >= share * intervals;
  return g;
}

}  // namespace

LeakReport detect_leak(const std::function<void()>& step, const torch::Device& device, const LeakOptions& options) {
  const backend::CpuAllocationCounter counter;  // CPU tensor bytes (GPU: the caching allocator's own stats)
  LeakReport report;
  report.device = device_string(device);
  report.steps = options.steps;
  for (int i = 0; i < options.warmup; ++i) step();
  for (int i = 0; i < options.steps; ++i) {
    step();
    backend::synchronize(device);
    const auto stats = backend::allocator_stats(device);
    report.samples.push_back({i + 1, stats.allocated.current, stats.live_allocations, host_heap_bytes()});
  }
  const double share = options.steady_share;
  const Growth tensors = growth_of(report.samples, [](const LeakSample& s) { return s.tensor_bytes; }, share);
  const Growth count = growth_of(report.samples, [](const LeakSample& s) { return s.live_tensors; }, share);
  const Growth heap = growth_of(report.samples, [](const LeakSample& s) { return s.heap_bytes; }, share);
  report.tensor_bytes_per_step = tensors.per_step;
  report.live_tensors_per_step = count.per_step;
  report.heap_bytes_per_step = heap.per_step;
  const bool tensor_leak = tensors.steady || count.steady;
  const bool heap_leak = heap.steady && heap.per_step >= options.heap_noise_bytes_per_step;
  report.leak = tensor_leak || heap_leak;
  const std::string numbers =
      fmt::format("tensor memory {:+.0f} B and {:+.2f} live tensors per step, host heap {}{} per step over {} steps",
                  tensors.per_step, count.per_step, heap.per_step >= 0 ? "+" : "-", units::format_bytes(std::abs(heap.per_step)),
                  options.steps);
  if (tensor_leak) {
    report.verdict = fmt::format(
        "LEAK: {}. Tensors from past steps stay alive{}: the classic cause is keeping each step's loss (or outputs) as a "
        "tensor, e.g. losses.push_back(loss) or total_loss = total_loss + loss, which also keeps its autograd graph. Keep "
        "the value instead: loss.item<float>() (Python: total_loss += loss.item()), or loss.detach() for tensors you "
        "must keep.",
        numbers, heap_leak ? " together with their autograd graphs (the host heap grows too)" : "");
  } else if (heap_leak) {
    report.verdict = fmt::format(
        "LEAK: {}. Tensor memory is flat but host memory grows: autograd graphs or other C++ objects are kept from step "
        "to step (a tensor with a grad_fn kept across steps, e.g. total_loss = total_loss + loss); keep values "
        "(loss.item<float>()) or detach().",
        numbers);
  } else {
    report.verdict = fmt::format("no leak: {} (flat after {} warm-up steps).", numbers, options.warmup);
  }
  return report;
}

std::string leak_loop_name(LeakLoop loop) { return loop == LeakLoop::kCorrect ? "correct_loop" : "kept_losses"; }

LeakReport run_leak_scenario(LeakLoop loop, const std::string& model_name, const torch::Device& device,
                             const LeakOptions& options, std::int64_t batch) {
  auto model = models::make_model(model_name);
  model->to(device);
  model->train();
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.001).momentum(0.9));
  const torch::Tensor images = torch::randn({batch, 3, 32, 32}, torch::TensorOptions().device(device));
  const torch::Tensor labels = torch::randint(10, {batch}, torch::TensorOptions().dtype(torch::kLong).device(device));
  std::vector<torch::Tensor> kept;  // the leak: loss tensors, each holding its graph
  std::vector<double> values;       // the fix: plain numbers
  kept.reserve(static_cast<size_t>(options.steps + options.warmup));
  values.reserve(static_cast<size_t>(options.steps + options.warmup));
  const auto step = [&] {
    optimizer.zero_grad();
    const torch::Tensor loss = torch::nn::functional::cross_entropy(model->forward(images), labels);
    loss.backward();
    optimizer.step();
    if (loop == LeakLoop::kKeptLosses) {
      kept.push_back(loss);
    } else {
      values.push_back(loss.item<double>());
    }
  };
  LeakReport report = detect_leak(step, device, options);
  report.scenario = leak_loop_name(loop);
  report.model = model_name;
  return report;
}

std::string leak_text(const LeakReport& r) {
  return fmt::format("{} on {}: {}\n", r.scenario.empty() ? "loop" : r.scenario, r.device, r.verdict);
}

}  // namespace torchprobe::diagnostics
