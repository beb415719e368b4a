#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "report_test_util.h"
#include "torchprobe/report/datasheet.h"
#include "torchprobe/report/printers.h"
#include "torchprobe/report/results.h"
#include "torchprobe/report/table.h"
#include "torchprobe/report/views.h"
#include "torchprobe/roofline.h"

TEST(ReportViews, SpeedupAgainstTheCpuAndRooflineFigures) {
  const auto set = fixture();
  const auto view = report::train_view(set);
  EXPECT_EQ(view.baseline, "cpu");
  ASSERT_EQ(view.devices, (std::vector<std::string>{"cpu", "cuda:0"}));
  ASSERT_EQ(view.rows.size(), 2u);
  EXPECT_NEAR(report::speedup(view.rows[0], "cuda:0", "cpu"), 64000.0 / 5818.18, 1e-9);
  EXPECT_TRUE(std::isnan(report::speedup(view.rows[1], "cuda:0", "cpu")));  // failed run: no speedup

  // matmul n=4096 bf16 at 0.21 ms: 2n^3 FLOP over 3 n^2 bf16 matrices.
  const auto mm = report::op_metrics(find(set, "op/matmul/cuda:0/n:4096/dtype:bf16"));
  EXPECT_NEAR(mm.gflop_per_s, 2.0 * std::pow(4096.0, 3) / 0.21e-3 / 1e9, 1e-6);
  EXPECT_NEAR(mm.intensity, 4096.0 / 3.0, 1e-9);
  EXPECT_EQ(mm.bound, "compute");  // above the ridge 800000/3000 = 267 FLOP/byte
  EXPECT_NEAR(mm.pct_of_roof, 100.0 * mm.gflop_per_s / 800000.0, 1e-9);
  const auto copy = report::op_metrics(find(set, "op/copy/cuda:0/kind:d2d/mib:1024"));
  EXPECT_EQ(copy.bound, "memory");
  EXPECT_NEAR(copy.gb_per_s, 2.0 * std::pow(1024.0, 3) / 0.8e-3 / 1e9, 1e-6);
  EXPECT_NEAR(copy.pct_of_roof, 100.0 * copy.gb_per_s / 3000.0, 1e-9);
}

// Rows follow the models as first seen, then the variant, then the batch size from the smallest up, whatever the
// order the file lists them in.
TEST(ReportViews, TrainingRowsGoByModelThenVariantThenBatchUp) {
  std::string benchmarks;
  for (const char* name : {"resnet18/cpu/batch:64", "net/cpu/batch:64", "resnet18/cpu/batch:4", "net/cpu/batch:16",
                           "net/cpu/batch:4", "resnet18/cpu/batch:16/dtype:bf16", "resnet18/cpu/batch:4/dtype:bf16"}) {
    benchmarks += fmt::format(R"({}{{"name": "train_step/{}/manual_time", "run_type": "iteration", "real_time": 5,
      "time_unit": "ms", "images_per_s": 100}})",
                              benchmarks.empty() ? "" : ",", name);
  }
  const auto view = report::train_view(report::parse_results(R"({"benchmarks": [)" + benchmarks + "]}", "order.json"));
  std::vector<std::string> order;
  for (const auto& row : view.rows) order.push_back(row.label());
  EXPECT_EQ(order,
            (std::vector<std::string>{"resnet18 batch:4", "resnet18 batch:64", "resnet18 batch:4 dtype:bf16",
                                      "resnet18 batch:16 dtype:bf16", "net batch:4", "net batch:16", "net batch:64"}));
}

TEST(ReportViews, WarningsNameNoisyAndFailedBenchmarks) {
  const auto lines = report::warnings(fixture(), /*noise_cv_pct=*/5.0);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_NE(lines[0].find(
                "`train_step/net/cpu/batch:64/dtype:fp32/layout:nchw`: CV 9.1% over 3 repetitions exceeds the 5.0%"),
            std::string::npos);
  EXPECT_NE(lines[2].find("did not run: CUDA out of memory"), std::string::npos);
  EXPECT_EQ(report::warnings(fixture(), /*noise_cv_pct=*/10.0).size(), 1u);
}

