#pragma once
// What this host has: the CPU (and how its threads are set up), the BLAS, every CUDA device, LibTorch.
#include <string>
#include <vector>

#include "torchprobe/backend.h"
#include "torchprobe/blas.h"

namespace torchprobe {

struct CpuInfo {
  std::string model;           ///< /proc/cpuinfo "model name"
  std::string vendor;          ///< "GenuineIntel", "AuthenticAMD", ...
  int family = 0;              ///< "cpu family" (AMD Zen 4 is 25)
  int model_number = 0;        ///< "model"
  int logical_cores = 0;       ///< cores this process may run on (affinity)
  double max_clock_mhz = 0.0;  ///< cpufreq's maximum where readable, else the highest "cpu MHz"; 0 unknown
  std::string clock_source;    ///< "cpufreq cpuinfo_max_freq" or "/proc/cpuinfo cpu MHz"
  std::vector<std::string> flags;  ///< the ISA flags torchprobe looks at (avx512f, avx2, fma, ...)
  std::string vector_isa;      ///< ATen's dispatch level, e.g. "AVX2"; empty if unknown
  bool has_flag(const std::string& flag) const;
};
/// Reads /proc/cpuinfo and sysfs.
CpuInfo read_cpu_info();
/// The CPU's own vector ISA from its flags, e.g. "AVX-512 (VNNI, BF16, FP16) + AMX-BF16", "AVX2+FMA",
/// "SVE2 (BF16)", "NEON"; "unknown" without a known flag. Not what LibTorch uses: that is vector_isa.
std::string cpu_isa(const CpuInfo& cpu);
/// One line when LibTorch's kernels (vector_isa) run below the CPU's AVX-512; "" otherwise.
std::string isa_gap_warning(const CpuInfo& cpu);

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
