#include "suite.h"
#include "progress.h"

#include <benchmark/benchmark.h>
#include <gtest/gtest.h>

#include <set>

#include "test_util.h"
#include "torchprobe/error.h"

using namespace torchprobe;

TEST(Suite, QuickVariantsPerDeviceModelAndBatch) {
  bench::SuiteOptions options;
  options.devices = {torch::Device(torch::kCPU), torch::Device(torch::kCUDA, 0), torch::Device(torch::kCUDA, 1)};
  options.models = {"net", "resnet18"};
  options.batch_sizes = {4, 64, 256};
  const auto plan = bench::plan_train_benchmarks(options);
  // Per model: the baseline at 3 batches + bf16/cl at the largest; GPUs also a graph at the smallest.
  ASSERT_EQ(plan.size(), 2u * 4u + 2u * 2u * 5u);
  std::set<std::string> names;
  for (const auto& config : plan) names.insert(bench::train_benchmark_name(config));
  EXPECT_EQ(names.size(), plan.size());
  EXPECT_TRUE(names.count("train_step/net/cpu/batch:4/dtype:fp32/layout:nchw"));
  EXPECT_TRUE(names.count("train_step/net/cpu/batch:256/dtype:bf16/layout:cl"));
  EXPECT_TRUE(names.count("train_step/resnet18/cuda:1/batch:256/dtype:fp32/layout:nchw/cudnn:off/graph:off"));
  EXPECT_TRUE(names.count("train_step/resnet18/cuda:1/batch:256/dtype:bf16/layout:cl/cudnn:on/graph:off"));
  EXPECT_TRUE(names.count("train_step/net/cuda:0/batch:4/dtype:fp32/layout:nchw/cudnn:off/graph:on"));
  EXPECT_FALSE(names.count("train_step/net/cuda:0/batch:64/dtype:fp32/layout:nchw/cudnn:off/graph:on"));
}

TEST(Suite, FullSweepCoversEveryVariantTheDeviceRuns) {
  bench::SuiteOptions options;
  options.devices = {torch::Device(torch::kCPU), torch::Device(torch::kCUDA, 0)};
  options.models = {"net"};
  options.batch_sizes = {4};
  options.variants.full = true;
  const auto plan = bench::plan_train_benchmarks(options);
  // CPU: {fp32, bf16} x {nchw, cl}; GPU: {fp32, bf16, fp16} x {nchw, cl} x cudnn {off, on} x graph {off, on}.
  ASSERT_EQ(plan.size(), 4u + 24u);
  std::set<std::string> names;
  for (const auto& config : plan) names.insert(bench::train_benchmark_name(config));
  EXPECT_EQ(names.size(), plan.size());
  EXPECT_TRUE(names.count("train_step/net/cuda:0/batch:4/dtype:fp16/layout:cl/cudnn:on/graph:on"));
  for (const auto& name : names) {
    if (name.find("/cpu/") != std::string::npos) {
      EXPECT_EQ(name.find("fp16"), std::string::npos) << name;
    }
  }
  // An axis given narrows the sweep; the others stay full.
  options.variants.graphs = {"on"};
  EXPECT_EQ(bench::plan_train_benchmarks(options).size(), 12u) << "graphs on: GPU only, 3 x 2 x 2";
  options.variants.dtypes = {"fp16"};
  options.devices = {torch::Device(torch::kCPU)};
  EXPECT_THROW_WITH(bench::plan_train_benchmarks(options), InputError,
                    "none of the selected training variants runs on the selected devices");
  options.variants = {};
  options.variants.layouts = {"nhwc"};
  EXPECT_THROW_WITH(bench::plan_train_benchmarks(options), InputError, "unknown memory layout 'nhwc'");
}

TEST(Suite, RegistersWhatItPlansWithGoogleBenchmark) {
  bench::SuiteOptions options;
  options.devices = {torch::Device(torch::kCPU)};
  options.models = {"net"};
  options.batch_sizes = {2, 8};
  options.op_selection.ops = {"add", "copy"};
  options.op_selection.batch_sizes = {16};
  auto ds = std::make_shared<const data::Dataset>(data::make_synthetic(16, 1));
  const auto names = bench::register_suites(options, ds, "synthetic");
  EXPECT_EQ(names, (std::vector<std::string>{"train_step/net/cpu/batch:2/dtype:fp32/layout:nchw",
                                             "train_step/net/cpu/batch:8/dtype:fp32/layout:nchw",
                                             "train_step/net/cpu/batch:8/dtype:bf16/layout:cl",
                                             "data/parse_cifar10/images:50000", "data/assemble_batch/batch:256",
                                             "op/add/cpu/input:16x64x32x32/dtype:fp32", "op/copy/cpu/kind:d2d/mib:64"}));
  options.suites = {"op"};
  options.op_selection.ops = {"gemm"};
  EXPECT_THROW_WITH(bench::register_suites(options, ds, "synthetic"), InputError, "unknown op 'gemm'");
}

TEST(Suite, ProgressCountsWhatTheFilterSelects) {
  const std::vector<std::string> names = {"train_step/net/cpu/batch:4", "train_step/resnet18/cpu/batch:4",
                                          "op/add/cpu/input:64x64x32x32/dtype:fp32"};
  EXPECT_EQ(bench::filter_names(names, ""), names);
  EXPECT_EQ(bench::filter_names(names, "all"), names);
  EXPECT_EQ(bench::filter_names(names, "resnet|op/"),
            (std::vector<std::string>{"train_step/resnet18/cpu/batch:4", "op/add/cpu/input:64x64x32x32/dtype:fp32"}));
  EXPECT_EQ(bench::filter_names(names, "-^op/"),
            (std::vector<std::string>{"train_step/net/cpu/batch:4", "train_step/resnet18/cpu/batch:4"}));
}

TEST(Suite, UnknownSuiteIsRejected) {
  EXPECT_THROW_WITH(bench::check_suites({"train", "ops"}), InputError, "unknown suite 'ops' (known: train, data, op)");
}
