// report.md and the console summary: the same tables, two renderings.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "torchprobe/escape.h"
#include "torchprobe/phases.h"
#include "torchprobe/report/printers.h"
#include "torchprobe/report/table.h"
#include "torchprobe/report/views.h"

namespace torchprobe::report {
namespace {

std::string rate_cell(const TrainRow& row, const std::string& device) {
  const auto it = row.by_device.find(device);
  if (it == row.by_device.end()) return "-";
  const Result& r = *it->second;
  if (r.failed()) return "failed";
  std::string cell = format_rate(r.counter("images_per_s"));
  if (r.cv_pct >= 0.0) cell += fmt::format(" ±{:.1f}%", r.cv_pct);
  return cell;
}

/// The training rows of each model, in the view's model order, and each device's place in view.devices: built once,
/// so that the tables and the sentences take time in the number of results, never models x devices x rows.
struct ModelRows {
  std::vector<std::pair<std::string, std::vector<const TrainRow*>>> models;
  std::map<std::string, size_t> device_rank;
};

ModelRows model_rows(const TrainView& view) {
  ModelRows grouped;
  std::map<std::string, size_t> at;
  for (const auto& row : view.rows) {
    const auto [it, inserted] = at.try_emplace(row.model, grouped.models.size());
    if (inserted) grouped.models.push_back({row.model, {}});
    grouped.models[it->second].second.push_back(&row);
  }
  for (size_t i = 0; i < view.devices.size(); ++i) grouped.device_rank.emplace(view.devices[i], i);
  return grouped;
}

std::string batch_cell(const TrainRow& row) {
  return row.variant.empty() ? std::to_string(row.batch) : fmt::format("{} {}", row.batch, row.variant);
}

/// Training images/s of one model, one line per device that ran each configuration (in the view's device order),
/// with its speedup: for more devices than fit side by side, where a column each would make every model's table
/// as wide as the whole run.
Table training_list(const TrainView& view, const ModelRows& grouped, const std::vector<const TrainRow*>& rows) {
  Table t;
  t.header = {"batch", "device", "images/s"};
  t.right_aligned = {true, false, true};
  if (!view.baseline.empty()) {
    t.header.push_back("vs " + view.baseline);
    t.right_aligned.push_back(true);
  }
  for (const TrainRow* row : rows) {
    std::vector<std::pair<size_t, const std::string*>> ran;
    for (const auto& entry : row->by_device) ran.emplace_back(grouped.device_rank.at(entry.first), &entry.first);
    std::sort(ran.begin(), ran.end());
    for (const auto& device : ran) {
      const std::string& d = *device.second;
      std::vector<std::string> cells = {batch_cell(*row), d, rate_cell(*row, d)};
      if (!view.baseline.empty()) cells.push_back(d == view.baseline ? "-" : format_ratio(speedup(*row, d, view.baseline)));
      t.add(cells);
    }
  }
  return t;
}

/// Training images/s of one model (its rows): a column per device, then the speedup of each other device.
Table training_table(const TrainView& view, const ModelRows& grouped, const std::vector<const TrainRow*>& rows) {
  if (view.devices.size() > kMaxSideBySideDevices) return training_list(view, grouped, rows);
  Table t;
  t.header = {"batch"};
  for (const auto& d : view.devices) t.header.push_back(d + " images/s");
  for (const auto& d : view.devices) {
    if (!view.baseline.empty() && d != view.baseline) t.header.push_back(d + " vs " + view.baseline);
  }
  t.right_aligned.assign(t.header.size(), true);
  for (const TrainRow* row : rows) {
    std::vector<std::string> cells = {batch_cell(*row)};
    for (const auto& d : view.devices) cells.push_back(rate_cell(*row, d));
    for (const auto& d : view.devices) {
      if (!view.baseline.empty() && d != view.baseline) cells.push_back(format_ratio(speedup(*row, d, view.baseline)));
    }
    t.add(cells);
  }
  return t;
}

/// One plain sentence per model and device against the reference device (the CPU where it ran, else the first
/// device): the ratio at the largest batch both ran in the baseline variant, e.g. "cuda:0 (NVIDIA H100 80GB HBM3)
/// is 41.2x cpu on resnet18 at batch 64 (26 400 vs 641 images/s)".
std::vector<std::string> comparison_sentences(const TrainView& view, const ModelRows& grouped) {
  std::vector<std::string> lines;
  if (view.devices.size() < 2) return lines;
  const std::string reference = view.baseline.empty() ? view.devices.front() : view.baseline;
  const auto named = [](const TrainRow& row, const std::string& device) {
    const auto it = row.by_device.find(device);
    const std::string& name = it == row.by_device.end() ? std::string() : it->second->device_name;
    return name.empty() || device.find(name) != std::string::npos ? device : fmt::format("{} ({})", device, name);
  };
  for (const auto& [model, rows] : grouped.models) {
    // Per device (by its place in view.devices): the row of the largest batch both it and the reference ran.
    // Only the devices each row has are visited, so a model costs its results, not all devices x its rows.
    std::map<size_t, const TrainRow*> best;
    for (const TrainRow* row : rows) {
      if (!row->variant.empty()) continue;
      for (const auto& entry : row->by_device) {
        const std::string& device = entry.first;
        if (device == reference || !std::isfinite(speedup(*row, device, reference))) continue;
        const TrainRow*& kept = best[grouped.device_rank.at(device)];
        if (kept == nullptr || row->batch > kept->batch) kept = row;
      }
    }
    for (const auto& [rank, row] : best) {
      const std::string& device = view.devices[rank];
      lines.push_back(fmt::format("{} is {} {} on {} at batch {} ({} vs {} images/s)", named(*row, device),
                                  format_ratio(speedup(*row, device, reference)), named(*row, reference), model,
                                  row->batch, format_rate(images_per_s(*row, device)),
                                  format_rate(images_per_s(*row, reference))));
    }
  }
  return lines;
}

Table phase_table(const ResultSet& results) {
  Table t;
  t.header = {"benchmark"};
  for (const std::string p : kPhaseNames) t.header.push_back(p + " ms");
  t.header.insert(t.header.end(), {"sum of phases ms", "step ms", "step vs phases"});
  t.right_aligned.assign(t.header.size(), true);
  t.right_aligned[0] = false;
  for (const auto& r : results.results) {
    if (r.suite != "train_step" || r.failed() || !r.has("forward_ms")) continue;
    std::vector<std::string> cells = {r.name};
    double sum = 0.0;
    for (const std::string p : kPhaseNames) {
      const double ms = r.counter(p + "_ms");
      if (std::isfinite(ms)) sum += ms;
      cells.push_back(format_ms(ms));
    }
    cells.push_back(format_ms(sum));
    cells.push_back(format_ms(r.median_ms));
    // On the CPU the phases are the step's only work, so they must add up (on a GPU the instrumented
    // pass synchronises between phases and the pipelined step is shorter).
    const double gap = r.median_ms > 0.0 ? 100.0 * (r.median_ms - sum) / r.median_ms : NAN;
    std::string check = format_pct(gap, /*sign=*/true);
    if (r.device == "cpu" && std::fabs(gap) > 100.0 * kPhaseSumTolerance) check += " (do not add up: see Warnings)";
    cells.push_back(check);
    t.add(cells);
  }
  return t;
}

/// Every training-step variant with its time to epoch, model FLOP rate and MFU, against the
/// baseline variant (fp32, NCHW, no autotuning, no graph) of the same model, device and batch.
Table variant_table(const ResultSet& results) {
  Table t;
  t.header = {"model", "device", "batch", "variant", "step ms", "images/s", "epoch s", "model TFLOP/s", "MFU",
              "vs baseline"};
  t.right_aligned = {false, false, true, false, true, true, true, true, true, true};
  // Against the datasheet too, where a device has one (a GPU we can name): beside, never instead of, the measured MFU.
  bool datasheet = false;
  for (const auto& r : results.results) datasheet = datasheet || (r.suite == "train_step" && std::isfinite(datasheet_mfu_pct(r)));
  if (datasheet) {
    t.header.insert(t.header.begin() + 9, "MFU (datasheet)");
    t.right_aligned.insert(t.right_aligned.begin() + 9, true);
  }
  const auto key = [](const Result& r) { return fmt::format("{}|{}|{}", r.subject, r.device_label, r.batch); };
  std::map<std::string, const Result*> baselines;
  std::set<std::string> variants;
  for (const auto& r : results.results) {
    if (r.suite != "train_step") continue;
    const std::string variant = train_variant(r, " ");
    variants.insert(variant);
    if (variant.empty()) baselines[key(r)] = &r;
  }
  if (variants.size() < 2) return t;  // one variant: the training tables say it all
  for (const auto& r : results.results) {
    if (r.suite != "train_step") continue;
    const std::string variant = train_variant(r, " ");
    if (r.failed()) {
      std::vector<std::string> cells{r.subject, r.device_label, std::to_string(r.batch), variant.empty() ? "baseline" : variant,
                                     "failed", "-", "-", "-", "-", "-"};
      if (datasheet) cells.push_back("-");
      t.add(cells);
      continue;
    }
    const auto base = baselines.find(key(r));
    const double ratio = base == baselines.end() || base->second->failed()
                             ? std::nan("")
                             : r.counter("images_per_s") / base->second->counter("images_per_s");
    std::vector<std::string> cells{r.subject, r.device_label, std::to_string(r.batch), variant.empty() ? "baseline" : variant,
                                   format_ms(r.median_ms), format_rate(r.counter("images_per_s")),
                                   format_number(r.counter("epoch_s")), format_number(r.counter("model_tflop_per_s")),
                                   format_roof_pct(r.counter("mfu_pct"), mfu_label(r))};
    if (datasheet) {
      const double pct = datasheet_mfu_pct(r);
      cells.push_back(format_roof_pct(pct, roof_label(pct, "compute")));
    }
    cells.push_back(format_ratio(ratio));
    t.add(cells);
  }
  return t;
}

// The name's key:value components in their order, without the dtype (it has its own column).

std::string cv_cell(const Result& r) { return format_cv(r.cv_pct); }

/// measured / datasheet in %, said plainly when above 100% (a card clocked above the datasheet's boost clock, or
/// another part under the same name): never an unlabelled figure above its roof.
std::string share_of_datasheet(double measured, double datasheet) {
  const double pct = 100.0 * measured / datasheet;
  return format_pct(pct) + (pct > 100.0 ? " (above the datasheet)" : "");
}

/// The roofs the op benchmarks measured, beside the datasheet's figure where the part has one.
Table peak_table(const std::vector<PeakRow>& rows) {
  Table t;
  t.header = {"device", "name", "precision", "roof", "best GEMM/conv", "theoretical (cores x MHz x FLOP/cycle)",
              "datasheet", "roof / datasheet"};
  t.right_aligned = {false, false, false, true, true, true, true, true};
  for (const auto& row : rows) {
    const bool memory = row.what == "memory", tera = !memory && row.measured >= 1000.0;
    const auto shown = [&](double v) {
      if (!std::isfinite(v)) return std::string("-");
      return memory ? format_number(v) + " GB/s" : tera ? format_number(v / 1e3) + " TFLOP/s" : format_number(v) + " GFLOP/s";
    };
    std::string theory = "-";
    if (row.theoretical > 0.0) {
      theory = shown(row.theoretical);
      if (row.cores > 0.0 && row.clock_mhz > 0.0 && row.flop_per_cycle > 0.0) {
        theory += fmt::format(" ({:g} x {:.0f} x {:g})", row.cores, row.clock_mhz, row.flop_per_cycle);
      }
      if (row.suspect) theory += " suspect, unused";
    }
    t.add({row.device_label, row.device_name.empty() ? "-" : row.device_name,
           memory ? "memory (STREAM triad)" : row.what,
           shown(row.measured), memory || !(row.kernels > 0.0) ? "-" : shown(row.kernels), theory, shown(row.datasheet),
           share_of_datasheet(row.measured, row.datasheet)});
  }
  return t;
}

Table op_table(const ResultSet& results) {
  Table t;
  t.header = {"op", "device", "shape", "dtype", "median ms", "CV", "GFLOP/s", "GB/s", "FLOP/byte", "% of roof", "bound"};
  t.right_aligned = {false, false, false, false, true, true, true, true, true, true, false};
  for (const auto& r : results.results) {
    if (r.suite != "op") continue;
    if (r.failed()) {
      t.add({r.subject, r.device_label, shape_of(r), r.dtype.empty() ? "-" : r.dtype, "failed", "-", "-", "-", "-", "-", "-"});
      continue;
    }
    const OpMetrics m = op_metrics(r);
    const bool computes = r.counter("flops") > 0;  // copies and moves: bytes only
    t.add({r.subject, r.device_label, shape_of(r), r.dtype.empty() ? "-" : r.dtype, format_ms(r.median_ms), cv_cell(r),
           computes ? format_number(m.gflop_per_s) : "-", format_number(m.gb_per_s),
           computes ? format_number(m.intensity) : "-", format_roof_pct(m.pct_of_roof, m.label), m.bound.empty() ? "-" : m.bound});
  }
  return t;
}

// A scaling efficiency (a ratio), flagged where it is above 100% by more than noise (kScalingAboveNote says why).
std::string efficiency_cell(double efficiency) {
  return format_pct(100.0 * efficiency) + (efficiency_above_noise(efficiency) ? " (above 100%: see Warnings)" : "");
}

/// Distributed training across world sizes: one row per dist_train result, grouped by configuration
/// (the name without world:N), then by world size.
Table scaling_table(const ResultSet& results) {
  Table t;
  t.header = {"configuration", "world", "step ms", "images/s", "scaling efficiency", "all-reduce ms",
              "all-reduce share", "busbw GB/s"};
  t.right_aligned = {false, true, true, true, true, true, true, true};
  std::vector<std::pair<std::pair<std::string, double>, const Result*>> rows;
  for (const auto& r : results.results) {
    if (r.suite != "dist_train") continue;
    rows.push_back({{r.device_label + " " + name_without(r.name, "world"), r.counter("world_size")}, &r});
  }
  std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& [key, r] : rows) {
    const std::string configuration = key.first.substr(key.first.find(' ') + 1);
    if (r->failed()) {
      t.add({configuration, fmt::format("{:.0f}", key.second), "failed", "-", "-", "-", "-", "-"});
      continue;
    }
    t.add({configuration, fmt::format("{:.0f}", key.second), format_ms(r->median_ms),
           format_rate(r->counter("images_per_s")), efficiency_cell(r->counter("scaling_efficiency")),
           format_ms(r->counter("all_reduce_ms_per_step")), format_pct(r->counter("all_reduce_share_pct")),
           format_number(r->counter("busbw_gbps"))});
  }
  return t;
}

// The charts of one section as Markdown images, each on its own line.
std::string chart_links(const std::vector<Chart>& charts, const std::string& section) {
  std::string out;
  for (const auto& chart : charts) {
    if (chart.section == section) out += fmt::format("\n![{}]({})\n", markdown_text(chart.title), chart.file);
  }
  return out;
}

Table other_table(const ResultSet& results) {
  Table t;
  t.header = {"benchmark", "device", "median ms", "CV", "images/s"};
  t.right_aligned = {false, false, true, true, true};
  for (const auto& r : results.results) {
    if (r.suite == "train_step" || r.suite == "op" || r.suite == "dist_train") continue;
    t.add({r.name, r.device_label, r.failed() ? "failed" : format_ms(r.median_ms), cv_cell(r),
           format_rate(r.counter("images_per_s"))});
  }
  return t;
}

/// How each benchmark was sampled: the samples per repetition and the noise of each repetition's mean (both the
/// median over repetitions), its target, and the spread of the repetitions themselves (their CV). Only benchmarks
/// whose program stopped on noise report samples.
Table sampling_table(const ResultSet& results) {
  Table t;
  t.header = {"benchmark", "device", "repetitions", "samples", "noise", "target", "CV over repetitions"};
  t.right_aligned = {false, false, true, true, true, true, true};
  for (const auto& r : results.results) {
    if (r.failed() || !r.has("samples")) continue;
    const double noise = r.counter("noise_pct");
    t.add({r.name, r.device_label, std::to_string(r.repetitions), fmt::format("{:.0f}", r.counter("samples")),
           std::isfinite(noise) ? format_pct(noise) + (noise_above_target(r) ? " (timeout)" : "") : "-",
           r.has("max_noise_pct") ? format_pct(r.counter("max_noise_pct")) : "-", cv_cell(r)});
  }
  return t;
}

// A run's context as Markdown: every field comes from the results file, so each is escaped.
std::string context_line(const RunContext& c) {
  std::string line = "host " + markdown_code(c.host.empty() ? "?" : c.host);
  if (c.num_cpus > 0) line += fmt::format(" ({} CPUs)", c.num_cpus);
  if (!c.date.empty()) line += ", " + markdown_text(c.date);
  if (!c.libtorch_version.empty()) line += ", LibTorch " + markdown_text(c.libtorch_version);
  if (!c.threads.empty()) line += ", " + markdown_text(c.threads) + " threads";
  if (!c.blas.empty()) line += ", BLAS " + markdown_text(c.blas);
  if (!c.torchprobe_version.empty()) line += ", torchprobe " + markdown_text(c.torchprobe_version);
  if (!c.data.empty()) line += "; " + markdown_text(c.data);
  return line;
}

}  // namespace

