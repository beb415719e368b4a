// Tests that need a CUDA device: labelled "gpu", they skip with the reason when none exists.
#include <gtest/gtest.h>
#include <torch/utils.h>

#include <chrono>
#include <cmath>

#include "diagnostics/memory_probe.h"
#include "torchprobe/backend.h"
#include "torchprobe/device_spec.h"
#include "torchprobe/inventory.h"
#include "torchprobe/config.h"
#ifdef TORCHPROBE_HAS_DIST
#include "torchprobe/dist/dist_bench.h"
#endif
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
    train::TrainStep step(net, device, train::StepOptions::sgd(0.05, 0.9));
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

// What an earlier probe (or anything else in the process) left in the caching allocator is free to the probe:
// it starts from the device as free as it can be (on an H100, net's probe after resnet18's found 11 of 79 GB).
TEST_F(Gpu, AMemoryProbeStartsFromWhatTheCacheHeldReturned) {
  constexpr std::int64_t kGiB = std::int64_t{1} << 30;
  { auto held = torch::empty({kGiB}, torch::TensorOptions().device(gpu).dtype(torch::kUInt8)); }  // cached, not freed
  const std::int64_t free_with_cache = backend::allocator_stats(gpu).device_free;
  diagnostics::ProbeOptions probe;
  probe.model = "net";
  probe.search.max_batch = 2;
  const diagnostics::ProbeReport report = diagnostics::run_memory_probe(gpu, probe);
  EXPECT_GT(report.free_at_start, free_with_cache + kGiB / 2) << "the cached GiB went back to the device first";
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

namespace {

/// Losses and parameters (on the CPU) after `steps` steps of a variant from seed-5 weights on one batch.
struct GpuOutcome {
  std::vector<float> losses;
  std::vector<torch::Tensor> before, after;
  const train::LossScaler* scaler = nullptr;
  std::int64_t skipped = 0;
};

GpuOutcome run_gpu_variant(const char* model, const torch::Device& device, const train::StepOptions& options, int steps,
                           bool cudnn_benchmark = false) {
  backend::CudnnBenchmarkGuard autotune(cudnn_benchmark);
  auto ds = std::make_shared<const data::Dataset>(data::make_synthetic(16, 4));
  data::Batcher batcher(ds, 16, backend::wants_pinned_staging(device), 0, 1, /*shuffle=*/false);
  torch::manual_seed(5);
  models::Classifier m = models::make_model(model);
  GpuOutcome out;
  for (const auto& p : m->parameters()) out.before.push_back(p.detach().clone());
  train::TrainStep step(m, device, options);
  for (int i = 0; i < steps; ++i) out.losses.push_back(step.run(batcher.next()).item<float>());
  for (const auto& p : m->parameters()) out.after.push_back(p.detach().cpu());
  if (step.scaler()) out.skipped = step.scaler()->skipped_steps();
  return out;
}

double relative_update_error(const GpuOutcome& a, const GpuOutcome& b) {
  double diff = 0.0, norm = 0.0;
  for (size_t i = 0; i < a.after.size(); ++i) {
    const torch::Tensor da = (a.after[i] - a.before[i].cpu()).to(torch::kFloat64);
    const torch::Tensor db = (b.after[i] - b.before[i].cpu()).to(torch::kFloat64);
    diff += (da - db).pow(2).sum().item<double>();
    norm += db.pow(2).sum().item<double>();
  }
  return std::sqrt(diff / norm);
}

train::StepOptions gpu_variant(train::Precision precision, train::Layout layout, bool graph) {
  train::StepOptions o = train::StepOptions::sgd(0.05, 0.9);
  o.precision = precision;
  o.layout = layout;
  o.cuda_graph = graph;
  o.scaler.init_scale = 1024.0;  // no overflow on the first steps of these small models
  return o;
}

}  // namespace

TEST_F(Gpu, CudaGraphReplayComputesTheEagerSteps) {
  for (const char* model : {"net", "resnet18"}) {
    SCOPED_TRACE(model);
    const auto eager = run_gpu_variant(model, gpu, gpu_variant(train::Precision::kFp32, train::Layout::kNchw, false), 3);
    const auto graph = run_gpu_variant(model, gpu, gpu_variant(train::Precision::kFp32, train::Layout::kNchw, true), 3);
    for (size_t i = 0; i < eager.losses.size(); ++i) EXPECT_NEAR(graph.losses[i], eager.losses[i], 1e-4) << "step " << i;
    EXPECT_LT(relative_update_error(graph, eager), 1e-3);
  }
}

TEST_F(Gpu, Fp16WithLossScalingMatchesFp32) {
  const auto fp32 = run_gpu_variant("net", gpu, gpu_variant(train::Precision::kFp32, train::Layout::kNchw, false), 1);
  const auto fp16 = run_gpu_variant("net", gpu, gpu_variant(train::Precision::kFp16, train::Layout::kNchw, false), 1);
  EXPECT_EQ(fp16.skipped, 0);
  EXPECT_NEAR(fp16.losses[0], fp32.losses[0], 0.01 * fp32.losses[0]);
  EXPECT_NE(fp16.losses[0], fp32.losses[0]) << "bit-identical to fp32: autocast did not take effect";
  EXPECT_LT(relative_update_error(fp16, fp32), 0.05);
}

TEST_F(Gpu, GraphedFp16ChannelsLastStepMatchesEager) {
  // Everything at once: autocast without its weight cache, the loss scaler's device-side skip
  // logic and channels_last buffers, all inside the captured graph.
  const auto options = [](bool graph) { return gpu_variant(train::Precision::kFp16, train::Layout::kChannelsLast, graph); };
  const auto eager = run_gpu_variant("resnet18", gpu, options(false), 3);
  const auto graph = run_gpu_variant("resnet18", gpu, options(true), 3);
  for (size_t i = 0; i < eager.losses.size(); ++i) EXPECT_NEAR(graph.losses[i], eager.losses[i], 1e-2) << "step " << i;
  EXPECT_LT(relative_update_error(graph, eager), 0.05);
  EXPECT_EQ(graph.skipped, eager.skipped);
}

TEST_F(Gpu, Bf16AndCudnnAutotuningMatchFp32) {
  const auto fp32 = run_gpu_variant("resnet18", gpu, gpu_variant(train::Precision::kFp32, train::Layout::kNchw, false), 1);
  const auto tuned = run_gpu_variant("resnet18", gpu, gpu_variant(train::Precision::kFp32, train::Layout::kNchw, false), 1,
                                     /*cudnn_benchmark=*/true);
  EXPECT_NEAR(tuned.losses[0], fp32.losses[0], 1e-3);
  EXPECT_LT(relative_update_error(tuned, fp32), 3e-2);
  const std::string reason = backend::autocast_unsupported_reason(gpu, torch::kBFloat16);
  if (!reason.empty()) GTEST_SKIP() << reason;
  const auto bf16 = run_gpu_variant("resnet18", gpu, gpu_variant(train::Precision::kBf16, train::Layout::kChannelsLast, false), 1);
  EXPECT_NEAR(bf16.losses[0], fp32.losses[0], 0.02 * fp32.losses[0]);
  EXPECT_LT(relative_update_error(bf16, fp32), 0.5);
}

TEST_F(Gpu, DataParallelStepMatchesTheOneDeviceStep) {
  // torch::nn::parallel::data_parallel over every GPU (with one GPU its single-device path): the
  // same arithmetic as the plain step on the whole batch (net has no BatchNorm, whose per-replica
  // batch statistics would differ).
  const auto devices = parse_device_list("cuda");
  const std::int64_t batch = 8 * static_cast<std::int64_t>(devices.size());
  auto ds = std::make_shared<const data::Dataset>(data::make_synthetic(batch, 6));
  std::vector<float> losses;
  std::vector<torch::Tensor> weights;
  for (const bool parallel : {false, true}) {
    torch::manual_seed(9);
    train::StepOptions options = train::StepOptions::sgd(0.05, 0.9);
    if (parallel) options.data_parallel = devices;
    train::TrainStep step(models::make_model("net"), gpu, options);
    data::Batcher batcher(ds, batch, true, 0, 2, /*shuffle=*/false);
    torch::Tensor loss;
    for (int i = 0; i < 3; ++i) loss = step.run(batcher.next());
    losses.push_back(loss.item<float>());
    weights.push_back(step.flat_parameters().cpu());
  }
  EXPECT_NEAR(losses[0], losses[1], 1e-4);
  EXPECT_TRUE(torch::allclose(weights[0], weights[1], /*rtol=*/1e-4, /*atol=*/1e-5));
}

#ifdef TORCHPROBE_HAS_DIST
TEST_F(Gpu, NcclWithWorldSizeOneAveragesAndTrains) {
  dist::DistEnv env;
  env.master_port = 29641;
  dist::ProcessGroup group(env, std::chrono::seconds(60), gpu);
  EXPECT_EQ(group.backend_name(), "nccl");
  torch::Tensor flat = torch::arange(1 << 20, torch::TensorOptions().dtype(torch::kFloat32).device(gpu));
  EXPECT_EQ(group.average_(flat, /*bucket_bytes=*/1 << 20), 4);
  EXPECT_TRUE(torch::equal(flat.cpu(), torch::arange(1 << 20, torch::kFloat32)));
  const auto rows = dist::all_reduce_sweep(group, 1 << 10, 1 << 20, 3);
  ASSERT_EQ(rows.size(), 11u);
  for (const auto& r : rows) EXPECT_GT(r.median_us, 0.0) << r.bytes;
  const dist::DistTrainResult train = dist::distributed_train(group, "net", 32, 3, 1, dist::kDefaultBucketBytes);
  EXPECT_EQ(train.engine, "nccl");
  EXPECT_EQ(train.all_reduce_calls_per_step, 1);
  EXPECT_GT(train.global_images_per_s, 0.0);
  group.barrier();
  group.shutdown();  // flushes and frees NCCL's communicator, as destroy_process_group() does
  EXPECT_THROW(group.barrier(), std::logic_error);
}
#endif
