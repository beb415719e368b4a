#include "torchprobe/ops/ops.h"
#include "torchprobe/ops/peaks.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "test_util.h"
#include "torchprobe/error.h"
#include "torchprobe/interrupt.h"
#include "torchprobe/io.h"
#include "torchprobe/models/registry.h"

using namespace torchprobe;

namespace {

const torch::Device kCpu(torch::kCPU);
const torch::Device kGpu(torch::kCUDA, 0);

std::set<std::string> names_of(const std::vector<ops::OpCase>& plan) {
  std::set<std::string> names;
  for (const auto& c : plan) names.insert(c.name());
  return names;
}

std::string param(const ops::OpCase& c, const std::string& key) {
  for (const auto& [k, v] : c.params) {
    if (k == key) return v;
  }
  return "";
}

// Straightforward references, independent of the kernels the ops use.
torch::Tensor naive_matmul(const torch::Tensor& a, const torch::Tensor& b) {
  const auto A = a.contiguous(), B = b.contiguous();
  const auto m = A.size(0), k = A.size(1), n = B.size(1);
  auto out = torch::zeros({m, n});
  auto pa = A.accessor<float, 2>(), pb = B.accessor<float, 2>();
  auto po = out.accessor<float, 2>();
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      double acc = 0.0;
      for (std::int64_t p = 0; p < k; ++p) acc += static_cast<double>(pa[i][p]) * pb[p][j];
      po[i][j] = static_cast<float>(acc);
    }
  }
  return out;
}

// Convolution as unfold (im2col) + matrix product.
torch::Tensor unfold_conv(const torch::Tensor& x, const torch::Tensor& w, std::int64_t stride, std::int64_t pad) {
  const auto k = w.size(2);
  const auto ho = (x.size(2) + 2 * pad - k) / stride + 1, wo = (x.size(3) + 2 * pad - k) / stride + 1;
  namespace F = torch::nn::functional;
  auto cols = F::unfold(x, F::UnfoldFuncOptions({k, k}).padding(pad).stride(stride));  // (B, C*k*k, L)
  auto out = torch::matmul(w.reshape({w.size(0), -1}), cols);                           // (B, O, L)
  return out.reshape({x.size(0), w.size(0), ho, wo});
}

void expect_close(const torch::Tensor& actual, const torch::Tensor& expected, const std::string& what, double rtol = 1e-4,
                  double atol = 1e-4) {
  ASSERT_EQ(actual.sizes(), expected.sizes()) << what;
  EXPECT_TRUE(torch::allclose(actual.to(torch::kFloat32).contiguous(), expected.to(torch::kFloat32).contiguous(), rtol, atol))
      << what << ": max abs diff " << (actual - expected).abs().max().item<float>();
}

}  // namespace

TEST(OpFormulas, MatmulAgainstHandComputedCounts) {
  EXPECT_DOUBLE_EQ(ops::matmul_flops(64, 400, 120), 6144000.0);  // 2 * 64 * 400 * 120
  EXPECT_DOUBLE_EQ(ops::matmul_bytes(64, 400, 120, 4), 325120.0);  // (25600 + 48000 + 7680) * 4
  EXPECT_DOUBLE_EQ(ops::matmul_flops(4096, 4096, 4096), 137438953472.0);
  EXPECT_DOUBLE_EQ(ops::matmul_bytes(4096, 4096, 4096, 2), 100663296.0);  // three 32 MiB bf16 matrices
}

TEST(OpFormulas, ConvAgainstHandComputedCounts) {
  const ops::ConvShape layer1{64, 64, 32, 32, 64, 3, 1, 1};
  EXPECT_EQ(layer1.out_height(), 32);
  EXPECT_DOUBLE_EQ(ops::conv2d_flops(layer1, false), 4831838208.0);  // 2 * 64*64*32*32 * 64*3*3
  EXPECT_DOUBLE_EQ(ops::conv2d_flops(layer1, true), 3 * 4831838208.0);
  EXPECT_DOUBLE_EQ(ops::conv2d_bytes(layer1, false, 4), 33701888.0);  // (4194304 + 36864 + 4194304) * 4
  EXPECT_DOUBLE_EQ(ops::conv2d_bytes(layer1, true, 4), (3 * 4194304.0 + 3 * 36864.0 + 2 * 4194304.0) * 4);
  const ops::ConvShape net_conv1{1, 3, 32, 32, 6, 5, 1, 0};
  EXPECT_EQ(net_conv1.out_width(), 28);
  EXPECT_DOUBLE_EQ(ops::conv2d_flops(net_conv1, false), 705600.0);  // 2 * 6*28*28 * 3*5*5
  const ops::ConvShape downsample{1, 64, 32, 32, 128, 1, 2, 0};
  EXPECT_EQ(downsample.out_height(), 16);
  EXPECT_DOUBLE_EQ(ops::conv2d_flops(downsample, false), 2.0 * 128 * 16 * 16 * 64);
}

