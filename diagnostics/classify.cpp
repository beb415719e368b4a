#include "diagnostics/classify.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "torchprobe/error.h"

namespace torchprobe::diagnostics {
namespace {

struct Rule {
  ErrorKind kind;
  std::regex pattern;
};

// Checked in order: memory first (OOM texts name GPUs), then missing CUDA, bad ordinals, meta, mismatches.
const std::vector<Rule>& rules() {
  static const std::vector<Rule> table = [] {
    const auto r = [](ErrorKind k, const char* p) { return Rule{k, std::regex(p, std::regex::ECMAScript)}; };
    return std::vector<Rule>{
        r(ErrorKind::kOutOfMemoryGpu, R"((CUDA|HIP|MPS backend|XPU) out of memory|CUBLAS_STATUS_ALLOC_FAILED|CUDNN_STATUS_ALLOC_FAILED|cuda.*OutOfMemoryError|OutOfMemoryError: CUDA)"),
        r(ErrorKind::kOutOfMemoryCpu, R"(DefaultCPUAllocator: (can't allocate memory|not enough memory)|std::bad_alloc|MemoryError|Cannot allocate memory)"),
        r(ErrorKind::kCudaUnavailable, R"(Torch not compiled with CUDA enabled|not linked with support for cuda devices|Cannot initialize CUDA without ATen_cuda library|Found no NVIDIA driver|No CUDA GPUs are available|no CUDA-capable device is detected|CUDA driver version is insufficient|torch\.cuda\.is_available\(\) is False|with arguments from the 'CUDA' backend|CUDA is not available)"),
        r(ErrorKind::kInvalidDevice, R"(invalid device ordinal|Invalid device string|device type at start of device string|torch\.cuda\.device_count\(\) is \d+|Device index must not be negative|Invalid device id|device >= 0 && device < num_gpus|CUDA device ordinal)"),
        r(ErrorKind::kMetaTensor, R"(meta tensor|with Meta tensors|from the 'Meta' backend|on device meta|\bmeta\b and|and meta\b|device='meta'|on meta\b)"),
        r(ErrorKind::kDeviceMismatch, R"(Expected all tensors to be on the same device|must be on the current device|Expected object of device type|but expected (it )?to be on|should be either on cpu or on the same device|Input type \([\w.]+\) and weight type \([\w.]+\) should be the same|Expected a '\w+' device type for generator|are on different devices|different from other tensors on)"),
    };
  }();
  return table;
}

// Lines that are not the error itself: Python traceback frames, C++ backtrace frames.
bool is_noise(const std::string& line) {
  static const std::regex noise(R"(^\s*(Traceback \(most recent call last\)|File ".*", line \d+|frame #\d+|Exception raised from|\^+\s*$|~+\s*$))");
  return std::regex_search(line, noise);
}

std::string strip_prefixes(std::string line) {
  static const std::regex prefix(R"(^\s*(terminate called after throwing an instance of '[^']*'\s*)?(what\(\):\s*)?((torch\.)?(cuda\.)?[A-Za-z_.]*(Error|Exception)(\[[^\]]*\])?:\s*)?)");
  line = std::regex_replace(line, prefix, "", std::regex_constants::format_first_only);
  while (!line.empty() && (line.back() == ' ' || line.back() == '\r')) line.pop_back();
  return line;
}

// Dispatcher errors append every backend the op has; the first sentence says it all.
std::string trim_dispatcher_tail(const std::string& message) {
  const auto tail = message.find(". This could be because the operator doesn't exist");
  return tail == std::string::npos ? message : message.substr(0, tail + 1);
}

void add_device(std::vector<std::string>& devices, const std::string& d) {
  if (std::find(devices.begin(), devices.end(), d) == devices.end()) devices.push_back(d);
}

std::vector<std::string> devices_in(const std::string& message) {
  std::vector<std::string> devices;
  static const std::regex tensor_type(R"(torch\.(cuda\.)?\w+Tensor)");
  static const std::regex device(R"(\b(cuda:\d+|cuda|cpu|meta|mps|xpu:\d+|xpu)\b)");
  static const std::regex gpu_n(R"(\b(?:GPU|CUDA device) (\d+)\b)");
  static const std::regex word_device(R"(\b(CPU|GPU)\b)");
  std::smatch m;
  // "Could not run 'aten::empty' with arguments from the 'CUDA' backend": that backend is the device.
  static const std::regex backend(R"(with arguments from the '(\w+)' backend)");
  if (std::regex_search(message, m, backend)) {
    std::string name = m[1].str();
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return {name};
  }
  if (message.find("with Meta tensors") != std::string::npos) return {"meta"};
  // Old wordings name tensor types: torch.FloatTensor is a CPU tensor, torch.cuda.FloatTensor a CUDA one.
  for (auto it = std::sregex_iterator(message.begin(), message.end(), tensor_type); it != std::sregex_iterator(); ++it) {
    add_device(devices, (*it)[1].matched ? "cuda" : "cpu");
  }
  if (!devices.empty()) return devices;
  for (auto it = std::sregex_iterator(message.begin(), message.end(), device); it != std::sregex_iterator(); ++it) {
    // "torch.cuda.is_available()" and the like name a module, not a device.
    const auto at = static_cast<size_t>(it->position());
    if (at > 0 && message[at - 1] == '.') continue;
    add_device(devices, (*it)[1].str());
  }
  for (auto it = std::sregex_iterator(message.begin(), message.end(), gpu_n); it != std::sregex_iterator(); ++it) {
    add_device(devices, "cuda:" + (*it)[1].str());
  }
  if (devices.empty()) {
    for (auto it = std::sregex_iterator(message.begin(), message.end(), word_device); it != std::sregex_iterator(); ++it) {
      add_device(devices, (*it)[1].str() == "CPU" ? "cpu" : "cuda");
    }
  }
  // "cuda" next to "cuda:0" says nothing more.
  if (std::any_of(devices.begin(), devices.end(), [](const std::string& d) { return d.rfind("cuda:", 0) == 0; })) {
    devices.erase(std::remove(devices.begin(), devices.end(), "cuda"), devices.end());
  }
  return devices;
}

std::optional<std::string> argument_in(const std::string& message) {
  static const std::vector<std::regex> patterns = {
      std::regex(R"(for argument (\w+) in method)"), std::regex(R"(but got (\w+) is on)"),
      std::regex(R"(argument #\d+ '(\w+)')"), std::regex(R"(Tensor for '(\w+)')")};
  std::smatch m;
  for (const auto& p : patterns) {
    if (std::regex_search(message, m, p)) return m[1].str();
  }
  return std::nullopt;
}

std::string op_in(const std::string& message) {
  static const std::regex method(R"(in method (?:wrapper_)?(?:(?:CUDA|CPU|Meta)_)?(?:_)?(\w+?)(?:_out)?\))");
  static const std::regex call(R"(in call to (\w+))");
  std::smatch m;
  if (std::regex_search(message, m, method) || std::regex_search(message, m, call)) return m[1].str();
  return "";
}

std::string join(const std::vector<std::string>& items, const std::string& last_sep) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i == 0 ? "" : i + 1 == items.size() ? last_sep : ", ") + items[i];
  return out;
}