// The CPU's bf16 roof appears in the Roofs table from the training steps that used it (the CPU's ops run in
// fp32 only), with its parts: the best GEMM/conv and cores x MHz x FLOP/cycle; a GPU's fp32 training steps add
// its TF32 roof (their MFU's denominator: a report of training steps alone said "see Roofs" and had none).
TEST(ReportRoofs, TheCpuBf16RoofComesFromItsTrainingStepsWithItsParts) {
  const std::string json = R"({"benchmarks": [
    {"name": "train_step/resnet18/cpu/batch:64/dtype:bf16/layout:cl/manual_time", "run_type": "iteration",
     "real_time": 500, "time_unit": "ms", "images_per_s": 128, "peak_tflop_per_s": 0.371, "mfu_pct": 40,
     "roof_gemm_gflop_per_s": 180, "roof_conv_gflop_per_s": 210, "roof_theoretical_gflop_per_s": 371,
     "roof_theoretical_cores": 2, "roof_theoretical_clock_mhz": 2900, "roof_theoretical_flop_per_cycle": 64},
    {"name": "train_step/resnet18/cuda:0/batch:64/dtype:fp32/layout:nchw/cudnn:off/graph:off/manual_time",
     "run_type": "iteration", "real_time": 5, "time_unit": "ms", "images_per_s": 12800, "peak_tflop_per_s": 400}]})";
  const auto rows = report::peak_rows(report::parse_results(json, "bf16.json"));
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[1].device_label, "cuda:0");
  EXPECT_EQ(rows[1].what, "tf32");
  EXPECT_DOUBLE_EQ(rows[1].measured, 400000.0);
  EXPECT_EQ(rows[0].device_label, "cpu");
  EXPECT_EQ(rows[0].what, "bf16");
  EXPECT_DOUBLE_EQ(rows[0].measured, 371.0);
  EXPECT_DOUBLE_EQ(rows[0].kernels, 210.0);
  EXPECT_DOUBLE_EQ(rows[0].theoretical, 371.0);
  EXPECT_EQ(rows[0].cores, 2.0);
  EXPECT_EQ(rows[0].clock_mhz, 2900.0);
  EXPECT_EQ(rows[0].flop_per_cycle, 64.0);
  EXPECT_FALSE(rows[0].suspect);
  const auto set = report::parse_results(json, "bf16.json");
  const std::string md = report::to_markdown(set, report::make_charts(set), report::ReportOptions{});
  EXPECT_NE(md.find("| cpu | - | bf16 | 371 GFLOP/s | 210 GFLOP/s | 371 GFLOP/s (2 x 2900 x 64) | - | - |"),
            std::string::npos)
      << md;
}

TEST(ReportDatasheet, NamedPartsOnlyAndDenseFigures) {
  const auto* sxm = report::datasheet_for("NVIDIA H100 80GB HBM3");
  ASSERT_NE(sxm, nullptr);
  EXPECT_STREQ(sxm->part, "H100 SXM5 80GB");
  EXPECT_DOUBLE_EQ(report::datasheet_gflop_per_s(*sxm, "bf16"), 989.4e3);  // 1979 with sparsity, halved
  EXPECT_DOUBLE_EQ(report::datasheet_gflop_per_s(*sxm, "tf32"), 494.7e3);
  EXPECT_TRUE(std::isnan(report::datasheet_gflop_per_s(*sxm, "int8")));
  ASSERT_NE(report::datasheet_for("NVIDIA H100 PCIe"), nullptr);
  EXPECT_STREQ(report::datasheet_for("NVIDIA H100 PCIe")->part, "H100 PCIe 80GB");
  ASSERT_NE(report::datasheet_for("NVIDIA H200"), nullptr);
  EXPECT_DOUBLE_EQ(report::datasheet_for("NVIDIA H200")->memory_gb_per_s, 4800.0);
  // Parts we have not checked figures for get none rather than a neighbour's.
  EXPECT_EQ(report::datasheet_for("NVIDIA H200 NVL"), nullptr);
  EXPECT_EQ(report::datasheet_for("NVIDIA H100 NVL"), nullptr);
  EXPECT_EQ(report::datasheet_for("AMD EPYC 9B14"), nullptr);
  EXPECT_EQ(report::datasheet_for(""), nullptr);
}