TEST(OpFormulas, ElementwiseAndCopyCountsInThePlan) {
  ops::OpSelection core;
  core.batch_sizes = {64};
  for (const auto& c : ops::plan_ops({kCpu}, core)) {
    const double n = 64.0 * 64 * 32 * 32;
    if (c.op == "add") {
      EXPECT_DOUBLE_EQ(c.bytes, 3 * n * 4);
      EXPECT_DOUBLE_EQ(c.flops, n);
    } else if (c.op == "relu") {
      EXPECT_DOUBLE_EQ(c.bytes, 2 * n * 4);
    } else if (c.op == "sum") {
      EXPECT_DOUBLE_EQ(c.bytes, n * 4 + 4);
    } else if (c.op == "copy") {
      EXPECT_DOUBLE_EQ(c.bytes, 2.0 * 64 * 1024 * 1024);  // read + write
    } else if (c.op == "cross_entropy") {
      EXPECT_DOUBLE_EQ(c.bytes, 64 * 10 * 4 + 64 * 8 + 4);
    }
  }
}

// Bytes scale with the element size LibTorch stores each dtype in: every bf16, fp16 and tf32 matmul and convolution
// moves that many bytes per fp32 byte of its fp32 twin (same name but the dtype), on every device the plan has.
TEST(OpFormulas, EveryDtypeCountsTheBytesOfItsStorage) {
  ops::OpSelection all;
  all.all = true;
  const auto plan = ops::plan_ops({kCpu, kGpu}, all);
  std::map<std::string, double> fp32_bytes;
  for (const auto& c : plan) {
    if (c.dtype == ops::DType::kFp32) fp32_bytes[c.name()] = c.bytes;
  }
  std::map<ops::DType, int> checked;
  for (const auto& c : plan) {
    if ((c.op != "matmul" && c.op != "conv2d") || c.dtype == ops::DType::kFp32) continue;
    std::string twin = c.name();
    const std::string suffix = "/dtype:" + ops::dtype_name(c.dtype);
    ASSERT_EQ(twin.substr(twin.size() - suffix.size()), suffix) << twin;
    twin.replace(twin.size() - suffix.size(), suffix.size(), "/dtype:fp32");
    ASSERT_TRUE(fp32_bytes.count(twin)) << twin;
    const double per_fp32_byte = static_cast<double>(c10::elementSize(ops::storage_type(c.dtype))) / 4.0;
    EXPECT_DOUBLE_EQ(c.bytes, fp32_bytes[twin] * per_fp32_byte) << c.name();
    ++checked[c.dtype];
  }
  EXPECT_GT(checked[ops::DType::kBf16], 0);
  EXPECT_GT(checked[ops::DType::kFp16], 0);
  EXPECT_GT(checked[ops::DType::kTf32], 0);
}

TEST(OpShapes, ConvTablesMatchTheModels) {
  for (const std::string model : {"net", "resnet18"}) {
    std::set<std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t>> in_model, in_table;
    auto module = models::make_model(model);
    for (const auto& m : module->modules(/*include_self=*/false)) {
      if (auto* conv = m->as<torch::nn::Conv2d>()) {
        const auto& o = conv->options;
        const std::int64_t k = (*o.kernel_size())[0], stride = (*o.stride())[0];
        // The padding from the output size (its options type differs between LibTorch versions).
        const auto out = conv->forward(torch::zeros({1, o.in_channels(), 8, 8})).size(2);
        in_model.insert({o.in_channels(), o.out_channels(), k, stride, ((out - 1) * stride + k - 8 + 1) / 2});
      }
    }
    for (const auto& s : ops::model_conv_shapes(model)) in_table.insert({s.in_channels, s.out_channels, s.kernel, s.stride, s.padding});
    EXPECT_EQ(in_model, in_table) << model;

    std::set<std::pair<std::int64_t, std::int64_t>> linear_model, linear_table;
    for (const auto& m : module->modules(false)) {
      if (const auto* fc = m->as<torch::nn::Linear>()) linear_model.insert({fc->options.in_features(), fc->options.out_features()});
    }
    for (const auto& l : ops::model_linear_shapes(model)) linear_table.insert(l);
    EXPECT_EQ(linear_model, linear_table) << model;
  }
  // Spatial sizes chain through the network: each stage's input is the previous stride-2 output.
  const auto r = ops::model_conv_shapes("resnet18");
  for (const auto& s : r) {
    if (s.stride == 2) {
      const bool next_stage_exists = std::any_of(r.begin(), r.end(), [&](const ops::ConvShape& t) {
        return t.height == s.out_height() && t.in_channels == s.out_channels && t.stride == 1;
      });
      EXPECT_TRUE(next_stage_exists) << s.in_channels << "->" << s.out_channels;
    }
  }
}

