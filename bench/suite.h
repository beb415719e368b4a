#pragma once
// What torchprobe-bench registers: the training-step suite and the data-pipeline suite.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <torch/types.h>

#include "torchprobe/data/cifar10.h"
#include "torchprobe/ops/ops.h"

namespace torchprobe::bench {

struct SuiteOptions {
  std::vector<torch::Device> devices;
  std::vector<std::string> models = {"net", "resnet18"};
  std::vector<std::int64_t> batch_sizes = {4, 64, 256};
  std::vector<std::string> suites = {"train", "data", "op"};
  /// Training steps per timed sample; 0 picks one per device (1 on the CPU, enough for
  /// ~5 ms of GPU work per sample so the closing synchronisation is amortised).
  int steps_per_sample = 0;
  /// Profiling mode (as nvbench's --profile): each training benchmark runs a fixed, small number
  /// of samples once, with no statistics and no instrumented phase pass, for use under nsys.
  bool profile = false;
  /// Op suite: which ops (core set or all), and at which batch sizes the model-shaped ops run.
  ops::OpSelection op_selection;
  /// Op suite: flush the last-level cache before each sample (nvbench's cold mode), one call per sample.
  bool cold = false;
  /// Op suite: rotating input sets per op; 0 picks enough to exceed twice the last-level cache.
  int op_input_sets = 0;
};

/// Training steps per benchmark in profiling mode (rounded up to whole samples of K steps).
constexpr int kProfileSteps = 10;

struct TrainConfig {
  std::string model;
  torch::Device device;
  std::int64_t batch_size;
};

/// e.g. "train_step/net/cuda:0/batch:64"
std::string train_benchmark_name(const TrainConfig& config);
/// One config per device x model x batch size, in that nesting order.
std::vector<TrainConfig> plan_train_benchmarks(const SuiteOptions& options);
/// The calls (or steps) per timed sample of a benchmark: the first value chosen for `name` is
/// kept for all its later runs, since Google Benchmark needs every repetition to count the same
/// iterations (a sample counts as that many, through KeepRunningBatch).
int stable_calls_per_sample(const std::string& name, int chosen);

/// Validates suite names; throws InputError for unknown ones.
void check_suites(const std::vector<std::string>& suites);

/// Registers the selected suites with Google Benchmark and returns the registered names.
/// `train_data` feeds the training steps; `data_label` says where it came from.
std::vector<std::string> register_suites(const SuiteOptions& options,
                                         std::shared_ptr<const data::Dataset> train_data,
                                         const std::string& data_label);

/// Registration of each suite (called by register_suites).
std::vector<std::string> register_train_benchmarks(const SuiteOptions& options,
                                                   std::shared_ptr<const data::Dataset> train_data,
                                                   const std::string& data_label);
std::vector<std::string> register_data_benchmarks();
std::vector<std::string> register_op_benchmarks(const SuiteOptions& options);

}  // namespace torchprobe::bench
