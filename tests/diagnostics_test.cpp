// The device diagnostics of layer 1: the device audit of a real model, the scenarios reproduced on this host. The
// classifier they report through is tested in explain_test (layer 0).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "diagnostics/audit.h"
#include "diagnostics/classify.h"
#include "diagnostics/scenarios.h"
#include "test_util.h"
#include "torchprobe/backend.h"
#include "torchprobe/error.h"
#include "torchprobe/models/registry.h"

using namespace torchprobe;
using namespace torchprobe::diagnostics;

namespace {

// A module with a buffer left on the meta device, next to real parameters.
struct HolderImpl : torch::nn::Module {
  HolderImpl() { scale = register_buffer("scale", torch::empty({4}, torch::TensorOptions().device(torch::kMeta))); }
  torch::Tensor scale;
};
TORCH_MODULE(Holder);
struct ModelImpl : torch::nn::Module {
  ModelImpl() {
    head = register_module("head", torch::nn::Linear(4, 4));
    norm = register_module("norm", Holder());
  }
  torch::nn::Linear head{nullptr};
  Holder norm{nullptr};
};
TORCH_MODULE(Model);

}  // namespace

TEST(Audit, FindsAPlantedMetaBufferByItsFullName) {
  Model model;
  const auto x = torch::randn({2, 4});
  const DeviceAudit audit = audit_devices(*model, {x}, torch::Device(torch::kCPU));
  ASSERT_EQ(audit.misplaced.size(), 1u);
  EXPECT_EQ(audit.misplaced[0].name, "norm.scale");
  EXPECT_EQ(audit.misplaced[0].what, "buffer");
  EXPECT_EQ(audit.misplaced[0].device, "meta");
  EXPECT_NE(audit.text().find("buffer `norm.scale` is on meta, expected cpu"), std::string::npos);
  // No expected device: any mix is reported against the majority.
  const DeviceAudit mix = audit_devices(*model, {x});
  EXPECT_EQ(mix.expected, "cpu");
  ASSERT_EQ(mix.misplaced.size(), 1u);
  EXPECT_EQ(mix.misplaced[0].name, "norm.scale");
  // An input on another device is named too.
  const DeviceAudit input = audit_devices(*models::make_model("net"), {x.to(torch::kMeta)}, torch::Device(torch::kCPU));
  ASSERT_EQ(input.misplaced.size(), 1u);
  EXPECT_EQ(input.misplaced[0].name, "input[0]");
}

TEST(Audit, QuietOnAConsistentModel) {
  auto model = models::make_model("resnet18");
  const DeviceAudit audit = audit_devices(*model, {torch::randn({1, 3, 32, 32})}, torch::Device(torch::kCPU));
  EXPECT_TRUE(audit.ok()) << audit.text();
  EXPECT_NE(audit.text().find("ok: all"), std::string::npos);
  EXPECT_GT(audit.counts.at("cpu"), 100);  // 62 parameters + 60 buffers + the input
}

// The scenarios that need no GPU run for real here (and in CI); the others skip with the reason.
TEST(Scenarios, ReproduceAndExplainWhatThisHostCan) {
  const int gpus = backend::cuda_device_count();
  const auto results = run_scenarios("all", std::nullopt);
  ASSERT_EQ(results.size(), 14u);
  int reproduced = 0;
  for (const auto& r : results) {
    if (r.status == ScenarioStatus::kSkipped) {
      EXPECT_NE(r.note.find("skipped: needs"), std::string::npos) << r.name;
      continue;
    }
    EXPECT_EQ(static_cast<int>(r.status), static_cast<int>(ScenarioStatus::kReproduced)) << r.name << ": " << r.note << " raw: " << r.raw;
    EXPECT_FALSE(r.raw.empty()) << r.name;
    EXPECT_EQ(r.raw.find("frame #"), std::string::npos) << r.name;
    ++reproduced;
  }
  EXPECT_GE(reproduced, 3);  // checkpoint, CUDA where there is none, meta: on every host
  for (const auto& r : results) {
    if (r.name == "meta_tensors") {
      EXPECT_EQ(kind_name(r.diagnosis.kind), "meta_tensor");
      EXPECT_NE(r.note.find("SILENT: "), std::string::npos) << r.note;
      EXPECT_NE(r.note.find("forward() on a meta input returned a meta tensor of shape 2x10"), std::string::npos) << r.note;
      EXPECT_NE(r.culprit.find("4 parameters on meta, e.g. `fc1.weight`"), std::string::npos) << r.culprit;
    }
    if (r.name == "checkpoint_from_gpu") {
      EXPECT_EQ(kind_name(r.diagnosis.kind), gpus == 0 ? "cuda_unavailable" : "invalid_device");
      EXPECT_NE(r.note.find("fix verified"), std::string::npos) << r.note;
    }
    if (r.name == "cuda_where_there_is_none") {
      EXPECT_EQ(kind_name(r.diagnosis.kind), gpus == 0 ? "cuda_unavailable" : "invalid_device");
    }
    // On a GPU host: the loss's weight buffer and the boundary layer named, the fix checked to run.
    if (r.name == "loss_weights_on_cpu" && gpus > 0) {
      EXPECT_EQ(kind_name(r.diagnosis.kind), "device_mismatch");
      EXPECT_NE(r.culprit.find("weight"), std::string::npos) << r.culprit;
      EXPECT_NE(r.note.find("fixed by loss_fn->to(device)"), std::string::npos) << r.note;
    }
    if (r.name == "model_split_across_devices" && gpus > 0) {
      EXPECT_EQ(kind_name(r.diagnosis.kind), "device_mismatch");
      EXPECT_NE(r.culprit.find("second.0, Linear(120, 84)"), std::string::npos) << r.culprit;
      EXPECT_NE(r.note.find("fixed by moving the activations"), std::string::npos) << r.note;
    }
    if (r.name == "two_gpus" && gpus < 2) {
      EXPECT_EQ(static_cast<int>(r.status), static_cast<int>(ScenarioStatus::kSkipped));
    }
  }
  EXPECT_THROW_WITH(run_scenarios("nope", std::nullopt), InputError, "unknown scenario 'nope' (known: all, input_on_cpu");
}
