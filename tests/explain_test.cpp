// The classifier behind `torchprobe explain` and the OOM-message parser: layer 0, run by every build (the light one
// too). Real messages of LibTorch 1.13 and 2.x; the corpora are in explain_corpus_test.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "diagnostics/classify.h"
#include "diagnostics/explanations.h"
#include "diagnostics/oom.h"
#include "test_util.h"

using namespace torchprobe;
using namespace torchprobe::diagnostics;
namespace dx = torchprobe::diagnostics;

namespace {

// explain's kind for a text; and its kind with its confidence ("out_of_memory_gpu likely"), for the memory verdicts.
std::string kind_of(const std::string& text) { return kind_name(explain_error(text).kind); }
// Each text's kind is `kind` (a failure names its text).
void expect_kind_of_each(const std::string& kind, std::initializer_list<const char*> texts) {
  for (const char* text : texts) EXPECT_EQ(kind_of(text), kind) << text;
}
std::string verdict_of(const std::string& text) {
  const Diagnosis d = explain_error(text);
  return kind_name(d.kind) + " " + d.confidence;
}

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
     ErrorKind::kDeviceMismatch,
     {"cuda:0", "cpu"},
     "mat1",
     "addmm"},
    {"RuntimeError: Expected all tensors to be on the same device, but got weight is on cpu, different from other "
     "tensors on cuda:0 (when checking argument in method wrapper_CUDA_nll_loss_forward)",
     ErrorKind::kDeviceMismatch,
     {"cpu", "cuda:0"},
     "weight",
     "nll_loss_forward"},
    {"Traceback (most recent call last):\n  File \"train.py\", line 42, in <module>\n    outputs = net(inputs)\n"
     "  File \"/usr/lib/python3/dist-packages/torch/nn/modules/conv.py\", line 459, in _conv_forward\n"
     "    return F.conv2d(input, weight, bias, self.stride,\n"
     "RuntimeError: Input type (torch.FloatTensor) and weight type (torch.cuda.FloatTensor) should be the same or "
     "input should be a MKLDNN tensor and weight is a dense tensor",
     ErrorKind::kDeviceMismatch,
     {"cpu", "cuda"},
     "",
     ""},
    {"terminate called after throwing an instance of 'c10::Error'\n  what():  Expected all tensors to be on the same "
     "device, but found at least two devices, cpu and cuda:0! (when checking argument for argument index in method "
     "wrapper__index_select)\nException raised from compute_types at ../aten/src/ATen/TensorIterator.cpp:484 (most "
     "recent call first):\nframe #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x6b (0x7f3c in libc10.so)",
     ErrorKind::kDeviceMismatch,
     {"cpu", "cuda:0"},
     "index",
     "index_select"},
    {"RuntimeError: Input, output and indices must be on the current device", ErrorKind::kDeviceMismatch, {}, "", ""},
    {"AssertionError: Torch not compiled with CUDA enabled", ErrorKind::kCudaUnavailable, {}, "", ""},
    {"RuntimeError: Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is False. If you "
     "are running on a CPU-only machine, please use torch.load with map_location=torch.device('cpu') to map your "
     "storages to the CPU.",
     ErrorKind::kCudaUnavailable,
     {"cuda", "cpu"},
     "",
     ""},
    {"RuntimeError: Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU and installed a "
     "driver from http://www.nvidia.com/Download/index.aspx",
     ErrorKind::kCudaUnavailable,
     {},
     "",
     ""},  // "an NVIDIA GPU" is hardware to install, not where a tensor is
    {"RuntimeError: CUDA error: invalid device ordinal\nCUDA kernel errors might be asynchronously reported at some "
     "other API call, so the stacktrace below might be incorrect.",
     ErrorKind::kInvalidDevice,
     {},
     "",
     ""},
    {"RuntimeError: Attempting to deserialize object on CUDA device 3 but torch.cuda.device_count() is 1. Please use "
     "torch.load with map_location to map your storages to an existing device.",
     ErrorKind::kInvalidDevice,
     {"cuda:3"},
     "",
     ""},
    {"NotImplementedError: Cannot copy out of meta tensor; no data!", ErrorKind::kMetaTensor, {"meta"}, "", ""},
    {"RuntimeError: Tensor.item() cannot be called on meta tensors", ErrorKind::kMetaTensor, {"meta"}, "", ""},
    {"aten::_local_scalar_dense: attempted to run this operator with Meta tensors, but there was no fake impl or Meta "
     "kernel registered. You may have run into this message while using an operator with PT2 compilation APIs",
     ErrorKind::kMetaTensor,
     {"meta"},
     "",
     ""},
    {"Expected all tensors to be on the same device, but found at least two devices, meta and cpu! (when checking "
     "argument for argument mat1 in method wrapper_addmm)",
     ErrorKind::kMetaTensor,
     {"meta", "cpu"},
     "mat1",
     "addmm"},
    {"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 79.19 GiB "
     "of which 3.06 MiB is free. Including non-PyTorch memory, this process has 79.18 GiB memory in use.",
     ErrorKind::kOutOfMemoryGpu,
     {"cuda:0"},
     "",
     ""},
    {"RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 15.78 GiB total capacity; 12.35 GiB already "
     "allocated; 1.19 GiB free; 13.10 GiB reserved in total by PyTorch)",
     ErrorKind::kOutOfMemoryGpu,
     {"cuda:0"},
     "",
     ""},
    {"RuntimeError: [enforce fail at alloc_cpu.cpp:75] err == 0. DefaultCPUAllocator: can't allocate memory: you tried "
     "to allocate 1099511627776 bytes. Error code 12 (Cannot allocate memory)",
     ErrorKind::kOutOfMemoryCpu,
     {},
     "",
     ""},
    {"Could not run 'aten::empty.memory_format' with arguments from the 'CUDA' backend. This could be because the "
     "operator doesn't exist for this backend, or was omitted during the selective/custom build process (if using "
     "custom build). 'aten::empty.memory_format' is only available for these backends: [CPU, Meta, QuantizedCPU].",
     ErrorKind::kCudaUnavailable,
     {"cuda"},
     "",
     ""},
    // c10d and PT2 wordings, as users quote them.
    {"RuntimeError: Tensors must be CUDA and dense", ErrorKind::kDeviceMismatch, {}, "", ""},
    {"RuntimeError: No backend type associated with device type cpu", ErrorKind::kDeviceMismatch, {"cpu"}, "", ""},
    {"RuntimeError: Tensor on device cpu is not on the expected device cuda:0!",
     ErrorKind::kDeviceMismatch,
     {"cpu", "cuda:0"},
     "",
     ""},
    {"RuntimeError: Tensor on device meta is not on the expected device cpu!",
     ErrorKind::kMetaTensor,
     {"meta", "cpu"},
     "",
     ""},
    {"ValueError: too many values to unpack (expected 2)", ErrorKind::kUnknown, {}, "", ""},
};

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

// The confidence rule (docs/diagnostics.md): a message that says memory ran out is "certain"; a status code that
// usually means it is "likely"; the same status code next to another cause is not called out of memory at all,
// while another cause never takes "certain" away.
TEST(Explain, ConfidenceIsCertainLikelyOrWithheldNextToAnotherCause) {
  const std::string likely =
      "RuntimeError: CUDA error: CUBLAS_STATUS_NOT_INITIALIZED when calling `cublasCreate(handle)`";
  const std::string cause = "RuntimeError: CUDA error: an illegal memory access was encountered";
  const std::string certain =
      "RuntimeError: CUDA out of memory. Tried to allocate 2.00 MiB (GPU 0; 7.79 GiB total capacity)";
  const auto judged = [](const std::string& text) {
    const Diagnosis d = explain_error(text);
    return kind_name(d.kind) + (d.confidence.empty() ? "" : " " + d.confidence);
  };
  EXPECT_EQ(judged(likely), "out_of_memory_gpu likely");
  EXPECT_EQ(judged(cause + "\n" + likely), "unknown");
  EXPECT_EQ(judged(likely + "\n" + cause), "unknown");
  EXPECT_EQ(judged(certain), "out_of_memory_gpu certain");
  EXPECT_EQ(judged(cause + "\n" + certain), "out_of_memory_gpu certain");
  EXPECT_EQ(judged("RuntimeError: std::bad_alloc"), "out_of_memory_cpu likely");
  EXPECT_EQ(
      judged("RuntimeError: DefaultCPUAllocator: can't allocate memory: you tried to allocate 1099511627776 bytes."),
      "out_of_memory_cpu certain");
}

