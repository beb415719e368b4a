#include "diagnostics/scenarios.h"

#include <caffe2/serialize/inline_container.h>
#include <c10/core/DeviceGuard.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/torch.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "diagnostics/audit.h"
#include "diagnostics/exception_message.h"
#include "torchprobe/backend.h"
#include "torchprobe/device_spec.h"
#include "torchprobe/error.h"
#include "torchprobe/models/registry.h"
#include "torchprobe/units.h"

namespace torchprobe::diagnostics {
namespace {

/// Runs `body`, which must throw; returns the error's first line (empty if it did not throw).
template <typename Body>
std::string error_of(Body&& body) {
  try {
    body();
  } catch (const std::exception& e) {
    return raw_message(e);
  }
  return "";
}

torch::Tensor images(std::int64_t batch, torch::Device device = torch::kCPU) {
  return torch::randn({batch, 3, 32, 32}, torch::TensorOptions().device(device));
}

// A module that builds a tensor inside forward() on the CPU, the way a constant or an
// unregistered member ends up there: model->to(device) cannot move it.
struct ScaleImpl : torch::nn::Module {
  ScaleImpl() { fc = register_module("fc", torch::nn::Linear(8, 8)); }
  torch::Tensor forward(const torch::Tensor& x) { return fc->forward(x) * torch::arange(8).to(torch::kFloat32); }
  torch::nn::Linear fc{nullptr};
};
TORCH_MODULE(Scale);

// Layers whose parameters were created on the meta device, as an init-empty-weights loader or
// a model built under a meta device context leaves them: shapes without data.
struct MetaLinearImpl : torch::nn::Module {
  MetaLinearImpl(std::int64_t in, std::int64_t out) {
    const auto meta = torch::TensorOptions().device(torch::kMeta);
    weight = register_parameter("weight", torch::empty({out, in}, meta));
    bias = register_parameter("bias", torch::empty({out}, meta));
  }
  torch::Tensor forward(const torch::Tensor& x) { return torch::linear(x, weight, bias); }
  torch::Tensor weight, bias;
};
TORCH_MODULE(MetaLinear);
struct MetaMlpImpl : torch::nn::Module {
  MetaMlpImpl() {
    fc1 = register_module("fc1", MetaLinear(3 * 32 * 32, 120));
    fc2 = register_module("fc2", MetaLinear(120, 10));
  }
  torch::Tensor forward(const torch::Tensor& x) { return fc2->forward(fc1->forward(torch::flatten(x, 1))); }
  MetaLinear fc1{nullptr}, fc2{nullptr};
};
TORCH_MODULE(MetaMlp);

// A checkpoint as torch::save writes it, with its storages' location rewritten to `location`:
// exactly what a save from that device produces, made without needing the device.
std::string checkpoint_from(const std::string& location) {
  std::ostringstream saved;
  torch::save(torch::arange(6).to(torch::kFloat32), saved);
  std::istringstream in(saved.str());
  caffe2::serialize::PyTorchStreamReader reader(&in);
  std::string out;
  caffe2::serialize::PyTorchStreamWriter writer([&](const void* data, size_t size) {
    out.append(static_cast<const char*>(data), size);
    return size;
  });
  const std::string from = std::string("X\x03\x00\x00\x00", 5) + "cpu";  // pickle BINUNICODE 'cpu'
  std::string to = "X    " + location;
  const auto n = static_cast<std::uint32_t>(location.size());
  for (int i = 0; i < 4; ++i) to[1 + i] = static_cast<char>((n >> (8 * i)) & 0xFF);
  int rewritten = 0;
  for (const auto& name : reader.getAllRecords()) {
    if (name == "version" || name == ".data/version" || name == "byteorder") continue;  // the writer adds its own
    auto [data, size] = reader.getRecord(name);
    std::string bytes(static_cast<const char*>(data.get()), size);
    if (name.size() >= 3 && name.compare(name.size() - 3, 3, "pkl") == 0) {
      for (size_t at = bytes.find(from); at != std::string::npos; at = bytes.find(from, at + to.size())) {
        bytes.replace(at, from.size(), to);
        ++rewritten;
      }
    }
    writer.writeRecord(name, bytes.data(), bytes.size());
  }
  writer.writeEndOfFile();
  if (rewritten == 0) throw std::runtime_error("found no storage location 'cpu' to rewrite in the checkpoint");
  return out;
}

std::vector<Scenario> make_scenarios() {
  std::vector<Scenario> list;
  list.push_back({"input_on_cpu", "model on the GPU, input batch left on the CPU", 1, [](const torch::Device& gpu, ScenarioResult& r) {
                    auto model = models::make_model("net");
                    model->to(gpu);
                    const auto x = images(4);
                    r.culprit = audit_devices(*model, {x}, gpu).text();
                    r.raw = error_of([&] { model->forward(x); });
                    r.expected = ErrorKind::kDeviceMismatch;
                  }});
  list.push_back({"targets_on_cpu", "logits on the GPU, targets on the CPU for the loss", 1, [](const torch::Device& gpu, ScenarioResult& r) {
                    auto model = models::make_model("net");
                    model->to(gpu);
                    const auto logits = model->forward(images(4, gpu));
                    const auto targets = torch::randint(10, {4}, torch::kInt64);
                    r.culprit = fmt::format("targets on {}, logits on {}", device_string(targets.device()), device_string(logits.device()));
                    r.raw = error_of([&] { torch::nn::functional::cross_entropy(logits, targets); });
                    r.expected = ErrorKind::kDeviceMismatch;
                  }});
  list.push_back({"loss_weights_on_cpu", "a loss built with class weights, left on the CPU while the model runs on the GPU", 1,
                  [](const torch::Device& gpu, ScenarioResult& r) {
                    auto model = models::make_model("net");
                    model->to(gpu);
                    const auto logits = model->forward(images(4, gpu));
                    const auto targets = torch::randint(10, {4}, torch::TensorOptions().dtype(torch::kInt64).device(gpu));
                    // The weights are a buffer of the loss module: model->to(gpu) does not move them, loss_fn->to(gpu) does.
                    torch::nn::CrossEntropyLoss loss_fn(torch::nn::CrossEntropyLossOptions().weight(torch::rand({10})));
                    r.culprit = "the loss's class weights: " + audit_devices(*loss_fn, {logits, targets}, gpu).text();
                    r.raw = error_of([&] { loss_fn(logits, targets); });
                    r.expected = ErrorKind::kDeviceMismatch;
                    loss_fn->to(gpu);
                    r.note = error_of([&] { loss_fn(logits, targets); }).empty() ? "fixed by loss_fn->to(device): the loss ran"
                                                                                 : "loss_fn->to(device) did not fix it";
                  }});
  list.push_back({"model_split_across_devices",
                  "a model split across two devices (model parallelism) whose activations are not moved at the boundary", 1,
                  [](const torch::Device& gpu, ScenarioResult& r) {
                    // Two GPUs: the second half on the other one; one GPU: on the CPU, as a model too large for it is split.
                    const torch::Device other = backend::cuda_device_count() > 1
                                                    ? torch::Device(torch::kCUDA, gpu.index() == 0 ? 1 : 0)
                                                    : torch::Device(torch::kCPU);
                    torch::nn::Sequential first(torch::nn::Flatten(), torch::nn::Linear(3 * 32 * 32, 120), torch::nn::ReLU());
                    torch::nn::Sequential second(torch::nn::Linear(120, 84), torch::nn::ReLU(), torch::nn::Linear(84, 10));
                    first->to(gpu);
                    second->to(other);
                    const auto boundary = first->forward(images(4, gpu));
                    r.culprit = fmt::format("the boundary between the halves: the first half's output is on {}, the second half's "
                                            "first layer (second.0, Linear(120, 84)) on {}; ",
                                            device_string(boundary.device()), device_string(other)) +
                                audit_devices(*second, {boundary}, other).text();
                    r.raw = error_of([&] { second->forward(boundary); });
                    r.expected = ErrorKind::kDeviceMismatch;
                    r.note = error_of([&] { second->forward(boundary.to(other)); }).empty()
                                 ? "fixed by moving the activations at the boundary: second->forward(h.to(other_device)) ran"
                                 : "moving the activations did not fix it";
                  }});
  list.push_back({"tensor_made_in_forward", "a tensor created inside forward() on the CPU", 1, [](const torch::Device& gpu, ScenarioResult& r) {
                    Scale model;
                    model->to(gpu);
                    const auto x = torch::randn({2, 8}, torch::TensorOptions().device(gpu));
                    const auto audit = audit_devices(*model, {x}, gpu);
                    r.culprit = "every registered parameter and buffer is on " + audit.expected +
                                ": the CPU tensor is made inside forward() (torch::arange without a device); build it "
                                "with x.options() or register it as a buffer";
                    r.raw = error_of([&] { model->forward(x); });
                    r.expected = ErrorKind::kDeviceMismatch;
                  }});
  list.push_back({"indices_on_other_device", "embedding / index_select with indices on another device", 1, [](const torch::Device& gpu, ScenarioResult& r) {
                    torch::nn::Embedding embedding(10, 4);
                    embedding->to(gpu);
                    const auto indices = torch::tensor({1, 2, 3}, torch::kInt64);
                    r.culprit = audit_devices(*embedding, {indices}, gpu).text();
                    r.raw = error_of([&] { embedding->forward(indices); });
                    const auto index_select = error_of([&] { torch::index_select(embedding->weight, 0, indices); });
                    if (!index_select.empty()) r.note = "index_select: " + index_select;
                    r.expected = ErrorKind::kDeviceMismatch;
                  }});
  list.push_back({"two_gpus", "tensors on two different GPUs", 2, [](const torch::Device& gpu, ScenarioResult& r) {
                    const torch::Device other(torch::kCUDA, gpu.index() == 0 ? 1 : 0);
                    const auto a = torch::randn({4}, torch::TensorOptions().device(gpu));
                    const auto b = torch::randn({4}, torch::TensorOptions().device(other));
                    r.culprit = fmt::format("a on {}, b on {}", device_string(gpu), device_string(other));
                    r.raw = error_of([&] { torch::add(a, b); });
                    r.expected = ErrorKind::kDeviceMismatch;
                  }});
  list.push_back({"optimizer_state_elsewhere", "optimizer state loaded onto a different device than the parameters", 1,
                  [](const torch::Device& gpu, ScenarioResult& r) {
                    // One step on the CPU so SGD has momentum buffers, saved; then loaded for a model on the GPU.
                    auto cpu_model = models::make_model("net");
                    torch::optim::SGD cpu_sgd(cpu_model->parameters(), torch::optim::SGDOptions(0.01).momentum(0.9));
                    cpu_model->forward(images(2)).sum().backward();
                    cpu_sgd.step();
                    std::stringstream state;
                    torch::save(cpu_sgd, state);
                    auto model = models::make_model("net");
                    model->to(gpu);
                    torch::optim::SGD sgd(model->parameters(), torch::optim::SGDOptions(0.01).momentum(0.9));
                    torch::load(sgd, state);
                    model->forward(images(2, gpu)).sum().backward();
                    r.culprit = "SGD momentum buffers were loaded on the CPU; the parameters are on " + device_string(gpu);
                    r.raw = error_of([&] { sgd.step(); });
                    r.expected = ErrorKind::kDeviceMismatch;
                  }});
  list.push_back({"checkpoint_from_gpu", "a checkpoint saved from GPU tensors loaded where that GPU does not exist", 0,
                  [](const torch::Device&, ScenarioResult& r) {
                    const int gpus = backend::cuda_device_count();
                    const std::string location = gpus == 0 ? "cuda:0" : fmt::format("cuda:{}", gpus);
                    const std::string checkpoint = checkpoint_from(location);
                    r.culprit = fmt::format("the checkpoint's tensors were saved on {}; this host has {} CUDA device(s)", location, gpus);
                    torch::Tensor loaded;
                    r.raw = error_of([&] {
                      std::istringstream in(checkpoint);
                      torch::load(loaded, in);
                    });
                    r.expected = gpus == 0 ? ErrorKind::kCudaUnavailable : ErrorKind::kInvalidDevice;
                    std::istringstream again(checkpoint);
                    torch::load(loaded, again, torch::Device(torch::kCPU));
                    r.note = fmt::format("fix verified: torch::load(tensor, stream, torch::kCPU) loads it ({} values on {})",
                                         loaded.numel(), device_string(loaded.device()));
                  }});
  list.push_back({"cuda_where_there_is_none", "CUDA requested where there is none, or a device ordinal that does not exist", 0,
                  [](const torch::Device&, ScenarioResult& r) {
                    const int gpus = backend::cuda_device_count();
                    // Without CUDA: plain `cuda`. With N GPUs: cuda:N, one past the last.
                    const torch::Device wanted = gpus == 0 ? torch::Device(torch::kCUDA) : torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(gpus));
                    r.culprit = fmt::format("asked for {} on a host with {} CUDA device(s)", wanted.str(), gpus);
                    r.raw = error_of([&] { torch::zeros({2}, torch::TensorOptions().device(wanted)); });
                    r.expected = gpus == 0 ? ErrorKind::kCudaUnavailable : ErrorKind::kInvalidDevice;
                  }});
  list.push_back({"meta_tensors", "an uninitialised meta-device model used for real compute", 0, [](const torch::Device&, ScenarioResult& r) {
                    MetaMlp model;
                    const auto x = images(2);
                    const auto audit = audit_devices(*model, {x}, torch::Device(torch::kCPU));
                    r.culprit = fmt::format("{} parameters on meta, e.g. `{}`", audit.misplaced.size(),
                                            audit.misplaced.empty() ? "?" : audit.misplaced.front().name);
                    r.expected = ErrorKind::kMetaTensor;
                    // Mixed CPU input and meta weights: some LibTorch versions raise, others compute silently.
                    std::vector<std::string> silent;
                    torch::Tensor mixed;
                    r.raw = error_of([&] { mixed = model->forward(x); });
                    if (r.raw.empty() && mixed.defined() && mixed.is_meta()) {
                      silent.push_back("forward() with a CPU input and meta weights returned a meta tensor");
                    }
                    // Meta in, meta out: no error at all, until a value is read.
                    const auto out = model->forward(torch::empty({2, 3, 32, 32}, torch::TensorOptions().device(torch::kMeta)));
                    if (out.is_meta()) {
                      silent.push_back(fmt::format("forward() on a meta input returned a meta tensor of shape {}",
                                                   fmt::join(out.sizes(), "x")));
                    }
                    const std::string read = error_of([&] { out.sum().item<float>(); });
                    if (r.raw.empty()) r.raw = read;
                    if (!silent.empty()) {
                      r.note = fmt::format("SILENT: {} without any error (flagged here); reading a value then fails: {}",
                                           fmt::join(silent, "; "), read.empty() ? "(it did not)" : read);
                    }
                  }});
  // Out of memory in disguise: the GPU is full (as when another process holds it), and a library that
  // allocates outside LibTorch's caching allocator needs memory for its handle on a new thread.
  list.push_back({"cublas_without_memory", "cuBLAS needs memory for a new handle on a full GPU (out of memory in disguise)", 1,
                  [](const torch::Device& gpu, ScenarioResult& r) {
                    const auto o = torch::TensorOptions().device(gpu);
                    const auto a = torch::randn({512, 512}, o), b = torch::randn({512, 512}, o);
                    auto c = torch::empty({512, 512}, o);
                    torch::mm_out(c, a, b);  // the output exists and this thread's handle too: only a new handle needs memory
                    backend::synchronize(gpu);
                    const auto held = backend::hold_device_memory(gpu, /*leave_free_bytes=*/0);
                    r.culprit = fmt::format("{} of device memory held outside LibTorch (cudaMalloc)",
                                            units::format_bytes(static_cast<double>(held->bytes())));
                    std::thread other([&] {
                      const at::DeviceGuard guard(gpu);
                      r.raw = error_of([&] {
                        torch::mm_out(c, a, b);
                        backend::synchronize(gpu);
                      });
                    });
                    other.join();
                    r.expected = ErrorKind::kOutOfMemoryGpu;
                  }});
  list.push_back({"cudnn_without_memory", "cuDNN needs memory for a new handle on a full GPU (out of memory in disguise)", 1,
                  [](const torch::Device& gpu, ScenarioResult& r) {
                    const auto o = torch::TensorOptions().device(gpu);
                    const auto x = torch::randn({64, 64, 32, 32}, o), w = torch::randn({64, 64, 3, 3}, o);
                    { torch::conv2d(x, w, /*bias=*/{}, /*stride=*/1, /*padding=*/1); }  // cached output block, a handle here
                    backend::synchronize(gpu);
                    const auto held = backend::hold_device_memory(gpu, /*leave_free_bytes=*/0);
                    r.culprit = fmt::format("{} of device memory held outside LibTorch (cudaMalloc)",
                                            units::format_bytes(static_cast<double>(held->bytes())));
                    std::thread other([&] {
                      const at::DeviceGuard guard(gpu);
                      r.raw = error_of([&] {
                        torch::conv2d(x, w, /*bias=*/{}, /*stride=*/1, /*padding=*/1);
                        backend::synchronize(gpu);
                      });
                    });
                    other.join();
                    r.expected = ErrorKind::kOutOfMemoryGpu;
                  }});
  list.push_back({"metrics_on_gpu", "metrics computed on the host from a GPU tensor without copying it back", 1,
                  [](const torch::Device& gpu, ScenarioResult& r) {
                    auto model = models::make_model("net");
                    model->to(gpu);
                    torch::NoGradGuard no_grad;
                    const auto predicted = model->forward(images(8, gpu)).argmax(1);
                    const auto labels = torch::randint(10, {8}, torch::kInt64);  // still on the host
                    r.culprit = fmt::format("predictions on {}, labels on the host", device_string(predicted.device()));
                    r.raw = error_of([&] { (predicted == labels).sum(); });
                    r.expected = ErrorKind::kDeviceMismatch;
                    r.note = "read metrics with (predicted == labels.to(device)).sum().item<int64_t>() or predicted.cpu()";
                  }});
  return list;
}

const char* status_name(ScenarioStatus s) {
  switch (s) {
    case ScenarioStatus::kReproduced: return "reproduced";
    case ScenarioStatus::kSkipped: return "skipped";
    case ScenarioStatus::kFailed: return "FAILED";
  }
  return "";
}

}  // namespace

