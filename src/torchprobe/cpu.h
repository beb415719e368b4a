#pragma once
// What a CPU is, read from /proc/cpuinfo's text, and what one of its cores can compute per cycle for each
// precision: the parts of a CPU's theoretical roof that need no LibTorch (torchprobe::base).
#include <string>
#include <vector>

namespace torchprobe {

struct CpuInfo {
  std::string model;           ///< /proc/cpuinfo "model name" ("unknown" where absent, e.g. most aarch64 kernels)
  std::string vendor;          ///< "GenuineIntel", "AuthenticAMD", "HygonGenuine"; "" on aarch64
  int family = 0;              ///< "cpu family" (AMD Zen 4 is 25)
  int model_number = 0;        ///< "model"
  int stepping = 0;            ///< "stepping" (Cooper Lake is Skylake-SP's model 85 at stepping 10 or 11)
  int implementer = 0;         ///< aarch64 "CPU implementer" (0x41 Arm Ltd); 0 elsewhere
  int part = 0;                ///< aarch64 "CPU part" (0xd4f Neoverse V2); 0 elsewhere
  int logical_cores = 0;       ///< cores this process may run on (affinity)
  int physical_cores = 0;      ///< of those, distinct physical cores (SMT siblings once); 0 unknown
  double max_clock_mhz = 0.0;  ///< cpufreq's maximum, else the higher of CPUID 0x16's and "cpu MHz"; 0 unknown
  std::string clock_source;    ///< "cpufreq cpuinfo_max_freq", "CPUID leaf 0x16" or "/proc/cpuinfo cpu MHz"
  std::vector<std::string> flags;  ///< the ISA flags torchprobe looks at (avx512f, avx2, fma, amx_bf16, sve, ...)
  std::string vector_isa;      ///< ATen's dispatch level, e.g. "AVX2"; empty if unknown
  bool has_flag(const std::string& flag) const;
};

/// The first processor's fields of a /proc/cpuinfo text (x86-64 "flags" or aarch64 "Features"); the clock
/// from "cpu MHz". Nothing from sysfs or the running process: read_cpu_info() adds those.
CpuInfo parse_cpu_info(const std::string& proc_cpuinfo);
/// The distinct physical cores (package, core id) among `cpus`, from sysfs's topology under `sysfs_cpu_dir`
/// (/sys/devices/system/cpu); 0 when a CPU's topology cannot be read. Two SMT threads of one core share its
/// FMA units, so a roof counts them once. A VM that hides its SMT siblings lists them as cores.
int physical_cores(const std::vector<int>& cpus, const std::string& sysfs_cpu_dir = "/sys/devices/system/cpu");
/// parse_cpu_info of this host's /proc/cpuinfo (an unknown CPU where it cannot be read).
CpuInfo read_proc_cpuinfo();
/// The maximum clock CPUID leaf 0x16 states, in MHz; 0 where the leaf is absent or empty (most VMs) or not x86.
double cpuid_max_clock_mhz();
/// Settles `cpu`'s clock among its sources: cpufreq's maximum (`cpufreq_max_khz`, 0 where absent) when there is
/// one, as it knows the turbo clock; else the higher of CPUID leaf 0x16's (`cpuid_mhz`, 0 where absent) and the
/// highest "cpu MHz" already in `cpu` (a VM lists the nominal clock there, where the leaf may state the maximum).
void choose_max_clock(CpuInfo& cpu, double cpufreq_max_khz, double cpuid_mhz);

/// The CPU's own vector ISA from its flags, e.g. "AVX-512 (VNNI, BF16, FP16) + AMX-BF16", "AVX2+FMA",
/// "SVE2 (BF16)", "NEON"; "unknown" without a known flag. Not what LibTorch uses: that is vector_isa.
std::string cpu_isa(const CpuInfo& cpu);
/// One line when LibTorch's kernels (vector_isa) run below the CPU's AVX-512; "" otherwise.
std::string isa_gap_warning(const CpuInfo& cpu);

/// OpenBLAS's kernel set (openblas_get_corename(), e.g. "Prescott", "Haswell", "SkylakeX") that is worth
/// overriding on this CPU: the OPENBLAS_CORETYPE to set when OpenBLAS fell back to SSE-era kernels on a CPU with
/// AVX2 and FMA (an OpenBLAS older than the CPU: Debian bookworm's 0.3.21 picks Prescott on Emerald Rapids,
/// and its SGEMM runs 5x slower); "" when its choice fits or is unknown.
std::string openblas_coretype_advice(const CpuInfo& cpu, const std::string& corename);

/// The peak FLOP per cycle of one core of a CPU, per precision, from its micro-architecture (vendor, family
/// and model, or Arm's implementer and part) and its flags. An FMA counts 2 FLOP. 0 means unknown, or (bf16,
/// fp16) no native unit: LibTorch then computes that precision through fp32, whose figure is the roof.
struct CoreFlops {
  std::string core;  ///< e.g. "Intel Sapphire Rapids", "AMD Zen 4", "Arm Neoverse V2"; "" unknown
  double fp32 = 0.0, bf16 = 0.0, fp16 = 0.0;
  std::string fp32_unit, bf16_unit, fp16_unit;  ///< what gives each figure, e.g. "two 512-bit FMA units"
  /// The figure for "fp32", "bf16" or "fp16" (0 for anything else), and its unit.
  double per_cycle(const std::string& dtype) const;
  /// The core has a unit for `dtype` (a figure above 0). An unknown core has none known.
  bool native(const std::string& dtype) const { return per_cycle(dtype) > 0.0; }
  /// The core is known (its fp32 figure is) and has no unit for `dtype`, so LibTorch emulates it there, tens of times
  /// slower: bf16 before AVX512_BF16, AMX or Arm's BF16. False for an unknown core: nothing is known to be slow.
  bool emulates(const std::string& dtype) const { return fp32 > 0.0 && !native(dtype); }
  std::string unit(const std::string& dtype) const;
};
CoreFlops core_flops(const CpuInfo& cpu);

}  // namespace torchprobe
