// Tests that need a CUDA device: labelled "gpu", they skip with the reason when none exists.
#include <gtest/gtest.h>
#include <torch/utils.h>

#include <cmath>

#include "torchprobe/backend.h"
#include "torchprobe/device.h"
#include "torchprobe/models/registry.h"
#include "torchprobe/train/train_step.h"

using namespace torchprobe;

class Gpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (backend::cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device: " << backend::cuda_unavailable_reason();
  }
  const torch::Device gpu{torch::kCUDA, 0};
};

TEST_F(Gpu, InventoryDescribesEveryDevice) {
  const Inventory inv = collect_inventory();
  ASSERT_EQ(static_cast<int>(inv.gpus.size()), backend::cuda_device_count());
  EXPECT_FALSE(inv.gpus[0].name.empty());
  EXPECT_GT(inv.gpus[0].total_memory_bytes, 0);
  EXPECT_GT(inv.gpus[0].multiprocessors, 0);
  EXPECT_FALSE(inv.cuda_driver_version.empty());
}

TEST_F(Gpu, TrainStepMatchesTheCpuStep) {
  auto ds = std::make_shared<const data::Dataset>(data::make_synthetic(32, 4));
  std::vector<float> losses;
  std::vector<torch::Tensor> weights;
  for (const auto& device : {torch::Device(torch::kCPU), gpu}) {
    torch::manual_seed(5);
    models::Classifier net = models::make_model("net");
    train::TrainStep step(net, device, train::StepOptions{0.05, 0.9});
    data::Batcher batcher(ds, 32, backend::wants_pinned_staging(device), 0, 2, /*shuffle=*/false);
    torch::Tensor loss;
    for (int i = 0; i < 3; ++i) loss = step.run(batcher.next());
    losses.push_back(loss.item<float>());
    weights.push_back(net->named_parameters()["fc3.weight"].detach().cpu());
  }
  EXPECT_NEAR(losses[0], losses[1], 1e-3);
  EXPECT_TRUE(torch::allclose(weights[0], weights[1], /*rtol=*/1e-3, /*atol=*/1e-4));
}

TEST_F(Gpu, EventsTimeQueuedWorkAndPeakMemoryIsTracked) {
  backend::reset_peak_memory(gpu);
  auto timeline = backend::make_timeline(gpu);
  timeline->mark();
  torch::Tensor a = torch::randn({2048, 2048}, torch::TensorOptions().device(gpu));
  for (int i = 0; i < 10; ++i) a = torch::matmul(a, a) / 2048.0;
  timeline->mark();
  const auto ms = timeline->elapsed_ms();
  ASSERT_EQ(ms.size(), 1u);
  EXPECT_GT(ms[0], 0.0);
  EXPECT_GE(backend::peak_memory_bytes(gpu), 2 * 2048 * 2048 * 4);
}

TEST_F(Gpu, AbsentOrdinalNamesTheDevicesThisHostHas) {
  const int n = backend::cuda_device_count();
  try {
    parse_device("cuda:" + std::to_string(n));
    ADD_FAILURE() << "expected an error";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("this host has " + std::to_string(n) + " CUDA device"), std::string::npos)
        << e.what();
  }
}
