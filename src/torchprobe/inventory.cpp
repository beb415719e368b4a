#include "torchprobe/inventory.h"

#include <sched.h>
#include <unistd.h>

#include <ATen/Version.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/version.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "torchprobe/config.h"
#include "torchprobe/strings.h"
#include "torchprobe/trust.h"
#include "torchprobe/units.h"

namespace torchprobe {
namespace {

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

}  // namespace

CpuInfo read_cpu_info() {
  CpuInfo cpu = read_proc_cpuinfo();
  std::ifstream max_freq("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq");
  double khz = 0.0;
  if (!(max_freq >> khz)) khz = 0.0;
  choose_max_clock(cpu, khz, cpuid_max_clock_mhz());  // the choice among the sources is choose_max_clock's (cpu.h)
  cpu.logical_cores = available_cores();
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    std::vector<int> allowed;
    for (int i = 0; i < CPU_SETSIZE; ++i) {
      if (CPU_ISSET(i, &set)) allowed.push_back(i);
    }
    cpu.physical_cores = physical_cores(allowed);
  }
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
  const CoreFlops flops = core_flops(inv.cpu);
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
        {"physical_cores", inv.cpu.physical_cores},
        {"max_clock_mhz", inv.cpu.max_clock_mhz},
        {"clock_source", inv.cpu.clock_source},
        {"flags", inv.cpu.flags},
        {"torch_threads", inv.threads.intra_op},
        {"vector_isa", inv.cpu.vector_isa},
        {"isa", cpu_isa(inv.cpu)},
        {"core", flops.core},
        {"flop_per_cycle", {{"fp32", flops.fp32}, {"bf16", flops.bf16}, {"fp16", flops.fp16}}}}},
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
        {"kernel", blas.kernel},
        {"coretype_advice", openblas_coretype_advice(inv.cpu, blas.kernel)},
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
  row("logical cores", inv.cpu.physical_cores > 0 && inv.cpu.physical_cores != inv.cpu.logical_cores
                           ? fmt::format("{} ({} physical: SMT threads share a core's units)", inv.cpu.logical_cores,
                                         inv.cpu.physical_cores)
                           : std::to_string(inv.cpu.logical_cores));
  const CoreFlops flops = core_flops(inv.cpu);
  row("core", flops.core.empty() ? "unknown micro-architecture" : flops.core);
  row("FLOP/cycle/core", flops.fp32 == 0.0 ? "unknown"
                         : fmt::format("fp32 {:g} ({}){}{}", flops.fp32, flops.fp32_unit,
                                       flops.bf16 > 0 ? fmt::format("; bf16 {:g} ({})", flops.bf16, flops.bf16_unit) : "",
                                       flops.fp16 > 0 ? fmt::format("; fp16 {:g} ({})", flops.fp16, flops.fp16_unit) : ""));
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
  if (!blas.kernel.empty()) {
    const std::string advice = openblas_coretype_advice(inv.cpu, blas.kernel);
    const char* forced = std::getenv("OPENBLAS_CORETYPE");
    row("BLAS kernels", blas.kernel + (!advice.empty() ? " (SSE only on this CPU: OPENBLAS_CORETYPE=" + advice + " fixes it)"
                                       : forced != nullptr && *forced != '\0' ? " (OPENBLAS_CORETYPE)"
                                                                               : " (OpenBLAS's choice for this CPU)"));
  }
  for (const auto& g : inv.gpus) {
    out += fmt::format("cuda:{}\n", g.index);
    row("name", g.name);
    row("compute capability", fmt::format("{}.{}", g.cc_major, g.cc_minor));
    row("multiprocessors", std::to_string(g.multiprocessors));
    row("total memory", units::format_bytes(static_cast<double>(g.total_memory_bytes)));
    row("L2 cache", units::format_bytes(static_cast<double>(g.l2_cache_bytes)));
  }
  for (const auto& w : trust::threading_warnings(inv.threads)) out += "WARNING: " + w.message + "\n";
  return out;
}

}  // namespace torchprobe
