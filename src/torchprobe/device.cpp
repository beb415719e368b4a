#include "torchprobe/device.h"

#include <dlfcn.h>
#include <unistd.h>

#include <ATen/Parallel.h>
#include <ATen/Version.h>
#include <fmt/format.h>
#include <torch/version.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "torchprobe/config.h"
#include "torchprobe/error.h"

namespace torchprobe {
namespace {

std::string trim(std::string s) {
  const auto not_space = [](unsigned char c) { return !std::isspace(c); };
  s.erase(s.begin(), std::find_if(s.begin(), s.end(), not_space));
  s.erase(std::find_if(s.rbegin(), s.rend(), not_space).base(), s.end());
  return s;
}

std::string describe_cuda_devices(int count) {
  if (count == 0) {
    const std::string reason = backend::cuda_unavailable_reason();
    return "this host has no CUDA device" + (reason.empty() ? "" : "; " + reason);
  }
  std::string list;
  for (int i = 0; i < count; ++i) list += (i ? ", cuda:" : "cuda:") + std::to_string(i);
  return fmt::format("this host has {} CUDA device{}: {}", count, count == 1 ? "" : "s", list);
}

// Parses "cuda:N" / "cuda" / "cpu" without checking existence; nullopt-like via bool.
bool parse_one(const std::string& text, torch::Device* out, bool* every_gpu) {
  *every_gpu = false;
  if (text == "cpu") {
    *out = torch::Device(torch::kCPU);
    return true;
  }
  if (text == "cuda") {
    *every_gpu = true;
    *out = torch::Device(torch::kCUDA, 0);
    return true;
  }
  const std::string prefix = "cuda:";
  if (text.compare(0, prefix.size(), prefix) != 0) return false;
  const std::string digits = text.substr(prefix.size());
  if (digits.empty() || digits.size() > 3 ||
      !std::all_of(digits.begin(), digits.end(), [](unsigned char c) { return std::isdigit(c); })) {
    return false;
  }
  *out = torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(std::stoi(digits)));
  return true;
}

[[noreturn]] void throw_bad_syntax(const std::string& text) {
  throw InputError(fmt::format("invalid device '{}' (expected cpu, cuda, cuda:N or all)", text));
}

void check_exists(const torch::Device& device, int cuda_count) {
  if (device.is_cuda() && device.index() >= cuda_count) {
    throw InputError(fmt::format("device {} not found ({})", device_string(device),
                                 describe_cuda_devices(cuda_count)));
  }
}

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return trim(line.substr(colon + 1));
    }
  }
  return "unknown";
}

// A "key: value" line of at::show_config(), e.g. "CPU capability usage: AVX2".
std::string show_config_line(const std::string& key) {
  const std::string config = at::show_config();
  const auto pos = config.find(key);
  if (pos == std::string::npos) return "";
  const auto end = config.find('\n', pos);
  return trim(config.substr(pos + key.size(), end - pos - key.size()));
}

std::string show_config_setting(const std::string& key) {  // "BLAS_INFO=mkl, ..."
  const std::string config = at::show_config();
  const auto pos = config.find(key + "=");
  if (pos == std::string::npos) return "";
  const auto start = pos + key.size() + 1;
  return config.substr(start, config.find_first_of(",\n", start) - start);
}

std::string host_name() {
  char buf[256] = {0};
  return gethostname(buf, sizeof(buf) - 1) == 0 ? std::string(buf) : "unknown";
}

}  // namespace

std::string device_string(const torch::Device& device) {
  if (device.is_cpu()) return "cpu";
  if (device.is_cuda()) return "cuda:" + std::to_string(device.has_index() ? device.index() : 0);
  return device.str();
}

std::vector<torch::Device> parse_device_list(const std::string& text, int cuda_count) {
  std::vector<torch::Device> out;
  const auto add = [&out](const torch::Device& d) {
    if (std::find(out.begin(), out.end(), d) == out.end()) out.push_back(d);
  };
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = trim(text.substr(start, comma - start));
    start = comma + 1;
    if (item.empty()) throw_bad_syntax(text);
    if (item == "all") {
      add(torch::Device(torch::kCPU));
      for (int i = 0; i < cuda_count; ++i) add(torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(i)));
      continue;
    }
    torch::Device device(torch::kCPU);
    bool every_gpu = false;
    if (!parse_one(item, &device, &every_gpu)) throw_bad_syntax(item);
    if (every_gpu) {
      if (cuda_count == 0) {
        throw InputError(fmt::format("device cuda not found ({})", describe_cuda_devices(0)));
      }
      for (int i = 0; i < cuda_count; ++i) add(torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(i)));
      continue;
    }
    check_exists(device, cuda_count);
    add(device);
  }
  return out;
}