// Every other cause the classifier knows to stand beside a status code that usually means memory ran out, each in
// its real words: with any of them the status code is not called an out-of-memory, on either side of it; without
// one, each status code is a likely one.
TEST(Explain, EveryOtherCauseBesideAMemoryStatusCodeWithholdsTheOutOfMemory) {
  const char* const statuses[] = {
      "RuntimeError: CUDA error: CUBLAS_STATUS_NOT_INITIALIZED when calling `cublasCreate(handle)`",
      "RuntimeError: cuDNN error: CUDNN_STATUS_NOT_INITIALIZED",
      "RuntimeError: cuDNN error: CUDNN_STATUS_INTERNAL_ERROR",
      "RuntimeError: cuDNN error: CUDNN_STATUS_MAPPING_ERROR",
      "RuntimeError: cuDNN error: CUDNN_STATUS_EXECUTION_FAILED",
      "RuntimeError: Unable to find a valid cuDNN algorithm to run convolution",
  };
  const char* const causes[] = {
      "RuntimeError: CUDA error: device-side assert triggered",
      "/pytorch/aten/src/ATen/native/cuda/Loss.cu:242: nll_loss_forward_reduce_cuda_kernel_2d: block: [0,0,0], "
      "thread: [5,0,0] Assertion `t >= 0 && t < n_classes` failed.",
      "RuntimeError: CUDA error: an illegal memory access was encountered",
      "RuntimeError: CUDA error: unspecified launch failure",
      "RuntimeError: CUDA error: misaligned address",
      "RuntimeError: cuDNN version incompatibility: PyTorch was compiled  against (8, 5, 0) but found runtime version "
      "(8, 4, 1).",
      "This error may appear if you passed in a non-contiguous input.",
      "RuntimeError: CUDA error: CUBLAS_STATUS_EXECUTION_FAILED when calling `cublasSgemm( handle, opa, opb, m, n, k, "
      "&alpha, a, lda, b, ldb, &beta, c, ldc)`",
      "RuntimeError: cuda runtime error (35) : CUDA driver version is insufficient for CUDA runtime version",
  };
  for (const char* status : statuses) {
    const Diagnosis alone = explain_error(status);
    EXPECT_EQ(kind_name(alone.kind) + " " + alone.confidence, "out_of_memory_gpu likely") << status;
    for (const char* cause : causes) {
      for (const std::string& text : {std::string(cause) + "\n" + status, std::string(status) + "\n" + cause}) {
        const Diagnosis d = explain_error(text);
        EXPECT_NE(kind_name(d.kind), "out_of_memory_gpu") << text;
        EXPECT_NE(kind_name(d.kind), "out_of_memory_cpu") << text;
      }
    }
  }
}

TEST(Explain, SaysWhichArgumentIsWhereAndHowToFixIt) {
  const Diagnosis d = explain_error(kCases[1].text);
  EXPECT_NE(d.explanation.find("`weight` is on cpu while the other tensors are on cuda:0"), std::string::npos)
      << d.explanation;
  EXPECT_NE(d.fix_cpp.find(".to(device"), std::string::npos);
  EXPECT_NE(d.fix_python.find(".to(device"), std::string::npos);
  const Diagnosis checkpoint = explain_error(kCases[6].text);
  EXPECT_NE(checkpoint.explanation.find("checkpoint saved from GPU tensors"), std::string::npos);
  EXPECT_NE(checkpoint.fix_python.find("map_location"), std::string::npos);
  EXPECT_NE(checkpoint.fix_cpp.find("torch::load(model, \"model.pt\", device)"), std::string::npos);
}

TEST(Explain, DevicesAreListedInPlainWords) {
  const Diagnosis d = explain_error(
      "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!");
  EXPECT_NE(d.explanation.find("tensors on different devices (cuda:0 and cpu)."), std::string::npos) << d.explanation;
  EXPECT_NE(diagnosis_text(d).find("devices:     cuda:0, cpu\n"), std::string::npos) << diagnosis_text(d);
  using torchprobe::diagnostics::detail::join;
  EXPECT_EQ(join({}, " and "), "");
  EXPECT_EQ(join({"cpu"}, " and "), "cpu");
  EXPECT_EQ(join({"cuda:0", "cuda:1", "cpu"}, " and "), "cuda:0, cuda:1 and cpu");
}

TEST(Explain, JsonHasTheDocumentedFields) {
  const auto j = nlohmann::json::parse(diagnosis_json(explain_error(kCases[0].text)));
  EXPECT_EQ(j.at("kind"), "device_mismatch");
  EXPECT_EQ(j.at("devices"), nlohmann::json::array({"cuda:0", "cpu"}));
  EXPECT_EQ(j.at("argument"), "mat1");
  EXPECT_TRUE(j.at("explanation").is_string());
  EXPECT_TRUE(j.at("fix").is_string());
  EXPECT_EQ(j.at("confidence"), "certain");  // every known kind says how sure it is; an unknown has none
  EXPECT_FALSE(j.contains("allocator"));     // the memory kinds' own field
  const auto unknown = nlohmann::json::parse(diagnosis_json(explain_error("something else entirely")));
  EXPECT_EQ(unknown.at("kind"), "unknown");
  EXPECT_TRUE(unknown.at("argument").is_null());
  EXPECT_FALSE(unknown.contains("confidence"));
}

TEST(Explain, EveryPatternCompiles) {
  // RE2 makes a pattern it rejects match nothing: a typo would silently switch a rule off.
  EXPECT_EQ(invalid_patterns(), std::vector<std::string>{});
}

TEST(Explain, ABatchThatIsAPythonContainerIsNotATensor) {
  for (const std::string type : {"list", "tuple", "dict", "numpy.ndarray", "str"}) {
    for (const std::string method : {"cuda", "to"}) {
      const Diagnosis d = explain_error(
          "Traceback (most recent call last):\n  File \"train.py\", line 83, in train\n    label = label." + method +
          "(device)\nAttributeError: '" + type + "' object has no attribute '" + method + "'");
      EXPECT_EQ(kind_name(d.kind), "not_a_tensor") << type << "." << method;
      EXPECT_EQ(d.message, "'" + type + "' object has no attribute '" + method + "'");
      EXPECT_TRUE(d.devices.empty()) << "'cuda' here is a method, not a device";
    }
  }
  const Diagnosis list = explain_error("AttributeError: 'list' object has no attribute 'cuda'");
  EXPECT_NE(list.explanation.find("not a tensor"), std::string::npos) << list.explanation;
  EXPECT_NE(list.explanation.find("stack them into one tensor first"), std::string::npos) << list.explanation;
  EXPECT_NE(list.fix_python.find("for images, labels in loader:"), std::string::npos);
  EXPECT_NE(list.fix_python.find("torch.stack(tensors).to(device)"), std::string::npos);
  EXPECT_NE(list.fix_cpp.find("batch.data.to(device)"), std::string::npos);
  EXPECT_NE(list.fix_cpp.find("torch::stack(tensors).to(device)"), std::string::npos);
  // A module has no attribute `cuda` in a PyTorch without CUDA: not this.
  EXPECT_EQ(kind_name(explain_error("AttributeError: module 'torch' has no attribute 'cuda'").kind), "unknown");
}