TEST(OpPlan, CoreSetOnTheCpu) {
  const auto names = names_of(ops::plan_ops({kCpu}, ops::OpSelection{}));
  const std::set<std::string> expected = {
      "op/matmul/cpu/n:1024/dtype:fp32",
      "op/conv2d/cpu/model:resnet18/input:64x64x32x32/out:64/kernel:3/stride:1/pad:1/pass:fwd/layout:nchw/dtype:fp32",
      "op/relu/cpu/input:64x64x32x32/dtype:fp32",
      "op/max_pool2d/cpu/input:64x6x28x28/kernel:2/stride:2/dtype:fp32",
      "op/batch_norm/cpu/input:64x64x32x32/mode:train/dtype:fp32",
      "op/cross_entropy/cpu/input:64x10/dtype:fp32",
      "op/add/cpu/input:64x64x32x32/dtype:fp32",
      "op/sum/cpu/input:64x64x32x32/dtype:fp32",
      "op/copy/cpu/kind:d2d/mib:64"};
  EXPECT_EQ(names, expected);
}

TEST(OpPlan, FullSweepPerDeviceAndDtype) {
  ops::OpSelection all;
  all.all = true;
  const auto cpu = ops::plan_ops({kCpu}, all);
  // matmul: 6 squares + 4 linear shapes x 2 batches; conv2d: 13 shapes x 2 batches x fwd/fwdbwd x NCHW/CL;
  // 6 activation ops x 2 batches; 6 copy sizes.
  EXPECT_EQ(cpu.size(), 6u + 8u + 104u + 12u + 6u);
  for (const auto& c : cpu) {
    EXPECT_EQ(c.dtype, ops::DType::kFp32) << c.name();  // the CPU runs fp32 only
    EXPECT_NE(c.op, "model_to");
    EXPECT_TRUE(param(c, "kind").empty() || param(c, "kind") == "d2d") << c.name();
  }

  const auto both = ops::plan_ops({kCpu, kGpu}, all);
  const auto names = names_of(both);
  EXPECT_EQ(names.size(), both.size());  // unique names
  for (const std::string dtype : {"fp32", "tf32", "bf16", "fp16"}) {
    EXPECT_TRUE(names.count("op/matmul/cuda:0/n:8192/dtype:" + dtype)) << dtype;
    EXPECT_TRUE(names.count("op/conv2d/cuda:0/model:net/input:256x6x14x14/out:16/kernel:5/stride:1/pad:0/pass:fwdbwd/layout:cl/dtype:" + dtype));
  }
  EXPECT_FALSE(names.count("op/matmul/cpu/n:8192/dtype:bf16"));
  for (const std::string kind : {"h2d_pageable", "h2d_pinned", "d2h_pageable", "d2h_pinned", "d2d"}) {
    EXPECT_TRUE(names.count("op/copy/cuda:0/kind:" + kind + "/mib:1024")) << kind;
  }
  EXPECT_TRUE(names.count("op/model_to/cuda:0/model:resnet18"));
  EXPECT_TRUE(names.count("op/matmul/cpu/model:net/m:256/k:400/n:120/dtype:fp32"));
}

TEST(OpPlan, SelectionAndErrors) {
  ops::OpSelection only_add;
  only_add.ops = {"add"};
  only_add.batch_sizes = {8};
  EXPECT_EQ(names_of(ops::plan_ops({kCpu}, only_add)), std::set<std::string>{"op/add/cpu/input:8x64x32x32/dtype:fp32"});
  ops::OpSelection bad;
  bad.ops = {"gemm"};
  EXPECT_THROW_WITH(ops::plan_ops({kCpu}, bad), InputError, "unknown op 'gemm' (known: matmul, conv2d");
  ops::OpSelection zero;
  zero.batch_sizes = {0};
  EXPECT_THROW_WITH(ops::plan_ops({kCpu}, zero), InputError, "op batch size must be >= 1");
}

