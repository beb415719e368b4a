#pragma once
// Derived views of a ResultSet shared by the printers, so each figure is computed in one place.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "torchprobe/report/results.h"
#include "torchprobe/roofline.h"

namespace torchprobe::report {

/// One training configuration (model, batch and any other name parameters) across devices.
/// Whether a training-step name component is the baseline of its axis (dtype:fp32, layout:nchw,
/// cudnn:off, graph:off): left out of variant labels, so the baseline row is "".
bool is_baseline_axis(const std::string& key, const std::string& value);

/// A training step's non-baseline axes, e.g. "dtype:bf16/layout:cl" with "/"; "" for the baseline.
std::string train_variant(const Result& r, const std::string& separator);

struct TrainRow {
  std::string model;
  std::string variant;  ///< name parameters besides batch, e.g. "dtype:bf16/layout:cl"; "" for the default
  std::int64_t batch = 0;
  std::map<std::string, const Result*> by_device;  ///< device label -> result
  std::string label() const;                       ///< "net batch:64" (+ variant)
};

struct TrainView {
  std::vector<std::string> devices;  ///< device labels in first-seen order
  std::string baseline;              ///< the CPU's label when a CPU ran, else ""
  std::vector<TrainRow> rows;        ///< grouped by model, then variant, then batch
  std::vector<std::string> models() const;
};
TrainView train_view(const ResultSet& results);

/// The most devices the printers set side by side: a chart series or a table column each. With more, a chart says
/// it is not drawn and the training tables list one device per line, so that the report grows with the number of
/// results, not with models x devices.
constexpr std::size_t kMaxSideBySideDevices = 64;

/// images/s on `device` over images/s on the baseline; NaN when either is missing or failed.
double speedup(const TrainRow& row, const std::string& device, const std::string& baseline);
/// images/s of the row on the device; NaN when missing or failed.
double images_per_s(const TrainRow& row, const std::string& device);

/// `name` without its "/key:value" component (e.g. "/world:2"), to group results across that axis.
std::string name_without(const std::string& name, const std::string& key);

/// A scaling efficiency more than this many points above 100% is flagged: it is not super-linear scaling but a
/// one-process reference that ran slow (a world-1 run read 183.9%, 2026-11). 102.0% itself is not flagged.
constexpr double kScalingNoisePct = 2.0;
/// Whether `efficiency` (a ratio: 1 is linear) is above 100% by more than kScalingNoisePct.
inline bool efficiency_above_noise(double efficiency) { return efficiency > 1.0 + kScalingNoisePct / 100.0; }
inline constexpr const char* kScalingAboveNote =
    "Efficiency above 100% is not super-linear scaling: the one-process reference (rank 0 alone, measured first) ran "
    "slower than the step, most often warm-up or a busy host; rerun with more --steps and --warmup.";

/// An op's shape: its name's key:value components but the device and dtype, e.g. "n:4096" or "kind:d2d mib:1024".
std::string shape_of(const Result& result);

/// Roofline figures of one op benchmark, from its flops/bytes counters, its median time and the
/// device's peaks measured in the same run.
using OpMetrics = RooflinePoint;
OpMetrics op_metrics(const Result& result);

/// MFU of a training step with its label when above 100% ("effective": fewer real FLOPs than counted).
std::string mfu_label(const Result& result);

/// A training step's model FLOP rate over its device's datasheet rate at the step's precision (fp32 steps on a GPU
/// against TF32, as the measured-peak MFU: cuDNN's convolutions use TF32 by default), in %; NaN where the device
/// has no datasheet (report/datasheet.h) or the step failed.
double datasheet_mfu_pct(const Result& result);

/// One measured roof of a device beside its datasheet figure: a dtype's compute roof (GFLOP/s) or the memory
/// bandwidth (GB/s, what == "memory"), from the op benchmarks' roof counters.
struct PeakRow {
  std::string device_label, device_name, what;  ///< what: "fp32", "bf16", ..., or "memory"
  double measured = 0.0;                         ///< the roof: GFLOP/s or GB/s
  double datasheet = 0.0;                        ///< NaN where the part or the dtype has no figure
  std::string source;                            ///< the datasheet's name, "" without one
  double kernels = 0.0;       ///< the best GEMM or convolution measured (compute roofs); 0 where not recorded
  double theoretical = 0.0;   ///< cores x clock x FLOP/cycle (CPU compute roofs); 0 where unknown
  double cores = 0.0, clock_mhz = 0.0, flop_per_cycle = 0.0;  ///< its parts; 0 where not recorded
  bool suspect = false;       ///< the theoretical peak was too far above the kernels to be used
};
/// Every (device, dtype) roof and every device's memory roof the run's op benchmarks measured, in first-seen
/// order; then the CPU's roofs that only training steps used (its bf16 roof: the CPU's ops run in fp32).
std::vector<PeakRow> peak_rows(const ResultSet& results);

/// A CPU training step whose median time differs from the sum of its phases by more than this share.
constexpr double kPhaseSumTolerance = 0.25;

/// Lines that say a figure cannot be trusted, each with what to do: what the run found on its host
/// (busy processes, frequency scaling, threads, BLAS), Debug builds, a CV above the noise threshold, a
/// CPU step that differs from the sum of its phases, figures above their roof, failed or skipped runs.
/// They are Markdown: names as code spans, other text from the files escaped (torchprobe/escape.h).
std::vector<std::string> warnings(const ResultSet& results, double noise_cv_pct);
/// Whether the benchmark's sampling ended above its noise target (its timeout stopped it): the noise_pct and
/// max_noise_pct counters, median over repetitions.
bool noise_above_target(const Result& r);

}  // namespace torchprobe::report
