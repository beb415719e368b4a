// NVTX ranges, checked through the recording injection library (tests/nvtx_recorder.cpp) that
// CTest loads via NVTX_INJECTION64_PATH. Without NVTX in the build, the same code must still run.
#include "torchprobe/nvtx.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <torch/utils.h>

#include <cstdlib>
#include <sstream>

#include "torchprobe/backend.h"
#include "torchprobe/config.h"
#include "torchprobe/error.h"
#include "torchprobe/models/registry.h"
#include "torchprobe/train/train_step.h"

using namespace torchprobe;

namespace {

// Lines recorded since the last clear, from the injection library NVTX loaded.
class Recorder {
 public:
  Recorder() {
    const char* path = std::getenv("NVTX_INJECTION64_PATH");
    if (path == nullptr) return;
    nvtx::Range warm_up(name());  // the first NVTX call loads the injection library
    handle_ = dlopen(path, RTLD_LAZY | RTLD_NOLOAD);
    if (handle_ == nullptr) return;
    log_ = reinterpret_cast<const char* (*)()>(dlsym(handle_, "torchprobe_nvtx_log"));
    clear_ = reinterpret_cast<void (*)()>(dlsym(handle_, "torchprobe_nvtx_clear"));
  }
  bool attached() const { return log_ != nullptr && clear_ != nullptr; }
  void clear() { clear_(); }
  std::vector<std::string> lines() const {
    std::vector<std::string> out;
    std::istringstream in(log_());
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
  }

 private:
  static const nvtx::Name& name() {
    static const nvtx::Name n("recorder-attach", nvtx::colors::kOther);
    return n;
  }
  void* handle_ = nullptr;
  const char* (*log_)() = nullptr;
  void (*clear_)() = nullptr;
};

// Pushes minus pops never below zero, ending at zero.
::testing::AssertionResult balanced(const std::vector<std::string>& lines) {
  int depth = 0;
  for (const auto& line : lines) {
    depth += line.rfind("push ", 0) == 0 ? 1 : -1;
    if (depth < 0) return ::testing::AssertionFailure() << "pop without push at: " << line;
  }
  if (depth != 0) return ::testing::AssertionFailure() << depth << " range(s) left open";
  return ::testing::AssertionSuccess();
}

class Nvtx : public ::testing::Test {
 protected:
  void SetUp() override {
#ifndef TORCHPROBE_HAS_NVTX
    GTEST_SKIP() << "built with TORCHPROBE_ENABLE_NVTX=OFF or without NVTX3 headers";
#endif
    ASSERT_TRUE(recorder_.attached()) << "NVTX_INJECTION64_PATH must name the recorder library (CTest sets it)";
    recorder_.clear();
  }
  Recorder recorder_;
};

}  // namespace

TEST_F(Nvtx, TrainingStepPhasesAppearInOrderInsideTheOuterRange) {
  torch::manual_seed(0);
  auto ds = std::make_shared<const data::Dataset>(data::make_synthetic(8, 1));
  data::Batcher batcher(ds, 8, /*pinned=*/false, /*seed=*/0);
  train::TrainStep step(models::make_model("net"), torch::Device(torch::kCPU));
  recorder_.clear();
  {
    static const nvtx::Name outer("train_step/net/cpu/batch:8", nvtx::colors::kBenchmark);
    nvtx::Range range(outer);
    step.run(batcher.next());
  }
  const std::vector<std::string> expected = {
      "push torchprobe train_step/net/cpu/batch:8",
      "push torchprobe h2d",       "pop torchprobe", "push torchprobe forward",   "pop torchprobe",
      "push torchprobe loss",      "pop torchprobe", "push torchprobe backward",  "pop torchprobe",
      "push torchprobe optimizer", "pop torchprobe", "pop torchprobe"};
  EXPECT_EQ(recorder_.lines(), expected);
}

TEST_F(Nvtx, RangesStayBalancedWhenAStepThrows) {
  torch::manual_seed(0);
  auto ds = std::make_shared<data::Dataset>(data::make_synthetic(4, 1));
  ds->labels[2] = 12;  // out of range for 10 classes: cross_entropy throws in the loss phase
  data::Batcher batcher(ds, 4, /*pinned=*/false, /*seed=*/0, /*ring_size=*/1, /*shuffle=*/false);
  train::TrainStep step(models::make_model("net"), torch::Device(torch::kCPU));
  recorder_.clear();
  EXPECT_THROW(step.run(batcher.next()), c10::Error);
  const auto lines = recorder_.lines();
  EXPECT_TRUE(balanced(lines));
  ASSERT_GE(lines.size(), 2u);
  EXPECT_EQ(lines[lines.size() - 2], "push torchprobe loss");
  EXPECT_EQ(lines.back(), "pop torchprobe");
}

TEST_F(Nvtx, AtenOpRangesOnlyWhenAskedFor) {
  torch::manual_seed(0);
  const models::Classifier net = models::make_model("net");
  const torch::Tensor x = torch::randn({2, 3, 32, 32});
  const auto count_aten = [&] {
    size_t n = 0;
    for (const auto& line : recorder_.lines()) n += line.rfind("push <default> aten::conv2d", 0) == 0 ? 1 : 0;
    return n;
  };
  net->forward(x);
  EXPECT_EQ(count_aten(), 0u) << "per-op ranges are off by default";
#ifdef TORCHPROBE_HAS_CUDA
  backend::enable_aten_nvtx_ranges();
  net->forward(x);
  backend::disable_aten_nvtx_ranges();
  EXPECT_EQ(count_aten(), 2u) << "one range per conv2d of net, with input shapes";
  EXPECT_TRUE(balanced(recorder_.lines()));
  recorder_.clear();
  net->forward(x);
  EXPECT_EQ(count_aten(), 0u) << "switched off again";
#else
  EXPECT_THROW(backend::enable_aten_nvtx_ranges(), InputError);
#endif
}

TEST(NvtxBuild, RangesAreHarmlessWithoutATool) {
  // No injection needed: with or without NVTX compiled in, ranges cost nothing and nest.
  static const nvtx::Name a("a", nvtx::colors::kOther), b("b", nvtx::colors::kOther);
  nvtx::Range outer(a);
  { nvtx::Range inner(b); }
  EXPECT_EQ(a.text(), "a");
#ifdef TORCHPROBE_HAS_NVTX
  EXPECT_TRUE(nvtx::enabled());
#else
  EXPECT_FALSE(nvtx::enabled());
#endif
}