std::string to_markdown(const ResultSet& results, const std::vector<Chart>& charts, const ReportOptions& options) {
  std::string out = "# torchprobe report\n\n";
  for (const auto& c : results.contexts) {
    if (c.partial()) {
      out += fmt::format("**Partial run:** {} is {}; the benchmarks it did not reach are missing below.\n\n",
                         markdown_code(c.source), markdown_text(c.run_status));
    }
  }
  for (const auto& c : results.contexts) out += fmt::format("- {}: {}\n", markdown_code(c.source), context_line(c));

  Table devices;
  devices.header = {"device", "name", "details"};
  std::set<std::string> seen;
  for (size_t i = 0; i < results.contexts.size(); ++i) {
    for (const auto& d : results.contexts[i].devices) {
      const std::string label = device_label(results, i, d.id);
      if (seen.insert(label).second) devices.add({label, d.name, d.details});
    }
  }
  if (!devices.rows.empty()) out += "\n## Devices\n\n" + devices.markdown();

  const TrainView view = train_view(results);
  const ModelRows grouped = model_rows(view);
  const auto sentences = comparison_sentences(view, grouped);
  if (!sentences.empty()) {
    out += "\n## In short\n\nTraining throughput, baseline variant (fp32, NCHW), at the largest batch both devices ran:\n\n";
    for (const auto& line : sentences) out += "- " + markdown_text(line) + ".\n";
  }
  if (!view.rows.empty()) {
    out += "\n## Training step\n\nFull step (host-to-device copy, forward, loss, backward, SGD step); images/s is the "
           "median over repetitions (± its CV)";
    out += view.baseline.empty() || view.devices.size() < 2 ? ".\n"
                                                            : fmt::format(", speedup against {}.\n", markdown_text(view.baseline));
    out += chart_links(charts, "training");
    for (const auto& [model, rows] : grouped.models) {
      out += fmt::format("\n### {}\n\n", markdown_text(model)) + training_table(view, grouped, rows).markdown();
    }
    const Table variants = variant_table(results);
    if (!variants.rows.empty()) {
      out += "\n### Variants\n\nEach training-step variant against the baseline (fp32, NCHW, no cuDNN autotuning, no "
             "CUDA graph) of the same model, device and batch: images/s ratio. Epoch: 50 000 images at the median "
             "step time. Model TFLOP/s counts the convolutions and linear layers (3x the forward FLOP per image); "
             "MFU divides it by the device's compute roof at the precision the convolutions use (TF32 for fp32 on "
             "GPUs, LibTorch's cuDNN default): the best GEMM or convolution measured in the same run, or the CPU's "
             "theoretical peak where higher (see Roofs); MFU (datasheet), shown where a device's part is in "
             "our table, divides by the vendor's dense figure at that precision instead (see Roofs).\n\n" +
             variants.markdown();
    }
    const Table phases = phase_table(results);
    if (!phases.rows.empty()) {
      out +=
          "\n### Per-phase breakdown\n\nMedian ms per phase from a separate instrumented pass (a device sync "
          "between phases), so the sum exceeds the pipelined step time on a GPU; on the CPU the step and the sum of "
          "its phases must agree within 25%.\n" +
          chart_links(charts, "phases") + "\n" + phases.markdown();
    }
  }
  out += traces_markdown(options.traces);
  const Table ops = op_table(results);
  if (!ops.rows.empty()) {
    out +=
        "\n## Ops\n\nGFLOP/s and GB/s from analytic FLOP and minimal byte counts at the median time; % of roof "
        "against the roofline of the device's peaks measured in the same run.\n" +
        chart_links(charts, "ops") + "\n" + ops.markdown();
  }
  const auto roofs = peak_rows(results);
  if (!roofs.empty()) {
    std::set<std::string> sources;
    for (const auto& row : roofs) {
      if (!row.source.empty()) sources.insert(row.source);
    }
    out += "\n## Roofs: measured and datasheet\n\nThe roofs above, as this run measured them (the best large GEMM or "
           "convolution per dtype, the CPU's cores x clock x FLOP/cycle where higher and not suspect; a STREAM "
           "triad), beside the vendor's dense figures where we have the part's datasheet";
    out += sources.empty() ? " (none of these devices has one in our table).\n\n"
                           : fmt::format(" ({}).\n\n", fmt::join(sources, "; "));
    out += peak_table(roofs).markdown();
  }
  const Table scaling = scaling_table(results);
  if (!scaling.rows.empty()) {
    out +=
        "\n## Distributed training: scaling\n\nPer world size (ranks x batch per rank): the slowest rank's median "
        "step, global images/s, scaling efficiency (global / (world x one process alone)), the gradient "
        "all-reduce per step as the last rank to arrive sees it, its share of the step, and its bus bandwidth "
        "(bytes x 2(n-1)/n / time, as nccl-tests define it).\n" +
        chart_links(charts, "scaling") + "\n" + scaling.markdown();
  }
  const Table others = other_table(results);
  if (!others.rows.empty()) out += "\n## Other benchmarks\n" + chart_links(charts, "other") + "\n" + others.markdown();

  const Table sampling = sampling_table(results);
  if (!sampling.rows.empty()) {
    out +=
        "\n## Sampling\n\nEach repetition took samples until the noise of its mean (the relative standard error: "
        "the samples' standard deviation over the mean and the square root of their count) was under the target, "
        "with a minimum count and time, or until its timeout; samples and noise are the median over repetitions, "
        "the CV is the repetitions' own spread.\n\n" +
        sampling.markdown();
  }

  const auto lines = warnings(results, options.noise_cv_pct);
  if (!lines.empty()) {
    out += "\n## Warnings\n\n";
    for (const auto& line : lines) out += "- " + line + "\n";
  }
  return out;
}

