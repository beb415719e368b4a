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
  const char* confidence = "";  ///< out-of-memory rules: "certain" or "likely"
  const char* allocator = "";   ///< out-of-memory rules: what failed to allocate
  std::optional<std::regex> unless;  ///< the rule does not apply to a text with this
};

// Checked in order: memory first (OOM texts name GPUs), messages that say memory ran out before status
// codes that only usually mean it; then missing CUDA, bad ordinals, meta, mismatches.
const std::vector<Rule>& rules() {
  static const std::vector<Rule> table = [] {
    const auto r = [](ErrorKind k, const char* p, const char* confidence = "", const char* allocator = "",
                      const char* unless = nullptr) {
      // Status codes and allocator words are matched in any case: people retype and lower-case them.
      const auto flags = confidence[0] ? std::regex::ECMAScript | std::regex::icase : std::regex::ECMAScript;
      return Rule{k, std::regex(p, flags), confidence, allocator,
                  unless ? std::optional<std::regex>(std::regex(unless, std::regex::icase)) : std::nullopt};
    };
    const auto gpu = ErrorKind::kOutOfMemoryGpu;
    const auto cpu = ErrorKind::kOutOfMemoryCpu;
    return std::vector<Rule>{
        r(gpu, R"(MPS backend out of memory)", "certain", "MPS allocator"),
        r(gpu, R"(XPU out of memory)", "certain", "XPU allocator"),
        r(gpu, R"(HIP out of memory|hipErrorOutOfMemory)", "certain", "LibTorch HIP caching allocator"),
        r(gpu, R"(CUDA out of (the )?memory|(cuda|torch)\.OutOfMemoryError|OutOfMemoryError: CUDA)", "certain",
          "LibTorch CUDA caching allocator"),
        // The 1.x numbers pasted without the first words; not XPU's 4 GB block limit, which prints the same tail.
        r(gpu, R"(Tried to allocate [0-9.]+ ?[KMGT]i?B \(GPU \d+;)", "certain", "LibTorch CUDA caching allocator",
          R"(can NOT allocate memory block with size larger than)"),
        r(gpu, R"(CUBLAS_STATUS_ALLOC_FAILED)", "certain", "cuBLAS (handle or workspace)"),
        r(gpu, R"(CUDNN_STATUS_ALLOC_FAILED)", "certain", "cuDNN (handle or workspace)"),
        r(gpu, R"(Cuda failure( \d+)? '?out of memory|NCCL.*out of memory)", "certain", "NCCL (its CUDA buffers)"),
        r(gpu, R"(CUDA error: ?out of memory|cuda runtime error \(2\) ?: ?out of memory|error=2 : out of memory|CUDA_ERROR_OUT_OF_MEMORY|cudaErrorMemoryAllocation)",
          "certain", "CUDA runtime (context or driver allocation)"),
        r(cpu, R"(DefaultCPUAllocator: (can't allocate memory|not enough memory))", "certain", "LibTorch CPU allocator"),
        r(cpu, R"(OpenBLAS: malloc failed in)", "certain", "OpenBLAS (its work buffers)"),
        r(cpu, R"(MemoryError|Unable to allocate [0-9.]+ [KMGTP]?i?B for an array)", "certain", "Python / NumPy"),
        r(cpu, R"(Cannot allocate memory)", "certain", "the operating system (ENOMEM)"),
        r(gpu, R"(CUBLAS_STATUS_NOT_INITIALIZED)", "likely", "cuBLAS (handle creation)"),
        r(gpu, R"(CUDNN_STATUS_(NOT_INITIALIZED|INTERNAL_ERROR|MAPPING_ERROR|EXECUTION_FAILED)|Unable to find a valid cuDNN algorithm)",
          "likely", "cuDNN (handle or workspace)"),
        r(gpu, R"(No executable batch size found)", "likely", "the GPU (every batch size tried ran out of memory)"),
        r(cpu, R"(posix_memalign\(.*12 vs 0)", "likely", "LibTorch CPU allocator"),
        r(cpu, R"(std::bad_alloc)", "likely", "C++ operator new"),
        r(ErrorKind::kCudaUnavailable, R"(Torch not compiled with CUDA enabled|not linked with support for cuda devices|Cannot initialize CUDA without ATen_cuda library|Found no NVIDIA driver|No CUDA GPUs are available|no CUDA-capable device is detected|CUDA driver version is insufficient|torch\.cuda\.is_available\(\) is False|with arguments from the 'CUDA' backend|CUDA is not available)"),
        r(ErrorKind::kInvalidDevice, R"(invalid device ordinal|Invalid device string|device type at start of device string|torch\.cuda\.device_count\(\) is \d+|Device index must not be negative|Invalid device id|device >= 0 && device < num_gpus|CUDA device ordinal)"),
        r(ErrorKind::kMetaTensor, R"(meta tensor|with Meta tensors|from the 'Meta' backend|on device meta|\bmeta\b and|and meta\b|device='meta'|on meta\b)"),
        r(ErrorKind::kDeviceMismatch, R"(Expected all tensors to be on the same device|must be on the current device|Expected object of device type|but expected (it )?to be on|should be either on cpu or on the same device|Input type \([\w.]+\) and weight type \([\w.]+\) should be the same|Expected a '\w+' device type for generator|are on different devices|different from other tensors on)"),
    };
  }();
  return table;
}