// Every op in the op table has a case: listing an op without one (docs/extending.md) fails here, and an op asked
// for by name that times nothing on the selected devices is an error, not an empty run.
TEST(OpPlan, EveryListedOpHasACaseAndAnEmptySelectionIsSaid) {
  ops::OpSelection all;
  all.all = true;
  std::set<std::string> planned;
  for (const auto& c : ops::plan_ops({kCpu, kGpu}, all)) planned.insert(c.op);
  const auto listed = ops::op_names();
  EXPECT_EQ(planned, std::set<std::string>(listed.begin(), listed.end()));
  // The names come from the cases, in the order they are planned: the list --ops and its help give.
  EXPECT_EQ(listed, (std::vector<std::string>{"matmul", "conv2d", "relu", "max_pool2d", "batch_norm", "cross_entropy",
                                              "add", "sum", "copy", "model_to"}));
  ops::OpSelection gpu_only;
  gpu_only.ops = {"model_to"};
  // No hint to try --op-set all where the full sweep has no case either (it once said so for model_to on the CPU).
  for (const bool every : {false, true}) {
    gpu_only.all = every;
    try {
      ops::plan_ops({kCpu}, gpu_only);
      ADD_FAILURE() << "model_to planned on the CPU";
    } catch (const InputError& e) {
      EXPECT_EQ(std::string(e.what()), "op 'model_to' has no benchmark on cpu") << every;
    }
  }
}

// Every op the suite times, at batch 2, against a straightforward reference.
TEST(OpCorrectness, EveryBenchmarkedOpComputesTheRightThing) {
  torch::manual_seed(3);
  ops::OpSelection small;
  small.all = true;
  small.batch_sizes = {2};
  int checked = 0;
  for (auto& c : ops::plan_ops({kCpu}, small)) {
    if ((c.op == "matmul" && param(c, "n") != "" && param(c, "m") == "" && param(c, "n") != "256") ||
        (c.op == "copy" && param(c, "mib") != "1")) {
      continue;  // large squares and copies: the same code as their smallest size
    }
    ops::MathModeGuard math(c.dtype);
    ops::OpInputs in = c.make_inputs();
    const std::string what = c.name();
    const torch::Tensor out = c.run(in);
    const auto& t = in.tensors;
    if (c.op == "matmul") {
      expect_close(out, naive_matmul(t[0], t[1]), what, 1e-4, 1e-3);
    } else if (c.op == "conv2d") {
      const auto stride = std::stoll(param(c, "stride")), pad = std::stoll(param(c, "pad"));
      if (param(c, "pass") == "fwd") {
        expect_close(out, unfold_conv(t[0], t[1], stride, pad), what, 1e-4, 1e-3);
      } else {
        auto x = t[0].detach().contiguous().requires_grad_(true);
        auto w = t[1].detach().contiguous().requires_grad_(true);
        unfold_conv(x, w, stride, pad).backward(t[2].contiguous());
        expect_close(out, x.grad(), what, 1e-4, 1e-3);
      }
    } else if (c.op == "relu") {
      expect_close(out, torch::where(t[0] > 0, t[0], torch::zeros_like(t[0])), what);
    } else if (c.op == "max_pool2d") {
      const auto x = t[0];
      expect_close(out, x.reshape({x.size(0), x.size(1), x.size(2) / 2, 2, x.size(3) / 2, 2}).amax({3, 5}), what);
    } else if (c.op == "batch_norm") {
      const auto x = t[0];
      const auto mean = x.mean({0, 2, 3}, /*keepdim=*/true);
      const auto var = (x - mean).pow(2).mean({0, 2, 3}, /*keepdim=*/true);
      expect_close(out, (x - mean) / torch::sqrt(var + 1e-5), what);  // gamma 1, beta 0
    } else if (c.op == "cross_entropy") {
      const auto x = t[0].to(torch::kFloat64);
      const auto log_z = x.exp().sum(1).log();
      const auto picked = x.gather(1, t[1].unsqueeze(1)).squeeze(1);
      expect_close(out, (log_z - picked).mean().to(torch::kFloat32), what);
    } else if (c.op == "add") {
      const auto a = t[0].contiguous(), b = t[1].contiguous();
      auto expected = torch::empty_like(a);
      const float *pa = a.data_ptr<float>(), *pb = b.data_ptr<float>();
      float* pe = expected.data_ptr<float>();
      for (std::int64_t i = 0; i < a.numel(); ++i) pe[i] = pa[i] + pb[i];
      expect_close(out, expected, what, 0, 0);
    } else if (c.op == "sum") {
      double acc = 0.0;
      const float* p = t[0].contiguous().data_ptr<float>();
      for (std::int64_t i = 0; i < t[0].numel(); ++i) acc += p[i];
      EXPECT_NEAR(out.item<double>(), acc, 1e-3 * std::max(1.0, std::fabs(acc))) << what;
    } else if (c.op == "copy") {
      EXPECT_TRUE(torch::equal(t[0], t[1])) << what;
    } else {
      ADD_FAILURE() << "no reference for " << what;
    }
    ++checked;
  }
  EXPECT_EQ(checked, 1 + 4 + 52 + 6 + 1);  // n:256, 4 linear shapes, 13 convs x 4 variants, 6 activation ops, 1 MiB copy
}

