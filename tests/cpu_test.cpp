// A CPU's identity and FLOP/cycle from real /proc/cpuinfo texts (tests/fixtures/cpuinfo, each with its
// source in SOURCES.md there): torchprobe::base alone, no LibTorch.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "torchprobe/cpu.h"

namespace torchprobe {
namespace {

std::string fixture(const std::string& name) {
  std::ifstream in(std::string(TORCHPROBE_CPUINFO_DIR) + "/" + name);
  EXPECT_TRUE(in.good()) << name;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

struct Expected {
  const char* file;
  const char* core;
  double fp32, bf16, fp16;  // per core per cycle; 0: no native unit
  const char* why;          // where the figures come from
};

// FMA = 2 FLOP. [IOM] Intel Optimization Reference Manual; [ARK] Intel ARK "# of AVX-512 FMA Units";
// [AMD] AMD Software Optimization Guides 17h/19h/1Ah; [ARM] Arm Neoverse Software Optimization Guides.
const Expected kCpus[] = {
    {"skylake-sp.txt", "Intel Skylake-SP/Cascade Lake", 64, 0, 0, "Gold 6132: two 512-bit FMA units [ARK]"},
    {"cascade-lake.txt", "Intel Skylake-SP/Cascade Lake", 64, 0, 0, "Platinum 8260M: two 512-bit FMA units [ARK]"},
    {"ice-lake-sp.txt", "Intel Ice Lake-SP", 64, 0, 0, "every Ice Lake-SP Xeon: two 512-bit FMA units [ARK]"},
    // This dump's kernel lists neither AMX nor AVX512-FP16 (too old to enable them): only what the OS offers counts.
    {"sapphire-rapids.txt", "Intel Sapphire Rapids", 64, 64, 0, "two 512-bit FMA units; bf16 without AMX at fp32's rate"},
    {"emerald-rapids.txt", "Intel Emerald Rapids", 64, 64, 128, "a VM without AMX; VFMADDPH 2x fp32, measured here"},
    {"granite-rapids.txt", "Intel Granite Rapids", 64, 1024, 128, "AMX-BF16 1024 FLOP/cycle; AVX512-FP16 [IOM]"},
    {"alder-lake.txt", "Intel Alder Lake", 32, 0, 0, "P-core two 256-bit FMA units, AVX-512 off [IOM]"},
    {"zen2.txt", "AMD Zen 2", 32, 0, 0, "two 256-bit FMA pipes [AMD 17h]"},
    {"zen3.txt", "AMD Zen 3", 32, 0, 0, "two 256-bit FMA pipes [AMD 19h]"},
    {"zen4.txt", "AMD Zen 4", 32, 64, 0, "AVX-512 on two 256-bit pipes; VDPBF16PS 2x fp32 [AMD 19h]"},
    {"zen5.txt", "AMD Zen 5", 64, 128, 0, "EPYC 9005: two 512-bit FMA pipes [AMD 1Ah]"},
    {"neoverse-n1.txt", "Arm Neoverse N1", 16, 0, 32, "two 128-bit pipes, no BF16 [ARM N1]"},
    {"neoverse-v1-graviton3.txt", "Arm Neoverse V1", 32, 128, 64, "two 256-bit SVE pipes; BFMMLA [ARM V1]"},
    {"neoverse-v2-grace.txt", "Arm Neoverse V2", 32, 128, 64, "four 128-bit SVE2 pipes; BFMMLA [ARM V2]"},
};

TEST(CpuModel, RealCpusGetTheirCoresFlopPerCyclePerPrecision) {
  for (const auto& e : kCpus) {
    SCOPED_TRACE(std::string(e.file) + " (" + e.why + ")");
    const CpuInfo cpu = parse_cpu_info(fixture(e.file));
    const CoreFlops f = core_flops(cpu);
    EXPECT_EQ(f.core, e.core);
    EXPECT_EQ(f.fp32, e.fp32);
    EXPECT_EQ(f.bf16, e.bf16);
    EXPECT_EQ(f.fp16, e.fp16);
    EXPECT_EQ(f.per_cycle("fp32"), e.fp32);
    EXPECT_EQ(f.per_cycle("tf32"), 0.0) << "no CPU has TF32";
    EXPECT_FALSE(f.fp32_unit.empty());
    EXPECT_EQ(f.bf16_unit.empty(), e.bf16 == 0);
    EXPECT_EQ(f.fp16_unit.empty(), e.fp16 == 0);
    EXPECT_EQ(f.native("bf16"), e.bf16 > 0);
    EXPECT_EQ(f.emulates("bf16"), e.bf16 == 0) << "every core in the table is known";
  }
  EXPECT_FALSE(CoreFlops{}.emulates("bf16")) << "an unknown core: nothing known to be emulated";
  EXPECT_FALSE(CoreFlops{}.native("bf16")) << "nor to be native";
}

TEST(CpuModel, ParsesTheFirstProcessorsFieldsAndTheHighestClock) {
  const CpuInfo zen4 = parse_cpu_info(fixture("zen4.txt"));
  EXPECT_EQ(zen4.vendor, "AuthenticAMD");
  EXPECT_EQ(zen4.family, 25);
  EXPECT_EQ(zen4.model_number, 17);
  EXPECT_EQ(zen4.model, "AMD EPYC 9654 96-Core Processor");
  EXPECT_TRUE(zen4.has_flag("avx512f"));
  EXPECT_TRUE(zen4.has_flag("avx512_bf16"));
  EXPECT_FALSE(zen4.has_flag("fpu")) << "only the flags that matter are kept";
  EXPECT_EQ(zen4.clock_source, "/proc/cpuinfo cpu MHz");

  const CpuInfo grace = parse_cpu_info(fixture("neoverse-v2-grace.txt"));
  EXPECT_EQ(grace.vendor, "");
  EXPECT_EQ(grace.implementer, 0x41);
  EXPECT_EQ(grace.part, 0xd4f);
  EXPECT_EQ(cpu_isa(grace), "SVE2 (BF16)");
  EXPECT_EQ(grace.max_clock_mhz, 0.0) << "aarch64 lists no clock in /proc/cpuinfo; BogoMIPS is not one";

  // Three processors: the first's identity, the highest clock wherever it is listed (a VM's cores can list different
  // ones; the highest is neither the first nor the last here).
  const CpuInfo two = parse_cpu_info(
      "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 143\nmodel name\t: first\n"
      "stepping\t: 8\ncpu MHz\t\t: 1200.5\nflags\t\t: fpu avx2 fma\n\n"
      "processor\t: 1\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 106\nmodel name\t: second\n"
      "cpu MHz\t\t: 3400.25\nflags\t\t: fpu avx512f\n\n"
      "processor\t: 2\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 106\nmodel name\t: third\n"
      "cpu MHz\t\t: 800.0\nflags\t\t: fpu avx512f\n\n");
  EXPECT_EQ(two.model, "first");
  EXPECT_EQ(two.model_number, 143);
  EXPECT_EQ(two.stepping, 8);
  EXPECT_EQ(two.max_clock_mhz, 3400.25);
  EXPECT_TRUE(two.has_flag("avx2"));
  EXPECT_FALSE(two.has_flag("avx512f")) << "the first processor's flags";
}

TEST(CpuModel, GarbageAndEmptyTextGiveAnUnknownCpu) {
  for (const std::string text : {"", "no colon here\n", "model\t: 0x\ncpu family: -3\ncpu MHz : abc\n", ":::\n\n\n",
                                  "CPU implementer : 0x41\nCPU part : 0xffff\n"}) {
    SCOPED_TRACE(text);
    const CpuInfo cpu = parse_cpu_info(text);
    EXPECT_EQ(cpu.family, 0);
    EXPECT_EQ(cpu.max_clock_mhz, 0.0);
    const CoreFlops f = core_flops(cpu);
    EXPECT_EQ(f.fp32, 0.0) << "unknown, never a neighbour's figure";
    EXPECT_EQ(f.core, "");
  }
}

TEST(CpuModel, SkylakeSpPartsWithOneFmaUnitAreToldApartByName) {
  CpuInfo cpu;
  cpu.vendor = "GenuineIntel";
  cpu.family = 6;
  cpu.model_number = 0x55;
  cpu.flags = {"avx2", "fma", "avx512f"};
  for (const auto& [name, fp32] : std::vector<std::pair<std::string, double>>{
           {"Intel(R) Xeon(R) Silver 4114 CPU @ 2.20GHz", 32},   // [ARK]: 1
           {"Intel(R) Xeon(R) Bronze 3106 CPU @ 1.70GHz", 32},   // 1
           {"Intel(R) Xeon(R) Gold 5118 CPU @ 2.30GHz", 32},     // 1
           {"Intel(R) Xeon(R) Gold 5218 CPU @ 2.30GHz", 32},     // Cascade Lake: 1
           {"Intel(R) Xeon(R) Gold 5122 CPU @ 3.60GHz", 64},     // the exception: 2
           {"Intel(R) Xeon(R) Gold 5222 CPU @ 3.80GHz", 64},     // 2
           {"Intel(R) Xeon(R) Gold 6148 CPU @ 2.40GHz", 64},     // 2
           {"Intel(R) Xeon(R) Platinum 8175M CPU @ 2.50GHz", 64},// 2
           {"Intel Xeon Processor (Skylake, IBRS)", 64},         // a VM: up to two
       }) {
    cpu.model = name;
    EXPECT_EQ(core_flops(cpu).fp32, fp32) << name;
  }
  cpu.model = "Intel Xeon Processor (Cooperlake)";
  cpu.flags.push_back("avx512_bf16");
  for (const int stepping : {10, 11}) {  // Cooper Lake: two units and AVX512_BF16, from stepping 10 on
    cpu.stepping = stepping;
    EXPECT_EQ(core_flops(cpu).core, "Intel Cooper Lake") << stepping;
    EXPECT_EQ(core_flops(cpu).bf16, 64) << stepping;
  }
  cpu.stepping = 7;  // Cascade Lake's last stepping
  EXPECT_EQ(core_flops(cpu).core, "Intel Skylake-SP/Cascade Lake");
}

TEST(CpuModel, ClientAvx512HasOneFmaUnitAndZen5MobileHalfWidth) {
  CpuInfo tiger;
  tiger.vendor = "GenuineIntel";
  tiger.family = 6;
  tiger.model_number = 0x8C;  // Tiger Lake
  tiger.flags = {"avx2", "fma", "avx512f"};
  EXPECT_EQ(core_flops(tiger).fp32, 32);
  CpuInfo strix;
  strix.vendor = "AuthenticAMD";
  strix.family = 0x1A;
  strix.model_number = 0x24;  // Strix Point (0x20-0x3F): 256-bit datapaths
  strix.flags = {"avx2", "fma", "avx512f", "avx512_bf16"};
  EXPECT_EQ(core_flops(strix).fp32, 32);
  EXPECT_EQ(core_flops(strix).bf16, 64);
  strix.model_number = 0x44;  // Granite Ridge (Ryzen 9000): 512-bit
  EXPECT_EQ(core_flops(strix).fp32, 64);
}

TEST(CpuModel, UnlistedModelsFallBackToTheirFlags) {
  CpuInfo cpu;
  cpu.vendor = "GenuineIntel";
  cpu.family = 6;
  cpu.model_number = 0x01;  // not in the table
  cpu.flags = {"avx2", "fma", "avx512f"};
  EXPECT_EQ(core_flops(cpu).fp32, 64);
  EXPECT_EQ(core_flops(cpu).core, "");
  cpu.flags = {"avx2", "fma"};
  EXPECT_EQ(core_flops(cpu).fp32, 32);
  cpu.flags = {"avx"};
  EXPECT_EQ(core_flops(cpu).fp32, 16);
  cpu.flags = {"sse4_2"};
  EXPECT_EQ(core_flops(cpu).fp32, 8);
  cpu.flags = {};
  EXPECT_EQ(core_flops(cpu).fp32, 0);
  CpuInfo apple;  // an implementer we have no table for: unknown
  apple.implementer = 0x61;
  apple.part = 0x22;
  apple.flags = {"asimd", "bf16"};
  EXPECT_EQ(core_flops(apple).fp32, 0);
}

TEST(CpuModel, SmtSiblingsCountAsOnePhysicalCore) {
  namespace fs = std::filesystem;
  const fs::path root = fs::temp_directory_path() / ("torchprobe-cpu-test-" + std::to_string(::getpid()));
  const auto cpu = [&](int n, const char* package, const char* core) {
    fs::create_directories(root / ("cpu" + std::to_string(n)) / "topology");
    std::ofstream(root / ("cpu" + std::to_string(n)) / "topology" / "physical_package_id") << package << "\n";
    std::ofstream(root / ("cpu" + std::to_string(n)) / "topology" / "core_id") << core << "\n";
  };
  cpu(0, "0", "0");
  cpu(1, "0", "0");  // cpu0's SMT sibling
  cpu(2, "0", "1");
  cpu(3, "1", "0");  // core 0 of the second package: another core
  EXPECT_EQ(physical_cores({0, 1}, root.string()), 1);
  EXPECT_EQ(physical_cores({0, 2}, root.string()), 2);
  EXPECT_EQ(physical_cores({0, 1, 2, 3}, root.string()), 3);
  EXPECT_EQ(physical_cores({0, 9}, root.string()), 0) << "cpu9 has no topology: unknown, not a guess";
  EXPECT_EQ(physical_cores({}, root.string()), 0);
  fs::remove_all(root);
}

// Debian bookworm's OpenBLAS 0.3.21 does not know Emerald Rapids and picks its Prescott (SSE3) kernels: SGEMM
// 2048 on 2 threads ran at 64 GFLOP/s, and at 307 with OPENBLAS_CORETYPE=SkylakeX (measured on that VM).
TEST(CpuModel, OpenBlasSseKernelsOnAnAvx2CpuAreNamedWithTheCoretypeToSet) {
  const CpuInfo emr = parse_cpu_info(fixture("emerald-rapids.txt"));
  EXPECT_EQ(openblas_coretype_advice(emr, "Prescott"), "SkylakeX");
  EXPECT_EQ(openblas_coretype_advice(emr, "PRESCOTT"), "SkylakeX") << "OpenBLAS spells names in either case";
  EXPECT_EQ(openblas_coretype_advice(emr, "Nehalem"), "SkylakeX");
  EXPECT_EQ(openblas_coretype_advice(emr, "Cooperlake"), "");
  EXPECT_EQ(openblas_coretype_advice(emr, "SkylakeX"), "");
  EXPECT_EQ(openblas_coretype_advice(emr, "Haswell"), "") << "AVX2 kernels: a smaller loss, OpenBLAS's own choice";
  EXPECT_EQ(openblas_coretype_advice(emr, ""), "") << "not OpenBLAS, or too old to say";
  EXPECT_EQ(openblas_coretype_advice(parse_cpu_info(fixture("alder-lake.txt")), "Prescott"), "Haswell");
  EXPECT_EQ(openblas_coretype_advice(parse_cpu_info(fixture("zen3.txt")), "Barcelona"), "Zen");
  EXPECT_EQ(openblas_coretype_advice(parse_cpu_info(fixture("neoverse-v2-grace.txt")), "Prescott"), "")
      << "no x86 kernels to advise on Arm";
  CpuInfo old_core;  // a core without AVX2: SSE kernels are right
  old_core.vendor = "GenuineIntel";
  old_core.flags = {"sse4_2", "avx"};
  EXPECT_EQ(openblas_coretype_advice(old_core, "Prescott"), "");
}

// Every family-6 model the table names, read back: the core's name and fp32 FLOP/cycle, each with the flags such a
// core lists (avx512f only where it has AVX-512 on), so a wrong or missing row differs from the flags' fallback
// (64 with avx512f, 32 without) in its name, and in its figure for the one-unit AVX-512 parts and the E-cores.
// [IOM] Intel Optimization Reference Manual; the model numbers from the kernel's intel-family.h.
TEST(CpuModel, EveryIntelModelInTheTableGetsItsCoreAndFigure) {
  struct Row {
    int model;
    const char* core;
    bool avx512;
    double fp32;
  };
  const Row rows[] = {
      {0x3C, "Haswell", false, 32},
      {0x3F, "Haswell-EP", false, 32},
      {0x45, "Haswell", false, 32},
      {0x46, "Haswell", false, 32},
      {0x3D, "Broadwell", false, 32},
      {0x47, "Broadwell", false, 32},
      {0x4F, "Broadwell-EP", false, 32},
      {0x56, "Broadwell-DE", false, 32},
      {0x4E, "Skylake", false, 32},
      {0x5E, "Skylake", false, 32},
      {0x8E, "Kaby/Coffee Lake", false, 32},
      {0x9E, "Kaby/Coffee Lake", false, 32},
      {0xA5, "Comet Lake", false, 32},
      {0xA6, "Comet Lake", false, 32},
      // client AVX-512: one 512-bit FMA unit (ports 0 and 1 fused), half the flags' 64
      {0x66, "Cannon Lake", true, 32},
      {0x7D, "Ice Lake", true, 32},
      {0x7E, "Ice Lake", true, 32},
      {0x8C, "Tiger Lake", true, 32},
      {0x8D, "Tiger Lake", true, 32},
      {0xA7, "Rocket Lake", true, 32},
      {0x55, "Skylake-SP/Cascade Lake", true, 64},
      {0x6A, "Ice Lake-SP", true, 64},
      {0x6C, "Ice Lake-D", true, 64},
      {0x8F, "Sapphire Rapids", true, 64},
      {0xCF, "Emerald Rapids", true, 64},
      {0xAD, "Granite Rapids", true, 64},
      {0xAE, "Granite Rapids-D", true, 64},
      // hybrid client: P-cores with two 256-bit FMA units, AVX-512 off
      {0x97, "Alder Lake", false, 32},
      {0x9A, "Alder Lake", false, 32},
      {0xB7, "Raptor Lake", false, 32},
      {0xBA, "Raptor Lake", false, 32},
      {0xBF, "Raptor Lake", false, 32},
      {0xAA, "Meteor Lake", false, 32},
      {0xAC, "Meteor Lake", false, 32},
      {0xBD, "Lunar Lake", false, 32},
      {0xC5, "Arrow Lake", false, 32},
      {0xC6, "Arrow Lake", false, 32},
      // Crestmont E-cores: two 128-bit FMA units, half the flags' 32
      {0xAF, "Sierra Forest", false, 16},
  };
  for (const auto& r : rows) {
    CpuInfo cpu;
    cpu.vendor = "GenuineIntel";
    cpu.family = 6;
    cpu.model_number = r.model;
    cpu.flags = {"avx", "avx2", "fma"};
    if (r.avx512) cpu.flags.emplace_back("avx512f");
    const CoreFlops f = core_flops(cpu);
    EXPECT_EQ(f.core, std::string("Intel ") + r.core) << "model 0x" << std::hex << r.model;
    EXPECT_EQ(f.fp32, r.fp32) << "model 0x" << std::hex << r.model;
  }
  CpuInfo other_family;  // the same model number outside family 6 is not that core
  other_family.vendor = "GenuineIntel";
  other_family.family = 0x13;
  other_family.model_number = 0xAF;
  other_family.flags = {"avx", "avx2", "fma"};
  EXPECT_EQ(core_flops(other_family).core, "");
  EXPECT_EQ(core_flops(other_family).fp32, 32);
}

// Half precision from the flags: AMX's tile unit does 1024 FLOP per cycle in bf16 and in fp16 [IOM, AMX]; without
// it, AVX512-FP16 is twice fp32 on the FMA units, and AVX512_BF16 is fp32's rate on Intel, twice it on AMD.
TEST(CpuModel, HalfPrecisionComesFromTheWidestUnitTheFlagsOffer) {
  CpuInfo gnr;
  gnr.vendor = "GenuineIntel";
  gnr.family = 6;
  gnr.model_number = 0xAD;
  gnr.flags = {"avx2", "fma", "avx512f", "avx512_bf16", "avx512_fp16", "amx_bf16", "amx_fp16", "amx_tile"};
  CoreFlops f = core_flops(gnr);
  EXPECT_EQ(f.bf16, 1024);
  EXPECT_EQ(f.bf16_unit, "AMX-BF16 tile unit");
  EXPECT_EQ(f.fp16, 1024);
  EXPECT_EQ(f.fp16_unit, "AMX-FP16 tile unit");
  gnr.flags = {"avx2", "fma", "avx512f", "avx512_bf16", "avx512_fp16", "amx_bf16"};  // AMX without FP16
  f = core_flops(gnr);
  EXPECT_EQ(f.bf16, 1024);
  EXPECT_EQ(f.fp16, 128);
  EXPECT_EQ(f.fp16_unit, "AVX512-FP16 on the FMA units");
  gnr.flags = {"avx2", "fma", "avx512f", "avx512_bf16"};
  f = core_flops(gnr);
  EXPECT_EQ(f.bf16, 64) << "VDPBF16PS at half the FMA rate: fp32's figure";
  EXPECT_EQ(f.fp16, 0);
  CpuInfo zen4;
  zen4.vendor = "AuthenticAMD";
  zen4.family = 0x19;
  zen4.model_number = 0x11;
  zen4.flags = {"avx2", "fma", "avx512f", "avx512_bf16"};
  EXPECT_EQ(core_flops(zen4).bf16, 64) << "twice Zen 4's fp32 32";
  EXPECT_EQ(parse_cpu_info("flags : avx2 fma avx512f amx_fp16 amx_bf16\n").flags,
            (std::vector<std::string>{"avx2", "fma", "avx512f", "amx_fp16", "amx_bf16"}))
      << "a real cpuinfo's AMX flags are kept";
}

// AMD by family and model [AMD 17h/19h/1Ah]: Zen 1 and Zen+ (17h below 0x30) and Hygon's Dhyana (18h, a Zen 1)
// have 128-bit FMA pipes; Zen 2 and 3 256-bit; Zen 5's mobile Strix Point (0x20-0x3F) and Krackan Point (0x60-0x6F)
// keep 256-bit datapaths where the rest of Zen 5 has 512-bit ones. Each range at both ends and just outside.
TEST(CpuModel, AmdCoresByFamilyAndModelRangeAtEachEdge) {
  const auto amd = [](const char* vendor, int family, int model, std::vector<std::string> flags) {
    CpuInfo cpu;
    cpu.vendor = vendor;
    cpu.family = family;
    cpu.model_number = model;
    cpu.flags = std::move(flags);
    return core_flops(cpu);
  };
  const std::vector<std::string> avx2 = {"avx", "avx2", "fma"};
  const std::vector<std::string> avx512 = {"avx", "avx2", "fma", "avx512f"};
  for (const int model : {0x01, 0x08, 0x11, 0x18, 0x2F}) {
    EXPECT_EQ(amd("AuthenticAMD", 0x17, model, avx2).core, "AMD Zen 1") << model;
    EXPECT_EQ(amd("AuthenticAMD", 0x17, model, avx2).fp32, 16) << model;
  }
  for (const int model : {0x30, 0x31, 0x71}) {
    EXPECT_EQ(amd("AuthenticAMD", 0x17, model, avx2).core, "AMD Zen 2") << model;
    EXPECT_EQ(amd("AuthenticAMD", 0x17, model, avx2).fp32, 32) << model;
  }
  const CoreFlops dhyana = amd("HygonGenuine", 0x18, 0x00, avx2);
  EXPECT_EQ(dhyana.core, "Hygon Dhyana (Zen 1)");
  EXPECT_EQ(dhyana.fp32, 16);
  EXPECT_EQ(amd("AuthenticAMD", 0x18, 0x00, avx2).core, "") << "family 18h is Hygon's, not AMD's";
  EXPECT_EQ(amd("AuthenticAMD", 0x18, 0x00, avx2).fp32, 32) << "unknown: the flags' figure";
  for (const int model : {0x20, 0x24, 0x3F, 0x60, 0x68, 0x6F}) {
    EXPECT_EQ(amd("AuthenticAMD", 0x1A, model, avx512).core, "AMD Zen 5 (mobile)") << model;
    EXPECT_EQ(amd("AuthenticAMD", 0x1A, model, avx512).fp32, 32) << model;
  }
  for (const int model : {0x02, 0x1F, 0x40, 0x44, 0x5F, 0x70}) {
    EXPECT_EQ(amd("AuthenticAMD", 0x1A, model, avx512).core, "AMD Zen 5") << model;
    EXPECT_EQ(amd("AuthenticAMD", 0x1A, model, avx512).fp32, 64) << model;
  }
  CpuInfo hygon;
  hygon.vendor = "HygonGenuine";
  hygon.flags = {"avx2", "fma"};
  EXPECT_EQ(openblas_coretype_advice(hygon, "Prescott"), "Zen") << "Hygon's cores take OpenBLAS's Zen kernels";
}

// The ISA line `torchprobe devices` prints, for each branch and its siblings.
TEST(CpuModel, TheIsaNamesTheWidestVectorsAndTheirExtras) {
  const auto isa = [](std::vector<std::string> flags) {
    CpuInfo cpu;
    cpu.flags = std::move(flags);
    return cpu_isa(cpu);
  };
  EXPECT_EQ(isa({"avx2", "fma", "avx512f", "avx512_vnni", "avx512_bf16", "avx512_fp16", "amx_bf16", "amx_int8"}),
            "AVX-512 (VNNI, BF16, FP16) + AMX-BF16");
  EXPECT_EQ(isa({"avx2", "fma", "avx512f", "amx_int8"}), "AVX-512 + AMX-INT8");
  EXPECT_EQ(isa({"avx2", "fma", "avx512f", "avx512_bf16"}), "AVX-512 (BF16)");
  EXPECT_EQ(isa({"avx2", "fma"}), "AVX2+FMA");
  EXPECT_EQ(isa({"avx", "avx2"}), "AVX2");
  EXPECT_EQ(isa({"sse4_2", "avx"}), "AVX");
  EXPECT_EQ(isa({"sse4_2"}), "SSE4.2");
  EXPECT_EQ(isa({}), "unknown");
  EXPECT_EQ(cpu_isa(parse_cpu_info(fixture("neoverse-v2-grace.txt"))), "SVE2 (BF16)");
  EXPECT_EQ(cpu_isa(parse_cpu_info(fixture("neoverse-v1-graviton3.txt"))), "SVE (BF16)");
  EXPECT_EQ(cpu_isa(parse_cpu_info(fixture("neoverse-n1.txt"))), "NEON");
  EXPECT_EQ(isa({"asimd", "bf16"}), "NEON (BF16)");
  EXPECT_EQ(isa({"asimd", "sve"}), "SVE");
}

// cpu.h: cpufreq's maximum wins where there is one; else the higher of CPUID leaf 0x16 and "cpu MHz" (a VM
// lists its nominal clock there, where the leaf may state the maximum, or may state less, or nothing).
TEST(CpuModel, TheClockIsCpufreqsElseTheHigherOfCpuidAndCpuinfo) {
  const auto chosen = [](double cpuinfo_mhz, double cpufreq_khz, double cpuid_mhz) {
    CpuInfo cpu;
    cpu.max_clock_mhz = cpuinfo_mhz;
    cpu.clock_source = cpuinfo_mhz > 0.0 ? "/proc/cpuinfo cpu MHz" : "";
    choose_max_clock(cpu, cpufreq_khz, cpuid_mhz);
    return std::make_pair(cpu.max_clock_mhz, cpu.clock_source);
  };
  using Clock = std::pair<double, std::string>;
  EXPECT_EQ(chosen(2450.0, 3700000.0, 3500.0), (Clock{3700.0, "cpufreq cpuinfo_max_freq"}));
  EXPECT_EQ(chosen(2450.0, 2000000.0, 3500.0), (Clock{2000.0, "cpufreq cpuinfo_max_freq"}));  // cpufreq knows
  EXPECT_EQ(chosen(2450.0, 0.0, 3500.0), (Clock{3500.0, "CPUID leaf 0x16"}));
  EXPECT_EQ(chosen(2450.0, 0.0, 2000.0), (Clock{2450.0, "/proc/cpuinfo cpu MHz"}));  // the leaf states less
  EXPECT_EQ(chosen(2450.0, 0.0, 0.0), (Clock{2450.0, "/proc/cpuinfo cpu MHz"}));
  EXPECT_EQ(chosen(0.0, 0.0, 0.0), (Clock{0.0, ""}));
  EXPECT_EQ(chosen(0.0, 0.0, 1800.0), (Clock{1800.0, "CPUID leaf 0x16"}));
}

}  // namespace
}  // namespace torchprobe
