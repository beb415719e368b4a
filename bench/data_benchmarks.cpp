// data/*: the host-side data pipeline, single-threaded (the targets: parse 50 000 images in
// <= 0.5 s; assemble batches at >= 100 000 images/s on one core).
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <utility>

#include "suite.h"
#include "torchprobe/data/batcher.h"
#include "torchprobe/data/cifar10.h"
#include "torchprobe/measure.h"
#include "torchprobe/temp_dir.h"

namespace torchprobe::bench {
namespace {

constexpr std::int64_t kAssembleBatch = 256;

// A temporary directory with the five training files in the official format; removed at exit.
class TempCifarDir {
 public:
  TempCifarDir() : dir_("torchprobe-cifar") {
    const auto names = data::split_file_names(data::Split::kTrain);
    const std::int64_t per_file = data::kTrainImages / static_cast<std::int64_t>(names.size());
    for (size_t i = 0; i < names.size(); ++i) {
      data::write_cifar10_file(dir_.file(names[i]), data::make_synthetic(per_file, /*seed=*/100 + i));
    }
  }
  std::string path() const { return dir_.path().string(); }

 private:
  TempDir dir_;
};

const TempCifarDir& cifar_dir() {
  static const TempCifarDir dir;
  return dir;
}

/// Host work as its repetitions share it (keep_between_repetitions): `call` and what it works on, with the one
/// measurement policy's sampler (host clock), warmed up and calibrated once.
struct PreparedHostWork {
  PreparedHostWork(const std::string& name, std::function<void()> work) : call(std::move(work)) {
    const torch::Device cpu(torch::kCPU);
    sampler.emplace(measure::default_policy(cpu), measure::device_clock(cpu), [this] { call(); });
    sampler->warm_up();
    sampler->calibrate(name);
  }
  std::function<void()> call;
  std::optional<measure::Sampler> sampler;
};

/// Times the work `make` returns with the one measurement policy and adds images/s for `images` per call.
void time_host_work(benchmark::State& state, const std::string& name, const StopFlags& stop, std::int64_t images,
                    const std::function<std::function<void()>()>& make) {
  PreparedHostWork& prepared = keep_between_repetitions<PreparedHostWork>(name, [&] {
                                 return std::make_shared<PreparedHostWork>(name, make());
                               }).first;
  const double mean_ms =
      time_until_stable(state, *prepared.sampler, stop_rule(stop, torch::Device(torch::kCPU))).mean_ms;
  state.counters["images_per_s"] = static_cast<double>(images) / (mean_ms / 1e3);
}

void parse_cifar10(benchmark::State& state, const std::string& name, const StopFlags& stop) {
  time_host_work(state, name, stop, data::kTrainImages, [] {
    return [dir = cifar_dir().path()] {
      data::Dataset train = data::load_cifar10(dir, data::Split::kTrain);
      benchmark::DoNotOptimize(train.images.data_ptr());
    };
  });
}

void assemble_batch(benchmark::State& state, const std::string& name, const StopFlags& stop) {
  time_host_work(state, name, stop, kAssembleBatch, [] {
    auto dataset = std::make_shared<const data::Dataset>(data::make_synthetic(10000, /*seed=*/7));
    auto batcher = std::make_shared<data::Batcher>(dataset, kAssembleBatch, /*pinned=*/false, /*seed=*/1);
    return [batcher] {
      data::HostBatch& batch = batcher->next();
      benchmark::DoNotOptimize(batch.images.data_ptr());
    };
  });
}

}  // namespace

std::vector<std::string> register_data_benchmarks(const SuiteOptions& options) {
  const std::string parse = fmt::format("data/parse_cifar10/images:{}", data::kTrainImages);
  const std::string assemble = fmt::format("data/assemble_batch/batch:{}", kAssembleBatch);
  for (const auto& [name, body] :
       {std::pair<std::string, void (*)(benchmark::State&, const std::string&, const StopFlags&)>{parse, parse_cifar10},
        {assemble, assemble_batch}}) {
    benchmark::RegisterBenchmark(name.c_str(),
                                 [name = name, body = body, stop = options.stop](benchmark::State& state) {
                                   run_guarded(state, name, [&] { body(state, name, stop); });
                                 })
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond);
  }
  return {parse, assemble};
}

}  // namespace torchprobe::bench