// The structures behind the rules, in wordings no library's check prints alike: each kind in other stacks' words and
// in free words, next to its near-misses, which stay unknown.
TEST(Explain, StructuresNotSentences) {
  // No usable GPU, in other stacks' words.
  expect_kind_of_each(
      "cuda_unavailable",
      {"RuntimeError: Unknown backend: 'gpu' requested, but no platforms that are instances of gpu are present.",
       "RuntimeError: Unable to initialize backend 'cuda': FAILED_PRECONDITION: No visible GPU devices.",
       "RuntimeError: Bad StatusOr access: UNKNOWN: TPU initialization failed: Invalid worker addresses",
       "Failed to create CUDAExecutionProvider. Please reference the requirements to ensure all dependencies are met.",
       "Failed to initialize NVML: Driver/library version mismatch", "CUDA Exception: driver not initialised",
       "ImportError: libcudart.so.12: cannot open shared object file: No such file or directory",
       "RuntimeError: Failed to infer device type", "ERROR: GPU not detected, exiting",
       "RuntimeError: Could not find any CUDA device on this machine",
       "Warning: torch.cuda.is_available() returned False. This means that no GPU has been detected."});
  // ... and not a GPU that works but lacks a library or a kernel.
  expect_kind_of_each("unknown",
                      {"Could not load library libcudnn_cnn_infer.so.8. Error: libcudnn_cnn_infer.so.8: cannot "
                       "open shared object file",
                       "RuntimeError: CUDA error: no kernel image is available for execution on the device"});
  // A mismatch in free words: two devices, a tensor, a contrast; devices in the order the sentence names them.
  const Diagnosis free =
      explain_error("ValueError: the attention mask is on cpu while the hidden states are on cuda:0");
  EXPECT_EQ(kind_name(free.kind), "device_mismatch");
  EXPECT_EQ(free.devices, (std::vector<std::string>{"cpu", "cuda:0"}));
  // Free words are not a check's: the kind is likely, and says so; next to another cause it is withheld.
  EXPECT_EQ(free.confidence, "likely");
  EXPECT_EQ(free.explanation.rfind("Likely a device mismatch", 0), 0u) << free.explanation;
  EXPECT_EQ(kind_name(explain_error("ValueError: the attention mask is on cpu while the hidden states are on cuda:0\n"
                                    "RuntimeError: CUDA error: device-side assert triggered")
                          .kind),
            "unknown");
  const Diagnosis jax = explain_error(
      "ValueError: Received incompatible devices for jitted computation. Got argument x with device ids [0] on "
      "platform "
      "GPU and argument y with device ids [0] on platform CPU");
  EXPECT_EQ(kind_name(jax.kind), "device_mismatch");
  EXPECT_EQ(jax.devices, (std::vector<std::string>{"cuda", "cpu"}));
  // A back-end that falls back on purpose names two devices and a tensor too.
  EXPECT_EQ(
      kind_of("UserWarning: The operator 'aten::index.Tensor' is not currently supported on the MPS backend and will "
              "fall back to run on the CPU."),
      "unknown");
  // "On the same GPU" names no one device.
  EXPECT_EQ(
      explain_error("All input tensors need to be on the same GPU, but found some tensors to not be on a GPU").devices,
      std::vector<std::string>{});
  // A `raise` line pasted alone carries the message; in a traceback the exception's line still wins.
  EXPECT_EQ(kind_of("raise RuntimeError('Error(s) in loading state_dict: an exception occurred : (\"Cannot copy out of "
                    "meta tensor; no data!\")')"),
            "meta_tensor");
}

// Structures written from the tuning half (tests/fixtures/explain/README.md, 2026-11-29): each line a real message.
TEST(Explain, MoreWordsForNoUsableGpuAMismatchAndABadOrdinal) {
  expect_kind_of_each(
      "cuda_unavailable",
      {"Horovod build with GPU support was requested but this PyTorch installation does not support CUDA.",
       "dgl._ffi.base.DGLError: [17:19:38] /opt/dgl/src/runtime/c_runtime_api.cc:88: Check failed: allow_missing: "
       "Device API gpu is not enabled. Please install the cuda version of dgl.",
       "Unsloth detected signs of an AMD ROCm GPU, but your current PyTorch build has no usable HIP accelerator.",
       "Unsloth cannot find any torch accelerator? You need a GPU.",
       "RuntimeError: cuda video backend is not available.", "Native API returns: -2 (PI_ERROR_DEVICE_NOT_AVAILABLE)",
       "UserWarning: HIP initialization: Unexpected error from hipGetDeviceCount(). Did you run some cuda functions "
       "before calling NumHipDevices() that might have already set an error? Error 101: hipErrorInvalidDevice",
       "RuntimeError: Cannot access accelerator device when none is available.",
       "RuntimeError: 0 active drivers ([]). There should only be one.", "AssertionError: libcuda.so cannot found!",
       "RuntimeError: CUDA error: CUDA driver is a stub library",
       "RuntimeError: CUDA error: system not yet initialized",
       "CUDA call failed lazily at initialization with error: Error 804: forward compatibility was attempted on non "
       "supported HW",
       "UserWarning: Can't initialize NVML", "ImportError: Unsloth: CUDA is not linked properly.",
       "torch.cuda.is_available(): False"});
  // A failed `assert torch.cuda.is_available()`, a `raise` where the paste stops before the exception's line: the
  // statement says what went wrong.
  EXPECT_EQ(
      kind_of("  File \"train.py\", line 41, in main\n    assert torch.cuda.is_available(), \"CPU training is not "
              "allowed.\"\nAssertionError: CPU training is not allowed."),
      "cuda_unavailable");
  EXPECT_EQ(kind_of("  File \"torch/cuda/__init__.py\", line 305, in _lazy_init\n    raise AssertionError(\"Torch not "
                    "compiled with CUDA enabled\")"),
            "cuda_unavailable");
  expect_kind_of_each("cuda_unavailable",
                      {"No CUDA runtime is found, using CUDA_HOME='/usr/local/cuda'",
                       "When I try to run the test.py, I met the error \"There are not available cuda devices!\"",
                       "UserWarning: Failed to initialize XPU devices. The driver may not be installed, installed "
                       "incorrectly, or incompatible with the current setup."});
  expect_kind_of_each(
      "invalid_device",
      {"error: 'hipErrorInvalidDevice'(1010) at square.cpp:60",
       "RuntimeError: Device index must be -1 or non-negative, got -2", "ValueError: Invalid device: cuda:0",
       "ValueError: Please input valid device: 'cpu', 'cuda', 'cuda:0', '0' !",
       "MisconfigurationException: You requested gpu: [1]\n But your machine only has: [0]",
       "ValueError: Expected a cuda device with a specified index or an integer, but got:cuda"});
  // A GPU that works, a library or a kernel that does not: not these kinds.
  expect_kind_of_each(
      "unknown",
      {"RuntimeError: Distributed package doesn't have NCCL built in",
       "RuntimeError: The detected CUDA version (12.1) mismatches the version that was used to compile PyTorch "
       "(11.8).",
       "RuntimeError: CUDA error: no kernel image is available for execution on the device",
       "RuntimeError: Cannot re-initialize CUDA in forked subprocess. To use CUDA with multiprocessing, you must use "
       "the 'spawn' start method"});
  const auto mismatch = [](const std::string& text, const std::vector<std::string>& devices) {
    const Diagnosis d = explain_error(text);
    EXPECT_EQ(kind_name(d.kind), "device_mismatch") << text;
    EXPECT_EQ(d.devices, devices) << text;
  };
  mismatch("q must be on CUDA", {"cuda"});
  mismatch("RuntimeError: all tensors must be on devices[0]", {});
  mismatch("ValueError: Attention bias and Query/Key/Value should be on the same device", {});
  // ... and where the lines after it list the devices, they are the devices.
  mismatch(
      "ValueError: Attention bias and Query/Key/Value should be on the same device\n  query.device: cuda:7\n"
      "  attn_bias   : cuda:0",
      {"cuda:7", "cuda:0"});
  mismatch("RuntimeError: permute must be a CPU tensor; it is currently on device CUDA", {"cpu", "cuda"});
  mismatch(
      "DGLError: Cannot assign node feature \"h\" on device cuda:0 to a graph on device cpu. Call DGLGraph.to() "
      "to copy the graph to the same device.",
      {"cuda:0", "cpu"});
  // A paste cut short still names both sides.
  mismatch("RuntimeError: Input type (torch.FloatTensor) and weight type (torch.cuda.FloatTensor) should be th",
           {"cpu", "cuda"});
  // A container where a tensor was expected, in any quotes.
  EXPECT_EQ(kind_of("to.(device) AttributeError: \u2018list\u2018 object has no attribute \u2018to\u2018"),
            "not_a_tensor");
  EXPECT_EQ(kind_of("I got error ('dict' object has no attribute 'to) because of inputs is dict of tensors."),
            "not_a_tensor");
  // Memory: a failed cudaMalloc (error 2 is cudaErrorMemoryAllocation) is likely; the words win where they are there.
  EXPECT_EQ(explain_error("RuntimeError: Cuda error: 2[cudaMalloc(&m_gpuPtr, bytes);]").confidence, "likely");
  EXPECT_EQ(
      explain_error("CUDA runtime error in ::cudaMallocAsync(ptr, n, mCudaStream->get()): out of memory").confidence,
      "certain");
  EXPECT_EQ(verdict_of("RuntimeError: DataLoader worker (pid 46794) is killed by signal: Bus error. It is possible "
                       "that dataloader's "
                       "workers are out of shared memory. Please try to raise your shared memory limit."),
            "out_of_memory_cpu likely");
  // Loose words about memory yield to another cause: the framework recovered from an OOM, then memory was corrupted.
  EXPECT_EQ(kind_of("Recovering from OOM error; New batch size: 1\nTraceback (most recent call last):\n  File "
                    "\"detect.py\", line 65, in batch_detect\n    imgs = torch.from_numpy(imgs).float().to(device)\n"
                    "RuntimeError: CUDA error: an illegal memory access was encountered"),
            "unknown");
  // An out-of-tree back-end named with its ordinal, across a wrapped line.
  mismatch(
      "RuntimeError: Function CompiledFunctionBackward returned an invalid\ngradient at index 0 - expected "
      "device cpu but got neuron:0",
      {"cpu", "neuron:0"});
}

