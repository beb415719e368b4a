#include "torchprobe/inventory.h"

#include <unistd.h>

#include <ATen/Version.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/version.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "torchprobe/config.h"
#include "torchprobe/trust.h"

namespace torchprobe {
namespace {

// The ISA flags that set a CPU's peak FLOP rate (ops/peaks.cpp) or that users ask about.
const std::vector<std::string> kKnownFlags = {"sse4_2", "avx", "avx2", "fma", "avx512f", "avx512_bf16", "avx512_fp16",
                                              "avx512_vnni", "amx_bf16", "amx_tile", "amx_int8",
                                              // Arm (/proc/cpuinfo "Features"): NEON, SVE, SVE2, bf16 dot products
                                              "asimd", "sve", "sve2", "bf16"};

std::string trim(std::string s) {
  const auto not_space = [](unsigned char c) { return !std::isspace(c); };
  s.erase(s.begin(), std::find_if(s.begin(), s.end(), not_space));
  s.erase(std::find_if(s.rbegin(), s.rend(), not_space).base(), s.end());
  return s;
}

// A "key: value" line of at::show_config(), e.g. "CPU capability usage: AVX2".
std::string show_config_line(const std::string& key) {
  const std::string config = at::show_config();
  const auto pos = config.find(key);
  if (pos == std::string::npos) return "";
  const auto end = config.find('\n', pos);
  return trim(config.substr(pos + key.size(), end - pos - key.size()));
}

std::string host_name() {
  char buf[256] = {0};
  return gethostname(buf, sizeof(buf) - 1) == 0 ? std::string(buf) : "unknown";
}

int to_int(const std::string& text) {
  try {
    return std::stoi(text);
  } catch (const std::exception&) {
    return 0;
  }
}

}  // namespace

bool CpuInfo::has_flag(const std::string& flag) const {
  return std::find(flags.begin(), flags.end(), flag) != flags.end();
}

std::string cpu_isa(const CpuInfo& cpu) {
  const auto has = [&](const char* f) { return cpu.has_flag(f); };
  std::vector<std::string> extras;
  std::string base;
  if (has("avx512f")) {
    base = "AVX-512";
    for (const auto& [flag, name] : {std::pair{"avx512_vnni", "VNNI"}, {"avx512_bf16", "BF16"}, {"avx512_fp16", "FP16"}}) {
      if (has(flag)) extras.emplace_back(name);
    }
  } else if (has("avx2")) {
    base = has("fma") ? "AVX2+FMA" : "AVX2";
  } else if (has("avx")) {
    base = "AVX";
  } else if (has("sse4_2")) {
    base = "SSE4.2";
  } else if (has("sve2") || has("sve")) {
    base = has("sve2") ? "SVE2" : "SVE";
    if (has("bf16")) extras.emplace_back("BF16");
  } else if (has("asimd")) {
    base = "NEON";
    if (has("bf16")) extras.emplace_back("BF16");
  } else {
    return "unknown";
  }
  std::string out = base;
  if (!extras.empty()) {
    out += " (";
    for (size_t i = 0; i < extras.size(); ++i) out += (i ? ", " : "") + extras[i];
    out += ")";
  }
  if (has("amx_bf16") || has("amx_int8")) out += has("amx_bf16") ? " + AMX-BF16" : " + AMX-INT8";
  return out;
}

std::string isa_gap_warning(const CpuInfo& cpu) {
  const bool avx512_kernels = cpu.vector_isa.rfind("AVX512", 0) == 0;
  if (!cpu.has_flag("avx512f") || avx512_kernels || cpu.vector_isa.empty()) return "";
  return fmt::format("this CPU has {} but LibTorch's own CPU kernels run at {} (the build's or ATEN_CPU_CAPABILITY's "
                     "limit; Debian's 1.13 stops at AVX2): its vectorised ops leave width unused, while oneDNN and the "
                     "BLAS pick their own ISA",
                     cpu_isa(cpu), cpu.vector_isa);
}

CpuInfo read_cpu_info() {
  CpuInfo cpu;
  cpu.model = "unknown";
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  bool first_flags = true;
  while (std::getline(in, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string key = trim(line.substr(0, colon)), value = trim(line.substr(colon + 1));
    if (key == "model name" && cpu.model == "unknown") cpu.model = value;
    if (key == "vendor_id" && cpu.vendor.empty()) cpu.vendor = value;
    if (key == "cpu family" && cpu.family == 0) cpu.family = to_int(value);
    if (key == "model" && cpu.model_number == 0) cpu.model_number = to_int(value);
    if (key == "cpu MHz") {
      try {
        cpu.max_clock_mhz = std::max(cpu.max_clock_mhz, std::stod(value));
        cpu.clock_source = "/proc/cpuinfo cpu MHz";
      } catch (const std::exception&) {
      }
    }
    if ((key == "flags" || key == "Features") && first_flags) {
      first_flags = false;
      std::istringstream words(value);
      for (std::string w; words >> w;) {
        if (std::find(kKnownFlags.begin(), kKnownFlags.end(), w) != kKnownFlags.end()) cpu.flags.push_back(w);
      }
    }
  }
  // cpufreq knows the real maximum (turbo included); VMs often lack it and report the nominal clock.
  std::ifstream max_freq("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq");
  double khz = 0.0;
  if (max_freq >> khz && khz > 0.0) {
    cpu.max_clock_mhz = khz / 1e3;
    cpu.clock_source = "cpufreq cpuinfo_max_freq";
  }
  cpu.logical_cores = available_cores();
  cpu.vector_isa = show_config_line("CPU capability usage:");
  return cpu;
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
  inv.cpu = read_cpu_info();
  inv.threads = current_threads();
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
  const BlasInfo& blas = inv.threads.blas;
  nlohmann::json warnings = nlohmann::json::array();
  for (const auto& w : trust::threading_warnings(inv.threads)) warnings.push_back({{"code", w.code}, {"message", w.message}});
  const nlohmann::json doc = {
      {"torchprobe_version", inv.torchprobe_version},
      {"libtorch_version", inv.libtorch_version},
      {"hostname", inv.hostname},
      {"cpu",
       {{"device", "cpu"},
        {"model", inv.cpu.model},
        {"vendor", inv.cpu.vendor},
        {"family", inv.cpu.family},
        {"model_number", inv.cpu.model_number},
        {"logical_cores", inv.cpu.logical_cores},
        {"max_clock_mhz", inv.cpu.max_clock_mhz},
        {"clock_source", inv.cpu.clock_source},
        {"flags", inv.cpu.flags},
        {"torch_threads", inv.threads.intra_op},
        {"vector_isa", inv.cpu.vector_isa},
        {"isa", cpu_isa(inv.cpu)}}},
      {"threads",
       {{"intra_op", inv.threads.intra_op},
        {"inter_op", inv.threads.inter_op},
        {"cores", inv.threads.cores},
        {"blas_threading", blas_threading_name(blas.threading)},
        {"blas_threads", blas.threads},
        {"blas_pinned", inv.threads.blas_pinned},
        {"blas_pin_failed", inv.threads.blas_pin_failed},
        {"warnings", warnings}}},
      {"blas",
       {{"vendor", blas.vendor},
        {"library_path", blas.library_path},
        {"core_path", blas.core_path},
        {"detail", blas.detail},
        {"threading", blas_threading_name(blas.threading)},
        {"threads", blas.threads},
        {"is_reference", blas.is_reference}}},
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
  if (inv.cpu.max_clock_mhz > 0) row("clock", fmt::format("{:.0f} MHz ({})", inv.cpu.max_clock_mhz, inv.cpu.clock_source));
  row("CPU ISA", cpu_isa(inv.cpu));
  row("LibTorch kernels", inv.cpu.vector_isa.empty() ? "unknown" : inv.cpu.vector_isa + " (ATen's CPU capability)");
  if (const std::string gap = isa_gap_warning(inv.cpu); !gap.empty()) row("WARNING", gap);
  row("LibTorch threads", fmt::format("{} intra-op, {} inter-op", inv.threads.intra_op, inv.threads.inter_op));
  const BlasInfo& blas = inv.threads.blas;
  row("BLAS", blas.vendor + (blas.library_path.empty() ? "" : " (" + blas.library_path + ")"));
  if (!blas.core_path.empty() && blas.core_path != blas.library_path) row("BLAS core", blas.core_path);
  std::string threading = blas_threading_name(blas.threading);
  if (blas.threading == BlasThreading::kOpenMP) threading += ": shares LibTorch's OpenMP pool";
  if (blas.threading == BlasThreading::kPthreads) threading += ": its own thread pool";
  if (blas.threads > 0) threading += fmt::format(", {} thread{}", blas.threads, blas.threads == 1 ? "" : "s");
  if (inv.threads.blas_pinned) threading += " (pinned by torchprobe)";
  if (inv.threads.blas_pin_failed) threading += " (a pin does not hold: mixed install)";
  row("BLAS threading", threading);
  if (!blas.detail.empty()) row("BLAS config", blas.detail);
  for (const auto& g : inv.gpus) {
    out += fmt::format("cuda:{}\n", g.index);
    row("name", g.name);
    row("compute capability", fmt::format("{}.{}", g.cc_major, g.cc_minor));
    row("multiprocessors", std::to_string(g.multiprocessors));
    row("total memory", fmt::format("{:.1f} GiB", static_cast<double>(g.total_memory_bytes) / (1 << 30)));
    row("L2 cache", fmt::format("{:.1f} MiB", static_cast<double>(g.l2_cache_bytes) / (1 << 20)));
  }
  for (const auto& w : trust::threading_warnings(inv.threads)) out += "WARNING: " + w.message + "\n";
  return out;
}

}  // namespace torchprobe
