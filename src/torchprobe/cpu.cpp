#include "torchprobe/cpu.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "torchprobe/strings.h"

namespace torchprobe {
namespace {

// The ISA flags that set a CPU's peak FLOP rate or that users ask about.
const std::vector<std::string> kKnownFlags = {"sse4_2", "avx", "avx2", "fma", "avx512f", "avx512_bf16", "avx512_fp16",
                                              "avx512_vnni", "amx_bf16", "amx_fp16", "amx_tile", "amx_int8",
                                              // Arm (/proc/cpuinfo "Features"): NEON, half precision, SVE, SVE2, bf16
                                              "asimd", "asimdhp", "fphp", "sve", "sve2", "bf16"};

/// A decimal or 0x-prefixed integer; 0 for anything else.
int to_int(const std::string& text) {
  char* end = nullptr;
  const long value = std::strtol(text.c_str(), &end, 0);
  return end != text.c_str() && *end == '\0' && value >= 0 && value < (1L << 30) ? static_cast<int>(value) : 0;
}

// --- FLOP per cycle ------------------------------------------------------------------------------------------
// An FMA is 2 FLOP. Per core: 2 x FMA units x fp32 lanes per unit. Sources, cited per row below:
//   [IOM]  Intel 64 and IA-32 Architectures Optimization Reference Manual (Vol. 1, 2024): 2.x "Intel
//          microarchitecture code name ..." sections (execution ports, FMA units), 20.x AMX (TMUL: 1024 bf16/fp16
//          FLOP per cycle, "16 x 16 x 32 per 16 cycles").
//   [ARK]  Intel ARK, "# of AVX-512 FMA Units" per Xeon SKU (Skylake-SP and Cascade Lake: 1 on Bronze, Silver
//          and Gold 5xxx but 5122/5222, 2 on the rest; Ice Lake-SP and later: 2).
//   [AMD]  AMD Software Optimization Guides: family 17h (Zen/Zen 2: 4 FP pipes, 2 FMA; 128-bit on Zen 1,
//          256-bit on Zen 2), family 19h (Zen 3; Zen 4: AVX-512 on 256-bit datapaths, a 512-bit op issued as
//          two halves), family 1Ah (Zen 5: 512-bit datapaths, 256-bit on the mobile parts).
//   [ARM]  Arm Neoverse N1 / V1 / V2 Software Optimization Guides (FP/ASIMD/SVE pipes V0-V3, FMLA, BFMMLA
//          throughput), as LLVM's AArch64SchedNeoverse{N1,V1,V2}.td encode them; NVIDIA Grace CPU Performance
//          Tuning Guide (Neoverse V2: 4 x 128-bit SVE2).

enum class IntelCore {
  kUnknown,
  kAvx2,          ///< Haswell .. Comet Lake client and servers without AVX-512: 2 x 256-bit FMA
  kClient512,     ///< Cannon / Ice / Tiger / Rocket Lake client: AVX-512 on one 512-bit FMA (ports 0+1 fused)
  kSkylakeSp,     ///< Skylake-SP / Cascade Lake: one or two 512-bit FMA units by SKU [ARK]
  kCooperLake,    ///< Skylake-SP's model at stepping 10-11: two 512-bit FMA units, AVX512_BF16
  kServer512,     ///< Ice Lake-SP and later Xeon P-cores: two 512-bit FMA units [ARK]
  kHybridPCore,   ///< Alder Lake and later client: P-cores 2 x 256-bit FMA (AVX-512 off), E-cores less
  kECoreServer,   ///< Sierra Forest: Crestmont E-cores, 2 x 128-bit FMA
};

struct IntelModel {
  int model;
  const char* name;
  IntelCore core;
};

// Family 6 model numbers (Intel SDM Vol. 4, table 2-1; the kernel's arch/x86/include/asm/intel-family.h).
constexpr IntelModel kIntelModels[] = {
    {0x3C, "Haswell", IntelCore::kAvx2},          {0x3F, "Haswell-EP", IntelCore::kAvx2},
    {0x45, "Haswell", IntelCore::kAvx2},          {0x46, "Haswell", IntelCore::kAvx2},
    {0x3D, "Broadwell", IntelCore::kAvx2},        {0x47, "Broadwell", IntelCore::kAvx2},
    {0x4F, "Broadwell-EP", IntelCore::kAvx2},     {0x56, "Broadwell-DE", IntelCore::kAvx2},
    {0x4E, "Skylake", IntelCore::kAvx2},          {0x5E, "Skylake", IntelCore::kAvx2},
    {0x8E, "Kaby/Coffee Lake", IntelCore::kAvx2}, {0x9E, "Kaby/Coffee Lake", IntelCore::kAvx2},
    {0xA5, "Comet Lake", IntelCore::kAvx2},       {0xA6, "Comet Lake", IntelCore::kAvx2},
    {0x66, "Cannon Lake", IntelCore::kClient512}, {0x7D, "Ice Lake", IntelCore::kClient512},
    {0x7E, "Ice Lake", IntelCore::kClient512},    {0x8C, "Tiger Lake", IntelCore::kClient512},
    {0x8D, "Tiger Lake", IntelCore::kClient512},  {0xA7, "Rocket Lake", IntelCore::kClient512},
    {0x55, "Skylake-SP/Cascade Lake", IntelCore::kSkylakeSp},
    {0x6A, "Ice Lake-SP", IntelCore::kServer512}, {0x6C, "Ice Lake-D", IntelCore::kServer512},
    {0x8F, "Sapphire Rapids", IntelCore::kServer512}, {0xCF, "Emerald Rapids", IntelCore::kServer512},
    {0xAD, "Granite Rapids", IntelCore::kServer512},  {0xAE, "Granite Rapids-D", IntelCore::kServer512},
    {0x97, "Alder Lake", IntelCore::kHybridPCore},    {0x9A, "Alder Lake", IntelCore::kHybridPCore},
    {0xB7, "Raptor Lake", IntelCore::kHybridPCore},   {0xBA, "Raptor Lake", IntelCore::kHybridPCore},
    {0xBF, "Raptor Lake", IntelCore::kHybridPCore},   {0xAA, "Meteor Lake", IntelCore::kHybridPCore},
    {0xAC, "Meteor Lake", IntelCore::kHybridPCore},   {0xBD, "Lunar Lake", IntelCore::kHybridPCore},
    {0xC5, "Arrow Lake", IntelCore::kHybridPCore},    {0xC6, "Arrow Lake", IntelCore::kHybridPCore},
    {0xAF, "Sierra Forest", IntelCore::kECoreServer},
};

/// Skylake-SP and Cascade Lake Bronze, Silver and Gold 5xxx parts have one 512-bit FMA unit, but the Gold
/// 5122 and 5222 [ARK]. A VM's generic model name says nothing: those get "up to two".
bool one_fma_xeon(const std::string& model_name) {
  static const std::regex bronze_silver(R"(\b(Bronze|Silver)\b)");
  static const std::regex gold5(R"(\bGold\s+5(\d)(\d\d)\b)");
  if (std::regex_search(model_name, bronze_silver)) return true;
  std::smatch m;
  if (!std::regex_search(model_name, m, gold5)) return false;
  return !(m[2] == "22" && (m[1] == "1" || m[1] == "2"));
}

/// bf16 and fp16 from the flags, on top of an x86 core's fp32 figure: AMX's tile unit does 1024 FLOP per cycle
/// in either [IOM, AMX chapter]; VFMADDPH does twice fp32's lanes on the same FMA units. VDPBF16PS does twice an
/// FMA's products per instruction, at a rate that differs by vendor (`dot_bf16_vs_fp32`): half the FMA rate on
/// Intel (measured on an Emerald Rapids core, 12 independent chains, one thread: 86 GFLOP/s against 176 for fp32
/// FMAs and 374 for VFMADDPH), so bf16 kernels there reach at most fp32's rate (oneDNN widens to fp32 where that
/// is faster); the full rate on AMD Zen 4 (measured through resnet18: bf16 channels-last ran 1.95x the fp32 step,
/// which was at 79% of the fp32 peak, so bf16 ran at over 1.5x fp32's peak).
void x86_half_precision(const CpuInfo& cpu, double dot_bf16_vs_fp32, CoreFlops& f) {
  if (cpu.has_flag("amx_bf16")) {
    f.bf16 = 1024;
    f.bf16_unit = "AMX-BF16 tile unit";
  } else if (cpu.has_flag("avx512_bf16")) {
    f.bf16 = dot_bf16_vs_fp32 * f.fp32;
    f.bf16_unit = dot_bf16_vs_fp32 > 1.0 ? "AVX512_BF16 dot products, twice fp32's products at its rate"
                                         : "AVX512_BF16, at most fp32's rate (VDPBF16PS issues at half of it)";
  }
  if (cpu.has_flag("amx_fp16")) {
    f.fp16 = 1024;
    f.fp16_unit = "AMX-FP16 tile unit";
  } else if (cpu.has_flag("avx512_fp16")) {
    f.fp16 = 2 * f.fp32;
    f.fp16_unit = "AVX512-FP16 on the FMA units";
  }
}

CoreFlops x86_by_flags(const CpuInfo& cpu) {
  CoreFlops f;
  if (cpu.has_flag("avx512f")) {
    f = {"", 64, 0, 0, "up to two 512-bit FMA units", "", ""};
  } else if (cpu.has_flag("avx2") && cpu.has_flag("fma")) {
    f = {"", 32, 0, 0, "two 256-bit FMA units", "", ""};
  } else if (cpu.has_flag("avx")) {
    f = {"", 16, 0, 0, "256-bit multiply and add units", "", ""};
  } else if (cpu.has_flag("sse4_2")) {
    f = {"", 8, 0, 0, "128-bit multiply and add units", "", ""};
  }
  return f;
}

CoreFlops intel_flops(const CpuInfo& cpu) {
  CoreFlops f = x86_by_flags(cpu);
  const auto* it = cpu.family != 6 ? std::end(kIntelModels)
                                   : std::find_if(std::begin(kIntelModels), std::end(kIntelModels),
                                                  [&](const IntelModel& m) { return m.model == cpu.model_number; });
  if (it != std::end(kIntelModels)) {
    f.core = std::string("Intel ") + it->name;
    switch (it->core) {
      case IntelCore::kAvx2: f.fp32 = 32, f.fp32_unit = "two 256-bit FMA units [IOM]"; break;
      case IntelCore::kClient512: f.fp32 = 32, f.fp32_unit = "one 512-bit FMA unit (client) [IOM]"; break;
      case IntelCore::kSkylakeSp:
        if (cpu.stepping >= 10) {
          f.core = "Intel Cooper Lake";
          f.fp32 = 64, f.fp32_unit = "two 512-bit FMA units [ARK]";
        } else if (one_fma_xeon(cpu.model)) {
          f.fp32 = 32, f.fp32_unit = "one 512-bit FMA unit (this SKU) [ARK]";
        } else {
          f.fp32 = 64, f.fp32_unit = "two 512-bit FMA units (one on Bronze, Silver, most Gold 5xxx) [ARK]";
        }
        break;
      case IntelCore::kCooperLake:
      case IntelCore::kServer512: f.fp32 = 64, f.fp32_unit = "two 512-bit FMA units [IOM, ARK]"; break;
      case IntelCore::kHybridPCore:
        f.fp32 = 32, f.fp32_unit = "P-core: two 256-bit FMA units (E-cores: fewer) [IOM]";
        break;
      case IntelCore::kECoreServer: f.fp32 = 16, f.fp32_unit = "E-core: two 128-bit FMA units [IOM]"; break;
      case IntelCore::kUnknown: break;
    }
  }
  x86_half_precision(cpu, /*dot_bf16_vs_fp32=*/1.0, f);
  return f;
}

CoreFlops amd_flops(const CpuInfo& cpu) {
  CoreFlops f = x86_by_flags(cpu);
  const int m = cpu.model_number;
  if (cpu.vendor == "HygonGenuine" && cpu.family == 0x18) {
    f.core = "Hygon Dhyana (Zen 1)";
    f.fp32 = 16, f.fp32_unit = "two 128-bit FMA pipes [AMD 17h]";
  } else if (cpu.family == 0x17) {
    const bool zen1 = m < 0x30;
    f.core = zen1 ? "AMD Zen 1" : "AMD Zen 2";
    f.fp32 = zen1 ? 16 : 32;
    f.fp32_unit = zen1 ? "two 128-bit FMA pipes [AMD 17h]" : "two 256-bit FMA pipes [AMD 17h]";
  } else if (cpu.family == 0x19) {
    const bool zen4 = cpu.has_flag("avx512f");  // every Zen 4 has it, no Zen 3 does
    f.core = zen4 ? "AMD Zen 4" : "AMD Zen 3";
    f.fp32 = 32;
    f.fp32_unit = zen4 ? "two 256-bit FMA pipes, AVX-512 in two halves [AMD 19h]" : "two 256-bit FMA pipes [AMD 19h]";
  } else if (cpu.family == 0x1A) {
    // Zen 5: the desktop and server parts have 512-bit FP datapaths; the mobile Strix Point (0x20-0x3F)
    // and Krackan Point (0x60-0x6F) keep 256-bit ones [AMD 1Ah; Chips and Cheese on Strix Point].
    const bool narrow = (m >= 0x20 && m <= 0x3F) || (m >= 0x60 && m <= 0x6F);
    f.core = narrow ? "AMD Zen 5 (mobile)" : "AMD Zen 5";
    f.fp32 = narrow ? 32 : 64;
    f.fp32_unit = narrow ? "two 256-bit FMA pipes [AMD 1Ah]" : "two 512-bit FMA pipes [AMD 1Ah]";
  }
  x86_half_precision(cpu, /*dot_bf16_vs_fp32=*/2.0, f);
  return f;
}

struct ArmCore {
  int part;
  const char* name;
  double fp32, bf16, fp16;
  const char* fp32_unit;
  const char* bf16_unit;
};

// Arm Ltd (implementer 0x41) parts [ARM]: fp32 = pipes x lanes x 2; fp16 FMLA on half-precision vectors, twice the
// fp32 lanes (FEAT_FP16 on each); bf16 BFMMLA, a 2x4 by 4x2 bf16 product per 128 bits (16 multiply-adds), on every
// vector pipe of V1 and V2 (the LLVM scheduling models built from Arm's guides). Parts without a checked figure
// (N2, N3, V3, other implementers) are unknown, never a neighbour's figure.
constexpr ArmCore kArmCores[] = {
    {0xd0c, "Arm Neoverse N1", 16, 0, 32, "two 128-bit NEON FMA pipes", ""},
    {0xd40, "Arm Neoverse V1", 32, 128, 64, "two 256-bit SVE (four 128-bit NEON) FMA pipes", "BFMMLA on every vector pipe"},
    {0xd4f, "Arm Neoverse V2", 32, 128, 64, "four 128-bit SVE2 FMA pipes", "BFMMLA on every vector pipe"},
};

CoreFlops arm_flops(const CpuInfo& cpu) {
  CoreFlops f;
  if (cpu.implementer != 0x41) return f;  // other implementers' cores: unknown, never a neighbour's figure
  for (const auto& c : kArmCores) {
    if (c.part != cpu.part) continue;
    f.core = c.name;
    f.fp32 = c.fp32, f.fp32_unit = std::string(c.fp32_unit) + " [ARM]";
    if (cpu.has_flag("bf16") && c.bf16 > 0) f.bf16 = c.bf16, f.bf16_unit = std::string(c.bf16_unit) + " [ARM]";
    if (cpu.has_flag("asimdhp") || cpu.has_flag("fphp") || cpu.flags.empty()) {
      f.fp16 = c.fp16, f.fp16_unit = "half-precision FMLA on the same pipes [ARM]";
    }
  }
  return f;
}

}  // namespace

bool CpuInfo::has_flag(const std::string& flag) const {
  return std::find(flags.begin(), flags.end(), flag) != flags.end();
}

CpuInfo parse_cpu_info(const std::string& text) {
  CpuInfo cpu;
  cpu.model = "unknown";
  std::istringstream in(text);
  std::string line;
  bool first_flags = true;  // each field from the first processor that lists it; the clock the highest
  while (std::getline(in, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string key = trim(line.substr(0, colon)), value = trim(line.substr(colon + 1));
    if (key == "model name" && cpu.model == "unknown") cpu.model = value;
    if (key == "vendor_id" && cpu.vendor.empty()) cpu.vendor = value;
    if (key == "cpu family" && cpu.family == 0) cpu.family = to_int(value);
    if (key == "model" && cpu.model_number == 0) cpu.model_number = to_int(value);
    if (key == "stepping" && cpu.stepping == 0) cpu.stepping = to_int(value);
    if (key == "CPU implementer" && cpu.implementer == 0) cpu.implementer = to_int(value);
    if (key == "CPU part" && cpu.part == 0) cpu.part = to_int(value);
    if (key == "cpu MHz") {
      char* end = nullptr;
      const double mhz = std::strtod(value.c_str(), &end);
      if (end != value.c_str() && mhz > cpu.max_clock_mhz) {
        cpu.max_clock_mhz = mhz;
        cpu.clock_source = "/proc/cpuinfo cpu MHz";
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
  return cpu;
}

CpuInfo read_proc_cpuinfo() {
  std::ifstream in("/proc/cpuinfo");
  std::ostringstream text;
  text << in.rdbuf();
  return parse_cpu_info(text.str());
}

int physical_cores(const std::vector<int>& cpus, const std::string& sysfs_cpu_dir) {
  std::set<std::pair<std::string, std::string>> cores;
  for (const int cpu : cpus) {
    const std::string topology = fmt::format("{}/cpu{}/topology/", sysfs_cpu_dir, cpu);
    std::ifstream package(topology + "physical_package_id"), core(topology + "core_id");
    std::string package_id, core_id;
    if (!(package >> package_id) || !(core >> core_id)) return 0;
    cores.emplace(package_id, core_id);
  }
  return static_cast<int>(cores.size());
}

void choose_max_clock(CpuInfo& cpu, double cpufreq_max_khz, double cpuid_mhz) {
  if (cpufreq_max_khz > 0.0) {
    cpu.max_clock_mhz = cpufreq_max_khz / 1e3;
    cpu.clock_source = "cpufreq cpuinfo_max_freq";
  } else if (cpuid_mhz > cpu.max_clock_mhz) {
    cpu.max_clock_mhz = cpuid_mhz;
    cpu.clock_source = "CPUID leaf 0x16";
  }
}

double cpuid_max_clock_mhz() {
#if defined(__x86_64__) || defined(__i386__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  // Leaf 0x16 (Intel Skylake and later): EAX base, EBX maximum, ECX bus clock, in MHz; zeros where a
  // hypervisor or an older core does not fill it.
  if (__get_cpuid_max(0, nullptr) < 0x16) return 0.0;
  __cpuid(0x16, eax, ebx, ecx, edx);
  return static_cast<double>(ebx & 0xFFFF);
#else
  return 0.0;
#endif
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

std::string openblas_coretype_advice(const CpuInfo& cpu, const std::string& corename) {
  // OpenBLAS's x86 kernel sets without AVX (driver/others/dynamic.c's corename table).
  static const char* const kSseKernels[] = {"prescott", "core2",  "penryn",   "dunnington", "nehalem", "atom",
                                            "katmai",   "coppermine", "northwood", "banias", "opteron",
                                            "opteron_sse3", "barcelona", "bobcat", "athlon"};
  const std::string name = to_lower(corename);
  const bool sse = std::find(std::begin(kSseKernels), std::end(kSseKernels), name) != std::end(kSseKernels);
  if (!sse || !cpu.has_flag("avx2") || !cpu.has_flag("fma")) return "";
  if (cpu.vendor == "AuthenticAMD" || cpu.vendor == "HygonGenuine") return "Zen";
  return cpu.has_flag("avx512f") ? "SkylakeX" : "Haswell";
}

double CoreFlops::per_cycle(const std::string& dtype) const {
  return dtype == "fp32" ? fp32 : dtype == "bf16" ? bf16 : dtype == "fp16" ? fp16 : 0.0;
}

std::string CoreFlops::unit(const std::string& dtype) const {
  return dtype == "fp32" ? fp32_unit : dtype == "bf16" ? bf16_unit : dtype == "fp16" ? fp16_unit : "";
}

CoreFlops core_flops(const CpuInfo& cpu) {
  if (cpu.vendor == "GenuineIntel") return intel_flops(cpu);
  if (cpu.vendor == "AuthenticAMD" || cpu.vendor == "HygonGenuine") return amd_flops(cpu);
  if (cpu.vendor.empty() && cpu.implementer != 0) return arm_flops(cpu);
  return {};
}

}  // namespace torchprobe
