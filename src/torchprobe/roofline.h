#pragma once
// The roofline verdict of one measurement, shared by the op benchmarks (counters) and the
// reporter (tables), so both say the same thing. Header-only: the reporter has no LibTorch.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

namespace torchprobe {

struct RooflinePoint {
  double gflop_per_s = std::numeric_limits<double>::quiet_NaN();
  double gb_per_s = std::numeric_limits<double>::quiet_NaN();
  double intensity = std::numeric_limits<double>::quiet_NaN();    ///< FLOP per byte moved
  double pct_of_roof = std::numeric_limits<double>::quiet_NaN();  ///< achieved / the roof that binds here
  std::string bound;                                             ///< "compute", "memory" or "" (no roof known)
  /// Why pct_of_roof is above 100% (roof_label); "" at or below it.
  std::string label;
};

/// A figure above 100% of an upper-bound roof is not a plain measurement: a memory-bound op above the
/// STREAM roof had part of its working set served from cache ("cache-resident"); a compute-bound one
/// did fewer real FLOPs than the analytic count: a convolution skips the taps that fall on zero
/// padding (a 4x4 output with padding 1 does 69% of its analytic FLOPs), or uses Winograd/FFT ("effective").
/// Up to kAtRoofPct, though, a figure is "at roof": the roof is itself a measurement (the best sample of
/// one GEMM, convolution or triad), and an op of the same kind can land a little above it (a 4096 fp32
/// GEMM ran at 100.3% of the 8192 GEMM's roof on an H200, 2026-11-27).
/// A GEMM's analytic FLOP count is exact (`exact_flops`), so above kAtRoofPct it did not do fewer FLOPs: the
/// roof was measured low ("roof measured low": a 4096 bf16 GEMM ran at 103.8% of the roof an 8192 GEMM gave in
/// the same process, whose own roof read 5% higher in other processes on an H100, 2026-11-27).
/// Printers show the label next to any figure above 100%; "" at or below it.
constexpr double kAtRoofPct = 102.0;
inline std::string roof_label(double pct_of_roof, const std::string& bound, bool exact_flops = false) {
  if (!(pct_of_roof > 100.0)) return "";
  if (pct_of_roof <= kAtRoofPct) return "at roof";
  if (bound == "memory") return "cache-resident";
  return exact_flops ? "roof measured low" : "effective";
}

/// `flops` and `bytes` per call (NaN when unknown), `seconds` per call, peaks NaN when not measured.
/// A pure data movement (no FLOP) is judged against the bandwidth roof only.
inline RooflinePoint roofline(double flops, double bytes, double seconds, double peak_gflop_per_s, double peak_gb_per_s) {
  RooflinePoint p;
  p.gflop_per_s = flops / seconds / 1e9;
  p.gb_per_s = bytes / seconds / 1e9;
  if (bytes > 0.0) p.intensity = flops / bytes;
  const bool have_flop_roof = std::isfinite(peak_gflop_per_s), have_byte_roof = std::isfinite(peak_gb_per_s);
  if ((std::isnan(flops) || flops == 0.0) && have_byte_roof && std::isfinite(p.gb_per_s)) {
    p.bound = "memory";
    p.pct_of_roof = 100.0 * p.gb_per_s / peak_gb_per_s;
  } else if (have_flop_roof && have_byte_roof && std::isfinite(p.intensity)) {
    const double ridge = peak_gflop_per_s / peak_gb_per_s;  // FLOP/byte where the two roofs meet
    p.bound = p.intensity >= ridge ? "compute" : "memory";
    p.pct_of_roof = 100.0 * p.gflop_per_s / std::min(peak_gflop_per_s, p.intensity * peak_gb_per_s);
  } else if (have_flop_roof && std::isfinite(p.gflop_per_s) && flops > 0.0) {
    p.bound = "compute";
    p.pct_of_roof = 100.0 * p.gflop_per_s / peak_gflop_per_s;
  }
  p.label = roof_label(p.pct_of_roof, p.bound);
  return p;
}

}  // namespace torchprobe