const std::vector<Scenario>& scenarios() {
  static const std::vector<Scenario> list = make_scenarios();
  return list;
}

std::vector<std::string> scenario_names() {
  std::vector<std::string> names;
  for (const auto& s : scenarios()) names.push_back(s.name);
  return names;
}

std::vector<ScenarioResult> run_scenarios(const std::string& selection, std::optional<torch::Device> gpu) {
  const auto names = scenario_names();
  if (selection != "all" && std::find(names.begin(), names.end(), selection) == names.end()) {
    throw InputError(fmt::format("unknown scenario '{}' (known: all, {})", selection, fmt::join(names, ", ")));
  }
  const int gpus = backend::cuda_device_count();
  const torch::Device device = gpu.value_or(torch::Device(torch::kCUDA, 0));
  std::vector<ScenarioResult> results;
  for (const auto& s : scenarios()) {
    if (selection != "all" && s.name != selection) continue;
    ScenarioResult r;
    r.name = s.name;
    r.title = s.title;
    if (s.needs_gpus > gpus) {
      r.status = ScenarioStatus::kSkipped;
      r.note = fmt::format("skipped: needs {} CUDA device(s), this host has {}", s.needs_gpus, gpus);
      results.push_back(r);
      continue;
    }
    try {
      s.run(device, r);
      if (r.raw.empty()) {
        r.status = ScenarioStatus::kFailed;
        r.note = "the code ran without the expected error" + (r.note.empty() ? "" : "; " + r.note);
      } else {
        r.diagnosis = explain_error(r.raw);
        const bool as_expected = r.diagnosis.kind == r.expected;
        r.status = as_expected ? ScenarioStatus::kReproduced : ScenarioStatus::kFailed;
        if (!as_expected) {
          r.note = fmt::format("classified as {}, expected {}", kind_name(r.diagnosis.kind), kind_name(r.expected)) +
                   (r.note.empty() ? "" : "; " + r.note);
        }
      }
    } catch (const std::exception& e) {
      r.status = ScenarioStatus::kFailed;
      r.note = "the scenario itself failed: " + short_message(e);
    }
    results.push_back(r);
  }
  return results;
}