namespace {
// A peak whose every field holds its own value, as a store entry would.
const nlohmann::json kStoredPeak = {{"gflop_per_s", 901.0},
                                    {"gemm_gflop_per_s", 802.0},
                                    {"conv_gflop_per_s", 703.0},
                                    {"theoretical_gflop_per_s", 901.0},
                                    {"compute_source", "theoretical"},
                                    {"theoretical_basis", "2 cores x ..."},
                                    {"gb_per_s", 45.5},
                                    {"theoretical_suspect", true},
                                    {"theoretical_cores", 3},
                                    {"theoretical_clock_mhz", 3456.0},
                                    {"theoretical_flop_per_cycle", 96.0}};
}  // namespace

// torchprobe-bench --isolate's processes share the roofs through a store: what one process measured the next reads
// back, field by field, and measures nothing.
TEST(OpPeak, AStoredPeakIsReadBackFieldByField) {
  const TempDir dir;
  const std::string store = (dir.path() / "peaks.json").string();
  io::write_text_file(store, nlohmann::json{{"cpu/fp16", kStoredPeak}}.dump());
  ops::set_peak_store(store);
  std::vector<std::string> said;
  ops::set_peak_log([&](const std::string& line) { said.push_back(line); });
  const ops::Peak p = ops::measured_peak(kCpu, ops::DType::kFp16);
  ops::set_peak_log(nullptr);
  ops::set_peak_store("");
  EXPECT_TRUE(said.empty()) << "read back, not measured: " << said.front();
  EXPECT_EQ(p.gflop_per_s, 901.0);
  EXPECT_EQ(p.gemm_gflop_per_s, 802.0);
  EXPECT_EQ(p.conv_gflop_per_s, 703.0);
  EXPECT_EQ(p.theoretical_gflop_per_s, 901.0);
  EXPECT_EQ(p.compute_source, "theoretical");
  EXPECT_EQ(p.theoretical_basis, "2 cores x ...");
  EXPECT_EQ(p.gb_per_s, 45.5);
  EXPECT_TRUE(p.theoretical_suspect);
  EXPECT_EQ(p.theoretical_cores, 3);
  EXPECT_EQ(p.theoretical_clock_mhz, 3456.0);
  EXPECT_EQ(p.theoretical_flop_per_cycle, 96.0);
}

