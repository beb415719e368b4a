#include "torchprobe/train/loss_scaler.h"

#include <gtest/gtest.h>

#include <limits>

#include "test_util.h"
#include "torchprobe/input_error.h"

using namespace torchprobe;
using train::LossScaler;
using train::LossScalerOptions;

namespace {
const torch::Device kCpu(torch::kCPU);
constexpr float kInf = std::numeric_limits<float>::infinity();

LossScalerOptions options(double scale, int interval) {
  LossScalerOptions o;
  o.init_scale = scale;
  o.growth_interval = interval;
  return o;
}
}  // namespace

TEST(LossScaler, ScalesTheLossAndUnscalesFiniteGradients) {
  LossScaler scaler(kCpu, options(8.0, 100));
  EXPECT_FLOAT_EQ(scaler.scale(torch::tensor(1.5f)).item<float>(), 12.0f);
  torch::Tensor grads = torch::tensor({16.0f, -32.0f, 0.5f});
  const torch::Tensor found_inf = scaler.unscale_(grads);
  EXPECT_EQ(found_inf.item<float>(), 0.0f);
  EXPECT_TRUE(torch::equal(grads, torch::tensor({2.0f, -4.0f, 0.0625f})));
}

TEST(LossScaler, FlagsInfAndNanGradients) {
  LossScaler scaler(kCpu, options(4.0, 100));
  for (const float planted : {kInf, -kInf, std::numeric_limits<float>::quiet_NaN()}) {
    torch::Tensor grads = torch::ones({1000});
    grads[537] = planted;
    EXPECT_EQ(scaler.unscale_(grads).item<float>(), 1.0f) << planted;
  }
}

TEST(LossScaler, OverflowBacksOffAndRestartsTheCount) {
  LossScaler scaler(kCpu, options(1024.0, 3));
  scaler.update(torch::tensor(0.0f));
  scaler.update(torch::tensor(0.0f));
  EXPECT_EQ(scaler.good_steps(), 2);
  scaler.update(torch::tensor(1.0f));  // an overflow
  EXPECT_DOUBLE_EQ(scaler.scale_value(), 512.0);
  EXPECT_EQ(scaler.good_steps(), 0);
  EXPECT_EQ(scaler.skipped_steps(), 1);
  scaler.update(torch::tensor(1.0f));
  EXPECT_DOUBLE_EQ(scaler.scale_value(), 256.0);
  EXPECT_EQ(scaler.skipped_steps(), 2);
}

TEST(LossScaler, GrowsAfterTheIntervalOfGoodSteps) {
  LossScaler scaler(kCpu, options(256.0, 3));
  scaler.update(torch::tensor(0.0f));
  scaler.update(torch::tensor(0.0f));
  EXPECT_DOUBLE_EQ(scaler.scale_value(), 256.0) << "two good steps are not yet the interval of 3";
  scaler.update(torch::tensor(0.0f));
  EXPECT_DOUBLE_EQ(scaler.scale_value(), 512.0);
  EXPECT_EQ(scaler.good_steps(), 0) << "the count restarts after growing";
  // An overflow part-way resets the count: three more good steps are needed.
  scaler.update(torch::tensor(0.0f));
  scaler.update(torch::tensor(1.0f));
  EXPECT_DOUBLE_EQ(scaler.scale_value(), 256.0);
  scaler.update(torch::tensor(0.0f));
  scaler.update(torch::tensor(0.0f));
  EXPECT_DOUBLE_EQ(scaler.scale_value(), 256.0);
  scaler.update(torch::tensor(0.0f));
  EXPECT_DOUBLE_EQ(scaler.scale_value(), 512.0);
  EXPECT_EQ(scaler.skipped_steps(), 1);
}

TEST(LossScaler, NeverGrowsToInfinity) {
  const double largest_power = std::ldexp(1.0, 127);  // 2^128 overflows float32
  LossScaler scaler(kCpu, options(largest_power, 1));
  scaler.update(torch::tensor(0.0f));
  EXPECT_DOUBLE_EQ(scaler.scale_value(), largest_power);
  EXPECT_EQ(scaler.good_steps(), 0);
}

TEST(LossScaler, RejectsBadOptions) {
  LossScalerOptions o;
  o.init_scale = 0;
  EXPECT_THROW_WITH(LossScaler(kCpu, o), InputError, "loss scale must be a positive finite number, got 0");
  o = {};
  o.growth_factor = 1.0;
  EXPECT_THROW_WITH(LossScaler(kCpu, o), InputError, "growth factor must be > 1");
  o = {};
  o.backoff_factor = 1.0;
  EXPECT_THROW_WITH(LossScaler(kCpu, o), InputError, "backoff factor must be in (0, 1)");
  o = {};
  o.growth_interval = 0;
  EXPECT_THROW_WITH(LossScaler(kCpu, o), InputError, "growth interval must be >= 1 step");
}
