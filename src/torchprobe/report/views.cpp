#include "torchprobe/phases.h"
#include "torchprobe/report/views.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <tuple>

#include "torchprobe/escape.h"
#include "torchprobe/report/datasheet.h"
#include "torchprobe/report/schema.h"
#include "torchprobe/report/table.h"

namespace torchprobe::report {
namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
}

std::string TrainRow::label() const {
  std::string text = fmt::format("{} batch:{}", model, batch);
  if (!variant.empty()) text += " " + variant;
  return text;
}

std::vector<std::string> TrainView::models() const {
  std::vector<std::string> names;
  std::set<std::string> seen;
  for (const auto& row : rows) {
    if (seen.insert(row.model).second) names.push_back(row.model);
  }
  return names;
}

bool is_baseline_axis(const std::string& key, const std::string& value) {
  for (const auto& axis : schema::kTrainAxes) {
    if (key == axis.key) return value == axis.baseline();
  }
  return false;
}

std::string train_variant(const Result& r, const std::string& separator) {
  std::string variant;
  for (const auto& [k, v] : r.params) {
    if (k == "batch" || is_baseline_axis(k, v)) continue;
    variant += (variant.empty() ? "" : separator) + k + ":" + v;
  }
  return variant;
}

TrainView train_view(const ResultSet& results) {
  TrainView view;
  // Indexed, not searched: a file of thousands of models or devices takes time in its size, not its square.
  std::set<std::string> devices_seen;
  std::map<std::tuple<std::string, std::string, std::int64_t>, size_t> row_at;
  for (const auto& r : results.results) {
    if (r.suite != "train_step") continue;
    if (devices_seen.insert(r.device_label).second) view.devices.push_back(r.device_label);
    const std::string variant = train_variant(r, "/");
    const auto [at, inserted] = row_at.try_emplace(std::make_tuple(r.subject, variant, r.batch), view.rows.size());
    if (inserted) view.rows.push_back({r.subject, variant, r.batch, {}});
    view.rows[at->second].by_device[r.device_label] = &r;
  }
  for (const auto& d : view.devices) {
    if (d == "cpu" || d.rfind("cpu@", 0) == 0) {
      view.baseline = d;
      break;
    }
  }
  // Models in first-seen order; within a model, variants then batch sizes ascending.
  std::map<std::string, size_t> rank;
  for (const auto& model : view.models()) rank.emplace(model, rank.size());
  const auto model_rank = [&](const std::string& m) { return rank.at(m); };
  std::stable_sort(view.rows.begin(), view.rows.end(), [&](const TrainRow& a, const TrainRow& b) {
    return std::make_tuple(model_rank(a.model), a.variant, a.batch) < std::make_tuple(model_rank(b.model), b.variant, b.batch);
  });
  return view;
}

double images_per_s(const TrainRow& row, const std::string& device) {
  const auto it = row.by_device.find(device);
  if (it == row.by_device.end() || it->second->failed()) return kNaN;
  return it->second->counter("images_per_s");
}

double speedup(const TrainRow& row, const std::string& device, const std::string& baseline) {
  if (baseline.empty()) return kNaN;
  return images_per_s(row, device) / images_per_s(row, baseline);
}

std::string name_without(const std::string& name, const std::string& key) {
  std::string out = name;
  const std::string part = "/" + key + ":";
  const size_t at = out.find(part);
  if (at == std::string::npos) return out;
  const size_t end = out.find('/', at + 1);
  out.erase(at, end == std::string::npos ? std::string::npos : end - at);
  return out;
}

std::string shape_of(const Result& r) {
  std::string shape;
  size_t start = 0;
  for (size_t end = 0; end != std::string::npos; start = end + 1) {
    end = r.name.find('/', start);
    const std::string token = r.name.substr(start, end == std::string::npos ? std::string::npos : end - start);
    const auto colon = token.find(':');
    if (colon == std::string::npos || colon == 0 || token.rfind("dtype:", 0) == 0 || token == r.device) continue;
    shape += (shape.empty() ? "" : " ") + token;
  }
  return shape;
}

OpMetrics op_metrics(const Result& r) {
  OpMetrics m = roofline(r.counter("flops"), r.counter("bytes"), r.median_ms / 1e3, r.counter("peak_gflop_per_s"),
                         r.counter("peak_gb_per_s"));
  m.label = roof_label(m.pct_of_roof, m.bound, /*exact_flops=*/r.subject == "matmul");
  return m;
}

std::string mfu_label(const Result& r) { return roof_label(r.counter("mfu_pct"), "compute"); }

