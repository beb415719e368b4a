// LibTorch's torch::nn::parallel::data_parallel replicates the model with Module::clone and routes
// each replica's gradients back to the original parameters by name (replicate_grad_edges, a
// ReduceAdd node per parameter). Its scatter and gather need GPUs, but `replicate` and
// `parallel_apply` run on CPU devices: this checks, on a host without GPUs, that our models and
// the TrainStep's flat parameter/gradient buffers meet that contract, which one GPU alone never
// exercises (data_parallel over one device is a plain forward). Built only against a CUDA
// LibTorch: the header does not compile against a CPU-only LibTorch 1.13.
#include <gtest/gtest.h>
#include <torch/nn/functional/loss.h>
#include <torch/nn/parallel/data_parallel.h>

#include <vector>

#include "torchprobe/models/registry.h"
#include "torchprobe/train/train_step.h"

using namespace torchprobe;

namespace {

std::vector<torch::Tensor> gradients(const models::Classifier& model) {
  std::vector<torch::Tensor> out;
  for (const auto& p : model->parameters()) out.push_back(p.grad().clone());
  return out;
}

}  // namespace

TEST(DataParallelReplicas, GradientsOfTheReplicasSumIntoTheFlatGradientBuffer) {
  const torch::Device cpu(torch::kCPU);
  const std::vector<torch::Device> devices = {cpu, cpu};
  const std::int64_t batch = 8, half = batch / 2;
  namespace F = torch::nn::functional;
  const auto sum_loss = F::CrossEntropyFuncOptions().reduction(torch::kSum);
  for (const auto& name : models::model_names()) {
    for (const auto layout : {train::Layout::kNchw, train::Layout::kChannelsLast}) {
      SCOPED_TRACE(name + "/" + train::layout_name(layout));
      torch::manual_seed(5);
      train::StepOptions options = train::StepOptions::sgd(0.05, 0.9);
      options.layout = layout;
      train::TrainStep step(models::make_model(name), cpu, options);
      const models::Classifier& model = step.model();
      const torch::Tensor x = torch::randn({batch, 3, 32, 32});
      const torch::Tensor y = torch::randint(0, 10, {batch}, torch::kLong);

      // Reference: the original model on each half, as each replica sees its shard (BatchNorm
      // normalises per replica), the loss averaged over the whole batch.
      for (std::int64_t h = 0; h < 2; ++h) {
        const torch::Tensor logits = model->forward(x.narrow(0, h * half, half));
        (F::cross_entropy(logits, y.narrow(0, h * half, half), sum_loss) / batch).backward();
      }
      const std::vector<torch::Tensor> expected = gradients(model);
      step.zero_grad();
      std::vector<const void*> slots;
      for (const auto& p : model->parameters()) slots.push_back(p.grad().data_ptr());

      auto replicas = torch::nn::parallel::replicate(model, devices);
      ASSERT_EQ(replicas.size(), 2u);
      for (const auto& r : replicas) {
        ASSERT_NE(r, nullptr);
        EXPECT_TRUE(r->is_training());
        EXPECT_NE(r->parameters().front().data_ptr(), model->parameters().front().data_ptr()) << "a replica is a copy";
      }
      const std::vector<torch::Tensor> outputs =
          torch::nn::parallel::parallel_apply(replicas, {x.narrow(0, 0, half), x.narrow(0, half, half)}, devices);
      F::cross_entropy(torch::cat(outputs), y).backward();

      const auto params = model->parameters();
      ASSERT_EQ(params.size(), expected.size());
      double total = 0;
      for (size_t i = 0; i < params.size(); ++i) {
        const torch::Tensor& g = params[i].grad();
        EXPECT_EQ(g.data_ptr(), slots[i]) << "parameter " << i << ": its gradient left the flat buffer";
        EXPECT_TRUE(torch::allclose(g, expected[i], /*rtol=*/1e-4, /*atol=*/1e-6))
            << "parameter " << i << ": max |diff| " << (g - expected[i]).abs().max().item<double>();
        total += g.abs().sum().item<double>();
      }
      EXPECT_GT(total, 0.0) << "the replicas' gradients reached the original";
    }
  }
}