std::vector<torch::Device> parse_device_list(const std::string& text) {
  return parse_device_list(text, backend::cuda_device_count());
}

torch::Device parse_device(const std::string& text) {
  const std::string item = trim(text);
  torch::Device device(torch::kCPU);
  bool every_gpu = false;
  if (!parse_one(item, &device, &every_gpu)) throw_bad_syntax(item);
  check_exists(device, backend::cuda_device_count());
  return device;
}

std::vector<torch::Device> all_devices() { return parse_device_list("all"); }

BlasInfo detect_blas() {
  BlasInfo info;
  // The library that really serves sgemm_ in this process (Debian's libtorch calls the
  // system libblas.so.3, whatever the alternatives system points it to).
  if (void* sym = dlsym(RTLD_DEFAULT, "sgemm_")) {
    Dl_info where{};
    if (dladdr(sym, &where) != 0 && where.dli_fname != nullptr) {
      char resolved[PATH_MAX];
      info.library_path = realpath(where.dli_fname, resolved) ? resolved : where.dli_fname;
    }
  }
  // OpenBLAS describes itself. Ask only the library that serves sgemm_ and its own dependencies
  // (Debian's openblas libblas.so.3 wraps libopenblas.so.0): a global look-up could find the
  // OpenBLAS behind liblapack.so.3 while libblas.so.3 is the reference implementation.
  if (!info.library_path.empty()) {
    if (void* handle = dlopen(info.library_path.c_str(), RTLD_LAZY | RTLD_NOLOAD)) {
      using ConfigFn = char* (*)();
      if (auto config = reinterpret_cast<ConfigFn>(dlsym(handle, "openblas_get_config"))) {
        info.vendor = "OpenBLAS";
        info.detail = config();
      }
      dlclose(handle);
      if (!info.vendor.empty()) return info;
    }
  }
  std::string lower = info.library_path;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  const std::string file = lower.substr(lower.find_last_of('/') + 1);
  if (lower.empty() || file.rfind("libtorch", 0) == 0) {
    // No separate BLAS: pip and archive LibTorch carry MKL statically inside libtorch_cpu.
    const std::string built_in = show_config_setting("BLAS_INFO");
    info.vendor = built_in.empty() ? "unknown (no sgemm_ found)" : built_in + " (linked into LibTorch)";
  } else if (lower.find("openblas") != std::string::npos) {
    info.vendor = "OpenBLAS";
  } else if (lower.find("mkl") != std::string::npos) {
    info.vendor = "MKL";
  } else if (lower.find("blis") != std::string::npos) {
    info.vendor = "BLIS";
  } else if (lower.find("atlas") != std::string::npos) {
    info.vendor = "ATLAS";
  } else if (file.rfind("libblas.so", 0) == 0) {
    // Debian's netlib reference implementation lives in .../blas/libblas.so.3.
    info.vendor = "reference BLAS (netlib)";
    info.is_reference = true;
  } else {
    info.vendor = "unknown";
  }
  return info;
}

std::string blas_warning(const BlasInfo& blas) {
  if (!blas.is_reference) return "";
  return fmt::format(
      "LibTorch is using the unoptimised reference BLAS ({}); CPU matmul and training figures "
      "will be ~30x too slow and would mislead a hardware comparison. Install OpenBLAS: "
      "apt-get install libopenblas0-pthread (or select it with update-alternatives --config "
      "libblas.so.3-x86_64-linux-gnu)",
      blas.library_path);
}

Inventory collect_inventory() {
  Inventory inv;
  inv.torchprobe_version = TORCHPROBE_VERSION;
  inv.libtorch_version = fmt::format("{}.{}.{}", TORCH_VERSION_MAJOR, TORCH_VERSION_MINOR, TORCH_VERSION_PATCH);
  inv.cuda_compiled = backend::cuda_compiled();
  inv.cuda_unavailable_reason = backend::cuda_unavailable_reason();
  inv.cuda_driver_version = backend::cuda_driver_version();
  inv.cuda_runtime_version = backend::cuda_runtime_version();
  inv.cudnn_usable = backend::cudnn_usable();
  inv.cudnn_version = backend::cudnn_version();
  inv.hostname = host_name();
  inv.cpu.model = cpu_model_name();
  inv.cpu.logical_cores = static_cast<int>(std::thread::hardware_concurrency());
  inv.cpu.torch_threads = at::get_num_threads();
  inv.cpu.vector_isa = show_config_line("CPU capability usage:");
  inv.blas = detect_blas();
  for (int i = 0; i < backend::cuda_device_count(); ++i) inv.gpus.push_back(backend::cuda_device_info(i));
  return inv;
}

