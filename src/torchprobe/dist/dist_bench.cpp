#include "torchprobe/dist/dist_bench.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <torch/utils.h>

#include <algorithm>
#include <chrono>
#include <functional>

#include "torchprobe/backend.h"
#include "torchprobe/data/batcher.h"
#include "torchprobe/input_error.h"
#include "torchprobe/models/registry.h"
#include "torchprobe/measure.h"
#include "torchprobe/stats.h"
#include "torchprobe/train/train_step.h"

namespace torchprobe::dist {
namespace {

/// Every rank's value, in rank order: each writes its slot of a zero vector, then a sum all-reduce
/// (on the group's device: NCCL reduces CUDA tensors only).
std::vector<double> per_rank(ProcessGroup& group, double value) {
  torch::Tensor slots = torch::zeros({group.world_size()}, torch::kFloat64);
  slots[group.rank()] = value;
  slots = slots.to(group.device());
  group.all_reduce_sum_(slots);
  slots = slots.cpu();
  return {slots.data_ptr<double>(), slots.data_ptr<double>() + group.world_size()};
}

/// The slowest rank decides a collective's time.
double max_over_ranks(ProcessGroup& group, double value) {
  const auto all = per_rank(group, value);
  return *std::max_element(all.begin(), all.end());
}

/// The measurement policy for a collective loop: exactly `warmup` untimed calls, then every call
/// timed on its own (marks between calls: CUDA events on a GPU, so no host synchronisation between
/// them; the host clock on the CPU). Every rank must make the same calls, so no time budget.
measure::Sampler collective_sampler(const torch::Device& device, int warmup, std::function<void()> call) {
  measure::Policy policy = measure::default_policy(device);
  policy.warmup_s = 0.0;
  policy.min_warmup_calls = warmup;
  policy.calls_per_sample = 1;
  return measure::Sampler(policy, measure::device_clock(device), std::move(call));
}

/// Median ms of `steps` steps after `warmup`.
double step_ms(train::TrainStep& step, data::Batcher& batcher, int steps, int warmup) {
  auto sampler = collective_sampler(step.device(), warmup, [&] { step.run(batcher.next()); });
  if (warmup > 0) sampler.warm_up();
  return median(sampler.per_call(steps));
}

/// The scaling baseline: a plain step of `model` (weights from seed 0) on one device, alone.
double alone_ms(const std::string& model, const torch::Device& device, data::Batcher& batcher, int steps, int warmup) {
  torch::manual_seed(0);
  train::TrainStep alone(models::make_model(model), device);
  return step_ms(alone, batcher, steps, warmup);
}

/// `rows` synthetic images (seeded) in a batcher of `batch`, staged as the device wants.
data::Batcher synthetic_batcher(std::int64_t batch, std::uint64_t seed, const torch::Device& device) {
  auto shard = std::make_shared<const data::Dataset>(data::make_synthetic(std::max<std::int64_t>(batch * 4, 64), 1000 + seed));
  return data::Batcher(shard, batch, backend::wants_pinned_staging(device), seed);
}

std::string join_devices(const std::vector<torch::Device>& devices) {
  std::string out;
  for (const auto& d : devices) out += (out.empty() ? "" : ",") + d.str();
  return out;
}

void finish(DistTrainResult& result) {
  const double slowest = *std::max_element(result.rank_ms_per_step.begin(), result.rank_ms_per_step.end());
  result.global_images_per_s = static_cast<double>(result.world_size * result.batch_per_rank) / (slowest / 1e3);
  result.single_images_per_s = static_cast<double>(result.batch_per_rank) / (result.single_ms_per_step / 1e3);
  result.scaling_efficiency = result.global_images_per_s / (result.world_size * result.single_images_per_s);
}

}  // namespace

std::vector<AllReduceRow> all_reduce_sweep(ProcessGroup& group, std::int64_t min_bytes, std::int64_t max_bytes,
                                           int iterations) {
  std::vector<AllReduceRow> rows;
  const double n = group.world_size();
  for (std::int64_t bytes = std::max<std::int64_t>(min_bytes, 4); bytes <= max_bytes; bytes *= 2) {
    torch::Tensor t = torch::ones({bytes / 4}, torch::TensorOptions().dtype(torch::kFloat32).device(group.device()));
    auto sampler = collective_sampler(group.device(), /*warmup=*/2, [&] { group.all_reduce_sum_(t); });
    sampler.warm_up();
    AllReduceRow row;
    row.bytes = t.numel() * 4;
    row.median_us = max_over_ranks(group, median(sampler.per_call(iterations)) * 1e3);
    row.algbw_gbps = static_cast<double>(row.bytes) / (row.median_us * 1e-6) / 1e9;
    row.busbw_gbps = row.algbw_gbps * 2.0 * (n - 1.0) / n;
    rows.push_back(row);
  }
  return rows;
}

DistTrainResult distributed_train(ProcessGroup& group, const std::string& model, std::int64_t batch_per_rank,
                                  int steps, int warmup, std::int64_t bucket_bytes) {
  DistTrainResult result;
  result.model = model;
  result.engine = group.backend_name();
  result.device = group.device().str();
  result.world_size = group.world_size();
  result.batch_per_rank = batch_per_rank;
  result.steps = steps;
  const torch::Device device = group.device();
  // Each rank its own shard: synthetic images seeded by rank.
  data::Batcher batcher = synthetic_batcher(batch_per_rank, static_cast<std::uint64_t>(group.rank()), device);

  // Single-process baseline: rank 0 alone while the others wait, so it has the machine to itself.
  double single = 0.0;
  group.run_on_rank0_alone([&] { single = alone_ms(model, device, batcher, steps, warmup); });
  result.single_ms_per_step = max_over_ranks(group, single);

  torch::manual_seed(static_cast<std::uint64_t>(group.rank()));
  train::StepOptions options;
  int calls = 0;
  options.reduce_gradients = [&](torch::Tensor& grads) { calls = group.average_(grads, bucket_bytes); };
  train::TrainStep step(models::make_model(model), device, options);
  group.broadcast_(step.flat_parameters(), /*root=*/0);
  const double mine = step_ms(step, batcher, steps, warmup);
  result.all_reduce_calls_per_step = calls;
  result.rank_ms_per_step = per_rank(group, mine);
  finish(result);
  return result;
}

DistTrainResult data_parallel_train(const std::string& model, const std::vector<torch::Device>& devices,
                                    std::int64_t batch_per_device, int steps, int warmup) {
  const std::string reason = backend::data_parallel_unsupported_reason(devices);
  if (!reason.empty()) throw InputError(reason);
  DistTrainResult result;
  result.model = model;
  result.engine = "data_parallel";
  result.device = join_devices(devices);
  result.world_size = static_cast<int>(devices.size());
  result.batch_per_rank = batch_per_device;
  result.steps = steps;
  const torch::Device first = devices.front();
  {
    data::Batcher batcher = synthetic_batcher(batch_per_device, 0, first);
    result.single_ms_per_step = alone_ms(model, first, batcher, steps, warmup);
  }
  torch::manual_seed(0);
  data::Batcher batcher = synthetic_batcher(batch_per_device * result.world_size, 0, first);
  train::StepOptions options;
  options.data_parallel = devices;
  train::TrainStep step(models::make_model(model), first, options);
  result.rank_ms_per_step = {step_ms(step, batcher, steps, warmup)};
  // One process: its step time stands for every device.
  result.rank_ms_per_step.resize(devices.size(), result.rank_ms_per_step.front());
  finish(result);
  return result;
}

std::string all_reduce_json(const ProcessGroup& group, const std::vector<AllReduceRow>& rows) {
  nlohmann::ordered_json out = {{"benchmark", "all_reduce"}, {"backend", group.backend_name()},
                                {"device", group.device().is_cuda() ? "cuda" : "cpu"}, {"world_size", group.world_size()},
                                {"dtype", "fp32"}, {"op", "sum"}, {"rows", nlohmann::ordered_json::array()}};
  for (const auto& r : rows) {
    out["rows"].push_back({{"bytes", r.bytes}, {"median_us", r.median_us}, {"algbw_gbps", r.algbw_gbps},
                           {"busbw_gbps", r.busbw_gbps}});
  }
  return out.dump(2);
}

std::string train_json(const DistTrainResult& r) {
  return nlohmann::ordered_json{{"benchmark", r.engine == "data_parallel" ? "data_parallel_train_step" : "distributed_train_step"},
                                {"backend", r.engine}, {"device", r.device},
                                {"model", r.model}, {"world_size", r.world_size}, {"batch_per_rank", r.batch_per_rank},
                                {"steps", r.steps}, {"all_reduce_calls_per_step", r.all_reduce_calls_per_step},
                                {"rank_ms_per_step", r.rank_ms_per_step}, {"single_ms_per_step", r.single_ms_per_step},
                                {"global_images_per_s", r.global_images_per_s},
                                {"single_images_per_s", r.single_images_per_s},
                                {"scaling_efficiency", r.scaling_efficiency}}
      .dump(2);
}

std::string all_reduce_text(const ProcessGroup& group, const std::vector<AllReduceRow>& rows) {
  std::string out = fmt::format("all-reduce ({}, sum, fp32), {} ranks\n{:>12} {:>12} {:>12} {:>12}\n",
                                group.backend_name(), group.world_size(),
                                "bytes", "time us", "algbw GB/s", "busbw GB/s");
  for (const auto& r : rows) {
    out += fmt::format("{:>12} {:>12.1f} {:>12.3f} {:>12.3f}\n", r.bytes, r.median_us, r.algbw_gbps, r.busbw_gbps);
  }
  return out;
}

std::string train_text(const DistTrainResult& r) {
  if (r.engine == "data_parallel") {
    return fmt::format(
        "data_parallel train step: {} over {} ({} devices x batch {}, one process)\n"
        "  step {:.2f} ms, {:.1f} images/s; one device alone {:.1f} images/s ({:.2f} ms/step)\n"
        "  scaling efficiency {:.1f}% (data_parallel / ({} x one device))\n",
        r.model, r.device, r.world_size, r.batch_per_rank, r.rank_ms_per_step.front(), r.global_images_per_s,
        r.single_images_per_s, r.single_ms_per_step, 100.0 * r.scaling_efficiency, r.world_size);
  }
  std::string ranks;
  for (size_t i = 0; i < r.rank_ms_per_step.size(); ++i) ranks += fmt::format("{}{:.2f}", i ? ", " : "", r.rank_ms_per_step[i]);
  return fmt::format(
      "distributed train step: {} on {} (rank 0), {}, {} ranks x batch {} ({} all-reduce calls per step)\n"
      "  step ms per rank: {}\n  global {:.1f} images/s; one process alone {:.1f} images/s ({:.2f} ms/step)\n"
      "  scaling efficiency {:.1f}% (global / ({} x single))\n",
      r.model, r.device, r.engine, r.world_size, r.batch_per_rank, r.all_reduce_calls_per_step, ranks,
      r.global_images_per_s, r.single_images_per_s, r.single_ms_per_step, 100.0 * r.scaling_efficiency, r.world_size);
}

}  // namespace torchprobe::dist
