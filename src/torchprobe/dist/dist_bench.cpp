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
#include "torchprobe/report/views.h"
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

/// Each of `steps` steps' ms, after `warmup`.
std::vector<double> step_times(train::TrainStep& step, data::Batcher& batcher, int steps, int warmup) {
  auto sampler = collective_sampler(step.device(), warmup, [&] { step.run(batcher.next()); });
  if (warmup > 0) sampler.warm_up();
  return sampler.per_call(steps);
}

double step_ms(train::TrainStep& step, data::Batcher& batcher, int steps, int warmup) {
  return median(step_times(step, batcher, steps, warmup));
}

/// The times in `repetitions` consecutive chunks (sizes differing by at most one; fewer chunks than
/// times at most), and each chunk's median.
std::vector<double> repetition_medians(const std::vector<double>& times, int repetitions) {
  const size_t n = times.size(), r = std::clamp<size_t>(static_cast<size_t>(std::max(repetitions, 1)), 1, std::max<size_t>(n, 1));
  std::vector<double> out;
  for (size_t i = 0; i < r && n > 0; ++i) {
    const auto begin = times.begin() + static_cast<std::ptrdiff_t>(i * n / r), end = times.begin() + static_cast<std::ptrdiff_t>((i + 1) * n / r);
    out.push_back(median(std::vector<double>(begin, end)));
  }
  return out;
}

/// For each position, the largest value over the ranks (every rank passes the same number).
std::vector<double> slowest_over_ranks(ProcessGroup& group, const std::vector<double>& values) {
  const auto columns = static_cast<std::int64_t>(values.size());
  torch::Tensor slots = torch::zeros({group.world_size(), columns}, torch::kFloat64);
  for (std::int64_t i = 0; i < columns; ++i) slots[group.rank()][i] = values[static_cast<size_t>(i)];
  slots = slots.to(group.device());
  group.all_reduce_sum_(slots);
  const torch::Tensor slowest = std::get<0>(slots.cpu().max(/*dim=*/0)).contiguous();
  return {slowest.data_ptr<double>(), slowest.data_ptr<double>() + columns};
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

}  // namespace

void finish_all_reduce_row(AllReduceRow& row, int world_size) {
  const double n = world_size;
  row.algbw_gbps = static_cast<double>(row.bytes) / (row.median_us * 1e-6) / 1e9;
  row.busbw_gbps = row.algbw_gbps * 2.0 * (n - 1.0) / n;
}

void finish_train_result(DistTrainResult& result, const std::vector<double>& all_reduce_ms_by_rank) {
  const double slowest = *std::max_element(result.rank_ms_per_step.begin(), result.rank_ms_per_step.end());
  result.global_images_per_s = static_cast<double>(result.world_size * result.batch_per_rank) / (slowest / 1e3);
  result.single_images_per_s = static_cast<double>(result.batch_per_rank) / (result.single_ms_per_step / 1e3);
  result.scaling_efficiency = result.global_images_per_s / (result.world_size * result.single_images_per_s);
  result.all_reduce_ms_per_step = all_reduce_ms_by_rank.empty()
                                      ? 0.0
                                      : *std::min_element(all_reduce_ms_by_rank.begin(), all_reduce_ms_by_rank.end());
  if (result.all_reduce_ms_per_step > 0.0) {
    const double n = result.world_size;
    result.all_reduce_share = result.all_reduce_ms_per_step / slowest;
    result.busbw_gbps = static_cast<double>(result.gradient_bytes) / (result.all_reduce_ms_per_step * 1e-3) / 1e9 *
                        2.0 * (n - 1.0) / n;
  }
}