TEST(OpPeak, MeasuredOncePerDeviceAndCachedAndAnUpperBound) {
  // With a store holding another device's roofs: what is measured is added beside them, field by field.
  const TempDir dir;
  const std::string store = (dir.path() / "peaks.json").string();
  io::write_text_file(store, nlohmann::json{{"cuda:7/fp32", kStoredPeak}}.dump());
  ops::set_peak_store(store);
  std::vector<std::string> said;
  ops::set_peak_log([&](const std::string& line) { said.push_back(line); });
  const auto first = ops::measured_peak(kCpu, ops::DType::kFp32);
  ops::set_peak_store("");
  const nlohmann::json stored = nlohmann::json::parse(io::read_text_file(store));
  EXPECT_EQ(stored.at("cuda:7/fp32"), kStoredPeak);
  const nlohmann::json& mine = stored.at("cpu/fp32");
  EXPECT_EQ(mine.at("gflop_per_s"), first.gflop_per_s);
  EXPECT_EQ(mine.at("gemm_gflop_per_s"), first.gemm_gflop_per_s);
  EXPECT_EQ(mine.at("conv_gflop_per_s"), first.conv_gflop_per_s);
  EXPECT_EQ(mine.at("theoretical_gflop_per_s"), first.theoretical_gflop_per_s);
  EXPECT_EQ(mine.at("compute_source"), first.compute_source);
  EXPECT_EQ(mine.at("theoretical_basis"), first.theoretical_basis);
  EXPECT_EQ(mine.at("gb_per_s"), first.gb_per_s);
  EXPECT_EQ(mine.at("theoretical_suspect"), first.theoretical_suspect);
  EXPECT_EQ(mine.at("theoretical_cores"), first.theoretical_cores);
  EXPECT_EQ(mine.at("theoretical_clock_mhz"), first.theoretical_clock_mhz);
  EXPECT_EQ(mine.at("theoretical_flop_per_cycle"), first.theoretical_flop_per_cycle);
  EXPECT_GT(first.gemm_gflop_per_s, 0.0);
  EXPECT_GT(first.conv_gflop_per_s, 0.0);
  EXPECT_GT(first.gb_per_s, 0.0);
  EXPECT_TRUE(std::isfinite(first.gflop_per_s) && std::isfinite(first.gb_per_s));
  // The roof is the best of every backend and the theoretical peak (unless that is suspect), and says which.
  const double theory = first.theoretical_suspect ? 0.0 : first.theoretical_gflop_per_s;
  EXPECT_EQ(first.gflop_per_s, std::max({first.gemm_gflop_per_s, first.conv_gflop_per_s, theory}));
  EXPECT_EQ(first.theoretical_suspect,
            first.theoretical_gflop_per_s > ops::kSuspectRatio * std::max(first.gemm_gflop_per_s, first.conv_gflop_per_s));
  const double from_source = first.compute_source == "gemm"   ? first.gemm_gflop_per_s
                             : first.compute_source == "conv" ? first.conv_gflop_per_s
                                                              : first.theoretical_gflop_per_s;
  EXPECT_EQ(from_source, first.gflop_per_s) << first.compute_source;
  EXPECT_EQ(first.theoretical_gflop_per_s > 0.0, !first.theoretical_basis.empty());
  const auto again = ops::measured_peak(kCpu, ops::DType::kFp32);
  EXPECT_EQ(first.gflop_per_s, again.gflop_per_s);
  EXPECT_EQ(first.gb_per_s, again.gb_per_s);
  // Two progress lines, before the measurement and after it with each part's time (the cached second call says
  // nothing).
  ops::set_peak_log(nullptr);
  ASSERT_EQ(said.size(), 2u);
  EXPECT_EQ(said[0], "measuring the roofs of cpu fp32: a large GEMM, a convolution and a STREAM triad, >= 1 s each");
  said.erase(said.begin());
  EXPECT_EQ(said[0].rfind("roofs of cpu fp32: GEMM ", 0), 0u) << said[0];
  EXPECT_GT(first.gemm_seconds, 0.0);
  EXPECT_GT(first.conv_seconds, 0.0);
  EXPECT_GT(first.triad_seconds, 0.0);
  EXPECT_NE(said[0].find(fmt::format("in {:.1f} s, convolution", first.gemm_seconds)), std::string::npos) << said[0];
}

TEST(OpPeak, AStopIsAnsweredDuringTheMeasurement) {
  // Ctrl-C during the roof: the measurement stops (between two GEMM panels on the CPU) instead of
  // running its second of samples per roof, and nothing is cached from it.
  interrupt::reset_for_testing();
  interrupt::request_stop("a test's stop");
  EXPECT_THROW_WITH(ops::measured_peak(kCpu, ops::DType::kBf16), interrupt::Interrupted, "a test's stop");
  interrupt::reset_for_testing();
}

TEST(OpPeak, TheMeasuredClockCannotReadHigh) {
  // Only upper bounds: a busy host can make the probe read low, never high. An add chain read 22 000 MHz
  // on a Sapphire Rapids core (its adds are folded at rename); the multiply chain cannot be folded.
  const double mhz = ops::measure_cpu_clock_mhz();
#if defined(__x86_64__)
  EXPECT_GT(mhz, 0.0);
#endif
  EXPECT_LE(mhz, 6500.0);
  const CpuInfo cpu = read_cpu_info();
  if (cpu.max_clock_mhz > 0.0) {
    // cpufreq's maximum is the boost clock; /proc/cpuinfo (VMs) lists the nominal one, which boost exceeds.
    const double slack = cpu.clock_source.rfind("cpufreq", 0) == 0 ? 1.5 : 2.5;
    EXPECT_LE(mhz, slack * cpu.max_clock_mhz) << cpu.clock_source << " lists " << cpu.max_clock_mhz << " MHz";
  }
}

TEST(OpPeak, ATheoreticalRoofFarAboveTheMeasuredOnesIsSuspectAndUnused) {
  ops::Peak p;
  p.gemm_gflop_per_s = 400.0;
  p.conv_gflop_per_s = 417.0;
  p.theoretical_gflop_per_s = 2820.0;  // the add-chain clock on a Sapphire Rapids core: 6.8x
  ops::apply_compute_roof(p);
  EXPECT_TRUE(p.theoretical_suspect);
  EXPECT_EQ(p.gflop_per_s, 417.0);
  EXPECT_EQ(p.compute_source, "conv");
  // Exactly at the ratio: still trusted (suspect only above it); just above: suspect.
  p.theoretical_gflop_per_s = ops::kSuspectRatio * 417.0;
  ops::apply_compute_roof(p);
  EXPECT_FALSE(p.theoretical_suspect);
  EXPECT_EQ(p.gflop_per_s, ops::kSuspectRatio * 417.0);
  EXPECT_EQ(p.compute_source, "theoretical");
  p.theoretical_gflop_per_s = std::nextafter(ops::kSuspectRatio * 417.0, 1e9);
  ops::apply_compute_roof(p);
  EXPECT_TRUE(p.theoretical_suspect);
  EXPECT_EQ(p.gflop_per_s, 417.0);
  // No theoretical figure (GPUs, unknown CPUs): the measured roof, nothing suspect.
  p.theoretical_gflop_per_s = 0.0;
  p.gemm_gflop_per_s = 500.0;
  ops::apply_compute_roof(p);
  EXPECT_FALSE(p.theoretical_suspect);
  EXPECT_EQ(p.gflop_per_s, 500.0);
  EXPECT_EQ(p.compute_source, "gemm");
}