std::string to_console_summary(const ResultSet& results, const ReportOptions& options) {
  std::string out;
  for (const auto& c : results.contexts) {
    if (c.partial()) out += fmt::format("PARTIAL RUN: {} is {}\n", terminal_line(c.source), terminal_line(c.run_status));
  }
  const TrainView view = train_view(results);
  const ModelRows grouped = model_rows(view);
  const auto sentences = comparison_sentences(view, grouped);
  for (const auto& line : sentences) out += terminal_line(line) + "\n";
  if (!sentences.empty()) out += "\n";
  for (const auto& [model, rows] : grouped.models) {
    out += fmt::format("train_step/{}\n", terminal_line(model)) + training_table(view, grouped, rows).console() + "\n";
  }
  const Table variants = variant_table(results);
  if (!variants.rows.empty()) out += "train_step variants\n" + variants.console() + "\n";
  const Table ops = op_table(results);
  if (!ops.rows.empty()) out += "ops\n" + ops.console() + "\n";
  const Table peaks = peak_table(peak_rows(results));
  if (!peaks.rows.empty()) out += "roofs: measured and datasheet\n" + peaks.console() + "\n";
  const Table scaling = scaling_table(results);
  if (!scaling.rows.empty()) out += "dist_train scaling\n" + scaling.console() + "\n";
  const Table others = other_table(results);
  if (!others.rows.empty()) out += "other\n" + others.console() + "\n";
  const auto lines = warnings(results, options.noise_cv_pct);
  if (!lines.empty()) out += fmt::format("{} warning(s); see report.md\n", lines.size());
  return out;
}

}  // namespace torchprobe::report