std::string inventory_json(const Inventory& inv, int indent) {
  nlohmann::json gpus = nlohmann::json::array();
  for (const auto& g : inv.gpus) {
    gpus.push_back({{"device", "cuda:" + std::to_string(g.index)},
                    {"name", g.name},
                    {"compute_capability", fmt::format("{}.{}", g.cc_major, g.cc_minor)},
                    {"multiprocessors", g.multiprocessors},
                    {"total_memory_bytes", g.total_memory_bytes},
                    {"l2_cache_bytes", g.l2_cache_bytes}});
  }
  const nlohmann::json doc = {
      {"torchprobe_version", inv.torchprobe_version},
      {"libtorch_version", inv.libtorch_version},
      {"hostname", inv.hostname},
      {"cpu",
       {{"device", "cpu"},
        {"model", inv.cpu.model},
        {"logical_cores", inv.cpu.logical_cores},
        {"torch_threads", inv.cpu.torch_threads},
        {"vector_isa", inv.cpu.vector_isa}}},
      {"blas",
       {{"vendor", inv.blas.vendor},
        {"library_path", inv.blas.library_path},
        {"detail", inv.blas.detail},
        {"is_reference", inv.blas.is_reference}}},
      {"cuda",
       {{"compiled", inv.cuda_compiled},
        {"usable", inv.cuda_unavailable_reason.empty()},
        {"unavailable_reason", inv.cuda_unavailable_reason},
        {"driver_version", inv.cuda_driver_version},
        {"runtime_version", inv.cuda_runtime_version},
        {"cudnn_usable", inv.cudnn_usable},
        {"cudnn_version", inv.cudnn_version},
        {"devices", gpus}}},
  };
  return doc.dump(indent);
}

std::string inventory_text(const Inventory& inv) {
  std::string out;
  const auto row = [&out](const std::string& key, const std::string& value) {
    out += fmt::format("  {:<20} {}\n", key, value);
  };
  out += "torchprobe " + inv.torchprobe_version + " on " + inv.hostname + "\n";
  row("LibTorch", inv.libtorch_version);
  row("CUDA", !inv.cuda_compiled ? "not compiled in (CPU-only LibTorch)"
              : inv.cuda_unavailable_reason.empty()
                  ? fmt::format("usable (driver {}, runtime {})", inv.cuda_driver_version, inv.cuda_runtime_version)
                  : "compiled in, not usable: " + inv.cuda_unavailable_reason);
  row("cuDNN", inv.cudnn_usable ? "usable (version " + inv.cudnn_version + ")" : "not usable");
  out += "cpu\n";
  row("model", inv.cpu.model);
  row("logical cores", std::to_string(inv.cpu.logical_cores));
  row("LibTorch threads", std::to_string(inv.cpu.torch_threads));
  row("vector ISA", inv.cpu.vector_isa.empty() ? "unknown" : inv.cpu.vector_isa);
  row("BLAS", inv.blas.vendor + (inv.blas.library_path.empty() ? "" : " (" + inv.blas.library_path + ")"));
  if (!inv.blas.detail.empty()) row("BLAS config", inv.blas.detail);
  for (const auto& g : inv.gpus) {
    out += fmt::format("cuda:{}\n", g.index);
    row("name", g.name);
    row("compute capability", fmt::format("{}.{}", g.cc_major, g.cc_minor));
    row("multiprocessors", std::to_string(g.multiprocessors));
    row("total memory", fmt::format("{:.1f} GiB", static_cast<double>(g.total_memory_bytes) / (1 << 30)));
    row("L2 cache", fmt::format("{:.1f} MiB", static_cast<double>(g.l2_cache_bytes) / (1 << 20)));
  }
  const std::string warning = blas_warning(inv.blas);
  if (!warning.empty()) out += "WARNING: " + warning + "\n";
  return out;
}

}  // namespace torchprobe
