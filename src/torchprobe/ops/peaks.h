#pragma once
// The roofs a device's figures are judged against. They must be upper bounds: the compute roof is
// the best of every backend LibTorch uses for the dtype (a GEMM through the BLAS or cuBLAS, a
// convolution through oneDNN or cuDNN) and, where known, the theoretical peak of the CPU
// (cores x clock x FLOP per cycle for its ISA); the memory roof is a STREAM triad with every thread.
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <torch/types.h>

#include "torchprobe/inventory.h"
#include "torchprobe/ops/ops.h"

namespace torchprobe::ops {

/// A roof is the best the device did: `work` per call over the fastest of the samples' times per call (ms), in work
/// units per second; 0 without samples. The slowest or the mean would put the roof low, and every figure measured
/// against it high.
double fastest_rate(double work, const std::vector<double>& sample_ms);

/// The theoretical peak of `threads` cores of this CPU at one precision: cores x clock x FLOP/cycle, the clock
/// being the larger of the listed maximum and `measured_clock_mhz` (the clock a core really reached), the
/// FLOP/cycle core_flops()'s for the dtype ("fp32", "bf16", "fp16"; a precision without a native unit is
/// computed through fp32 and gets fp32's figure).
struct TheoreticalPeak {
  double gflop_per_s = 0.0;  ///< 0: unknown
  int cores = 0;
  double clock_mhz = 0.0;
  std::string clock_source;  ///< e.g. "measured (imul chain)", "cpufreq cpuinfo_max_freq"
  double flop_per_cycle = 0.0;
  std::string basis;  ///< e.g. "2 cores x 2596 MHz (cpufreq cpuinfo_max_freq) x 32 FLOP/cycle (AMD Zen 4: ...)"
};
/// The clock a core of this CPU really runs at, in MHz: a chain of dependent integer multiplies (3 cycles
/// each on every x86-64 core; no core folds them, as recent Intel cores fold adds) timed on this thread,
/// best of a few tries; 0 where not measured (non-x86) or implausible (above 6500 MHz). VMs list the
/// nominal clock in /proc/cpuinfo while their cores boost above it.
double measure_cpu_clock_mhz();

TheoreticalPeak theoretical_cpu_peak(const CpuInfo& cpu, int threads, double measured_clock_mhz = 0.0,
                                     const std::string& dtype = "fp32");

struct Peak {
  double gflop_per_s = 0.0;              ///< the compute roof: the largest of the three below
  double gemm_gflop_per_s = 0.0;         ///< measured: best large GEMM (mm_out, 2048 CPU / 8192 GPU)
  double conv_gflop_per_s = 0.0;         ///< measured: best large convolution (resnet18's 3x3 64->64, analytic FLOP)
  double theoretical_gflop_per_s = 0.0;  ///< cores x clock x FLOP/cycle (CPU fp32); 0 where unknown
  std::string compute_source;            ///< "gemm", "conv" or "theoretical": which set the roof
  std::string theoretical_basis;
  int theoretical_cores = 0;             ///< the theoretical peak's parts (CPU), shown beside it in reports
  double theoretical_clock_mhz = 0.0;
  double theoretical_flop_per_cycle = 0.0;
  double gb_per_s = 0.0;                 ///< the memory roof: best STREAM triad a = b + s*c, 3 arrays >= 4x the LLC
  /// The theoretical peak is above kSuspectRatio x the best GEMM/conv measured: a misread clock or FLOP/cycle
  /// (an add-chain clock read 7x high on a Sapphire Rapids core). Reported, never used as the roof.
  bool theoretical_suspect = false;
  /// Seconds each measurement took in this process (0 for a peak read from a store): the GEMM, the
  /// convolution (its first call includes cuDNN's or oneDNN's kernel set-up), the STREAM triad.
  double gemm_seconds = 0.0, conv_seconds = 0.0, triad_seconds = 0.0;
};

/// How far above the best measured GEMM/convolution a theoretical roof may be before it is suspect. Tuned
/// BLAS and oneDNN kernels reach 60-95% of a core's peak, but a busy host halves what they measure: on the
/// 2-vCPU EPYC the quiet GEMM is ~0.7x the theory and one competing process took it to 0.35x (2.9x), which
/// a 2x rule called suspect. 4x still catches a misread clock (the add chain's was 7x).
constexpr double kSuspectRatio = 4.0;

/// Sets `peak`'s compute roof from its parts: the largest of the GEMM, the convolution and the theoretical
/// peak, unless the theoretical one is suspect (then it is flagged and left out), and which one set it.
void apply_compute_roof(Peak& peak);
/// The compute roof's parts as result counters, the names reports read: roof_gemm_gflop_per_s,
/// roof_conv_gflop_per_s, and where there is a theoretical peak roof_theoretical_gflop_per_s with its
/// _cores, _clock_mhz and _flop_per_cycle, and roof_theoretical_suspect = 1 when it is suspect.
std::vector<std::pair<std::string, double>> roof_counters(const Peak& peak);
/// Measured once per device and dtype per process (all threads), then cached; with a store file set,
/// once per run of several processes.
Peak measured_peak(const torch::Device& device, DType dtype);
/// Shares measured peaks between the processes of one run (torchprobe-bench --isolate): measured_peak
/// reads a peak from this JSON file if an earlier process stored it there, and stores what it measures.
/// The processes run one after the other.
void set_peak_store(const std::string& path);
/// Where measured_peak says, once per measurement, what it measured and how long each part took
/// ("roofs of cuda:0 fp32: GEMM ... in 1.1 s, ..."): progress for a step that can take tens of seconds.
/// Unset: silent.
void set_peak_log(std::function<void(const std::string&)> log);

}  // namespace torchprobe::ops