void explain(Diagnosis& d) {
  const std::string devices = d.devices.empty() ? "more than one device" : join(d.devices, " and ");
  const std::string op = d.op.empty() ? "An op" : "The op `" + d.op + "`";
  switch (d.kind) {
    case ErrorKind::kDeviceMismatch: {
      d.explanation = fmt::format(
          "{} received tensors on different devices ({}). LibTorch never moves data implicitly: every input of one op, "
          "including a module's parameters and buffers and the loss targets, must be on the same device.",
          op, devices);
      if (d.argument) {
        static const std::regex placed(R"(but got (\w+) is on (\S+?), different from other tensors on (\S+?)[ .!])");
        std::smatch m;
        if (std::regex_search(d.message, m, placed)) {
          d.explanation += fmt::format(" `{}` is on {} while the other tensors are on {}.", m[1].str(), m[2].str(), m[3].str());
        } else {
          d.explanation += fmt::format(" The check failed on the argument `{}`.", *d.argument);
        }
      }
      d.explanation += " To name the culprit before anything runs: torchprobe::diagnostics::audit_devices(model, inputs, device).";
      d.fix_cpp =
          "model->to(device);\n"
          "auto x = images.to(device, /*non_blocking=*/true);\n"
          "auto y = labels.to(device, /*non_blocking=*/true);   // targets too\n"
          "auto c = torch::zeros({n}, x.options());               // new tensors: the input's device\n"
          "// in a module: register_buffer(\"name\", t) so module->to(device) moves it";
      d.fix_python =
          "model.to(device)\n"
          "x, y = images.to(device, non_blocking=True), labels.to(device, non_blocking=True)\n"
          "c = torch.zeros(n, device=x.device)\n"
          "# in a module: self.register_buffer('name', t) so model.to(device) moves it";
      break;
    }
    case ErrorKind::kCudaUnavailable:
      d.explanation =
          "CUDA was asked for, but this process cannot use it: the LibTorch build has no CUDA (a CPU-only build such as "
          "Debian's libtorch or a +cpu wheel), no NVIDIA driver is loaded, or no GPU is visible (CUDA_VISIBLE_DEVICES). "
          "Run `torchprobe devices` to see which.";
      if (d.message.find("deserialize") != std::string::npos || d.message.find("is_available() is False") != std::string::npos) {
        d.explanation += " Here a checkpoint saved from GPU tensors is being loaded where there is no GPU: load it "
                         "onto a device you have.";
      }
      d.fix_cpp =
          "auto device = torch::cuda::is_available() ? torch::Device(torch::kCUDA) : torch::Device(torch::kCPU);\n"
          "torch::load(model, \"model.pt\", device);   // checkpoints: load onto a device this host has";
      d.fix_python =
          "device = 'cuda' if torch.cuda.is_available() else 'cpu'\n"
          "state = torch.load('model.pt', map_location=device)";
      break;
    case ErrorKind::kInvalidDevice:
      d.explanation = fmt::format(
          "The device {} does not exist on this host. CUDA numbers the visible GPUs from 0 (CUDA_VISIBLE_DEVICES "
          "renumbers them); `torchprobe devices` lists what this host has.",
          d.devices.empty() ? "index" : "`" + d.devices.front() + "`");
      d.fix_cpp =
          "const auto n = torch::cuda::device_count();\n"
          "auto device = index < n ? torch::Device(torch::kCUDA, index) : torch::Device(torch::kCUDA, 0);\n"
          "torch::load(model, \"model.pt\", device);   // a checkpoint from another GPU: map it";
      d.fix_python =
          "n = torch.cuda.device_count()\n"
          "state = torch.load('model.pt', map_location={'cuda:3': 'cuda:0'})";
      break;
    case ErrorKind::kMetaTensor:
      d.explanation =
          "A tensor on the meta device took part in real compute or was read. Meta tensors have shapes and dtypes but "
          "no data (a model built on device 'meta', an init-empty-weights loader, an unfilled parameter): they must be "
          "materialised on a real device and given values before use. Note that ops on meta tensors alone do not "
          "fail; they return meta results silently.";
      d.fix_cpp =
          "// a meta parameter has no data to move: build the module on a real device, then load its weights\n"
          "Net model;\n"
          "model->to(device);\n"
          "torch::load(model, \"weights.pt\", device);";
      d.fix_python =
          "model = model.to_empty(device=device)\n"
          "model.load_state_dict(torch.load('weights.pt', map_location=device))";
      break;
    case ErrorKind::kOutOfMemoryGpu:
      d.explanation =
          "The GPU's caching allocator could not find the bytes requested. The batch (activations grow with it), the "
          "model with its gradients and optimizer state, and cached-but-free blocks all count. Activations grow "
          "linearly with the batch: torchprobe-bench's peak_mem_mib at two batch sizes gives the slope.";
      d.fix_cpp =
          "// smaller batch; free cached blocks between phases:\n"
          "c10::cuda::CUDACachingAllocator::emptyCache();\n"
          "// fragmentation: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True";
      d.fix_python =
          "batch_size //= 2\n"
          "torch.cuda.empty_cache()\n"
          "# fragmentation: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True";
      break;
    case ErrorKind::kOutOfMemoryCpu:
      d.explanation =
          "The host could not allocate the memory asked for (the process hit RAM, swap or an address-space limit). "
          "Batch size and any tensor built from the whole dataset are the usual causes.";
      d.fix_cpp = "// smaller batch; stream the data in batches instead of one giant tensor; check ulimit -v";
      d.fix_python = "batch_size //= 2  # and load data lazily (a Dataset + DataLoader) instead of all at once";
      break;
    case ErrorKind::kUnknown:
      d.explanation = "Not a device or memory error torchprobe recognises.";
      break;
  }
}

}  // namespace