TEST(ReportDatasheet, EveryPartHasItsDatasheetsFigures) {
  // Each part CUDA can name, with every figure of NVIDIA's datasheets (dense TFLOP/s: sparsity figures
  // halved; memory in GB/s). The A100s share their compute and differ in memory only.
  struct Part {
    const char* cuda_name;
    const char* part;
    double fp64, fp32, tf32, bf16, fp16, memory;
  };
  const Part parts[] = {
      {"NVIDIA H100 80GB HBM3", "H100 SXM5 80GB", 66.9, 66.9, 494.7, 989.4, 989.4, 3350.0},
      {"NVIDIA H100 SXM5 80GB", "H100 SXM5 80GB", 66.9, 66.9, 494.7, 989.4, 989.4, 3350.0},
      {"NVIDIA H100 PCIe", "H100 PCIe 80GB", 51.2, 51.2, 378.0, 756.5, 756.5, 2000.0},
      {"NVIDIA H200", "H200 SXM 141GB", 66.9, 66.9, 494.7, 989.4, 989.4, 4800.0},
      {"NVIDIA A100-SXM4-80GB", "A100 SXM4 80GB", 19.5, 19.5, 156.0, 312.0, 312.0, 2039.0},
      {"NVIDIA A100-SXM4-40GB", "A100 SXM4 40GB", 19.5, 19.5, 156.0, 312.0, 312.0, 1555.0},
      {"NVIDIA A100 80GB PCIe", "A100 PCIe 80GB", 19.5, 19.5, 156.0, 312.0, 312.0, 1935.0},
  };
  for (const Part& p : parts) {
    const auto* sheet = report::datasheet_for(p.cuda_name);
    ASSERT_NE(sheet, nullptr) << p.cuda_name;
    EXPECT_STREQ(sheet->part, p.part) << p.cuda_name;
    EXPECT_DOUBLE_EQ(report::datasheet_gflop_per_s(*sheet, "fp64"), p.fp64 * 1e3) << p.cuda_name;
    EXPECT_DOUBLE_EQ(report::datasheet_gflop_per_s(*sheet, "fp32"), p.fp32 * 1e3) << p.cuda_name;
    EXPECT_DOUBLE_EQ(report::datasheet_gflop_per_s(*sheet, "tf32"), p.tf32 * 1e3) << p.cuda_name;
    EXPECT_DOUBLE_EQ(report::datasheet_gflop_per_s(*sheet, "bf16"), p.bf16 * 1e3) << p.cuda_name;
    EXPECT_DOUBLE_EQ(report::datasheet_gflop_per_s(*sheet, "fp16"), p.fp16 * 1e3) << p.cuda_name;
    EXPECT_DOUBLE_EQ(sheet->memory_gb_per_s, p.memory) << p.cuda_name;
  }
}

// A run with a compute roof and no bandwidth roof (no STREAM triad) still places its FLOP-counting ops.
TEST(ReportRoofline, AComputeRoofAloneStillJudgesOpsThatCountFlops) {
  const auto p = torchprobe::roofline(1e12, 1e9, 1.0, 2000.0, std::nan(""));
  EXPECT_EQ(p.bound, "compute");
  EXPECT_DOUBLE_EQ(p.pct_of_roof, 50.0);
  const auto copy = torchprobe::roofline(0.0, 1e9, 1.0, 2000.0, std::nan(""));  // a copy needs the bandwidth roof
  EXPECT_EQ(copy.bound, "");
  EXPECT_TRUE(std::isnan(copy.pct_of_roof));
}

