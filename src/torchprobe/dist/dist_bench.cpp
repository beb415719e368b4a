#include "torchprobe/dist/dist_bench.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <torch/utils.h>

#include <algorithm>
#include <chrono>

#include "torchprobe/data/batcher.h"
#include "torchprobe/models/registry.h"
#include "torchprobe/stats.h"
#include "torchprobe/train/train_step.h"

namespace torchprobe::dist {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

/// Every rank's value, in rank order: each writes its slot of a zero vector, then a sum all-reduce.
std::vector<double> per_rank(ProcessGroup& group, double value) {
  torch::Tensor slots = torch::zeros({group.world_size()}, torch::kFloat64);
  slots[group.rank()] = value;
  group.all_reduce_sum_(slots);
  return {slots.data_ptr<double>(), slots.data_ptr<double>() + group.world_size()};
}

/// The slowest rank decides a collective's time.
double max_over_ranks(ProcessGroup& group, double value) {
  const auto all = per_rank(group, value);
  return *std::max_element(all.begin(), all.end());
}

double step_ms(train::TrainStep& step, data::Batcher& batcher, int steps, int warmup) {
  for (int i = 0; i < warmup; ++i) step.run(batcher.next());
  std::vector<double> ms;
  for (int i = 0; i < steps; ++i) {
    const auto start = Clock::now();
    step.run(batcher.next());
    ms.push_back(ms_since(start));
  }
  return median(ms);
}

}  // namespace

std::vector<AllReduceRow> all_reduce_sweep(ProcessGroup& group, std::int64_t min_bytes, std::int64_t max_bytes,
                                           int iterations) {
  std::vector<AllReduceRow> rows;
  const double n = group.world_size();
  for (std::int64_t bytes = std::max<std::int64_t>(min_bytes, 4); bytes <= max_bytes; bytes *= 2) {
    torch::Tensor t = torch::ones({bytes / 4}, torch::kFloat32);
    for (int i = 0; i < 2; ++i) group.all_reduce_sum_(t);
    std::vector<double> us;
    for (int i = 0; i < iterations; ++i) {
      const auto start = Clock::now();
      group.all_reduce_sum_(t);
      us.push_back(ms_since(start) * 1e3);
    }
    AllReduceRow row;
    row.bytes = t.numel() * 4;
    row.median_us = max_over_ranks(group, median(us));
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
  result.world_size = group.world_size();
  result.batch_per_rank = batch_per_rank;
  result.steps = steps;
  const torch::Device cpu(torch::kCPU);
  // Each rank its own shard: synthetic images seeded by rank.
  auto shard = std::make_shared<const data::Dataset>(
      data::make_synthetic(std::max<std::int64_t>(batch_per_rank * 4, 64), /*seed=*/1000 + static_cast<std::uint64_t>(group.rank())));
  data::Batcher batcher(shard, batch_per_rank, /*pinned=*/false, /*seed=*/static_cast<std::uint64_t>(group.rank()));

  // Single-process baseline: rank 0 alone while the others wait, so it has the machine to itself.
  double single = 0.0;
  if (group.rank() == 0) {
    torch::manual_seed(0);
    train::TrainStep alone(models::make_model(model), cpu);
    single = step_ms(alone, batcher, steps, warmup);
  }
  group.barrier();
  result.single_ms_per_step = max_over_ranks(group, single);

  torch::manual_seed(static_cast<std::uint64_t>(group.rank()));
  train::StepOptions options;
  int calls = 0;
  options.reduce_gradients = [&](torch::Tensor& grads) { calls = group.average_(grads, bucket_bytes); };
  train::TrainStep step(models::make_model(model), cpu, options);
  group.broadcast_(step.flat_parameters(), /*root=*/0);
  const double mine = step_ms(step, batcher, steps, warmup);
  result.all_reduce_calls_per_step = calls;
  result.rank_ms_per_step = per_rank(group, mine);
  const double slowest = *std::max_element(result.rank_ms_per_step.begin(), result.rank_ms_per_step.end());
  result.global_images_per_s = static_cast<double>(result.world_size * batch_per_rank) / (slowest / 1e3);
  result.single_images_per_s = static_cast<double>(batch_per_rank) / (result.single_ms_per_step / 1e3);
  result.scaling_efficiency = result.global_images_per_s / (result.world_size * result.single_images_per_s);
  return result;
}

std::string all_reduce_json(const ProcessGroup& group, const std::vector<AllReduceRow>& rows) {
  nlohmann::ordered_json out = {{"benchmark", "all_reduce"}, {"backend", "gloo"}, {"world_size", group.world_size()},
                                {"dtype", "fp32"}, {"op", "sum"}, {"rows", nlohmann::ordered_json::array()}};
  for (const auto& r : rows) {
    out["rows"].push_back({{"bytes", r.bytes}, {"median_us", r.median_us}, {"algbw_gbps", r.algbw_gbps},
                           {"busbw_gbps", r.busbw_gbps}});
  }
  return out.dump(2);
}

std::string train_json(const DistTrainResult& r) {
  return nlohmann::ordered_json{{"benchmark", "distributed_train_step"}, {"backend", "gloo"}, {"device", "cpu"},
                                {"model", r.model}, {"world_size", r.world_size}, {"batch_per_rank", r.batch_per_rank},
                                {"steps", r.steps}, {"all_reduce_calls_per_step", r.all_reduce_calls_per_step},
                                {"rank_ms_per_step", r.rank_ms_per_step}, {"single_ms_per_step", r.single_ms_per_step},
                                {"global_images_per_s", r.global_images_per_s},
                                {"single_images_per_s", r.single_images_per_s},
                                {"scaling_efficiency", r.scaling_efficiency}}
      .dump(2);
}

std::string all_reduce_text(const std::vector<AllReduceRow>& rows, int world_size) {
  std::string out = fmt::format("all-reduce (gloo, sum, fp32), {} ranks\n{:>12} {:>12} {:>12} {:>12}\n", world_size,
                                "bytes", "time us", "algbw GB/s", "busbw GB/s");
  for (const auto& r : rows) {
    out += fmt::format("{:>12} {:>12.1f} {:>12.3f} {:>12.3f}\n", r.bytes, r.median_us, r.algbw_gbps, r.busbw_gbps);
  }
  return out;
}

std::string train_text(const DistTrainResult& r) {
  std::string ranks;
  for (size_t i = 0; i < r.rank_ms_per_step.size(); ++i) ranks += fmt::format("{}{:.2f}", i ? ", " : "", r.rank_ms_per_step[i]);
  return fmt::format(
      "distributed train step: {} on cpu, gloo, {} ranks x batch {} ({} all-reduce calls per step)\n"
      "  step ms per rank: {}\n  global {:.1f} images/s; one process alone {:.1f} images/s ({:.2f} ms/step)\n"
      "  scaling efficiency {:.1f}% (global / ({} x single))\n",
      r.model, r.world_size, r.batch_per_rank, r.all_reduce_calls_per_step, ranks, r.global_images_per_s,
      r.single_images_per_s, r.single_ms_per_step, 100.0 * r.scaling_efficiency, r.world_size);
}

}  // namespace torchprobe::dist