std::string kind_name(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kDeviceMismatch: return "device_mismatch";
    case ErrorKind::kCudaUnavailable: return "cuda_unavailable";
    case ErrorKind::kInvalidDevice: return "invalid_device";
    case ErrorKind::kMetaTensor: return "meta_tensor";
    case ErrorKind::kOutOfMemoryGpu: return "out_of_memory_gpu";
    case ErrorKind::kOutOfMemoryCpu: return "out_of_memory_cpu";
    case ErrorKind::kUnknown: return "unknown";
  }
  return "unknown";
}

Diagnosis explain_error(const std::string& text) {
  Diagnosis d;
  std::vector<std::string> lines;
  std::istringstream stream(text);
  for (std::string line; std::getline(stream, line);) {
    if (!is_noise(line)) lines.push_back(strip_prefixes(line));
  }
  for (const auto& rule : rules()) {
    for (const auto& line : lines) {
      if (std::regex_search(line, rule.pattern)) {
        d.kind = rule.kind;
        d.message = line;
        break;
      }
    }
    if (d.kind != ErrorKind::kUnknown) break;
  }
  if (d.kind == ErrorKind::kUnknown) {
    for (const auto& line : lines) {
      if (!line.empty()) {
        d.message = line;
        break;
      }
    }
  }
  d.message = trim_dispatcher_tail(d.message);
  d.devices = devices_in(d.message);
  if (d.kind == ErrorKind::kDeviceMismatch && std::find(d.devices.begin(), d.devices.end(), "meta") != d.devices.end()) {
    d.kind = ErrorKind::kMetaTensor;
  }
  d.argument = argument_in(d.message);
  d.op = op_in(d.message);
  explain(d);
  if (d.kind == ErrorKind::kOutOfMemoryGpu || d.kind == ErrorKind::kOutOfMemoryCpu) {
    d.memory = parse_oom(d.message);
    const std::string numbers = explain_oom_facts(d.memory, d.kind == ErrorKind::kOutOfMemoryGpu);
    if (!numbers.empty()) d.explanation += " " + numbers;
  }
  return d;
}

