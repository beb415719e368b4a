#pragma once
// Measurements on a process group: the all-reduce bandwidth sweep (nccl-tests' definitions) and
// the data-parallel training step with its scaling efficiency. Every rank calls them together.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "torchprobe/dist/process_group.h"
#include "torchprobe/run_context.h"

namespace torchprobe::dist {

struct AllReduceRow {
  std::int64_t bytes = 0;
  double median_us = 0.0;  ///< per all-reduce: the slowest rank's median
  std::vector<double> repetition_us;  ///< the calls split into repetitions: each one's slowest-rank median
  double algbw_gbps = 0.0;  ///< bytes / time
  double busbw_gbps = 0.0;  ///< algbw x 2(n-1)/n: what each link carries in a ring all-reduce
};

/// A row's bandwidths from its bytes and median time (nccl-tests' definitions): algbw = bytes / time, busbw =
/// algbw x 2(n-1)/n for `world_size` n.
void finish_all_reduce_row(AllReduceRow& row, int world_size);

/// Sum all-reduces of float32 tensors from `min_bytes` to `max_bytes`, doubling; `iterations`
/// timed calls per size after 2 warm-up calls, split into `repetitions` (each reported on its own). `on_size`, when
/// given, is called after each size with its row, the sizes done and the sizes in all (a progress line).
std::vector<AllReduceRow> all_reduce_sweep(
    ProcessGroup& group, std::int64_t min_bytes, std::int64_t max_bytes, int iterations, int repetitions = 5,
    const std::function<void(const AllReduceRow& row, int done, int total)>& on_size = nullptr);

/// One schema for both engines: ranks of a process group, or the devices of one data_parallel
/// process (then every "rank" entry is the process's step time).
struct DistTrainResult {
  std::string model;
  std::string engine;  ///< "gloo", "nccl" or "data_parallel"
  std::string device;  ///< rank 0's device, or data_parallel's devices ("cuda:0,cuda:1")
  int world_size = 1;
  std::int64_t batch_per_rank = 0;
  int steps = 0;
  int all_reduce_calls_per_step = 0;
  std::vector<double> rank_ms_per_step;  ///< median step time of each rank
  std::vector<double> repetition_ms;     ///< the timed steps split into repetitions: each one's slowest-rank median
  double single_ms_per_step = 0.0;       ///< rank 0 alone, no all-reduce, the other ranks idle
  double global_images_per_s = 0.0;      ///< world x batch / the slowest rank's step time
  double single_images_per_s = 0.0;
  double scaling_efficiency = 0.0;  ///< global / (world x single)
  /// The gradient all-reduce (process groups only; 0 for data_parallel): bytes averaged per step, and
  /// its time per step as the rank that arrives last sees it (the smallest of the ranks' medians: the
  /// others also wait for it), so it is the communication itself, not load imbalance.
  std::int64_t gradient_bytes = 0;
  double all_reduce_ms_per_step = 0.0;
  double all_reduce_share = 0.0;  ///< all_reduce_ms_per_step / the slowest rank's step time
  double busbw_gbps = 0.0;        ///< gradient bytes x 2(n-1)/n / all-reduce time (nccl-tests' bus bandwidth)
};

/// The run's figures from what was measured (world_size, batch_per_rank, rank_ms_per_step, single_ms_per_step and
/// gradient_bytes set): the global rate from the slowest rank's step, the scaling efficiency against one process
/// alone, and from `all_reduce_ms_by_rank` (each rank's median all-reduce per step; empty: none) the all-reduce's time
/// as the rank that arrives last sees it (the smallest), its share of the slowest step and its bus bandwidth.
void finish_train_result(DistTrainResult& result, const std::vector<double>& all_reduce_ms_by_rank);

/// `warmup` + `steps` data-parallel steps of `model` on the group's device (each rank its own synthetic
/// shard, weights broadcast from rank 0, gradients averaged in buckets), after the single-process
/// baseline on rank 0; the timed steps are split into `repetitions`. Returns the same result on every rank.
DistTrainResult distributed_train(ProcessGroup& group, const std::string& model, std::int64_t batch_per_rank,
                                  int steps, int warmup, std::int64_t bucket_bytes, int repetitions = 5);

/// torch::nn::parallel::data_parallel in one process: `batch_per_device` x devices images per step
/// over `devices` (CUDA builds), against one device alone with `batch_per_device` images.
DistTrainResult data_parallel_train(const std::string& model, const std::vector<torch::Device>& devices,
                                    std::int64_t batch_per_device, int steps, int warmup, int repetitions = 5);

/// Results files in Google Benchmark's schema (one entry per repetition, with counters), with `context`,
/// so `torchprobe report` merges them and `torchprobe compare` gates them. Names:
/// dist_allreduce/<backend>/<device>/world:<N>/dtype:fp32/bytes:<B> and
/// dist_train/<model>/<device>/world:<N>/batch:<B>/engine:<gloo|nccl|data_parallel>.
std::string all_reduce_json(const ProcessGroup& group, const std::vector<AllReduceRow>& rows, const ContextEntries& context);
std::string train_json(const DistTrainResult& result, const ContextEntries& context);
std::string all_reduce_text(const ProcessGroup& group, const std::vector<AllReduceRow>& rows);
std::string train_text(const DistTrainResult& result);

}  // namespace torchprobe::dist
