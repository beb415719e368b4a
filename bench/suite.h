#pragma once
// What torchprobe-bench registers: the training-step suite and the data-pipeline suite.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <torch/types.h>

#include "torchprobe/data/cifar10.h"

namespace torchprobe::bench {

struct SuiteOptions {
  std::vector<torch::Device> devices;
  std::vector<std::string> models = {"net", "resnet18"};
  std::vector<std::int64_t> batch_sizes = {4, 64, 256};
  std::vector<std::string> suites = {"train", "data"};
  /// Training steps per timed sample; 0 picks one per device (1 on the CPU, enough for
  /// ~5 ms of GPU work per sample so the closing synchronisation is amortised).
  int steps_per_sample = 0;
  /// Profiling mode (as nvbench's --profile): each training benchmark runs a fixed, small number
  /// of samples once, with no statistics and no instrumented phase pass, for use under nsys.
  bool profile = false;
};

/// Samples per training benchmark in profiling mode.
constexpr int kProfileSamples = 10;

struct TrainConfig {
  std::string model;
  torch::Device device;
  std::int64_t batch_size;
};

/// e.g. "train_step/net/cuda:0/batch:64"
std::string train_benchmark_name(const TrainConfig& config);
/// One config per device x model x batch size, in that nesting order.
std::vector<TrainConfig> plan_train_benchmarks(const SuiteOptions& options);
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

}  // namespace torchprobe::bench