double datasheet_mfu_pct(const Result& r) {
  const Datasheet* sheet = datasheet_for(r.device_name);
  if (sheet == nullptr || r.failed()) return kNaN;
  const std::string dtype = r.dtype == "fp32" && r.device.rfind("cuda", 0) == 0 ? "tf32" : r.dtype;
  return 100.0 * r.counter("model_tflop_per_s") * 1e3 / datasheet_gflop_per_s(*sheet, dtype);
}

std::vector<PeakRow> peak_rows(const ResultSet& results) {
  std::vector<PeakRow> rows;
  std::map<std::string, size_t> row_of;  // device label|what -> its row
  const auto add = [&](const Result& r, const std::string& what, double measured) {
    if (!(measured > 0.0)) return;
    const auto [at, inserted] = row_of.try_emplace(r.device_label + "|" + what, rows.size());
    if (inserted) {
      const Datasheet* sheet = datasheet_for(r.device_name);
      const double figure = sheet == nullptr ? kNaN
                            : what == "memory" ? sheet->memory_gb_per_s
                                               : datasheet_gflop_per_s(*sheet, what);
      rows.push_back({r.device_label, r.device_name, what, measured, figure, sheet == nullptr ? "" : sheet->source});
    }
    // The roof's parts, from the first of its results that recorded them (not every benchmark does).
    PeakRow& row = rows[at->second];
    if (what == "memory" || row.kernels > 0.0 || !r.has("roof_gemm_gflop_per_s")) return;
    const auto part = [&](const char* counter) { return r.has(counter) ? r.counter(counter) : 0.0; };
    row.kernels = std::max(part("roof_gemm_gflop_per_s"), part("roof_conv_gflop_per_s"));
    row.theoretical = part("roof_theoretical_gflop_per_s");
    row.cores = part("roof_theoretical_cores");
    row.clock_mhz = part("roof_theoretical_clock_mhz");
    row.flop_per_cycle = part("roof_theoretical_flop_per_cycle");
    row.suspect = part("roof_theoretical_suspect") > 0.0;
  };
  for (const auto& r : results.results) {
    if (r.suite != "op" || r.failed()) continue;
    if (!r.dtype.empty()) add(r, r.dtype, r.counter("peak_gflop_per_s"));
  }
  for (const auto& r : results.results) {
    if (r.suite == "op" && !r.failed()) add(r, "memory", r.counter("peak_gb_per_s"));
  }
  // The training steps' roofs (each MFU's denominator), where no op of that precision listed it already: on a GPU
  // an fp32 step's convolutions run in TF32, so its roof is TF32's.
  for (const auto& r : results.results) {
    if (r.suite != "train_step" || r.failed() || r.dtype.empty()) continue;
    const bool gpu = r.device.rfind("cuda", 0) == 0;
    add(r, gpu && r.dtype == "fp32" ? "tf32" : r.dtype, r.counter("peak_tflop_per_s") * 1e3);
  }
  return rows;
}

bool noise_above_target(const Result& r) {
  return r.has("noise_pct") && r.has("max_noise_pct") && r.counter("noise_pct") > r.counter("max_noise_pct");
}

