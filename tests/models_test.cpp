#include "torchprobe/models/registry.h"

#include <gtest/gtest.h>

#include <set>

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