TEST(Explain, ACheckpointOfACompiledModelHasTheOrigModPrefix) {
  const Diagnosis d = explain_error(
      "RuntimeError: Error(s) in loading state_dict for Net:\n\tMissing key(s) in state_dict: \"fc.weight\", "
      "\"fc.bias\".\n\tUnexpected key(s) in state_dict: \"_orig_mod.fc.weight\", \"_orig_mod.fc.bias\".");
  EXPECT_EQ(kind_name(d.kind), "state_dict_prefix");
  EXPECT_NE(d.explanation.find("torch.compile"), std::string::npos) << d.explanation;
  EXPECT_NE(d.explanation.find("the checkpoint has the prefix"), std::string::npos) << d.explanation;
  // Both lists with the prefix: another architecture.
  EXPECT_EQ(kind_name(explain_error("Missing key(s) in state_dict: \"_orig_mod.fc.weight\". Unexpected key(s) in "
                                    "state_dict: \"_orig_mod.head.weight\".")
                          .kind),
            "unknown");
}

TEST(Explain, ACheckpointOfADataParallelModelHasTheModulePrefix) {
  const Diagnosis stripped = explain_error(
      "RuntimeError: Error(s) in loading state_dict for ResNet:\n\tMissing key(s) in state_dict: \"conv1.weight\", "
      "\"bn1.weight\".\n\tUnexpected key(s) in state_dict: \"module.conv1.weight\", \"module.bn1.weight\".");
  EXPECT_EQ(kind_name(stripped.kind), "state_dict_prefix");
  EXPECT_EQ(stripped.message.rfind("Error(s) in loading state_dict for ResNet:", 0), 0u) << stripped.message;
  EXPECT_NE(stripped.explanation.find("the checkpoint has the prefix"), std::string::npos) << stripped.explanation;
  EXPECT_NE(stripped.fix_python.find("k.startswith('module.')"), std::string::npos);
  EXPECT_NE(stripped.fix_cpp.find("name.rfind(\"module.\", 0) == 0"), std::string::npos);
  // The other way round: a plain checkpoint into a wrapped model.
  const Diagnosis added = explain_error(
      "RuntimeError: Error(s) in loading state_dict for DataParallel:\n\tMissing key(s) in state_dict: "
      "\"module.conv1.weight\".\n\tUnexpected key(s) in state_dict: \"conv1.weight\".");
  EXPECT_EQ(kind_name(added.kind), "state_dict_prefix");
  EXPECT_NE(added.explanation.find("the model is wrapped"), std::string::npos) << added.explanation;
  // Keys that differ otherwise are another architecture.
  EXPECT_EQ(kind_name(explain_error("Missing key(s) in state_dict: \"fc.weight\". Unexpected key(s) in state_dict: "
                                    "\"head.weight\".")
                          .kind),
            "unknown");
  // A converter's report of one key; a compiled model's report that stops before its keys.
  EXPECT_EQ(kind_name(explain_error("Exception: Error converting the state dict. Found unexpected key: "
                                    "\"_orig_mod.tok_embeddings.weight\". Please make sure you're loading a checkpoint "
                                    "with the right format.")
                          .kind),
            "state_dict_prefix");
  EXPECT_EQ(kind_name(explain_error("Error loading state_dict for OptimizedModule: Missing key(s) in state_dict").kind),
            "state_dict_prefix");
  // One list alone, with the prefix on every key, over lines of keys.
  EXPECT_EQ(
      kind_name(
          explain_error("Missing keys in state_dict:\n\"_orig_mod.betas\", \n\"_orig_mod.alphas_cumprod\",").kind),
      "state_dict_prefix");
}

TEST(Explain, DataParallelWithTheModelOnTheCpuNamesBothDevices) {
  const Diagnosis d = explain_error(
      "RuntimeError: module must have its parameters and buffers on device cuda:0 (device_ids[0]) but found one of "
      "them on device: cpu");
  EXPECT_EQ(kind_name(d.kind), "device_mismatch");
  EXPECT_EQ(d.devices, (std::vector<std::string>{"cuda:0", "cpu"}));
  EXPECT_NE(d.explanation.find("DataParallel"), std::string::npos) << d.explanation;
  EXPECT_NE(d.fix_python.find("model = model.to('cuda:0')"), std::string::npos) << d.fix_python;
}

TEST(Explain, TorchWhereAndFsdpOffloadingNameBothDevices) {
  // torch.where's check names the second pair's devices "and CPU respectively".
  const Diagnosis where = explain_error(
      "RuntimeError: Expected condition, x and y to be on the same device, but condition is on cuda:0 and x and y are "
      "on cuda:0 and CPU respectively");
  EXPECT_EQ(kind_name(where.kind), "device_mismatch");
  EXPECT_EQ(where.devices, (std::vector<std::string>{"cuda:0", "cpu"}));
  // FSDP's parameter CPU offloading with a module moved to the GPU (its "offloading" is no fallback notice).
  const Diagnosis fsdp = explain_error(
      "RuntimeError: An FSDP-managed module with parameter CPU offloading enabled has parameters on cuda:0. Make sure "
      "to not move the module from CPU when offloading parameters.");
  EXPECT_EQ(kind_name(fsdp.kind), "device_mismatch");
  EXPECT_EQ(fsdp.devices, (std::vector<std::string>{"cpu", "cuda:0"}));
}

TEST(Explain, RoundNinesStructures) {
  // A status code that says memory ran out is certain; a failed allocation in other words is likely.
  EXPECT_EQ(verdict_of("[Error] [carb.graphics-vulkan.plugin] VkResult: ERROR_OUT_OF_DEVICE_MEMORY"),
            "out_of_memory_gpu certain");
  EXPECT_EQ(verdict_of("PxgCudaDeviceMemoryAllocator fail to allocate memory 100663296 bytes!! Result = 2"),
            "out_of_memory_gpu likely");
  EXPECT_EQ(explain_error("Prediction on device was unsuccessful, probably due to a lack of memory.").confidence,
            "likely");
  // Ray's memory monitor: the host's memory, though its exception is called OutOfMemoryError.
  EXPECT_EQ(kind_of("ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on memory."),
            "out_of_memory_cpu");
  EXPECT_EQ(kind_of("2 Workers (tasks / actors) killed due to memory pressure (OOM), 0 Workers crashed"),
            "out_of_memory_cpu");
  // No usable GPU: a driver older than the build needs, by its numbers; no CUDA context.
  EXPECT_EQ(kind_of("warning : CUDA driver version is 11020, expected at least 11040."), "cuda_unavailable");
  EXPECT_EQ(kind_of("[Warning] [carb.gym.plugin] Failed to create a PhysX CUDA Context Manager. Falling back to CPU."),
            "cuda_unavailable");
  // A pair whose second device is a back-end's word.
  const Diagnosis pair = explain_error(
      "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and CPU");
  EXPECT_EQ(pair.devices, (std::vector<std::string>{"cuda:0", "cpu"}));
  // A failed check in backquotes is another cause: the cuDNN code next to it is no out-of-memory.
  EXPECT_EQ(kind_of("`t >= 0 && t < n_classes` failed. RuntimeError: cuDNN error: CUDNN_STATUS_NOT_INITIALIZED"),
            "unknown");
  EXPECT_EQ(kind_of("RuntimeError: cuDNN error: CUDNN_STATUS_NOT_INITIALIZED"), "out_of_memory_gpu");
}

