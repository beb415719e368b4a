#include "torchprobe/train/train_step.h"

#include <gtest/gtest.h>
#include <torch/nn/functional/loss.h>
#include <torch/optim/sgd.h>
#include <torch/utils.h>

#include <cmath>

#include "torchprobe/backend.h"
#include "torchprobe/models/registry.h"

using namespace torchprobe;

TEST(TrainStep, NetLearnsTheSyntheticClasses) {
  torch::manual_seed(0);
  auto train_set = std::make_shared<const data::Dataset>(data::make_synthetic(5000, /*seed=*/11));
  const data::Dataset held_out = data::make_synthetic(1000, /*seed=*/12);
  const torch::Device cpu(torch::kCPU);
  models::Classifier net = models::make_model("net");
  const double before = train::evaluate_accuracy(net, held_out, cpu);
  train::TrainStep step(net, cpu, train::StepOptions{/*learning_rate=*/0.01, /*momentum=*/0.9});
  data::Batcher batcher(train_set, /*batch_size=*/32, /*pinned=*/false, /*seed=*/2);
  std::vector<float> losses;
  for (int i = 0; i < 300; ++i) losses.push_back(step.run(batcher.next()).item<float>());
  const auto mean = [&](size_t from, size_t to) {
    double s = 0;
    for (size_t i = from; i < to; ++i) s += losses[i];
    return s / static_cast<double>(to - from);
  };
  EXPECT_NEAR(mean(0, 5), std::log(10.0), 0.2);  // starts at chance
  EXPECT_LT(mean(280, 300), 0.5 * mean(0, 20));
  const double after = train::evaluate_accuracy(net, held_out, cpu);
  EXPECT_LT(before, 0.25);
  EXPECT_GT(after, 0.6) << "held-out accuracy after 300 steps";
}

TEST(TrainStep, OneStepIsExactlyTheTutorialUpdate) {
  // From the same weights and batch, TrainStep must equal a hand-written
  // forward / cross_entropy / backward / SGD(momentum) step: first step, p -= lr * grad.
  torch::manual_seed(3);
  models::Classifier model = models::make_model("net");
  auto ds = std::make_shared<const data::Dataset>(data::make_synthetic(16, 4));
  data::Batcher batcher(ds, 16, /*pinned=*/false, /*seed=*/0, /*ring_size=*/1, /*shuffle=*/false);
  data::HostBatch& batch = batcher.next();

  std::vector<torch::Tensor> before;
  for (const auto& p : model->parameters()) before.push_back(p.detach().clone());
  const torch::Tensor loss = torch::nn::functional::cross_entropy(model->forward(batch.images), batch.labels);
  loss.backward();
  std::vector<torch::Tensor> expected;
  const double lr = 0.05;
  for (const auto& p : model->parameters()) expected.push_back(p.detach() - lr * p.grad());
  for (auto& p : model->parameters()) p.mutable_grad() = torch::Tensor();

  train::TrainStep step(model, torch::Device(torch::kCPU), train::StepOptions{lr, 0.9});
  const torch::Tensor step_loss = step.run(batch);
  EXPECT_NEAR(step_loss.item<float>(), loss.item<float>(), 1e-6);
  const auto params = model->parameters();
  for (size_t i = 0; i < params.size(); ++i) {
    EXPECT_FALSE(torch::equal(params[i], before[i])) << "parameter " << i << " did not move";
    EXPECT_TRUE(torch::allclose(params[i], expected[i], /*rtol=*/1e-5, /*atol=*/1e-6)) << "parameter " << i;
    EXPECT_TRUE(!params[i].grad().defined() || params[i].grad().abs().sum().item<float>() == 0.0f)
        << "gradients are cleared for the next step";
  }
}