std::vector<AllReduceRow> all_reduce_sweep(ProcessGroup& group, std::int64_t min_bytes, std::int64_t max_bytes,
                                           int iterations, int repetitions,
                                           const std::function<void(const AllReduceRow&, int, int)>& on_size) {
  std::vector<AllReduceRow> rows;
  int total = 0;
  for (std::int64_t bytes = std::max<std::int64_t>(min_bytes, 4); bytes <= max_bytes; bytes *= 2) ++total;
  for (std::int64_t bytes = std::max<std::int64_t>(min_bytes, 4); bytes <= max_bytes; bytes *= 2) {
    torch::Tensor t = torch::ones({bytes / 4}, torch::TensorOptions().dtype(torch::kFloat32).device(group.device()));
    auto sampler = collective_sampler(group.device(), /*warmup=*/2, [&] { group.all_reduce_sum_(t); });
    sampler.warm_up();
    AllReduceRow row;
    row.bytes = t.numel() * 4;
    const auto calls = sampler.per_call(iterations);
    row.median_us = max_over_ranks(group, median(calls) * 1e3);
    for (const double ms : slowest_over_ranks(group, repetition_medians(calls, repetitions))) row.repetition_us.push_back(ms * 1e3);
    finish_all_reduce_row(row, group.world_size());
    rows.push_back(row);
    if (on_size) on_size(row, static_cast<int>(rows.size()), total);
  }
  return rows;
}

DistTrainResult distributed_train(ProcessGroup& group, const std::string& model, std::int64_t batch_per_rank,
                                  int steps, int warmup, std::int64_t bucket_bytes, int repetitions) {
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
  // The all-reduce's share of each step: marks around it on the device's timeline (CUDA events on a
  // GPU, so nothing waits for them inside the step); read after the steps' one wait.
  const auto timeline = backend::make_timeline(device);
  options.reduce_gradients = [&](torch::Tensor& grads) {
    timeline->mark();
    calls = group.average_(grads, bucket_bytes);
    timeline->mark();
    result.gradient_bytes = grads.numel() * grads.element_size();
  };
  train::TrainStep step(models::make_model(model), device, options);
  group.broadcast_(step.flat_parameters(), /*root=*/0);
  const auto times = step_times(step, batcher, steps, warmup);
  const auto intervals = timeline->elapsed_ms();  // all-reduce, gap to the next step's, all-reduce, ...
  std::vector<double> reduce_ms;
  for (size_t i = 0; i < intervals.size(); i += 2) reduce_ms.push_back(intervals[i]);
  if (reduce_ms.size() > static_cast<size_t>(steps)) reduce_ms.erase(reduce_ms.begin(), reduce_ms.end() - steps);  // no warm-up
  result.all_reduce_calls_per_step = calls;
  result.rank_ms_per_step = per_rank(group, median(times));
  result.repetition_ms = slowest_over_ranks(group, repetition_medians(times, repetitions));
  finish_train_result(result, per_rank(group, reduce_ms.empty() ? 0.0 : median(reduce_ms)));
  return result;
}

DistTrainResult data_parallel_train(const std::string& model, const std::vector<torch::Device>& devices,
                                    std::int64_t batch_per_device, int steps, int warmup, int repetitions) {
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
  const auto times = step_times(step, batcher, steps, warmup);
  result.rank_ms_per_step = {median(times)};
  result.repetition_ms = repetition_medians(times, repetitions);
  // One process: its step time stands for every device.
  result.rank_ms_per_step.resize(devices.size(), result.rank_ms_per_step.front());
  finish_train_result(result, {});
  return result;
}

std::string all_reduce_json(const ProcessGroup& group, const std::vector<AllReduceRow>& rows, const ContextEntries& context) {
  std::vector<report::Entry> entries;
  const double n = group.world_size();
  for (const auto& r : rows) {
    const std::string name = fmt::format("dist_allreduce/{}/{}/world:{}/dtype:fp32/bytes:{}", group.backend_name(),
                                         group.device().is_cuda() ? "cuda" : "cpu", group.world_size(), r.bytes);
    for (size_t i = 0; i < r.repetition_us.size(); ++i) {
      report::Entry entry;
      entry.name = name;
      entry.repetition_index = i;
      entry.repetitions = r.repetition_us.size();
      entry.time = r.repetition_us[i];
      entry.time_unit = "us";
      const double algbw = static_cast<double>(r.bytes) / (r.repetition_us[i] * 1e-6) / 1e9;
      entry.counters = {{"bytes", static_cast<double>(r.bytes)},
                        {"algbw_gbps", algbw},
                        {"busbw_gbps", algbw * 2.0 * (n - 1.0) / n},
                        {"world_size", n}};
      entries.push_back(std::move(entry));
    }
  }
  return report::results_document(context, entries);
}

