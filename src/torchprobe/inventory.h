#pragma once
// What this host has: the CPU (and how its threads are set up), the BLAS, every CUDA device, LibTorch.
#include <string>
#include <vector>

#include "torchprobe/backend.h"
#include "torchprobe/blas.h"
#include "torchprobe/cpu.h"

namespace torchprobe {

/// Reads /proc/cpuinfo (parse_cpu_info), then the clock from cpufreq or CPUID leaf 0x16 where they know the
/// maximum, the cores this process may use, and LibTorch's kernel level.
CpuInfo read_cpu_info();

struct Inventory {
  std::string torchprobe_version;
  std::string libtorch_version;
  bool cuda_compiled = false;
  std::string cuda_unavailable_reason;
  std::string cuda_driver_version, cuda_runtime_version;
  bool cudnn_usable = false;
  std::string cudnn_version;
  std::string hostname;
  CpuInfo cpu;
  ThreadSetup threads;  ///< LibTorch's intra-/inter-op threads and the BLAS's own threading
  std::vector<backend::CudaDeviceInfo> gpus;
};
Inventory collect_inventory();
/// The inventory as a JSON document, the form kept with results (indent -1: one line).
std::string inventory_json(const Inventory& inventory, int indent = 2);
/// The inventory as aligned text for a terminal, warnings last.
std::string inventory_text(const Inventory& inventory);

}  // namespace torchprobe