TEST(Explain, RoundTensStructures) {
  // Thrust's scratch buffer on the GPU, though re-raised as Python's MemoryError.
  EXPECT_EQ(verdict_of("MemoryError: std::bad_alloc: temporary_buffer::allocate: get_temporary_buffer failed"),
            "out_of_memory_gpu likely");
  // The caching allocator's own sentence, cut by ComfyUI, says it; an allocation of a size that failed only suggests
  // it.
  EXPECT_EQ(explain_error("Error during inference: Allocation on device ").confidence, "certain");
  EXPECT_EQ(verdict_of(
                "RuntimeError: [Rank:0] FATAL ERROR :: MODULE:PT_DEVMEM Allocation failed for size::268435456 (256)MB"),
            "out_of_memory_gpu likely");
  // No usable GPU: a CPU-only build's internals, a driver whose version cannot be read, a machine without GPUs.
  EXPECT_EQ(kind_of("AttributeError: module 'torch._C' has no attribute '_cuda_setDevice'"), "cuda_unavailable");
  EXPECT_EQ(kind_of("ERROR NRT:nrt_init Unable to determine Neuron Driver version. Please check aws-neuron-dkms"),
            "cuda_unavailable");
  EXPECT_EQ(kind_of("AssertionError: This machine has no cuda devices!"), "cuda_unavailable");
  EXPECT_EQ(kind_of("RuntimeError: this kernel has no CUDA implementation"), "unknown");
  // Bad ordinals: a device string a library calls invalid, more devices than there are, a visible-devices variable.
  EXPECT_EQ(kind_of("safetensors_rust.SafetensorError: device mps:0 is invalid"), "invalid_device");
  EXPECT_EQ(kind_of("AssertionError: Not enough CUDA devices to support n_devices 2"), "invalid_device");
  EXPECT_EQ(kind_of("RuntimeError: Invalid HABANA_VISIBLE_MODULES=5. Module IDs should be between 0 and 0."),
            "invalid_device");
  EXPECT_EQ(kind_of("RuntimeError: CUDA out of memory. Not enough GPU memory"), "out_of_memory_gpu");
  // A checkpoint from before 0.4.1 lacks only BatchNorm's step counters: no prefix, whatever the keys start with.
  EXPECT_EQ(kind_of("missing keys in state_dict: set(['module.block33.bn.num_batches_tracked', "
                    "'module.block12.bn.num_batches_tracked'])"),
            "unknown");
  EXPECT_EQ(kind_of("Missing key(s) in state_dict: \"module.conv1.weight\", \"module.bn1.num_batches_tracked\""),
            "state_dict_prefix");
}

TEST(Explain, TheFirstHeldOutHalfsStructures) {
  // Full-width punctuation, as CJK input methods type it, reads as ASCII.
  EXPECT_EQ(
      kind_of("RuntimeError： Trying to deserialize object on CUDA device 3 but torch.cuda.device_count（） is 2"),
      "invalid_device");
  // A legacy constructor's sides in capitals alone still name the devices.
  const Diagnosis legacy = explain_error("TypeError: expected CPU (got CUDA)");
  EXPECT_EQ(kind_name(legacy.kind), "device_mismatch");
  EXPECT_EQ(legacy.devices, (std::vector<std::string>{"cpu", "cuda"}));
  EXPECT_EQ(kind_of("TypeError: expected CUDA (got CUDA)"), "unknown");
  // A paste that starts inside load_state_dict's list of missing keys.
  EXPECT_EQ(kind_of("\"module.head.weight\", \"module.head.\n2.bias\", \"module.head.3.weight\".\n"
                    "\tUnexpected key(s) in state_dict: \"stem.weight\", \"stem.bias\"."),
            "state_dict_prefix");
  EXPECT_EQ(
      kind_of("\"head.weight\", \"head.bias\".\n\tUnexpected key(s) in state_dict: \"stem.weight\", \"stem.bias\"."),
      "unknown");
  // Memory among a list of what may have caused a crash is no verdict.
  EXPECT_EQ(kind_of("ray.exceptions.ActorDiedError: The actor died unexpectedly. There are some potential root causes. "
                    "(1) The process is killed by SIGKILL by OOM killer due to high memory usage. (2) ray stop --force "
                    "is called."),
            "unknown");
  // No device to be had: one that cannot be acquired, a runtime that counted none, none left free, no driver to link.
  EXPECT_EQ(kind_of("RuntimeError: synStatus=8 [Device not found] Device acquire failed."), "cuda_unavailable");
  EXPECT_EQ(kind_of("RuntimeError: Init: error condition !(num_devices > 0): "), "cuda_unavailable");
  EXPECT_EQ(kind_of("RuntimeError: You requested to find 2 devices but only 0 are currently available."),
            "cuda_unavailable");
  EXPECT_EQ(kind_of("/usr/bin/ld: cannot find -lcuda\ncollect2: error: ld returned 1 exit status"), "cuda_unavailable");
  // Ultralytics' --device check: one index fails only without CUDA; a word is no device at all.
  EXPECT_EQ(
      kind_of("AssertionError: Invalid CUDA '--device 1' requested, use '--device cpu' or pass valid CUDA device(s)"),
      "cuda_unavailable");
  EXPECT_EQ(kind_of("Invalid CUDA '--device gpu' requested, use '--device cpu' or pass valid CUDA device(s)"),
            "invalid_device");
  // Memory: NumPy's array error by its type, cuDNN without an algorithm, a runtime's "Allocation Failure".
  EXPECT_EQ(
      verdict_of("numpy.core._exceptions._ArrayMemoryError: Unable to allocate 3.1 GiB for array with shape (9, 9)"),
      "out_of_memory_cpu certain");
  EXPECT_EQ(verdict_of("RuntimeError: no valid convolution algorithms available in CuDNN"), "out_of_memory_gpu likely");
  EXPECT_EQ(explain_error("RuntimeError: nrt_load status=4 message=\"Allocation Failure\"").confidence, "likely");
}

TEST(Explain, RoundThirteensStructures) {
  // A report into a wrapped model, whose keys carry "module." already: extra keys alone, or a whole list of missing
  // keys ending the message, are keys the two do not share; a list the paste cut off may still be the prefix.
  EXPECT_EQ(kind_of("RuntimeError: Error(s) in loading state_dict for DataParallel:\n"
                    "\tUnexpected key(s) in state_dict: \"module.bert.embeddings.position_ids\""),
            "unknown");
  EXPECT_EQ(kind_of("RuntimeError: Error(s) in loading state_dict for DataParallel:\n"
                    "\tMissing key(s) in state_dict: \"module.head.weight\", \"module.head.bias\"."),
            "unknown");
  EXPECT_EQ(kind_of("RuntimeError: Error(s) in loading state_dict for DataParallel:\n"
                    "\tMissing key(s) in state_dict: \"module.conv1.weight\", \"module.bn1.weight\", \"module.bn1"),
            "state_dict_prefix");
  EXPECT_EQ(kind_of("RuntimeError: Error(s) in loading state_dict for ResNet:\n"
                    "\tUnexpected key(s) in state_dict: \"module.conv1.weight\", \"module.bn1.weight\"."),
            "state_dict_prefix");
  // 2.x's hint under every CUDA error is no device-side assert: the OOM a vGPU layer logged above it stands.
  const Diagnosis vgpu = explain_error(
      "[HAMI-core ERROR (pid:30 allocator.c:53)]: Device 0 OOM 3171158016 / 3145728000\n"
      "RuntimeError: CUDA error: unrecognized error code\n"
      "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.");
  EXPECT_EQ(kind_name(vgpu.kind), "out_of_memory_gpu");
  EXPECT_EQ(kind_of("RuntimeError: CUDA error: device-side assert triggered\nCUDNN_STATUS_NOT_INITIALIZED"), "unknown");
  // The host's memory: Slurm's cgroup killer, Vulkan's host allocation.
  const Diagnosis slurm = explain_error(
      "slurmstepd: error: Detected 1 oom-kill event(s) in StepId=191.batch. Some of your processes may have been "
      "killed "
      "by the cgroup out-of-memory handler.\nsrun: error: node7: task 0: Out Of Memory");
  EXPECT_EQ(kind_name(slurm.kind), "out_of_memory_cpu");
  EXPECT_EQ(kind_of("RuntimeError: vk::Device::createFenceUnique: ErrorOutOfHostMemory"), "out_of_memory_cpu");
  EXPECT_EQ(kind_of("RuntimeError: vk::Device::allocateMemory: ErrorOutOfDeviceMemory"), "out_of_memory_gpu");
  // The runtime's error 2 by its number alone (likely).
  EXPECT_EQ(explain_error("RuntimeError: cuda runtime error (2)").confidence, "likely");
  EXPECT_EQ(explain_error("RuntimeError indice_cuda.cu 124 cuda execution failed with error 2").confidence, "likely");
  // No usable back-end: a device count that cannot be read, a feature that needs CUDA, a runtime not initialised.
  EXPECT_EQ(kind_of(">>> import torch\nFailed to get device count"), "cuda_unavailable");
  EXPECT_EQ(kind_of("RuntimeError: Pinned memory requires CUDA."), "cuda_unavailable");
  EXPECT_EQ(kind_of("RuntimeError: FlashAttention requires CUDA 11.6 or above"), "unknown");
  EXPECT_EQ(kind_of("RuntimeError('Library cudart is not initialized')"), "cuda_unavailable");
}