std::string scenario_text(const ScenarioResult& r) {
  std::string out = fmt::format("== {}: {} [{}]\n", r.name, r.title, status_name(r.status));
  if (r.status == ScenarioStatus::kSkipped) return out + r.note + "\n";
  if (!r.raw.empty()) out += fmt::format("raw:         {}\n", r.raw);
  if (!r.culprit.empty()) {
    std::string culprit = r.culprit;
    while (!culprit.empty() && culprit.back() == '\n') culprit.pop_back();
    for (size_t at = culprit.find('\n'); at != std::string::npos; at = culprit.find('\n', at + 1)) culprit.insert(at + 1, "             ");
    out += fmt::format("culprit:     {}\n", culprit);
  }
  if (!r.raw.empty()) out += diagnosis_text(r.diagnosis);
  if (!r.note.empty()) out += fmt::format("note:        {}\n", r.note);
  return out;
}

std::string scenarios_json(const std::vector<ScenarioResult>& results) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& r : results) {
    nlohmann::json j = {{"scenario", r.name}, {"title", r.title}, {"status", status_name(r.status)}, {"note", r.note}};
    if (r.status != ScenarioStatus::kSkipped) {
      j["raw"] = r.raw;
      j["expected_kind"] = kind_name(r.expected);
      j["culprit"] = r.culprit;
      j["diagnosis"] = nlohmann::json::parse(diagnosis_json(r.diagnosis, -1));
    }
    list.push_back(j);
  }
  return list.dump(2);
}

}  // namespace torchprobe::diagnostics