// The formatters every printer shares, at the edges of each rule (table.h gives the rules).
TEST(ReportFormat, EachFormatterAtItsEdges) {
  const double nan = std::nan("");
  EXPECT_EQ(report::format_number(0.0), "0");
  EXPECT_EQ(report::format_number(0.12345), "0.123");
  EXPECT_EQ(report::format_number(-12.34), "-12.3");
  EXPECT_EQ(report::format_number(1234.4), "1234");
  EXPECT_EQ(report::format_number(nan), "-");
  EXPECT_EQ(report::format_duration(0.0), "0 ms");
  EXPECT_EQ(report::format_duration(1000.0), "1.00 s");
  EXPECT_EQ(report::format_duration(999.0), "999 ms");
  EXPECT_EQ(report::format_duration(1.0), "1.00 ms");
  EXPECT_EQ(report::format_duration(0.999), "999 us");
  EXPECT_EQ(report::format_duration(0.001), "1.00 us");
  EXPECT_EQ(report::format_duration(0.000101), "101 ns");
  EXPECT_EQ(report::format_rate(1234567.0), "1 234 567");
  EXPECT_EQ(report::format_rate(1000.0), "1 000");
  EXPECT_EQ(report::format_rate(999.0), "999");
  EXPECT_EQ(report::format_rate(1.234), "1.23");
  EXPECT_EQ(report::format_ratio(3.4167), "3.42x");
  EXPECT_EQ(report::format_ratio(nan), "-");
  EXPECT_EQ(report::format_pct(4.24), "4.2%");
  EXPECT_EQ(report::format_pct(4.24, /*sign=*/true), "+4.2%");
  EXPECT_EQ(report::format_pct(-2.0, /*sign=*/true), "-2.0%");
  EXPECT_EQ(report::format_pct(0.0, /*sign=*/true), "+0.0%");
  // A CV of 0 (identical repetitions) is a measured 0, not an unknown one: only below 0 is "-".
  EXPECT_EQ(report::format_cv(0.0), "0.0%");
  EXPECT_EQ(report::format_cv(5.0), "5.0%");
  EXPECT_EQ(report::format_cv(-1.0), "-");
  EXPECT_EQ(report::format_cv(nan), "-");
  EXPECT_EQ(report::format_roof_pct(142.34, "cache-resident"), "142.3% (cache-resident)");
  EXPECT_EQ(report::format_roof_pct(87.0, ""), "87.0%");
  EXPECT_EQ(report::format_roof_pct(nan, "effective"), "-");
}

TEST(ReportDatasheet, RoofsAndMfuBesideTheDatasheet) {
  const auto set = fixture();  // cuda:0 is an "NVIDIA H100 80GB HBM3" with a measured bf16 roof of 800 000 GFLOP/s
  const auto rows = report::peak_rows(set);
  const auto row = std::find_if(rows.begin(), rows.end(),
                                [](const auto& r) { return r.device_label == "cuda:0" && r.what == "bf16"; });
  ASSERT_NE(row, rows.end());
  EXPECT_DOUBLE_EQ(row->measured, 800000.0);
  EXPECT_DOUBLE_EQ(row->datasheet, 989400.0);
  const std::string md = report::to_markdown(set, {}, report::ReportOptions{});
  EXPECT_NE(md.find("## Roofs: measured and datasheet"), std::string::npos) << md;
  EXPECT_NE(md.find("| cuda:0 | NVIDIA H100 80GB HBM3 | bf16 | 800 TFLOP/s | - | - | 989 TFLOP/s | 80.9% |"),
            std::string::npos)
      << md;
  EXPECT_NE(
      md.find("| cuda:0 | NVIDIA H100 80GB HBM3 | memory (STREAM triad) | 3000 GB/s | - | - | 3350 GB/s | 89.6% |"),
      std::string::npos)
      << md;

  // A training step's MFU against the datasheet: bf16 at 296.8 model TFLOP/s on an H100 SXM is 30.0% of 989.4.
  const std::string json =
      R"({"context": {"host_name": "h", "inventory": "{\"cuda\": {\"devices\": [{\"device\": \"cuda:0\", \"name\": \"NVIDIA H100 80GB HBM3\"}]}}"}, "benchmarks": [
    {"name": "train_step/resnet18/cuda:0/batch:512/dtype:fp32/layout:nchw/cudnn:off/graph:off/manual_time", "run_type": "iteration",
     "iterations": 10, "real_time": 20.0, "time_unit": "ms", "images_per_s": 25600.0, "model_tflop_per_s": 98.94, "mfu_pct": 25.0},
    {"name": "train_step/resnet18/cuda:0/batch:512/dtype:bf16/layout:cl/cudnn:on/graph:off/manual_time", "run_type": "iteration",
     "iterations": 10, "real_time": 6.67, "time_unit": "ms", "images_per_s": 76800.0, "model_tflop_per_s": 296.82, "mfu_pct": 37.1}]})";
  const auto variants = report::parse_results(json, "v.json");
  const std::string vmd = report::to_markdown(variants, {}, report::ReportOptions{});
  EXPECT_NE(vmd.find("| MFU | MFU (datasheet) | vs baseline |"), std::string::npos) << vmd;
  EXPECT_NE(vmd.find("| 37.1% | 30.0% | 3.00x |"), std::string::npos) << vmd;
  EXPECT_NE(vmd.find("| 25.0% | 20.0% | 1.00x |"), std::string::npos) << vmd;  // fp32 on a GPU: against TF32's 494.7
}

