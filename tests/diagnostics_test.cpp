#include <gtest/gtest.h>
#include <torch/torch.h>

#include <nlohmann/json.hpp>

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

struct Case {
  std::string text;
  ErrorKind kind;
  std::vector<std::string> devices;
  std::string argument;  // "" = none
  std::string op;
};

// Real messages of LibTorch 1.13 and 2.x, from C++ (what()) and from Python (tracebacks).
const std::vector<Case> kCases = {
    {"RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu! "
     "(when checking argument for argument mat1 in method wrapper_addmm)",
     ErrorKind::kDeviceMismatch, {"cuda:0", "cpu"}, "mat1", "addmm"},
    {"RuntimeError: Expected all tensors to be on the same device, but got weight is on cpu, different from other "
     "tensors on cuda:0 (when checking argument in method wrapper_CUDA_nll_loss_forward)",
     ErrorKind::kDeviceMismatch, {"cpu", "cuda:0"}, "weight", "nll_loss_forward"},
    {"Traceback (most recent call last):\n  File \"train.py\", line 42, in <module>\n    outputs = net(inputs)\n"
     "  File \"/usr/lib/python3/dist-packages/torch/nn/modules/conv.py\", line 459, in _conv_forward\n"
     "    return F.conv2d(input, weight, bias, self.stride,\n"
     "RuntimeError: Input type (torch.FloatTensor) and weight type (torch.cuda.FloatTensor) should be the same or "
     "input should be a MKLDNN tensor and weight is a dense tensor",
     ErrorKind::kDeviceMismatch, {"cpu", "cuda"}, "", ""},
    {"terminate called after throwing an instance of 'c10::Error'\n  what():  Expected all tensors to be on the same "
     "device, but found at least two devices, cpu and cuda:0! (when checking argument for argument index in method "
     "wrapper__index_select)\nException raised from compute_types at ../aten/src/ATen/TensorIterator.cpp:484 (most "
     "recent call first):\nframe #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x6b (0x7f3c in libc10.so)",
     ErrorKind::kDeviceMismatch, {"cpu", "cuda:0"}, "index", "index_select"},
    {"RuntimeError: Input, output and indices must be on the current device", ErrorKind::kDeviceMismatch, {}, "", ""},
    {"AssertionError: Torch not compiled with CUDA enabled", ErrorKind::kCudaUnavailable, {}, "", ""},
    {"RuntimeError: Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is False. If you "
     "are running on a CPU-only machine, please use torch.load with map_location=torch.device('cpu') to map your "
     "storages to the CPU.",
     ErrorKind::kCudaUnavailable, {"cpu"}, "", ""},
    {"RuntimeError: Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU and installed a "
     "driver from http://www.nvidia.com/Download/index.aspx",
     ErrorKind::kCudaUnavailable, {"cuda"}, "", ""},
    {"RuntimeError: CUDA error: invalid device ordinal\nCUDA kernel errors might be asynchronously reported at some "
     "other API call, so the stacktrace below might be incorrect.",
     ErrorKind::kInvalidDevice, {}, "", ""},
    {"RuntimeError: Attempting to deserialize object on CUDA device 3 but torch.cuda.device_count() is 1. Please use "
     "torch.load with map_location to map your storages to an existing device.",
     ErrorKind::kInvalidDevice, {"cuda:3"}, "", ""},
    {"NotImplementedError: Cannot copy out of meta tensor; no data!", ErrorKind::kMetaTensor, {"meta"}, "", ""},
    {"RuntimeError: Tensor.item() cannot be called on meta tensors", ErrorKind::kMetaTensor, {"meta"}, "", ""},
    {"aten::_local_scalar_dense: attempted to run this operator with Meta tensors, but there was no fake impl or Meta "
     "kernel registered. You may have run into this message while using an operator with PT2 compilation APIs",
     ErrorKind::kMetaTensor, {"meta"}, "", ""},
    {"Expected all tensors to be on the same device, but found at least two devices, meta and cpu! (when checking "
     "argument for argument mat1 in method wrapper_addmm)",
     ErrorKind::kMetaTensor, {"meta", "cpu"}, "mat1", "addmm"},
    {"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 79.19 GiB "
     "of which 3.06 MiB is free. Including non-PyTorch memory, this process has 79.18 GiB memory in use.",
     ErrorKind::kOutOfMemoryGpu, {"cuda:0"}, "", ""},
    {"RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 15.78 GiB total capacity; 12.35 GiB already "
     "allocated; 1.19 GiB free; 13.10 GiB reserved in total by PyTorch)",
     ErrorKind::kOutOfMemoryGpu, {"cuda:0"}, "", ""},
    {"RuntimeError: [enforce fail at alloc_cpu.cpp:75] err == 0. DefaultCPUAllocator: can't allocate memory: you tried "
     "to allocate 1099511627776 bytes. Error code 12 (Cannot allocate memory)",
     ErrorKind::kOutOfMemoryCpu, {}, "", ""},
    {"Could not run 'aten::empty.memory_format' with arguments from the 'CUDA' backend. This could be because the "
     "operator doesn't exist for this backend, or was omitted during the selective/custom build process (if using "
     "custom build). 'aten::empty.memory_format' is only available for these backends: [CPU, Meta, QuantizedCPU].",
     ErrorKind::kCudaUnavailable, {"cuda"}, "", ""},
    {"ValueError: too many values to unpack (expected 2)", ErrorKind::kUnknown, {}, "", ""},
};

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

