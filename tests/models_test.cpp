#include "torchprobe/models/registry.h"

#include <gtest/gtest.h>

#include <set>

#include <torch/utils.h>

#include "test_util.h"
#include "torchprobe/error.h"

using namespace torchprobe;
using namespace torchprobe::models;

namespace {
std::int64_t parameter_count(const Classifier& model) {
  std::int64_t n = 0;
  for (const auto& p : model->parameters()) n += p.numel();
  return n;
}
std::set<std::string> parameter_names(const Classifier& model) {
  std::set<std::string> names;
  for (const auto& item : model->named_parameters()) names.insert(item.key());
  return names;
}
}  // namespace

TEST(Models, NetIsTheTutorialNetLayerForLayer) {
  const Classifier net = make_model("net");
  // conv1 3*6*25+6, conv2 6*16*25+16, fc1 400*120+120, fc2 120*84+84, fc3 84*10+10
  EXPECT_EQ(parameter_count(net), 456 + 2416 + 48120 + 10164 + 850);
  const auto names = parameter_names(net);
  for (const char* n : {"conv1.weight", "conv2.bias", "fc1.weight", "fc2.weight", "fc3.bias"}) {
    EXPECT_TRUE(names.count(n)) << n;
  }
  EXPECT_EQ(names.size(), 10u);
  const auto out = net->forward(torch::randn({5, 3, 32, 32}));
  EXPECT_EQ(out.sizes(), (std::vector<std::int64_t>{5, 10}));
}

TEST(Models, ResNet18IsTheCifarVariant) {
  const Classifier resnet = make_model("resnet18");
  EXPECT_EQ(parameter_count(resnet), 11173962);  // same count as the reference PyTorch CIFAR ResNet-18
  const auto names = parameter_names(resnet);
  for (const char* n : {"conv1.weight", "bn1.weight", "layer1.0.conv1.weight", "layer2.0.downsample.0.weight",
                        "layer4.1.bn2.bias", "fc.weight"}) {
    EXPECT_TRUE(names.count(n)) << n;
  }
  EXPECT_FALSE(names.count("layer1.0.downsample.0.weight"));  // stage 1 keeps 64 channels, stride 1
  const auto stem = resnet->named_parameters()["conv1.weight"];
  EXPECT_EQ(stem.sizes(), (std::vector<std::int64_t>{64, 3, 3, 3}));  // 3x3 stem, not 7x7
  const auto out = resnet->forward(torch::randn({2, 3, 32, 32}));
  EXPECT_EQ(out.sizes(), (std::vector<std::int64_t>{2, 10}));
}

TEST(Models, RegistryListsBothAndRejectsUnknownNames) {
  EXPECT_EQ(model_names(), (std::vector<std::string>{"net", "resnet18"}));
  EXPECT_THROW_WITH(make_model("vgg"), InputError, "unknown model 'vgg' (known: net, resnet18)");
}

TEST(Models, CloneIsADeepCopyWithTheSameValuesAndMode) {
  // data_parallel replicates models with clone(): every replica must compute what the original does.
  for (const auto& name : model_names()) {
    SCOPED_TRACE(name);
    torch::manual_seed(3);
    Classifier original = make_model(name);
    const torch::Tensor x = torch::randn({4, 3, 32, 32});
    original->forward(x);  // a train-mode forward moves BatchNorm's running statistics: they must be copied too
    original->eval();
    const auto copy = std::dynamic_pointer_cast<ClassifierImpl>(original->clone());
    ASSERT_NE(copy, nullptr);
    EXPECT_FALSE(copy->is_training()) << "the mode is copied";
    EXPECT_TRUE(torch::equal(copy->forward(x), original->forward(x)));

    const auto originals = original->named_parameters();
    for (const auto& item : copy->named_parameters()) {
      EXPECT_NE(item.value().data_ptr(), originals[item.key()].data_ptr()) << item.key() << " shares storage";
      EXPECT_TRUE(item.value().requires_grad()) << item.key();
    }
    const auto buffers = original->named_buffers();
    for (const auto& item : copy->named_buffers()) {
      EXPECT_TRUE(torch::equal(item.value(), buffers[item.key()])) << item.key();
    }
    torch::NoGradGuard no_grad;
    for (auto& p : copy->parameters()) p.zero_();
    EXPECT_FALSE(torch::equal(copy->forward(x), original->forward(x))) << "changing the copy leaves the original alone";
  }
}

TEST(Models, CloneKeepsChannelsLastWeights) {
  Classifier original = make_model("resnet18");
  {
    torch::NoGradGuard no_grad;
    for (auto& p : original->parameters()) {
      if (p.dim() == 4) p.set_data(p.contiguous(torch::MemoryFormat::ChannelsLast));
    }
  }
  const auto copy = std::dynamic_pointer_cast<ClassifierImpl>(original->clone(torch::Device(torch::kCPU)));
  const torch::Tensor w = copy->named_parameters()["conv1.weight"];
  EXPECT_TRUE(w.is_contiguous(torch::MemoryFormat::ChannelsLast));
  EXPECT_TRUE(torch::equal(w, original->named_parameters()["conv1.weight"]));
}
