#include "suite.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <mutex>

#include "torchprobe/device.h"
#include "torchprobe/error.h"

namespace torchprobe::bench {
namespace {
const std::vector<std::string> kKnownSuites = {"train", "data", "op"};

bool selected(const SuiteOptions& options, const std::string& suite) {
  return std::find(options.suites.begin(), options.suites.end(), suite) != options.suites.end();
}
}  // namespace

std::string train_benchmark_name(const TrainConfig& config) {
  return fmt::format("train_step/{}/{}/batch:{}", config.model, device_string(config.device), config.batch_size);
}

std::vector<TrainConfig> plan_train_benchmarks(const SuiteOptions& options) {
  std::vector<TrainConfig> plan;
  for (const auto& device : options.devices) {
    for (const auto& model : options.models) {
      for (const auto batch : options.batch_sizes) plan.push_back({model, device, batch});
    }
  }
  return plan;
}

int stable_calls_per_sample(const std::string& name, int chosen) {
  static std::mutex mutex;
  static std::map<std::string, int> first;
  std::lock_guard<std::mutex> lock(mutex);
  return first.try_emplace(name, chosen).first->second;
}

void check_suites(const std::vector<std::string>& suites) {
  for (const auto& s : suites) {
    if (std::find(kKnownSuites.begin(), kKnownSuites.end(), s) == kKnownSuites.end()) {
      throw InputError(fmt::format("unknown suite '{}' (known: {})", s, fmt::join(kKnownSuites, ", ")));
    }
  }
}

std::vector<std::string> register_suites(const SuiteOptions& options,
                                         std::shared_ptr<const data::Dataset> train_data,
                                         const std::string& data_label) {
  check_suites(options.suites);
  std::vector<std::string> names;
  if (selected(options, "train")) names = register_train_benchmarks(options, std::move(train_data), data_label);
  if (selected(options, "data")) {
    const auto data_names = register_data_benchmarks();
    names.insert(names.end(), data_names.begin(), data_names.end());
  }
  if (selected(options, "op")) {
    const auto op_names = register_op_benchmarks(options);
    names.insert(names.end(), op_names.begin(), op_names.end());
  }
  return names;
}

}  // namespace torchprobe::bench