TEST(ReportBoundaries, AboveTheDatasheetOnlyAbove100Percent) {
  // An H100 SXM's dense bf16 figure is 989.4 TFLOP/s: a measured roof exactly at it is 100.0% and unlabelled;
  // a hair above is labelled.
  const auto share_row = [](double measured_gflop) {
    const std::string json =
        R"({"context": {"host_name": "h", "inventory": "{\"cuda\": {\"devices\": [{\"device\": \"cuda:0\", \"name\": \"NVIDIA H100 80GB HBM3\"}]}}"}, "benchmarks": [
      {"name": "op/matmul/cuda:0/n:8192/dtype:bf16/manual_time", "run_type": "iteration", "iterations": 10, "real_time": 2.0,
        "time_unit": "ms", "flops": 1.099511627776e12, "bytes": 402653184, "peak_gb_per_s": 3000, "peak_gflop_per_s": )" +
        std::to_string(measured_gflop) + "}]}";
    const std::string md = report::to_markdown(report::parse_results(json, "d.json"), {}, report::ReportOptions{});
    const size_t at = md.find("| cuda:0 | NVIDIA H100 80GB HBM3 | bf16");
    return at == std::string::npos ? md : md.substr(at, md.find('\n', at) - at);
  };
  EXPECT_EQ(share_row(989400.0),
            "| cuda:0 | NVIDIA H100 80GB HBM3 | bf16 | 989 TFLOP/s | - | - | 989 TFLOP/s | 100.0% |");
  EXPECT_EQ(
      share_row(989500.0),
      "| cuda:0 | NVIDIA H100 80GB HBM3 | bf16 | 990 TFLOP/s | - | - | 989 TFLOP/s | 100.0% (above the datasheet) |");
  EXPECT_EQ(share_row(989300.0),
            "| cuda:0 | NVIDIA H100 80GB HBM3 | bf16 | 989 TFLOP/s | - | - | 989 TFLOP/s | 100.0% |");
}

// ---- Every documented threshold: exactly at it, and one step to each side (tests/README.md) ----

namespace {

// One benchmark of one repetition, with these counters.
report::ResultSet one(const std::string& name, double ms, const std::string& counters = "") {
  return report::parse_results(R"({"benchmarks": [{"name": ")" + name + R"(", "run_type": "iteration", "real_time": )" +
                                   std::to_string(ms) + R"(, "time_unit": "ms")" + counters + "}]}",
                               "one.json");
}

size_t lines_with(const std::vector<std::string>& lines, const std::string& needle) {
  return static_cast<size_t>(std::count_if(lines.begin(), lines.end(),
                                           [&](const std::string& l) { return l.find(needle) != std::string::npos; }));
}

}  // namespace

// "Warn when a CV exceeds --noise-cv": a CV of exactly 5.0% against 5% is no warning; a threshold one step lower is.
TEST(ReportBoundaries, NoiseWarningOnlyAboveTheThreshold) {
  auto set = one("op/add/cpu/n:1024", 2.0);
  set.results[0].cv_pct = 5.0;
  set.results[0].repetitions = 5;
  EXPECT_EQ(lines_with(report::warnings(set, 5.0), "noise threshold"), 0u);
  EXPECT_EQ(lines_with(report::warnings(set, std::nextafter(5.0, 10.0)), "noise threshold"), 0u);
  const auto below = report::warnings(set, std::nextafter(5.0, 0.0));
  ASSERT_EQ(lines_with(below, "noise threshold"), 1u);
  EXPECT_NE(below[0].find("`op/add/cpu/n:1024`: CV 5.0% over 5 repetitions exceeds the 5.0% noise threshold"),
            std::string::npos)
      << below[0];
}

// "The timeout stopped its sampling" when the noise of the mean is above its target: a noise exactly at the target
// (1.0% against 1.0%) is neither warned about nor marked "(timeout)" in the Sampling table; one step above, both.
TEST(ReportBoundaries, NoiseAboveItsTargetOnlyWhenStrictlyAbove) {
  const auto judged = [](double noise_pct, bool expect_warning) {
    const auto set = one("op/add/cpu/n:1024", 2.0,
                         fmt::format(R"(, "samples": 40, "noise_pct": {:.17g}, "max_noise_pct": 1.0)", noise_pct));
    ASSERT_EQ(set.results[0].counter("noise_pct"), noise_pct);
    const std::string what = fmt::format("noise {:.17g}", noise_pct);
    EXPECT_EQ(report::noise_above_target(set.results[0]), expect_warning) << what;
    EXPECT_EQ(lines_with(report::warnings(set, 5.0), "the timeout stopped its sampling"), expect_warning ? 1u : 0u)
        << what;
    const std::string markdown = report::to_markdown(set, report::make_charts(set), report::ReportOptions{});
    EXPECT_EQ(markdown.find("(timeout)") != std::string::npos, expect_warning) << what;
  };
  judged(1.0, false);
  judged(std::nextafter(1.0, 0.0), false);
  judged(std::nextafter(1.0, 2.0), true);
}

// "A CPU step whose time differs from the sum of its phases by more than 25%": a 4.00 ms step with phases summing to
// 3.00 ms (or 5.00 ms) differs by 25.0% exactly: no warning, and the phase table does not say "do not add up";
// 1 us further out, both do.
TEST(ReportBoundaries, PhasesAddUpWithinTheToleranceInclusive) {
  const auto step = [](double optimizer_ms) {
    return one("train_step/net/cpu/batch:64/dtype:fp32/layout:nchw", 4.0,
               R"(, "h2d_ms": 0.0, "forward_ms": 1.0, "loss_ms": 0.5, "backward_ms": 1.0, "optimizer_ms": )" +
                   std::to_string(optimizer_ms));
  };
  const auto judged = [&](double optimizer_ms, bool expect_warning) {
    const auto set = step(optimizer_ms);
    const std::string what = "optimizer " + std::to_string(optimizer_ms) + " ms";
    EXPECT_EQ(lines_with(report::warnings(set, 5.0), "phases add up to"), expect_warning ? 1u : 0u) << what;
    const std::string markdown = report::to_markdown(set, report::make_charts(set), report::ReportOptions{});
    EXPECT_EQ(markdown.find("(do not add up") != std::string::npos, expect_warning) << what;
  };
  ASSERT_EQ(report::kPhaseSumTolerance, 0.25);
  judged(0.5, false);    // sum 3.000: -25.0% exactly
  judged(0.499, true);   // sum 2.999
  judged(0.501, false);  // sum 3.001
  judged(2.5, false);    // sum 5.000: +25.0% exactly
  judged(2.501, true);   // sum 5.001
  judged(2.499, false);
}

// On a GPU the phases, each timed to its end, overlap the pipelined step and always add up to more: only a CPU step's
// phases are held to the sum.
TEST(ReportBoundaries, OnlyACpuStepsPhasesMustAddUp) {
  for (const std::string device : {"cpu", "cuda:0"}) {
    const auto set =
        one("train_step/net/" + device + "/batch:64/dtype:fp32/layout:nchw", 1.0,
            R"(, "h2d_ms": 0.0, "forward_ms": 1.0, "loss_ms": 0.0, "backward_ms": 1.0, "optimizer_ms": 0.0)");
    const bool cpu = device == "cpu";
    EXPECT_EQ(lines_with(report::warnings(set, 5.0), "phases add up to"), cpu ? 1u : 0u) << device;
    const std::string markdown = report::to_markdown(set, report::make_charts(set), report::ReportOptions{});
    EXPECT_EQ(markdown.find("(do not add up") != std::string::npos, cpu) << device;
  }
}

// A figure above 100% of its roof carries a label; exactly 100% does not (it is a plain measurement at the roof).
TEST(ReportBoundaries, RoofAndMfuLabelsOnlyAbove100Percent) {
  const double above = std::nextafter(100.0, 200.0), below = std::nextafter(100.0, 0.0);
  for (const std::string bound : {"compute", "memory"}) {
    EXPECT_EQ(torchprobe::roof_label(100.0, bound), "") << bound;
    EXPECT_EQ(torchprobe::roof_label(below, bound), "") << bound;
    EXPECT_EQ(torchprobe::roof_label(above, bound), "at roof") << bound;
    EXPECT_EQ(torchprobe::roof_label(torchprobe::kAtRoofPct, bound), "at roof") << bound;
    EXPECT_EQ(torchprobe::roof_label(std::nextafter(torchprobe::kAtRoofPct, 200.0), bound),
              bound == "memory" ? "cache-resident" : "effective");
  }
  // A GEMM's FLOPs are exact: above the "at roof" band its roof was measured low, it did not do fewer FLOPs.
  EXPECT_EQ(torchprobe::roof_label(torchprobe::kAtRoofPct, "compute", /*exact_flops=*/true), "at roof");
  EXPECT_EQ(torchprobe::roof_label(std::nextafter(torchprobe::kAtRoofPct, 200.0), "compute", /*exact_flops=*/true),
            "roof measured low");
  EXPECT_EQ(torchprobe::roof_label(std::nextafter(torchprobe::kAtRoofPct, 200.0), "memory", /*exact_flops=*/true),
            "cache-resident");
  EXPECT_EQ(torchprobe::roof_label(std::nan(""), "compute"), "");
  // The MFU of a training step: its label and its warning line.
  const auto mfu = [](double pct) {
    return one("train_step/net/cpu/batch:64/dtype:fp32/layout:nchw", 4.0, R"(, "mfu_pct": )" + exact(pct));
  };
  EXPECT_EQ(report::mfu_label(mfu(100.0).results[0]), "");
  EXPECT_EQ(lines_with(report::warnings(mfu(100.0), 5.0), "above the compute roof"), 0u);
  EXPECT_EQ(report::mfu_label(mfu(above).results[0]), "at roof");
  EXPECT_EQ(lines_with(report::warnings(mfu(above), 5.0), "the step runs at the roof"), 1u);
  const double beyond = std::nextafter(torchprobe::kAtRoofPct, 200.0);
  EXPECT_EQ(report::mfu_label(mfu(beyond).results[0]), "effective");
  EXPECT_EQ(lines_with(report::warnings(mfu(beyond), 5.0), "above the compute roof: the kernels did fewer"), 1u);
  EXPECT_EQ(report::mfu_label(mfu(below).results[0]), "");
  // An op at exactly its roof: 1000 GFLOP/s against a 1000 GFLOP/s roof, labelled neither way.
  const auto at_roof = torchprobe::roofline(/*flops=*/1e12, /*bytes=*/1e9, /*seconds=*/1.0, 1000.0, 100.0);
  EXPECT_EQ(at_roof.bound, "compute");
  EXPECT_DOUBLE_EQ(at_roof.pct_of_roof, 100.0);
  EXPECT_EQ(at_roof.label, "");
}

// The ridge point (intensity = peak FLOP/s / peak bytes/s) is compute-bound; just below it, memory-bound; the share
// of the roof is the same on both sides (the two roofs meet there).
TEST(ReportBoundaries, TheRidgePointIsComputeBound) {
  // Roofs 1000 GFLOP/s and 100 GB/s: the ridge is at 10 FLOP/byte.
  const auto at = torchprobe::roofline(/*flops=*/10e9, /*bytes=*/1e9, /*seconds=*/1.0, 1000.0, 100.0);
  EXPECT_EQ(at.intensity, 10.0);
  EXPECT_EQ(at.bound, "compute");
  EXPECT_DOUBLE_EQ(at.pct_of_roof, 1.0);
  const auto under = torchprobe::roofline(std::nextafter(10e9, 0.0), 1e9, 1.0, 1000.0, 100.0);
  EXPECT_EQ(under.bound, "memory");
  EXPECT_DOUBLE_EQ(under.pct_of_roof, 1.0);
  EXPECT_EQ(torchprobe::roofline(std::nextafter(10e9, 1e12), 1e9, 1.0, 1000.0, 100.0).bound, "compute");
}