TEST(TrainStep, InstrumentedStepReportsEveryPhase) {
  torch::manual_seed(0);
  auto ds = std::make_shared<const data::Dataset>(data::make_synthetic(64, 1));
  data::Batcher batcher(ds, 64, false, 1);
  const torch::Device cpu(torch::kCPU);
  train::TrainStep step(models::make_model("net"), cpu);
  auto timeline = backend::make_timeline(cpu);
  const auto phases = step.run_instrumented(batcher.next(), *timeline);
  EXPECT_GE(phases[static_cast<int>(train::Phase::kH2D)], 0.0);
  for (auto phase : {train::Phase::kForward, train::Phase::kLoss, train::Phase::kBackward, train::Phase::kOptimizer}) {
    EXPECT_GT(phases[static_cast<int>(phase)], 0.0) << train::kPhaseNames[static_cast<int>(phase)];
  }
}

TEST(Backend, CpuPeakMemoryCountsGrowthSinceReset) {
  const torch::Device cpu(torch::kCPU);
  backend::reset_peak_memory(cpu);
  {
    torch::Tensor big = torch::ones({64 * 1024 * 1024 / 4}, torch::kFloat32);  // 64 MiB, touched
    EXPECT_EQ(big.sum().item<float>(), 64.0f * 1024 * 1024 / 4);
  }
  EXPECT_GE(backend::peak_memory_bytes(cpu), 60ll * 1024 * 1024);
  backend::reset_peak_memory(cpu);
  EXPECT_LT(backend::peak_memory_bytes(cpu), 16ll * 1024 * 1024);
}

TEST(Backend, HostTimelineReturnsOneIntervalPerPairOfMarks) {
  auto timeline = backend::make_timeline(torch::Device(torch::kCPU));
  timeline->mark();
  timeline->mark();
  timeline->mark();
  const auto ms = timeline->elapsed_ms();
  ASSERT_EQ(ms.size(), 2u);
  EXPECT_GE(ms[0], 0.0);
  timeline->clear();
  EXPECT_TRUE(timeline->elapsed_ms().empty());
}

TEST(TrainStep, MatchesTorchOptimSgdOverSeveralSteps) {
  // The flat-buffer SGD must be torch::optim::SGD(lr, momentum) step for step (momentum
  // buffers included), for a model with BatchNorm as well as the plain CNN.
  for (const char* name : {"net", "resnet18"}) {
    SCOPED_TRACE(name);
    auto ds = std::make_shared<const data::Dataset>(data::make_synthetic(8, 6));
    data::Batcher batcher(ds, 8, /*pinned=*/false, /*seed=*/0, /*ring_size=*/1, /*shuffle=*/false);
    data::HostBatch& batch = batcher.next();
    torch::manual_seed(9);
    models::Classifier ours = models::make_model(name);
    torch::manual_seed(9);
    models::Classifier reference = models::make_model(name);
    train::TrainStep step(ours, torch::Device(torch::kCPU), train::StepOptions{0.02, 0.9});
    torch::optim::SGD sgd(reference->parameters(), torch::optim::SGDOptions(0.02).momentum(0.9));
    for (int i = 0; i < 4; ++i) {
      const float loss = step.run(batch).item<float>();
      sgd.zero_grad();
      const torch::Tensor ref_loss = torch::nn::functional::cross_entropy(reference->forward(batch.images), batch.labels);
      ref_loss.backward();
      sgd.step();
      EXPECT_NEAR(loss, ref_loss.item<float>(), 1e-5) << "step " << i;
    }
    const auto a = ours->named_parameters(), b = reference->named_parameters();
    for (const auto& item : a) {
      EXPECT_TRUE(torch::allclose(item.value(), b[item.key()], /*rtol=*/1e-4, /*atol=*/1e-6)) << item.key();
    }
    const auto buffers_a = ours->named_buffers(), buffers_b = reference->named_buffers();
    for (const auto& item : buffers_a) {
      EXPECT_TRUE(torch::allclose(item.value().to(torch::kFloat64), buffers_b[item.key()].to(torch::kFloat64), 1e-4, 1e-6))
          << item.key();
    }
  }
}