// A roof is the device's best: the work over the fastest sample, never the slowest or the mean.
TEST(OpPeak, ARoofIsTheWorkOverTheFastestSample) {
  EXPECT_DOUBLE_EQ(ops::fastest_rate(2e9, {4.0, 2.0, 8.0, 2.5}), 1e12);  // 2 GFLOP in 2 ms
  EXPECT_DOUBLE_EQ(ops::fastest_rate(1.0, {1000.0}), 1.0);
  EXPECT_EQ(ops::fastest_rate(1.0, {}), 0.0);
}

TEST(OpPeak, TheoreticalCpuPeakIsCoresTimesClockTimesFlopPerCycle) {
  CpuInfo cpu;
  cpu.vendor = "GenuineIntel";
  cpu.logical_cores = 2;
  cpu.max_clock_mhz = 3000.0;
  cpu.clock_source = "test";
  cpu.flags = {"avx", "avx2", "fma", "avx512f"};
  const auto intel = ops::theoretical_cpu_peak(cpu, /*threads=*/2);
  EXPECT_DOUBLE_EQ(intel.gflop_per_s, 2 * 3.0 * 64);
  EXPECT_NE(intel.basis.find("2 cores x 3000 MHz"), std::string::npos) << intel.basis;
  EXPECT_DOUBLE_EQ(ops::theoretical_cpu_peak(cpu, /*threads=*/8).gflop_per_s, 2 * 3.0 * 64) << "threads beyond the cores add nothing";
  EXPECT_DOUBLE_EQ(ops::theoretical_cpu_peak(cpu, /*threads=*/1).gflop_per_s, 3.0 * 64);
  cpu.vendor = "AuthenticAMD";
  cpu.family = 25;  // Zen 4: AVX-512 on 256-bit pipes
  EXPECT_DOUBLE_EQ(ops::theoretical_cpu_peak(cpu, 2).gflop_per_s, 2 * 3.0 * 32);
  cpu.flags = {"avx", "avx2", "fma"};
  cpu.family = 23;
  cpu.model_number = 1;  // Zen 1: 128-bit FMA pipes
  EXPECT_DOUBLE_EQ(ops::theoretical_cpu_peak(cpu, 2).gflop_per_s, 2 * 3.0 * 16);
  cpu.model_number = 0x31;  // Zen 2
  EXPECT_DOUBLE_EQ(ops::theoretical_cpu_peak(cpu, 2).gflop_per_s, 2 * 3.0 * 32);
  cpu.vendor = "SomeVendor";
  EXPECT_EQ(ops::theoretical_cpu_peak(cpu, 2).gflop_per_s, 0.0) << "unknown: no theoretical roof";
  cpu.vendor = "GenuineIntel";
  cpu.max_clock_mhz = 0.0;
  EXPECT_EQ(ops::theoretical_cpu_peak(cpu, 2).gflop_per_s, 0.0) << "no clock: no theoretical roof";
}