TEST(Explain, TheFormatsLogsCarryAMessageInReadAsThePlainText) {
  // Newlines escaped in a JSON field: the lines again, and the message the exception's line, unescaped.
  const Diagnosis json = explain_error(
      R"j({"msg": "Traceback (most recent call last):\n  File \"train.py\", line 9, in <module>\n    x = x.cuda()\n)j"
      R"j(RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 7.79 GiB total capacity)"})j");
  EXPECT_EQ(kind_name(json.kind), "out_of_memory_gpu");
  EXPECT_EQ(json.message.rfind("CUDA out of memory.", 0), 0u) << json.message;
  // A Windows path's "\n" is no newline: the line stays whole.
  const Diagnosis path = explain_error(
      R"(RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu! )"
      R"(C:\new\nvidia\run.py)");
  EXPECT_NE(path.message.find(R"(C:\new\nvidia\run.py)"), std::string::npos) << path.message;
  // Colours, and what a copy leaves of them, are not part of the words.
  const Diagnosis coloured =
      explain_error("\x1b[31mRuntimeError\x1b[0m: [1mCUDA out of memory[0m. Tried to allocate 2 MiB");
  EXPECT_EQ(kind_name(coloured.kind), "out_of_memory_gpu");
  EXPECT_EQ(coloured.message.find('['), std::string::npos) << coloured.message;
  // A logger's level after its time; a container's, Ray's and Kubernetes' prefix on every line.
  EXPECT_EQ(kind_of("2024-05-01 12:00:00.123 | ERROR    | __main__:run:12 - RuntimeError: No CUDA GPUs are available"),
            "cuda_unavailable");
  for (const std::string prefix :
       {"trainer-1    | ", "(RayWorker pid=3478, ip=10.0.0.2) ", "2024-05-01T12:00:00.123456789Z stderr F "}) {
    const std::string text = prefix + "Traceback (most recent call last):\n" + prefix + "  File \"t.py\", line 3\n" +
                             prefix + "    torch.zeros(1).cuda(3)\n" + prefix +
                             "RuntimeError: CUDA error: invalid device ordinal";
    EXPECT_EQ(kind_of(text), "invalid_device") << prefix;
  }
  // A line cut at a terminal's width goes on with its next words, whatever they start with.
  const Diagnosis cut =
      explain_error("RuntimeError: Expected object of backend CUDA but got backend CPU for argument\n#3 'index'");
  EXPECT_EQ(cut.argument.value_or(""), "index");
  // Bare "Exception:" after a one-line traceback's frame.
  EXPECT_EQ(kind_of("  File \"x.py\", line 9, in f     raise Exception( Exception: Capture cuda graph failed: CUDA out "
                    "of memory. Tried to allocate 448.00 MiB."),
            "out_of_memory_gpu");
}

TEST(Explain, APasteCutBeforeItsWordsKeepsItsKindByCodeAndPlace) {
  // THC's runtime codes: 10 and 101 a bad ordinal, 35, 38 and 100 no usable device, 2 memory (likely).
  EXPECT_EQ(kind_of("THCudaCheck FAIL file=/pytorch/torch/csrc/cuda/Module.cpp line=59 error=10 : inva..."),
            "invalid_device");
  EXPECT_EQ(kind_of("RuntimeError: cuda runtime error (101) at /pytorch/aten/src/THC/THCGeneral.cpp:50"),
            "invalid_device");
  EXPECT_EQ(kind_of("THCudaCheck FAIL file=/pytorch/aten/src/THC/THCGeneral.cpp line=70 error=38 : no ..."),
            "cuda_unavailable");
  EXPECT_EQ(kind_of("RuntimeError: cuda runtime error (100) at /pytorch/aten/src/THC/THCGeneral.cpp:50"),
            "cuda_unavailable");
  EXPECT_EQ(verdict_of("THCudaCheck FAIL file=/pytorch/aten/src/THC/THCCachingAllocator.cpp line=510 error=2"),
            "out_of_memory_gpu likely");
  EXPECT_EQ(kind_of("THCudaCheck FAIL file=/pytorch/aten/src/THC/THCGeneral.cpp line=70 error=59 : device-side assert"),
            "unknown");
  // c10's CPU allocator by the check that failed; Lightning's accelerator that cannot run here.
  EXPECT_EQ(
      verdict_of("RuntimeError: [enforce fail at ..\\c10\\core\\impl\\alloc_cpu.cpp:81] data. DefaultCPUAllocat..."),
      "out_of_memory_cpu certain");
  EXPECT_EQ(kind_of("MisconfigurationException: `TPUAccelerator` can not run on your system since the a..."),
            "cuda_unavailable");
}

TEST(Explain, TheMessageIsTheExceptionLineNeverASourceLine) {
  const std::string traceback =
      "Traceback (most recent call last):\n"
      "  File \"demo.py\", line 54, in <module>\n"
      "    hand_verts, j3d_recon = mano(pose0, shape.float())\n"
      "  File \"manopth/manolayer.py\", line 188, in forward\n"
      "    self.th_posedirs, th_pose_map.transpose(0, 1)).permute(2, 0, 1)\n"
      "  File \"torch/nn/modules/linear.py\", line 125, in forward\n"
      "    return F.linear(input, self.weight, self.bias)\n"
      "           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
      "RuntimeError: Expected object of backend CPU but got backend CUDA for argument #2 'mat2'\n";
  const Diagnosis d = explain_error(traceback);
  EXPECT_EQ(d.message, "Expected object of backend CPU but got backend CUDA for argument #2 'mat2'");
  EXPECT_EQ(d.devices, (std::vector<std::string>{"cpu", "cuda"}));
  EXPECT_EQ(d.argument.value_or(""), "mat2");
  // Unknown errors too: the exception's line, not the first line of source shown.
  const Diagnosis shape = explain_error(
      "  File \"model.py\", line 3, in forward\n    return F.linear(input, self.weight, self.bias)\n"
      "RuntimeError: mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)");
  EXPECT_EQ(kind_name(shape.kind), "unknown");
  EXPECT_EQ(shape.message, "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)");
  // A traceback pasted as one line: the frame and its source before the exception are not the message.
  const Diagnosis one_line = explain_error(
      "File \"C:\\AI\\torch\\nn\\functional.py\", line 2210, in embedding     return torch.embedding(weight, "
      "input, padding_idx, scale_grad_by_freq, sparse) RuntimeError: Expected all tensors to be on the same device, "
      "but found at least two devices, cpu and cuda:0! (when checking argument for argument index in method "
      "wrapper__index_select)");
  EXPECT_EQ(kind_name(one_line.kind), "device_mismatch");
  EXPECT_EQ(one_line.message.rfind("Expected all tensors", 0), 0u) << one_line.message;
  EXPECT_EQ(one_line.argument.value_or(""), "index");
  // The same after a frame, on the source line.
  EXPECT_EQ(kind_name(explain_error("  File \"m.py\", line 3, in f\n    return x.cuda() RuntimeError: No CUDA GPUs are "
                                    "available")
                          .kind),
            "cuda_unavailable");
  // A `raise` statement that quotes the message is source, too; LibTorch's what() is the message.
  EXPECT_EQ(explain_error("    raise AssertionError(\"Torch not compiled with CUDA enabled\")\n"
                          "AssertionError: Torch not compiled with CUDA enabled")
                .message,
            "Torch not compiled with CUDA enabled");
  EXPECT_EQ(
      explain_error("terminate called after throwing an instance of 'c10::Error'\n  what():  No CUDA GPUs are "
                    "available\nException raised from device_count_ensure_non_zero at c10/cuda/CUDAFunctions.cpp:120")
          .message,
      "No CUDA GPUs are available");
}