// A status code that usually means memory ran out says so only when nothing else in the text names
// another cause: a failed device-side assertion or a bad memory access poisons every later CUDA call,
// and cuDNN reports version and layout problems with the same codes.
bool names_another_cause(const std::string& text) {
  static const std::regex other(
      R"(device-side assert|Assertion `.*` failed|illegal memory access|unspecified launch failure|misaligned address|cuDNN version|non-contiguous input|CUBLAS_STATUS_EXECUTION_FAILED|CUDA driver version is insufficient)");
  return std::regex_search(text, other);
}

// Lines that are not the error itself: Python traceback frames, C++ backtrace frames.
bool is_noise(const std::string& line) {
  static const std::regex noise(R"(^\s*(Traceback \(most recent call last\)|File ".*", line \d+|frame #\d+|Exception raised from|\^+\s*$|~+\s*$))");
  return std::regex_search(line, noise);
}

// A line that reports an error: an exception's type, LibTorch's what(), a library's failure report.
bool looks_like_an_error(const std::string& line) {
  static const std::regex error(R"(error|Error|ERROR|exception|Exception|FAIL|fail|what\(\)|terminate called|WARN)");
  return std::regex_search(line, error);
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

bool contains(const std::string& text, const char* what) { return text.find(what) != std::string::npos; }

void explain_gpu_memory(Diagnosis& d) {
  const std::string& a = d.allocator;
  std::string what;
  if (contains(a, "caching allocator")) {
    what = "The GPU's caching allocator could not find the bytes requested. The batch (activations grow with it), the "
           "model with its gradients and optimizer state, and cached-but-free blocks all count. Activations grow "
           "linearly with the batch: torchprobe-bench's peak_mem_mib at two batch sizes gives the slope.";
  } else if (contains(a, "cuBLAS")) {
    what = "cuBLAS could not allocate its handle or workspace: it asks the GPU for memory outside LibTorch's allocator "
           "(at the first matmul on each thread and device), and the GPU was full, typically because LibTorch's cache "
           "or another process already held it.";
  } else if (contains(a, "cuDNN")) {
    what = "cuDNN could not get memory for its handle or a convolution's workspace, outside LibTorch's allocator; the "
           "GPU was full, typically because LibTorch's cache or another process already held it.";
  } else if (contains(a, "NCCL")) {
    what = "NCCL could not allocate its communication buffers on the GPU (a CUDA call inside NCCL ran out of memory): "
           "the model, activations and LibTorch's cache left too little for them.";
  } else if (contains(a, "CUDA runtime")) {
    what = "A CUDA call outside LibTorch's caching allocator ran out of device memory: often the CUDA context itself "
           "cannot be created because another process already holds the GPU's memory, or a library allocated past "
           "what was free.";
  } else if (contains(a, "every batch size")) {
    what = "The automatic batch-size finder (Accelerate's find_executable_batch_size) halved the batch after each "
           "out-of-memory error until nothing was left: even small batches did not fit, so something else holds the "
           "memory (another process, a leak, a model too large for this GPU).";
  } else {
    what = "The accelerator's allocator (" + a + ") could not find the bytes requested.";
  }
  if (d.confidence == "likely") {
    d.explanation = "Likely out of memory: this status code says a library failed to initialise or run, and when it "
                    "appears at a growing batch or on a busy GPU the cause is almost always exhausted memory. " + what +
                    " To confirm: watch `nvidia-smi` while it runs, retry with half the batch, and run with "
                    "CUDA_LAUNCH_BLOCKING=1 to see the call that really failed. Other causes: a CUDA/cuDNN install that does "
                    "not match the driver, or an earlier asynchronous error.";
  } else {
    d.explanation = what;
  }
  d.fix_cpp =
      "// smaller batch; hand cached blocks back before the library needs memory of its own:\n"
      "c10::cuda::CUDACachingAllocator::emptyCache();\n"
      "// fragmentation: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True; another process: CUDA_VISIBLE_DEVICES";
  d.fix_python =
      "batch_size //= 2\n"
      "torch.cuda.empty_cache()\n"
      "# fragmentation: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True; another process: nvidia-smi, CUDA_VISIBLE_DEVICES";
  if (contains(a, "cuDNN")) {
    d.fix_cpp += "\nat::globalContext().setBenchmarkCuDNN(false);   // autotuning tries workspace-hungry algorithms";
    d.fix_python += "\ntorch.backends.cudnn.benchmark = False  # autotuning tries workspace-hungry algorithms";
  }
  if (contains(a, "NCCL")) {
    d.fix_cpp += "\n// NCCL_BUFFSIZE=1048576 shrinks NCCL's buffers";
    d.fix_python += "\n# NCCL_BUFFSIZE=1048576 shrinks NCCL's buffers";
  }
}

void explain_cpu_memory(Diagnosis& d) {
  const std::string& a = d.allocator;
  if (contains(a, "OpenBLAS")) {
    d.explanation = "OpenBLAS could not allocate its work buffers for a matrix multiply and ended the process (it does "
                    "not raise an error LibTorch could catch): the host or the process's memory limit had no room left.";
  } else if (contains(a, "Python")) {
    d.explanation = "Python (NumPy) could not allocate an array: the host or the process's memory limit had no room "
                    "for it. Arrays built from a whole dataset are the usual cause.";
  } else if (contains(a, "operator new")) {
    d.explanation = "A C++ allocation failed (std::bad_alloc): likely out of host memory, or a size so large it cannot be "
                    "allocated (a corrupt length read from a file, a negative size cast to unsigned).";
  } else {
    d.explanation = "The host could not allocate the memory asked for (the process hit RAM, swap or an address-space "
                    "limit). Batch size and any tensor built from the whole dataset are the usual causes.";
  }
  if (d.confidence == "likely") d.explanation = "Likely out of memory. " + d.explanation;
  d.fix_cpp = "// smaller batch; stream the data in batches instead of one giant tensor; check ulimit -v";
  d.fix_python = "batch_size //= 2  # and load data lazily (a Dataset + DataLoader) instead of all at once";
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
      explain_gpu_memory(d);
      break;
    case ErrorKind::kOutOfMemoryCpu:
      explain_cpu_memory(d);
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
  std::vector<bool> error_line;
  std::string kept;  // the text without traceback and backtrace frames
  std::istringstream stream(text);
  for (std::string line; std::getline(stream, line);) {
    if (is_noise(line)) continue;
    error_line.push_back(looks_like_an_error(line));
    lines.push_back(strip_prefixes(line));
    kept += lines.back() + "\n";
  }
  // The error line first (an exception's line, LibTorch's what(), a library's error report), then any
  // line: advice printed nearby ("If you encounter CUDA out of memory, try ...") must not win over it.
  for (const bool error_lines_only : {true, false}) {
    for (const auto& rule : rules()) {
      if (std::string(rule.confidence) == "likely" && names_another_cause(text)) continue;
      if (rule.unless && std::regex_search(text, *rule.unless)) continue;
      for (size_t i = 0; i < lines.size(); ++i) {
        if (error_lines_only && !error_line[i]) continue;
        if (std::regex_search(lines[i], rule.pattern)) {
          d.kind = rule.kind;
          d.message = lines[i];
          d.confidence = rule.confidence;
          d.allocator = rule.allocator;
          break;
        }
      }
      if (d.kind != ErrorKind::kUnknown) break;
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
    // The numbers may be on lines after the error's (NCCL's "Failed to CUDA calloc N bytes").
    d.memory = parse_oom(d.message);
    if (!d.memory.any()) d.memory = parse_oom(kept);
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
  std::string out = fmt::format("kind:        {}{}\n", kind_name(d.kind), d.confidence == "likely" ? " (likely)" : "");
  if (!d.allocator.empty()) out += fmt::format("allocator:   {}\n", d.allocator);
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
  if (d.kind == ErrorKind::kOutOfMemoryGpu || d.kind == ErrorKind::kOutOfMemoryCpu) {
    j["confidence"] = d.confidence;
    j["allocator"] = d.allocator;
  }
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