std::vector<std::string> warnings(const ResultSet& results, double noise_cv_pct) {
  std::vector<std::string> lines;
  for (const auto& c : results.contexts) {
    for (const auto& w : c.trust_warnings) {
      lines.push_back(fmt::format("{} (host {}): {}", markdown_text(c.source), markdown_code(c.host), markdown_text(w)));
    }
    if (c.build_type == "debug") {
      lines.push_back(fmt::format("{}: the Google Benchmark library reports a Debug build (Debian's package does): "
                                  "its loop overhead is higher; torchprobe's own timers are unaffected", markdown_text(c.source)));
    }
  }
  std::set<std::string> suspect_said;  // a suspect roof is said once per device and dtype
  for (const auto& r : results.results) {
    const std::string name = markdown_code(r.name);
    if (r.failed()) {
      lines.push_back(fmt::format("{} did not run: {}", name, markdown_text(r.error)));
      continue;
    }
    if (r.cv_pct > noise_cv_pct) {
      lines.push_back(fmt::format("{}: CV {} over {} repetitions exceeds the {} noise threshold; treat its "
                                  "differences with care, or add repetitions on a quieter host",
                                  name, format_pct(r.cv_pct), r.repetitions, format_pct(noise_cv_pct)));
    }
    if (noise_above_target(r)) {
      lines.push_back(
          fmt::format("{}: the timeout stopped its sampling with the noise of its mean at {} (target {}, "
                      "{} samples per repetition): a slow or unsteady benchmark; give it a longer "
                      "--timeout or a quieter host",
                      name, format_pct(r.counter("noise_pct")), format_pct(r.counter("max_noise_pct")),
                      fmt::format("{:.0f}", r.counter("samples"))));
    }
    if (r.suite == "dist_train" && efficiency_above_noise(r.counter("scaling_efficiency"))) {
      lines.push_back(fmt::format("{}: scaling efficiency {}. {}", name,
                                  format_pct(100.0 * r.counter("scaling_efficiency")),
                                  markdown_text(kScalingAboveNote)));
    }
    if (r.suite == "train_step" && r.device == "cpu" && r.has("forward_ms")) {
      double sum = 0.0;
      for (const std::string p : kPhaseNames) sum += std::isfinite(r.counter(p + "_ms")) ? r.counter(p + "_ms") : 0.0;
      if (r.median_ms > 0.0 && std::fabs(r.median_ms - sum) > kPhaseSumTolerance * r.median_ms) {
        lines.push_back(fmt::format("{}: the step took {} ms but its phases add up to {} ms ({}): on the CPU they "
                                    "should match, so something outside the step's work ran during it (another thread "
                                    "pool spinning, other processes); check `torchprobe devices` for BLAS threading "
                                    "warnings and the host's load",
                                    name, format_ms(r.median_ms), format_ms(sum),
                                    format_pct(100.0 * (r.median_ms - sum) / r.median_ms, /*sign=*/true)));
      }
    }
    const std::string mfu = mfu_label(r);
    if (mfu == "at roof") {
      lines.push_back(
          fmt::format("{}: MFU {}: within {} above the compute roof, which is itself a measurement (the "
                      "best sample of a GEMM or convolution): the step runs at the roof",
                      name, format_roof_pct(r.counter("mfu_pct"), mfu), format_pct(kAtRoofPct - 100.0)));
    } else if (!mfu.empty()) {
      lines.push_back(fmt::format("{}: MFU {} is above the compute roof: the kernels did fewer real FLOPs than the "
                                  "model's analytic count (convolution kernels skip taps on zero padding; Winograd/FFT algorithms), so it is an "
                                  "effective rate",
                                  name, format_roof_pct(r.counter("mfu_pct"), mfu)));
    }
    if ((r.suite == "op" || r.suite == "train_step") && r.counter("roof_theoretical_suspect") > 0.0 &&
        suspect_said.insert(r.device_label + "|" + r.dtype).second) {
      const double measured = std::max(r.counter("roof_gemm_gflop_per_s"), r.counter("roof_conv_gflop_per_s"));
      lines.push_back(fmt::format("{}: the theoretical {} compute roof, {} GFLOP/s, is {} the best GEMM or convolution "
                                  "measured in this run ({} GFLOP/s): suspect (a misread clock or FLOP/cycle, or "
                                  "kernels that do not use the unit it counts), so it is not used; the roof is the "
                                  "measured {} GFLOP/s",
                                  markdown_code(r.device_label), markdown_text(r.dtype),
                                  format_number(r.counter("roof_theoretical_gflop_per_s")),
                                  format_ratio(r.counter("roof_theoretical_gflop_per_s") / measured), format_number(measured),
                                  format_number(measured)));
    }
    if (r.suite == "op") {
      const OpMetrics m = op_metrics(r);
      if (!m.label.empty()) {
        lines.push_back(fmt::format(
            "{}: {} of the {} roof: {}", name, format_roof_pct(m.pct_of_roof, m.label), m.bound,
            m.label == "at roof" ? fmt::format("within {} above the roof, which is itself a measurement (the "
                                               "best sample of a GEMM, convolution or STREAM triad): the op "
                                               "runs at the roof",
                                               format_pct(kAtRoofPct - 100.0))
            : m.label == "cache-resident"
                ? "part of its working set was served from cache, faster than the STREAM triad "
                  "reads memory (on a shared host, memory bandwidth that changed between the "
                  "roof's measurement and the op's adds to it); the figure is not the memory system's"
            : m.label == "roof measured low"
                ? "a GEMM's FLOP count is exact, so the roof (the best sample of this run's large GEMM) was "
                  "measured below what this op reached: clocks and power state change between measurements "
                  "(on a GPU, 5% between processes); compare roofs across runs before reading this percentage"
                : "the kernel did fewer real FLOPs than the analytic count (a convolution skips "
                  "taps on zero padding, or uses Winograd/FFT); the figure is an effective rate"));
      }
    }
  }
  return lines;
}

}  // namespace torchprobe::report