TEST(Explain, MessagesALoggerWrappedStillClassify) {
  // sdnext's logger: the continuation indented under the message.
  const Diagnosis logged = explain_error(
      "14:10:16-737529 ERROR    Exception: Expected all tensors to be on the same device, but found at least two "
      "devices, cpu\n"
      "                         and cuda:0! (when checking argument for argument mat1 in method wrapper_CUDA_addmm)");
  EXPECT_EQ(kind_name(logged.kind), "device_mismatch");
  EXPECT_EQ(logged.devices, (std::vector<std::string>{"cpu", "cuda:0"}));
  EXPECT_EQ(logged.argument.value_or(""), "mat1");
  EXPECT_EQ(logged.op, "addmm");
  // rich's traceback wraps at the terminal's width, leaving a blank at each line's end.
  const Diagnosis wrapped = explain_error(
      "RuntimeError: Input type (torch.FloatTensor) and weight type \n(torch.cuda.FloatTensor) should be the same or "
      "input should be a MKLDNN tensor \nand weight is a dense tensor");
  EXPECT_EQ(kind_name(wrapped.kind), "device_mismatch");
  EXPECT_EQ(wrapped.devices, (std::vector<std::string>{"cpu", "cuda"}));
  // A logger that wraps at its width, with no blank left at the line's end: LibTorch 1.13's OOM cut before its
  // "(GPU 0; ...)". The continuation starts with "(", not a lower-case letter, and still belongs to the message.
  const Diagnosis oom = explain_error(
      "2023-01-05 10:00:01,123 - train - ERROR - RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
      "(GPU 0; 15.78 GiB total capacity; 12.35 GiB already allocated; 1.19 GiB free; 13.10 GiB reserved in total "
      "by PyTorch)\n");
  EXPECT_EQ(kind_name(oom.kind), "out_of_memory_gpu");
  EXPECT_NE(oom.message.find("2.00 GiB (GPU 0; 15.78 GiB total capacity;"), std::string::npos) << oom.message;
  ASSERT_TRUE(oom.memory.total.has_value());
  EXPECT_EQ(*oom.memory.total, std::llround(15.78 * 1024 * 1024 * 1024));
  ASSERT_TRUE(oom.memory.free.has_value());
  // A log's next line is not a wrapped one: after a finished sentence, or a logger's "name: " record.
  EXPECT_EQ(
      explain_error("RuntimeError: Expected all tensors to be on the same device, but found at least two devices, "
                    "cuda:1 and cpu!\nepoch 2 loss 2.10\n")
          .message,
      "Expected all tensors to be on the same device, but found at least two devices, cuda:1 and cpu!");
  EXPECT_EQ(
      explain_error("RuntimeError: Expected all tensors to be on the same device, but found at least two devices, "
                    "cuda:1 and cpu\nwandb: waiting for the run to finish\n")
          .devices,
      (std::vector<std::string>{"cuda:1", "cpu"}));
  // The exception's type alone on its line, the message on the next lines.
  EXPECT_EQ(kind_name(explain_error("AssertionError:\nFound no NVIDIA driver on your system. Please check that you\n"
                                    "have an NVIDIA GPU and installed a driver")
                          .kind),
            "cuda_unavailable");
}

TEST(Explain, ExplanationsSpeakOfTheSituationAndBothFixesAreComplete) {
  for (const auto& c : kCases) {
    const Diagnosis d = explain_error(c.text);
    EXPECT_EQ(d.explanation.find("torchprobe::"), std::string::npos)
        << "our C++ API belongs in the fix: " << d.explanation;
  }
  const Diagnosis ordinal = explain_error("RuntimeError: CUDA error: invalid device ordinal");
  EXPECT_NE(ordinal.explanation.find("use an index below the device count"), std::string::npos) << ordinal.explanation;
  EXPECT_NE(ordinal.fix_python.find("torch.cuda.device_count()"), std::string::npos);
  EXPECT_NE(ordinal.fix_cpp.find("torch::cuda::device_count()"), std::string::npos);
  const Diagnosis indices = explain_error(
      "RuntimeError: indices should be either on cpu or on the same device as the "
      "indexed tensor (cpu)");
  EXPECT_EQ(kind_name(indices.kind), "device_mismatch");
  EXPECT_NE(indices.explanation.find("move the indices to the indexed tensor's device"), std::string::npos)
      << indices.explanation;
  EXPECT_NE(indices.fix_python.find("x[idx.to(x.device)]"), std::string::npos);
  EXPECT_NE(indices.fix_cpp.find("idx.to(x.device())"), std::string::npos);
}

// Each library that runs out of memory in its own words is named, explained as itself and given its own fix: the
// allocator column of the rules, the explanation's branch and the extra fix lines, one message per library.
TEST(Explain, EachOutOfMemoryLibraryIsNamedExplainedAndFixedAsItself) {
  struct Case {
    const char* text;
    const char* kind;
    const char* allocator;
    const char* explanation;  // a phrase only that library's explanation has
    const char* fix_python;   // a line only that library's fix has ("" none)
  };
  const Case cases[] = {
      {"RuntimeError: cuDNN error: CUDNN_STATUS_ALLOC_FAILED", "out_of_memory_gpu", "cuDNN (handle or workspace)",
       "cuDNN could not get memory for its handle", "torch.backends.cudnn.benchmark = False"},
      {"RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`", "out_of_memory_gpu",
       "cuBLAS (handle or workspace)", "cuBLAS could not allocate its handle or workspace", ""},
      {"node-1:123:456 [0] include/alloc.h:48 NCCL WARN Cuda failure 'out of memory'", "out_of_memory_gpu",
       "NCCL (its CUDA buffers)", "NCCL could not allocate its communication buffers", "NCCL_BUFFSIZE=1048576"},
      {"RuntimeError: CUDA error: out of memory\nCUDA kernel errors might be asynchronously reported",
       "out_of_memory_gpu", "CUDA runtime (context or driver allocation)", "often the CUDA context itself", ""},
      {"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.", "out_of_memory_gpu",
       "LibTorch CUDA caching allocator", "The GPU's caching allocator could not find the bytes requested", ""},
      {"OpenBLAS: malloc failed in dgemm_", "out_of_memory_cpu", "OpenBLAS (its work buffers)",
       "OpenBLAS could not allocate its work buffers", ""},
      {"RuntimeError: [enforce fail at alloc_cpu.cpp:83] err == 0. DefaultCPUAllocator: can't allocate memory: you "
       "tried to allocate 1073741824 bytes. Error code 12 (Cannot allocate memory)",
       "out_of_memory_cpu", "LibTorch CPU allocator", "The host could not allocate the memory asked for", ""},
      {"numpy.core._exceptions._ArrayMemoryError: Unable to allocate 3.73 GiB for an array with shape (500000, 1000)",
       "out_of_memory_cpu", "Python / NumPy", "Python (NumPy) could not allocate an array", ""},
      {"RuntimeError: DataLoader worker (pid 46794) is killed by signal: Bus error. It is possible that dataloader's "
       "workers are out of shared memory. Please try to raise your shared memory limit.",
       "out_of_memory_cpu", "shared memory (/dev/shm)", "through shared memory", "--shm-size"},
      {"RuntimeError: Cuda error: 2[cudaMalloc(&m_gpuPtr, bytes);]", "out_of_memory_gpu", "CUDA runtime (cudaMalloc)",
       "A CUDA call outside LibTorch's caching allocator", ""},
  };
  for (const auto& c : cases) {
    const Diagnosis d = explain_error(c.text);
    EXPECT_EQ(kind_name(d.kind), c.kind) << c.text;
    EXPECT_EQ(d.allocator, c.allocator) << c.text;
    EXPECT_NE(d.explanation.find(c.explanation), std::string::npos) << c.text << "\n" << d.explanation;
    if (*c.fix_python) {
      EXPECT_NE(d.fix_python.find(c.fix_python), std::string::npos) << c.text << "\n" << d.fix_python;
    }
    for (const char* other : {"cudnn.benchmark = False", "NCCL_BUFFSIZE"}) {
      if (std::string(c.fix_python).find(other) == std::string::npos) {
        EXPECT_EQ(d.fix_python.find(other), std::string::npos) << c.text << ": another library's fix";
      }
    }
  }
}

TEST(Explain, TheOldAllocatorsTheOldTypeNamesAndOtherLibrariesChecks) {
  // TH's CPU allocator (0.x to 1.x) says "not enough memory" of the host; a notebook host's notice; a VRAM that ran
  // out.
  EXPECT_EQ(verdict_of("RuntimeError: $ Torch: not enough memory: you tried to allocate 3GB. Buy new RAM! at "
                       "..\\aten\\src\\TH\\THGeneral.cpp:201"),
            "out_of_memory_cpu certain");
  EXPECT_EQ(verdict_of("Your notebook tried to allocate more memory than is available. It has restarted."),
            "out_of_memory_cpu certain");
  EXPECT_EQ(verdict_of("A VRAM out-of-memory error has occurred. Please try using a more extreme tiling mode."),
            "out_of_memory_gpu certain");
  // An exception glued to the call that raised it, on a source line: the exception is read.
  EXPECT_EQ(
      verdict_of("  File \"poisson.py\", line 63, in log_prob\n    return value.xlogy(rate) - rate - (value + "
                 "1).lgamma()RuntimeError: CUDA out of memory. Tried to allocate 9.28 GiB (GPU 0; 31.75 GiB total "
                 "capacity; 23.22 GiB already allocated)"),
      "out_of_memory_gpu certain");
  expect_kind_of_each(
      "cuda_unavailable",
      {"RuntimeError: cuda runtime error (3) : initialization error at /pytorch/aten/src/THC/THCGeneral.cpp:70",
       "ERROR: [batch] Exception: CUDA compatible device could not be found in torch whilst --use-cuda args was set.",
       "[WARNING] engine: CUDA was requested in config but functionality test failed. PyTorch may not be compiled "
       "with CUDA support. Automatically falling back to CPU.",
       "ERROR: Failed to import torch.dml.\nPlease ensure you have installed the PyTorch package for DirectML "
       "('torch-directml')."});
  expect_kind_of_each(
      "invalid_device",
      {"RuntimeError: Expected one of cpu, cuda, ipu, xpu, mkldnn, opengl, opencl, ideep, hip, ve, fpga, ort, xla",
       "ValueError: When passing device_map as a string, the value needs to be a device name (e.g. cpu, cuda:0) or "
       "'auto', 'balanced', 'balanced_low_0', 'sequential' but found .",
       "RuntimeError: don't know how to restore data location of torch.HalfStorage (tagged with 0)"});
  EXPECT_EQ(kind_of("RuntimeError: torch_xla/csrc/aten_xla_bridge.cpp:110 : Check failed: xtensor"), "device_mismatch");
  const Diagnosis legacy =
      explain_error("RuntimeError: expected type torch.cuda.FloatTensor but got torch.FloatTensor");
  EXPECT_EQ(kind_name(legacy.kind), "device_mismatch");
  EXPECT_EQ(legacy.devices, (std::vector<std::string>{"cuda", "cpu"}));
  const Diagnosis constructor = explain_error(
      "RuntimeError: legacy constructor for device type: cpu was passed device type: cuda, but device type must be: "
      "cpu");
  EXPECT_EQ(constructor.devices, (std::vector<std::string>{"cpu", "cuda"}));
  // Their near-misses stay unknown: the same type names that differ by dtype only; the runtime's initialization error
  // in 1.x's words (a CUDA call in a forked worker, as often as no driver); a DLL of an extension that is not found.
  expect_kind_of_each("unknown",
                      {"RuntimeError: expected type torch.cuda.FloatTensor but got torch.cuda.HalfTensor",
                       "RuntimeError: CUDA error: initialization error",
                       "ImportError: DLL load failed while importing exllama_kernels: The specified module could "
                       "not be found."});
}