std::string train_json(const DistTrainResult& r, const ContextEntries& context) {
  std::vector<report::Entry> entries;
  const std::string name = fmt::format("dist_train/{}/{}/world:{}/batch:{}/engine:{}", r.model, r.device, r.world_size,
                                       r.batch_per_rank, r.engine);
  const auto per_repetition = static_cast<int>(std::max<size_t>(1, static_cast<size_t>(r.steps) / std::max<size_t>(1, r.repetition_ms.size())));
  for (size_t i = 0; i < r.repetition_ms.size(); ++i) {
    report::Entry entry;
    entry.name = name;
    entry.repetition_index = i;
    entry.repetitions = r.repetition_ms.size();
    entry.iterations = per_repetition;
    entry.time = r.repetition_ms[i];
    const double global = static_cast<double>(r.world_size * r.batch_per_rank) / (r.repetition_ms[i] / 1e3);
    auto& c = entry.counters;
    c = {{"images_per_s", global},
         {"scaling_efficiency", global / (r.world_size * r.single_images_per_s)},
         {"single_ms_per_step", r.single_ms_per_step},
         {"world_size", r.world_size},
         {"batch_per_rank", static_cast<double>(r.batch_per_rank)},
         {"all_reduce_calls_per_step", r.all_reduce_calls_per_step}};
    if (r.all_reduce_ms_per_step > 0.0) {
      c.emplace_back("gradient_bytes", static_cast<double>(r.gradient_bytes));
      c.emplace_back("all_reduce_ms_per_step", r.all_reduce_ms_per_step);
      c.emplace_back("all_reduce_share_pct", 100.0 * r.all_reduce_share);
      if (r.world_size > 1) c.emplace_back("busbw_gbps", r.busbw_gbps);  // one rank moves nothing
    }
    for (size_t k = 0; k < r.rank_ms_per_step.size(); ++k)
      c.emplace_back(fmt::format("rank{}_ms_per_step", k), r.rank_ms_per_step[k]);
    entries.push_back(std::move(entry));
  }
  return report::results_document(context, entries);
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
  const std::string note = report::efficiency_above_noise(r.scaling_efficiency)
                               ? fmt::format("  note: {}\n", report::kScalingAboveNote)
                               : "";
  return note +
         fmt::format(
             "distributed train step: {} on {} (rank 0), {}, {} ranks x batch {} ({} all-reduce calls per step)\n"
             "  step ms per rank: {}\n  global {:.1f} images/s; one process alone {:.1f} images/s ({:.2f} ms/step)\n"
             "  scaling efficiency {:.1f}% (global / ({} x single))\n"
             "  gradient all-reduce {:.2f} ms per step ({:.1f}% of the step; {:.2f} MiB, busbw {} GB/s)\n",
             r.model, r.device, r.engine, r.world_size, r.batch_per_rank, r.all_reduce_calls_per_step, ranks,
             r.global_images_per_s, r.single_images_per_s, r.single_ms_per_step, 100.0 * r.scaling_efficiency,
             r.world_size, r.all_reduce_ms_per_step, 100.0 * r.all_reduce_share,
             static_cast<double>(r.gradient_bytes) / (1 << 20),
             r.world_size > 1 ? fmt::format("{:.3f}", r.busbw_gbps) : std::string("-"));
}

}  // namespace torchprobe::dist