std::string raw_message(const std::exception& e) {
  const std::string first_line = short_message(e);
  const std::string trimmed = trim_dispatcher_tail(first_line);
  return trimmed.size() < first_line.size() ? trimmed + " [the list of backends that have the op omitted]" : first_line;
}

std::string diagnosis_text(const Diagnosis& d) {
  std::string out = fmt::format("kind:        {}\n", kind_name(d.kind));
  if (!d.message.empty()) out += fmt::format("message:     {}\n", d.message);
  if (!d.devices.empty()) out += fmt::format("devices:     {}\n", join(d.devices, ", "));
  if (d.argument) out += fmt::format("argument:    {}\n", *d.argument);
  if (!d.op.empty()) out += fmt::format("op:          {}\n", d.op);
  out += fmt::format("explanation: {}\n", d.explanation);
  const auto indent = [](const std::string& code) {
    std::string s = "    " + code;
    for (size_t at = s.find('\n'); at != std::string::npos; at = s.find('\n', at + 1)) s.insert(at + 1, "    ");
    return s;
  };
  if (!d.fix_cpp.empty()) out += "fix (C++):\n" + indent(d.fix_cpp) + "\n";
  if (!d.fix_python.empty()) out += "fix (Python):\n" + indent(d.fix_python) + "\n";
  return out;
}

std::string diagnosis_json(const Diagnosis& d, int indent) {
  nlohmann::json j = {{"kind", kind_name(d.kind)},
                      {"message", d.message},
                      {"devices", d.devices},
                      {"argument", d.argument ? nlohmann::json(*d.argument) : nlohmann::json(nullptr)},
                      {"op", d.op},
                      {"explanation", d.explanation},
                      {"fix", d.fix_cpp},
                      {"fix_python", d.fix_python}};
  if (d.memory.any()) {
    auto& m = j["memory"];
    const auto put = [&m](const char* key, const std::optional<std::int64_t>& v) {
      m[key] = v ? nlohmann::json(*v) : nlohmann::json(nullptr);
    };
    put("requested_bytes", d.memory.requested);
    put("total_bytes", d.memory.total);
    put("free_bytes", d.memory.free);
    put("allocated_bytes", d.memory.allocated);
    put("reserved_bytes", d.memory.reserved);
    put("process_in_use_bytes", d.memory.process_in_use);
    m["fragmentation"] = looks_fragmented(d.memory);
  }
  return j.dump(indent);
}

}  // namespace torchprobe::diagnostics