TEST(Explain, ClassifiesRealMessagesOfBothVersionsAndLanguages) {
  for (const auto& c : kCases) {
    const Diagnosis d = explain_error(c.text);
    EXPECT_EQ(kind_name(d.kind), kind_name(c.kind)) << c.text;
    EXPECT_EQ(d.devices, c.devices) << c.text;
    EXPECT_EQ(d.argument.value_or(""), c.argument) << c.text;
    EXPECT_EQ(d.op, c.op) << c.text;
    if (c.kind != ErrorKind::kUnknown) {
      EXPECT_FALSE(d.explanation.empty());
      EXPECT_FALSE(d.fix_cpp.empty());
      EXPECT_FALSE(d.fix_python.empty());
    }
    EXPECT_EQ(d.message.find("Traceback"), std::string::npos);
    EXPECT_EQ(d.message.find("frame #"), std::string::npos);
  }
}

TEST(Explain, SaysWhichArgumentIsWhereAndHowToFixIt) {
  const Diagnosis d = explain_error(kCases[1].text);
  EXPECT_NE(d.explanation.find("`weight` is on cpu while the other tensors are on cuda:0"), std::string::npos) << d.explanation;
  EXPECT_NE(d.fix_cpp.find(".to(device"), std::string::npos);
  EXPECT_NE(d.fix_python.find(".to(device"), std::string::npos);
  const Diagnosis checkpoint = explain_error(kCases[6].text);
  EXPECT_NE(checkpoint.explanation.find("checkpoint saved from GPU tensors"), std::string::npos);
  EXPECT_NE(checkpoint.fix_python.find("map_location"), std::string::npos);
  EXPECT_NE(checkpoint.fix_cpp.find("torch::load(model, \"model.pt\", device)"), std::string::npos);
}

TEST(Explain, JsonHasTheDocumentedFields) {
  const auto j = nlohmann::json::parse(diagnosis_json(explain_error(kCases[0].text)));
  EXPECT_EQ(j.at("kind"), "device_mismatch");
  EXPECT_EQ(j.at("devices"), nlohmann::json::array({"cuda:0", "cpu"}));
  EXPECT_EQ(j.at("argument"), "mat1");
  EXPECT_TRUE(j.at("explanation").is_string());
  EXPECT_TRUE(j.at("fix").is_string());
  const auto unknown = nlohmann::json::parse(diagnosis_json(explain_error("something else entirely")));
  EXPECT_EQ(unknown.at("kind"), "unknown");
  EXPECT_TRUE(unknown.at("argument").is_null());
}

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
  ASSERT_EQ(results.size(), 12u);
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
    if (r.name == "two_gpus" && gpus < 2) {
      EXPECT_EQ(static_cast<int>(r.status), static_cast<int>(ScenarioStatus::kSkipped));
    }
  }
  EXPECT_THROW_WITH(run_scenarios("nope", std::nullopt), InputError, "unknown scenario 'nope' (known: all, input_on_cpu");
}