// The parts a user checks a theoretical roof by: physical cores (SMT threads share a core's FMA units), the faster
// of the listed and the measured clock (strictly faster: a measurement equal to the listing is the listing), and
// the FLOP/cycle of the dtype's own unit, or fp32's where the core has none.
TEST(OpPeak, TheoreticalCpuPeakCountsPhysicalCoresTheFasterClockAndTheDtypesUnit) {
  CpuInfo cpu;
  cpu.vendor = "GenuineIntel";
  cpu.logical_cores = 4;
  cpu.physical_cores = 2;
  cpu.max_clock_mhz = 3000.0;
  cpu.clock_source = "cpufreq cpuinfo_max_freq";
  cpu.flags = {"avx", "avx2", "fma", "avx512f", "avx512_bf16", "amx_tile", "amx_bf16"};
  const CoreFlops flops = core_flops(cpu);
  ASSERT_GT(flops.fp32, 0.0);
  ASSERT_GT(flops.bf16, 0.0);
  ASSERT_NE(flops.bf16, flops.fp32) << "the test needs a bf16 unit apart from fp32's";

  auto peak = ops::theoretical_cpu_peak(cpu, /*threads=*/4);
  EXPECT_EQ(peak.cores, 2) << "4 threads on 2 physical cores";
  EXPECT_DOUBLE_EQ(peak.gflop_per_s, 2 * 3.0 * flops.fp32);
  EXPECT_DOUBLE_EQ(peak.flop_per_cycle, flops.fp32);
  EXPECT_EQ(peak.clock_source, "cpufreq cpuinfo_max_freq");

  peak = ops::theoretical_cpu_peak(cpu, 2, /*measured_clock_mhz=*/3600.0);
  EXPECT_DOUBLE_EQ(peak.gflop_per_s, 2 * 3.6 * flops.fp32);
  EXPECT_DOUBLE_EQ(peak.clock_mhz, 3600.0);
  EXPECT_EQ(peak.clock_source, "measured, imul chain");
  EXPECT_NE(peak.basis.find("3600 MHz measured (cpufreq cpuinfo_max_freq lists 3000)"), std::string::npos)
      << peak.basis;
  for (const double slower : {3000.0, 2500.0}) {
    peak = ops::theoretical_cpu_peak(cpu, 2, slower);
    EXPECT_DOUBLE_EQ(peak.clock_mhz, 3000.0) << slower;
    EXPECT_EQ(peak.clock_source, "cpufreq cpuinfo_max_freq") << slower;
  }

  peak = ops::theoretical_cpu_peak(cpu, 2, 0.0, "bf16");
  EXPECT_DOUBLE_EQ(peak.gflop_per_s, 2 * 3.0 * flops.bf16);
  EXPECT_DOUBLE_EQ(peak.flop_per_cycle, flops.bf16);
  EXPECT_NE(peak.basis.find(" bf16 FLOP/cycle"), std::string::npos) << peak.basis;

  cpu.flags = {"avx", "avx2", "fma", "avx512f"};  // no bf16 unit: bf16 runs through fp32's
  const CoreFlops fp32_only = core_flops(cpu);
  ASSERT_EQ(fp32_only.bf16, 0.0);
  peak = ops::theoretical_cpu_peak(cpu, 2, 0.0, "bf16");
  EXPECT_DOUBLE_EQ(peak.gflop_per_s, 2 * 3.0 * fp32_only.fp32);
  EXPECT_NE(peak.basis.find("no native bf16 unit, computed in fp32"), std::string::npos) << peak.basis;
}

TEST(ModelTables, EveryConvolutionInForwardOrderAndTheModelFlops) {
  for (const char* model : {"net", "resnet18"}) {
    SCOPED_TRACE(model);
    const auto module = models::make_model(model);
    std::vector<torch::nn::Conv2dImpl*> convs;
    for (const auto& m : module->modules(false)) {
      if (auto* conv = m->as<torch::nn::Conv2d>()) convs.push_back(conv);
    }
    const auto table = ops::model_conv_layers(model);
    ASSERT_EQ(convs.size(), table.size()) << "one table entry per Conv2d";
    for (size_t i = 0; i < table.size(); ++i) {
      const auto& o = convs[i]->options;
      const ops::ConvShape& s = table[i];
      EXPECT_EQ(o.in_channels(), s.in_channels) << "conv " << i;
      EXPECT_EQ(o.out_channels(), s.out_channels) << "conv " << i;
      EXPECT_EQ((*o.kernel_size())[0], s.kernel) << "conv " << i;
      EXPECT_EQ((*o.stride())[0], s.stride) << "conv " << i;
      // The layer itself at the table's input size gives the table's output size (padding included).
      EXPECT_EQ(convs[i]->forward(torch::zeros({1, s.in_channels, s.height, s.width})).size(2), s.out_height()) << "conv " << i;
    }
  }
  // Net by hand: conv1 2*6*28*28*3*5*5, conv2 2*16*10*10*6*5*5, fc 2*(400*120 + 120*84 + 84*10).
  EXPECT_DOUBLE_EQ(ops::model_forward_flops("net"), 705600.0 + 480000.0 + 117840.0);
  // CIFAR ResNet-18: 0.5554 G multiply-adds per 32x32 image in its convolutions and fc (profilers'
  // often-quoted 0.557 G also counts BatchNorm and the shortcut additions).
  EXPECT_NEAR(ops::model_forward_flops("resnet18") / 2e9, 0.5554, 0.0002);
  EXPECT_THROW_WITH(ops::model_forward_flops("vgg"), InputError, "no convolution table for model 'vgg'");
}
