// data/*: the host-side data pipeline, single-threaded (the targets: parse 50 000 images in
// <= 0.5 s; assemble batches at >= 100 000 images/s on one core).
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <filesystem>
#include <memory>

#include "progress.h"
#include "suite.h"
#include "torchprobe/data/batcher.h"
#include "torchprobe/data/cifar10.h"
#include "torchprobe/error.h"
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

void parse_cifar10(benchmark::State& state) {
  try {
    const std::string dir = cifar_dir().path();
    for (auto _ : state) {
      data::Dataset train = data::load_cifar10(dir, data::Split::kTrain);
      benchmark::DoNotOptimize(train.images.data_ptr());
    }
    state.counters["images_per_s"] =
        benchmark::Counter(static_cast<double>(state.iterations() * data::kTrainImages), benchmark::Counter::kIsRate);
  } catch (const std::exception& e) {
    state.SkipWithError(short_message(e).c_str());
  }
}

void assemble_batch(benchmark::State& state) {
  try {
    auto dataset = std::make_shared<const data::Dataset>(data::make_synthetic(10000, /*seed=*/7));
    data::Batcher batcher(dataset, kAssembleBatch, /*pinned=*/false, /*seed=*/1);
    for (auto _ : state) {
      data::HostBatch& batch = batcher.next();
      benchmark::DoNotOptimize(batch.images.data_ptr());
    }
    state.counters["images_per_s"] =
        benchmark::Counter(static_cast<double>(state.iterations() * kAssembleBatch), benchmark::Counter::kIsRate);
  } catch (const std::exception& e) {
    state.SkipWithError(short_message(e).c_str());
  }
}

}  // namespace

std::vector<std::string> register_data_benchmarks() {
  const std::string parse = fmt::format("data/parse_cifar10/images:{}", data::kTrainImages);
  const std::string assemble = fmt::format("data/assemble_batch/batch:{}", kAssembleBatch);
  benchmark::RegisterBenchmark(parse.c_str(), [parse](benchmark::State& state) {
    Progress::instance().start(parse);
    parse_cifar10(state);
  })->Unit(benchmark::kMillisecond)->UseRealTime();
  benchmark::RegisterBenchmark(assemble.c_str(), [assemble](benchmark::State& state) {
    Progress::instance().start(assemble);
    assemble_batch(state);
  })->Unit(benchmark::kMicrosecond)->UseRealTime();
  return {parse, assemble};
}

}  // namespace torchprobe::bench