TEST(Explain, ANoticeOfGoingOnOnTheCpuIsNotWhatEndedTheProgram) {
  // Alone, the notice is the story (no usable GPU); before an exception that says in words what went wrong, the program
  // went on past it, and the exception is the error.
  EXPECT_EQ(kind_of("[WARNING] engine: CUDA was requested in config but functionality test failed. PyTorch may not be "
                    "compiled with CUDA support. Automatically falling back to CPU."),
            "cuda_unavailable");
  EXPECT_EQ(kind_of("CUDA is not detected, running on CPU\nTraceback (most recent call last):\n  File \"training.py\", "
                    "line 163, in train_routine\n    device = detector.parameters().next().device\nAttributeError: "
                    "'generator' object has no attribute 'next'"),
            "unknown");
  // Not a notice of going on: "No CUDA runtime is found, using CUDA_HOME=..." still says what is missing.
  EXPECT_EQ(
      kind_of("No CUDA runtime is found, using CUDA_HOME='/usr/local/cuda'\nTraceback (most recent call last):\n"
              "  File \"deepy.py\", line 29, in <module>\nTypeError: __init__() got an unexpected keyword argument "
              "'x'"),
      "cuda_unavailable");
  // Python 2's words for a CPU-only build asked for CUDA through its internals.
  EXPECT_EQ(kind_of("AttributeError: 'module' object has no attribute '_cuda_setDevice'"), "cuda_unavailable");
}

TEST(Explain, TheSecondHeldOutHalfsAndRoundNineteensStructures) {
  // Allocations of the driver API and of Ray's workers; TH's sentence cut before "Buy new RAM"; the host's RAM named
  // as a guess about a worker that died.
  EXPECT_EQ(verdict_of("pycuda._driver.MemoryError: cuMemAlloc failed: out of memory"), "out_of_memory_gpu certain");
  EXPECT_EQ(verdict_of("ray.exceptions.RayTaskError(RayOutOfMemoryError): task failed"), "out_of_memory_cpu certain");
  EXPECT_EQ(verdict_of("RuntimeError: $ Torch: not enough memory: you tried to allocate 12GB"),
            "out_of_memory_cpu certain");
  EXPECT_EQ(verdict_of("RuntimeError: a worker died. It may have been killed by the OS for running out of RAM; out of "
                       "RAM is likely the problem."),
            "out_of_memory_cpu likely");
  expect_kind_of_each("cuda_unavailable",
                      {"RuntimeError: CUDA unknown error",
                       "nvidia-container-cli: requirement error: unsatisfied "
                       "condition: cuda>=12.4, please update your driver",
                       "RuntimeError: CUDA must not be initialized in the main process on Spaces with Stateless GPU "
                       "environment."});
  EXPECT_EQ(kind_of("ValueError: loading with a meta device context manager is not supported here"), "meta_tensor");
  EXPECT_EQ(kind_of("AttributeError: list object has no attribute cuda"), "not_a_tensor");
  // A device list joined by a comma, a capital CPU; Markdown's bold inside a pasted message.
  const Diagnosis listed = explain_error(
      "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, "
      "cuda:1, CPU!");
  EXPECT_EQ(listed.devices, (std::vector<std::string>{"cuda:1", "cpu"}));
  const Diagnosis bold = explain_error("RuntimeError: expected device cuda:0 **but** got device cpu");
  EXPECT_EQ(kind_name(bold.kind), "device_mismatch");
  EXPECT_EQ(bold.devices, (std::vector<std::string>{"cuda:0", "cpu"}));
  // Near-misses: a tensor of PyTorch before 0.4 (no .to()); a whole checkpoint dict loaded as weights; keys whose
  // prefix pairs only a few of them (the layers differ too); a configuration value that differs, in a log line.
  expect_kind_of_each(
      "unknown",
      {"AttributeError: 'torch.cuda.LongTensor' object has no attribute 'to'",
       "RuntimeError: Error(s) in loading state_dict for DataParallel:\n\tMissing key(s) in state_dict: "
       "\"module.fc.weight\", \"module.fc.bias\".\n\tUnexpected key(s) in state_dict: \"state_dict\", \"epoch\".",
       "RuntimeError: Error(s) in loading state_dict for Net:\n\tMissing key(s) in state_dict: \"head.0.weight\", "
       "\"head.2.weight\", \"head.2.bias\", \"head.4.weight\".\n\tUnexpected key(s) in state_dict: "
       "\"head.module.0.weight\", \"head.module.3.weight\", \"head.module.3.bias\", \"head.module.5.weight\".",
       "ERROR:loader:Provided value device:cpu does not match the saved setting: cuda"});
  // Two whole lists (the second ends the message) that share no key once "module." is dropped: two architectures, one
  // of them once wrapped. A paste cut inside the second list may still be the prefix.
  EXPECT_EQ(kind_of("RuntimeError: Error(s) in loading state_dict for Net:\n\tMissing key(s) in state_dict: "
                    "\"encoder.conv.weight\", \"encoder.bn.weight\".\n\tUnexpected key(s) in state_dict: "
                    "\"module.backbone.layer1.weight\", \"module.backbone.layer2.weight\"."),
            "unknown");
  EXPECT_EQ(kind_of("RuntimeError: Error(s) in loading state_dict for Net:\n\tMissing key(s) in state_dict: "
                    "\"encoder.conv.weight\", \"encoder.bn.weight\".\n\tUnexpected key(s) in state_dict: "
                    "\"module.backbone.layer1.weight\", \"module.backbone.lay"),
            "state_dict_prefix");
  // An exception quoted in a sentence is the message, from its type to where its Markdown code closes; devices named
  // before it, in the sentence, are not its.
  const Diagnosis quoted = explain_error(
      "With device='cpu' set, an error `RuntimeError: module must have its parameters and buffers on device cuda:0 "
      "(device_ids[0]) but found one of them on device: cpu` appears.");
  EXPECT_EQ(kind_name(quoted.kind), "device_mismatch");
  EXPECT_EQ(quoted.devices, (std::vector<std::string>{"cuda:0", "cpu"}));
  EXPECT_EQ(quoted.message.back(), 'u');
  const Diagnosis apostrophe = explain_error(
      "It fails with 'TypeError: can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to copy the "
      "tensor to host memory first.'");
  EXPECT_EQ(kind_name(apostrophe.kind), "device_mismatch");
  EXPECT_EQ(apostrophe.devices, (std::vector<std::string>{"cuda:0"}));
  // What the round kept: keys that do pair once "module." is dropped, a list of top-level parameters among them.
  EXPECT_EQ(kind_of("RuntimeError: Error(s) in loading state_dict for Net:\n\tMissing key(s) in state_dict: "
                    "\"pos_embed\", \"head.weight\".\n\tUnexpected key(s) in state_dict: \"module.pos_embed\", "
                    "\"module.head.weight\"."),
            "state_dict_prefix");
}
