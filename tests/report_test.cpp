#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <limits>
#include <regex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "test_util.h"
#include "torchprobe/io.h"
#include "torchprobe/input_error.h"
#include "torchprobe/report/compare.h"
#include "torchprobe/report/datasheet.h"
#include "torchprobe/report/printers.h"
#include "torchprobe/report/svg_util.h"
#include "torchprobe/report/views.h"

namespace report = torchprobe::report;
using torchprobe::InputError;

namespace {

const std::string kFixtures = TORCHPROBE_FIXTURE_DIR;

report::ResultSet fixture() { return report::load_results({kFixtures + "/results.json"}); }

const report::Result& find(const report::ResultSet& set, const std::string& name) {
  for (const auto& r : set.results) {
    if (r.name == name) return r;
  }
  throw std::runtime_error("no result " + name);
}

// Minimal XML well-formedness: balanced, properly nested tags, quoted attributes, escaped text.
bool well_formed_xml(const std::string& xml, std::string& why) {
  std::vector<std::string> open;
  size_t i = 0;
  bool root_seen = false;
  while (i < xml.size()) {
    if (xml[i] != '<') {
      if (xml[i] == '&') {
        const auto semi = xml.find(';', i);
        static const std::regex entity("&(amp|lt|gt|quot|apos|#[0-9]+);");
        if (semi == std::string::npos || !std::regex_match(xml.substr(i, semi - i + 1), entity)) {
          why = "bare & at " + std::to_string(i);
          return false;
        }
      }
      if (open.empty() && root_seen && !std::isspace(static_cast<unsigned char>(xml[i]))) {
        why = "text after the root element";
        return false;
      }
      ++i;
      continue;
    }
    const auto close = xml.find('>', i);
    if (close == std::string::npos) {
      why = "unterminated tag";
      return false;
    }
    std::string tag = xml.substr(i + 1, close - i - 1);
    i = close + 1;
    if (tag.front() == '?') continue;  // XML declaration
    if (tag.front() == '/') {
      if (open.empty() || open.back() != tag.substr(1)) {
        why = "mismatched </" + tag.substr(1) + ">";
        return false;
      }
      open.pop_back();
      continue;
    }
    const bool self_closing = tag.back() == '/';
    if (self_closing) tag.pop_back();
    static const std::regex element(R"(([A-Za-z_][\w:.-]*)(\s+[\w:.-]+="[^"<&]*(&(amp|lt|gt|quot);[^"<&]*)*")*\s*)");
    std::smatch m;
    if (!std::regex_match(tag, m, element)) {
      why = "malformed tag <" + tag + ">";
      return false;
    }
    if (open.empty() && root_seen) {
      why = "second root element";
      return false;
    }
    root_seen = true;
    if (!self_closing) open.push_back(m[1]);
  }
  if (!open.empty()) why = "unclosed <" + open.back() + ">";
  return open.empty() && root_seen;
}

size_t count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

}  // namespace

TEST(ReportNames, CompletesTrainingNamesFromBeforeTheVariantAxes) {
  // Baselines recorded before the variant axes existed ran fp32, NCHW, no autotuning, no graph.
  report::Result cpu, gpu;
  report::parse_benchmark_name("train_step/net/cpu/batch:64/manual_time", cpu);
  EXPECT_EQ(cpu.name, "train_step/net/cpu/batch:64/dtype:fp32/layout:nchw");
  EXPECT_EQ(cpu.dtype, "fp32");
  report::parse_benchmark_name("train_step/net/cuda:0/batch:64", gpu);
  EXPECT_EQ(gpu.name, "train_step/net/cuda:0/batch:64/dtype:fp32/layout:nchw/cudnn:off/graph:off");
  EXPECT_EQ(report::train_variant(gpu, "/"), "") << "the baseline has no variant label";
  report::Result bf16;
  report::parse_benchmark_name("train_step/net/cuda:0/batch:64/dtype:bf16/layout:cl/cudnn:on/graph:off", bf16);
  EXPECT_EQ(report::train_variant(bf16, "/"), "cudnn:on/dtype:bf16/layout:cl");
}

TEST(ReportNames, SplitsSuiteSubjectDeviceAndParameters) {
  report::Result r;
  report::parse_benchmark_name("train_step/resnet18/cuda:1/batch:256/dtype:bf16/layout:cl/cudnn:on/graph:off/manual_time", r);
  EXPECT_EQ(r.name, "train_step/resnet18/cuda:1/batch:256/dtype:bf16/layout:cl/cudnn:on/graph:off");
  EXPECT_EQ(r.suite, "train_step");
  EXPECT_EQ(r.subject, "resnet18");
  EXPECT_EQ(r.device, "cuda:1");
  EXPECT_EQ(r.batch, 256);
  EXPECT_EQ(r.dtype, "bf16");
  EXPECT_EQ(r.params.at("layout"), "cl");

  report::Result data;
  report::parse_benchmark_name("data/parse_cifar10/images:50000/real_time", data);
  EXPECT_EQ(data.suite, "data");
  EXPECT_EQ(data.subject, "parse_cifar10");
  EXPECT_EQ(data.device, "cpu");  // host-side work
  EXPECT_EQ(data.dtype, "");
}

TEST(ReportLoad, PerRepetitionRunsGiveMedianCvAndCounters) {
  const auto set = fixture();
  ASSERT_EQ(set.results.size(), 6u);  // aggregates folded into their benchmark
  const auto& cpu = find(set, "train_step/net/cpu/batch:64/dtype:fp32/layout:nchw");
  EXPECT_EQ(cpu.repetitions, 3);
  EXPECT_DOUBLE_EQ(cpu.median_ms, 11.0);
  EXPECT_NEAR(cpu.cv_pct, 100.0 * 1.0 / 11.0, 1e-9);  // stddev 1 over mean 11
  EXPECT_DOUBLE_EQ(cpu.counter("images_per_s"), 5818.18);
  EXPECT_DOUBLE_EQ(cpu.counter("forward_ms"), 3.0);
  EXPECT_EQ(cpu.device_name, "Fixture CPU");
  const auto& gpu = find(set, "train_step/net/cuda:0/batch:64/dtype:fp32/layout:nchw/cudnn:off/graph:off");
  EXPECT_EQ(gpu.device_name, "NVIDIA H100 80GB HBM3");
  const auto& oom = find(set, "train_step/resnet18/cuda:0/batch:256/dtype:fp32/layout:nchw/cudnn:off/graph:off");
  EXPECT_TRUE(oom.failed());
  EXPECT_EQ(oom.error, "CUDA out of memory. Tried to allocate 2.00 GiB");
  const auto& data = find(set, "data/parse_cifar10/images:50000");
  EXPECT_EQ(data.repetitions, 1);
  EXPECT_LT(data.cv_pct, 0.0);  // undefined for one repetition
  ASSERT_EQ(set.contexts.size(), 1u);
  EXPECT_EQ(set.contexts[0].host, "fixture-host");
  ASSERT_EQ(set.contexts[0].devices.size(), 2u);
  EXPECT_EQ(set.contexts[0].devices[1].id, "cuda:0");
}

TEST(ReportLoad, AggregatesOnlyFilesUseTheMedianAggregate) {
  const std::string json = R"({"benchmarks": [
    {"name": "op/add/cpu/n:1024_mean", "run_name": "op/add/cpu/n:1024", "run_type": "aggregate", "aggregate_name": "mean",
     "repetitions": 5, "real_time": 2000.0, "time_unit": "us"},
    {"name": "op/add/cpu/n:1024_median", "run_name": "op/add/cpu/n:1024", "run_type": "aggregate", "aggregate_name": "median",
     "repetitions": 5, "real_time": 1500.0, "time_unit": "us", "flops": 1024},
    {"name": "op/add/cpu/n:1024_cv", "run_name": "op/add/cpu/n:1024", "run_type": "aggregate", "aggregate_name": "cv",
     "aggregate_unit": "percentage", "repetitions": 5, "real_time": 0.04, "time_unit": "us"}]})";
  const auto set = report::parse_results(json, "agg.json");
  ASSERT_EQ(set.results.size(), 1u);
  EXPECT_DOUBLE_EQ(set.results[0].median_ms, 1.5);
  EXPECT_DOUBLE_EQ(set.results[0].cv_pct, 4.0);
  EXPECT_EQ(set.results[0].repetitions, 5);
  EXPECT_DOUBLE_EQ(set.results[0].counter("flops"), 1024.0);
  EXPECT_TRUE(set.results[0].samples_ms.empty());
}

TEST(ReportLoad, NonFiniteValuesFromGoogleBenchmarkAreTolerated) {
  const auto set = report::parse_results(
      R"({"benchmarks": [{"name": "x/cpu", "run_type": "iteration", "real_time": 1.0, "time_unit": "ms",
          "a": NaN, "b": -nan, "c": inf, "label": "NaN inside a string stays"}]})", "nan.json");
  ASSERT_EQ(set.results.size(), 1u);
  EXPECT_FALSE(set.results[0].has("a"));
  EXPECT_FALSE(set.results[0].has("c"));
}

TEST(ReportLoad, BadInputNamesTheFileAndTheProblem) {
  EXPECT_THROW_WITH(report::load_results({kFixtures + "/malformed.json"}), InputError, "malformed.json: not valid JSON");
  EXPECT_THROW_WITH(report::load_results({"/nonexistent/r.json"}), InputError, "/nonexistent/r.json: cannot open");
  EXPECT_THROW_WITH(report::parse_results(R"({"context": {}})", "f.json"), InputError, "f.json: no \"benchmarks\" array");
  EXPECT_THROW_WITH(report::parse_results(R"({"benchmarks": [{"name": "a", "real_time": "fast"}]})", "g.json"), InputError,
                    "g.json: benchmarks[0] (a): no numeric \"real_time\"");
  EXPECT_THROW_WITH(report::parse_results(R"({"benchmarks": [{"real_time": 1}]})", "h.json"), InputError,
                    "h.json: benchmarks[0]: an entry without a \"name\" string");
  EXPECT_THROW_WITH(report::load_results({}), InputError, "no results files given");
  // Integers that do not fit an int (found by fuzz_results: a float one was converted with undefined behaviour).
  EXPECT_THROW_WITH(report::parse_results(R"({"context": {"num_cpus": 5.5e65}, "benchmarks": []})", "i.json"), InputError,
                    "i.json: context: \"num_cpus\" must be an integer, got 5.5e+65");
  EXPECT_THROW_WITH(report::parse_results(R"({"benchmarks": [{"name": "a", "real_time": 1, "repetition_index": 4294967296}]})",
                                          "j.json"),
                    InputError, "\"repetition_index\" is out of range (4294967296)");
}

TEST(ReportLoad, TwoBenchmarksUnderOneNameAreAnErrorNotAMerge) {
  const std::string entry = R"({"name": "bm/x", "run_name": "bm/x", "run_type": "iteration", "repetition_index": 0, "real_time": 1, "time_unit": "ms"})";
  EXPECT_THROW_WITH(report::parse_results(R"({"benchmarks": [)" + entry + "," + entry + "]}", "dup.json"), InputError,
                    "dup.json: benchmarks[1] (bm/x): repetition 0 of 'bm/x' appears twice");
  // Repetitions 0 and 1 of one benchmark are one result.
  const std::string second = R"({"name": "bm/x", "run_name": "bm/x", "run_type": "iteration", "repetition_index": 1, "real_time": 3, "time_unit": "ms"})";
  const auto set = report::parse_results(R"({"benchmarks": [)" + entry + "," + second + "]}", "ok.json");
  ASSERT_EQ(set.results.size(), 1u);
  EXPECT_EQ(set.results[0].repetitions, 2);
}

// Names are user text of any length: a 60 KB one (a generated parameter list) loads and every printer takes it.
TEST(ReportLoad, ASixtyKilobyteBenchmarkNameLoadsAndPrints) {
  std::string name = "op/add/cpu/n:1024/";
  while (name.size() < 60 * 1024) name += "shape:2x64x32x32_";
  const std::string json = R"({"benchmarks": [{"name": ")" + name +
                           R"(", "run_type": "iteration", "iterations": 10, "real_time": 2.0, "time_unit": "ms"}]})";
  const auto set = report::parse_results(json, "long.json");
  ASSERT_EQ(set.results.size(), 1u);
  EXPECT_EQ(set.results[0].name, name);
  const auto charts = report::make_charts(set);
  EXPECT_NE(report::to_csv(set).find(name.substr(0, 1000)), std::string::npos);
  EXPECT_FALSE(report::to_markdown(set, charts, report::ReportOptions{}).empty());
  EXPECT_FALSE(report::to_console_summary(set, report::ReportOptions{}).empty());
  for (const auto& chart : charts) {
    std::string why;
    EXPECT_TRUE(well_formed_xml(chart.svg, why)) << chart.file << ": " << why;
  }
}

TEST(ReportLoad, APartialRunSaysSo) {
  const auto set = report::parse_results(
      R"({"context": {"torchprobe_run": "partial: interrupted by SIGTERM after 2 of 5 benchmarks"}, "benchmarks": []})", "p.json");
  EXPECT_TRUE(set.contexts[0].partial());
  EXPECT_EQ(set.partial_runs(), "p.json: interrupted by SIGTERM after 2 of 5 benchmarks");
  const auto done = report::parse_results(R"j({"context": {"torchprobe_run": "complete (5 of 5 benchmarks)"}, "benchmarks": []})j", "c.json");
  EXPECT_FALSE(done.contexts[0].partial());
  EXPECT_EQ(done.partial_runs(), "");
}

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

TEST(ReportViews, WarningsNameNoisyAndFailedBenchmarks) {
  const auto lines = report::warnings(fixture(), /*noise_cv_pct=*/5.0);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_NE(lines[0].find("`train_step/net/cpu/batch:64/dtype:fp32/layout:nchw`: CV 9.1% over 3 repetitions exceeds the 5.0%"), std::string::npos);
  EXPECT_NE(lines[2].find("did not run: CUDA out of memory"), std::string::npos);
  EXPECT_EQ(report::warnings(fixture(), /*noise_cv_pct=*/10.0).size(), 1u);
}

// The CPU's bf16 roof appears in the Roofs table from the training steps that used it (the CPU's ops run in
// fp32 only), with its parts: the best GEMM/conv and cores x MHz x FLOP/cycle; a GPU's training roofs do not
// add rows (its fp32 steps use TF32's roof, which its ops list).
TEST(ReportRoofs, TheCpuBf16RoofComesFromItsTrainingStepsWithItsParts) {
  const std::string json = R"({"benchmarks": [
    {"name": "train_step/resnet18/cpu/batch:64/dtype:bf16/layout:cl/manual_time", "run_type": "iteration",
     "real_time": 500, "time_unit": "ms", "images_per_s": 128, "peak_tflop_per_s": 0.371, "mfu_pct": 40,
     "roof_gemm_gflop_per_s": 180, "roof_conv_gflop_per_s": 210, "roof_theoretical_gflop_per_s": 371,
     "roof_theoretical_cores": 2, "roof_theoretical_clock_mhz": 2900, "roof_theoretical_flop_per_cycle": 64},
    {"name": "train_step/resnet18/cuda:0/batch:64/dtype:fp32/layout:nchw/cudnn:off/graph:off/manual_time",
     "run_type": "iteration", "real_time": 5, "time_unit": "ms", "images_per_s": 12800, "peak_tflop_per_s": 400}]})";
  const auto rows = report::peak_rows(report::parse_results(json, "bf16.json"));
  ASSERT_EQ(rows.size(), 1u);
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
  EXPECT_NE(md.find("| cpu | - | bf16 | 371 GFLOP/s | 210 GFLOP/s | 371 GFLOP/s (2 x 2900 x 64) | - | - |"), std::string::npos) << md;
}

// Golden files: regenerate with `torchprobe report tests/fixtures/report/results.json --out DIR` and review the diff.
TEST(ReportGolden, CsvMatchesTheExpectedFile) {
  EXPECT_EQ(report::to_csv(fixture()), torchprobe::io::read_text_file(kFixtures + "/expected/results.csv"));
}

TEST(ReportGolden, MarkdownMatchesTheExpectedFile) {
  const auto set = fixture();
  std::string markdown = report::to_markdown(set, report::make_charts(set), report::ReportOptions{});
  markdown = std::regex_replace(markdown, std::regex(kFixtures + "/"), "");  // the expected file names "results.json"
  EXPECT_EQ(markdown, torchprobe::io::read_text_file(kFixtures + "/expected/report.md"));
}

// A run that cannot be trusted as it stands: host warnings from its context, a CPU step whose phases
// do not add up, an MFU and op figures above their roofs. Every one is said, and no figure above 100%
// appears without its label.
TEST(ReportGolden, TrustWarningsAndRoofLabels) {
  const auto set = report::load_results({kFixtures + "/trust.json"});
  const auto charts = report::make_charts(set);
  std::string markdown = report::to_markdown(set, charts, report::ReportOptions{});
  markdown = std::regex_replace(markdown, std::regex(kFixtures + "/"), "");
  EXPECT_EQ(markdown, torchprobe::io::read_text_file(kFixtures + "/expected/trust_report.md"));
  EXPECT_EQ(report::to_csv(set), torchprobe::io::read_text_file(kFixtures + "/expected/trust_results.csv"));
  // Any percentage above 100 in the report carries a label.
  const std::regex over_100(R"((1[0-9]{2}|[2-9][0-9]{2})\.[0-9]%( \((cache-resident|effective)\))?)");
  for (auto it = std::sregex_iterator(markdown.begin(), markdown.end(), over_100); it != std::sregex_iterator(); ++it) {
    EXPECT_TRUE((*it)[2].matched) << "unlabelled: " << it->str();
  }
  const auto lines = report::warnings(set, /*noise_cv_pct=*/5.0);
  ASSERT_EQ(lines.size(), 7u);
  // A theoretical roof far above what the run measured is named as suspect, once, and not used.
  EXPECT_EQ(count(markdown, "the theoretical fp32 compute roof, 7050 GFLOP/s, is 7.05x the best GEMM or convolution "
                            "measured in this run (1000 GFLOP/s): suspect"), 1u) << markdown;
  EXPECT_NE(lines[0].find("other processes were busy"), std::string::npos);
  EXPECT_NE(lines[2].find("phases add up to 2.74 ms"), std::string::npos) << lines[2];
  EXPECT_NE(lines[3].find("MFU 131.5% (effective) is above the compute roof"), std::string::npos) << lines[3];
}

// The two charts of a training report, in order, each well-formed XML.
static void expect_the_two_charts(const std::vector<report::Chart>& charts) {
  ASSERT_EQ(charts.size(), 2u);
  EXPECT_EQ(charts[0].file, "images_per_s.svg");
  EXPECT_EQ(charts[1].file, "speedup_vs_cpu.svg");
  for (const auto& chart : charts) {
    std::string why;
    EXPECT_TRUE(well_formed_xml(chart.svg, why)) << chart.file << ": " << why;
  }
}

TEST(ReportSvg, WellFormedWithOneBarPerDevicePerConfiguration) {
  const auto charts = report::make_charts(fixture());
  expect_the_two_charts(charts);
  ASSERT_EQ(charts.size(), 2u);
  const std::string& rate = charts[0].svg;
  EXPECT_EQ(count(rate, R"(class="bar" data-device="cpu" data-group="net batch:64")"), 1u);
  EXPECT_EQ(count(rate, R"(class="bar" data-device="cuda:0" data-group="net batch:64")"), 1u);
  EXPECT_EQ(count(rate, R"(class="bar")"), 2u);  // resnet18 failed on cuda:0 and did not run on the CPU
  EXPECT_NE(rate.find("cuda:0: failed"), std::string::npos);
  EXPECT_NE(rate.find("images/s (higher is better)"), std::string::npos);
  EXPECT_EQ(count(charts[1].svg, R"(class="bar" data-device="cuda:0")"), 1u);
  EXPECT_NE(charts[1].svg.find(">11.0x<"), std::string::npos);
}

// Margins come from the text: a long configuration label keeps its model name inside the chart, and the
// axis title has one parenthesis. (The real rendering is checked in a browser: history_browser_test.)
TEST(ReportSvg, LongLabelsFitTheLeftMarginAndTheAxisTitleIsNotDoubled) {
  const std::string entry = R"({"name": "train_step/resnet18/cpu/batch:64/dtype:bf16/layout:cl/manual_time", "run_type": "iteration",
                                "real_time": 500, "time_unit": "ms", "images_per_s": 128})";
  const std::string fast = R"({"name": "train_step/net/cpu/batch:4/manual_time", "run_type": "iteration",
                               "real_time": 0.5, "time_unit": "ms", "images_per_s": 8000})";
  const auto charts = report::make_charts(report::parse_results(R"({"benchmarks": [)" + entry + "," + fast + "]}", "long.json"));
  ASSERT_EQ(charts.size(), 1u);
  const std::string& svg = charts[0].svg;
  const std::string label = "resnet18 batch:64 dtype:bf16/layout:cl";
  const std::regex anchored_end(R"re(<text x="([0-9.]+)" y="[0-9.]+" font-size="12" text-anchor="end">([^<]*)<title>)re");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(svg, m, anchored_end)) << svg;
  bool found = false;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), anchored_end); it != std::sregex_iterator(); ++it) {
    const double right_end = std::stod((*it)[1].str());
    EXPECT_GE(right_end - report::text_width((*it)[2].str(), 12), 0.0) << (*it)[2].str() << " starts left of the chart";
    found = found || (*it)[2].str() == label;
  }
  EXPECT_TRUE(found) << "no label '" << label << "' in\n" << svg;
  EXPECT_NE(svg.find("images/s (higher is better, log scale)"), std::string::npos) << svg;
  EXPECT_EQ(svg.find(") ("), std::string::npos) << svg;
}

// The width estimate stays an upper bound of what a browser renders (DejaVu Sans, measured in Chromium by getBBox).
TEST(ReportSvg, TextWidthEstimateIsAnUpperBoundOfTheRenderedWidth) {
  EXPECT_GE(report::text_width("batch:64 dtype:bf16/layout:cl", 12), 178.05);
  EXPECT_LE(report::text_width("batch:64 dtype:bf16/layout:cl", 12), 1.25 * 178.05);  // and not wildly above it
  EXPECT_EQ(report::shorten("abcdef", 3), "abc...");
  EXPECT_EQ(report::shorten("abc", 3), "abc");
  EXPECT_EQ(report::xml_escape(R"(<a & "b">)"), "&lt;a &amp; &quot;b&quot;&gt;");
}

TEST(ReportSvg, NoSpeedupChartWithoutAnotherDevice) {
  auto set = fixture();
  std::vector<report::Result> cpu_only;
  for (const auto& r : set.results) {
    if (r.device == "cpu") cpu_only.push_back(r);
  }
  set.results = cpu_only;
  const auto charts = report::make_charts(set);
  ASSERT_EQ(charts.size(), 1u);
  EXPECT_EQ(charts[0].file, "images_per_s.svg");
}

TEST(ReportFiles, WriteCreatesDirectoriesAndFailsWithThePath) {
  TempDir dir("torchprobe-report");
  const std::string path = dir.file("a/b/report.md");
  torchprobe::io::write_text_file(path, "hello\n");
  EXPECT_EQ(torchprobe::io::read_text_file(path), "hello\n");
  EXPECT_THROW_WITH(torchprobe::io::write_text_file(dir.file("a/b/report.md/x.csv"), "x"), std::runtime_error, "report.md");
}

// Expected values from scipy.stats.mannwhitneyu(x, y) (scipy 1.17, default method).
TEST(ReportVariants, EachVariantAgainstItsBaselineWithEpochAndMfu) {
  const std::string json = R"({"context": {"host_name": "h", "date": "d"}, "benchmarks": [
    {"name": "train_step/net/cpu/batch:64/dtype:fp32/layout:nchw/manual_time", "run_type": "iteration",
     "iterations": 10, "real_time": 20.0, "time_unit": "ms", "images_per_s": 3200.0, "epoch_s": 15.6,
     "model_tflop_per_s": 0.0125, "mfu_pct": 1.24},
    {"name": "train_step/net/cpu/batch:64/dtype:bf16/layout:cl/manual_time", "run_type": "iteration",
     "iterations": 10, "real_time": 10.0, "time_unit": "ms", "images_per_s": 6400.0, "epoch_s": 7.8,
     "model_tflop_per_s": 0.025},
    {"name": "train_step/net/cuda:0/batch:4/dtype:fp32/layout:nchw/cudnn:off/graph:on/manual_time",
     "run_type": "iteration", "error_occurred": true, "error_message": "CUDA graphs: capture failed"}]})";
  const auto set = report::parse_results(json, "variants.json");
  const std::string md = report::to_markdown(set, {}, report::ReportOptions{});
  EXPECT_NE(md.find("### Variants"), std::string::npos) << md;
  EXPECT_NE(md.find("| net | cpu | 64 | baseline | 20.0 | 3 200 | 15.6 | 0.0125 | 1.2% | 1.00x |"), std::string::npos) << md;
  // bf16 has no measured CPU peak here: no MFU, but its speedup over the baseline.
  EXPECT_NE(md.find("| net | cpu | 64 | dtype:bf16 layout:cl | 10.0 | 6 400 | 7.80 | 0.0250 | - | 2.00x |"), std::string::npos)
      << md;
  EXPECT_NE(md.find("| net | cuda:0 | 4 | graph:on | failed |"), std::string::npos) << md;
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

TEST(ReportDatasheet, RoofsAndMfuBesideTheDatasheet) {
  const auto set = fixture();  // cuda:0 is an "NVIDIA H100 80GB HBM3" with a measured bf16 roof of 800 000 GFLOP/s
  const auto rows = report::peak_rows(set);
  const auto row = std::find_if(rows.begin(), rows.end(), [](const auto& r) { return r.device_label == "cuda:0" && r.what == "bf16"; });
  ASSERT_NE(row, rows.end());
  EXPECT_DOUBLE_EQ(row->measured, 800000.0);
  EXPECT_DOUBLE_EQ(row->datasheet, 989400.0);
  const std::string md = report::to_markdown(set, {}, report::ReportOptions{});
  EXPECT_NE(md.find("## Roofs: measured and datasheet"), std::string::npos) << md;
  EXPECT_NE(md.find("| cuda:0 | NVIDIA H100 80GB HBM3 | bf16 | 800 TFLOP/s | - | - | 989 TFLOP/s | 80.9% |"),
            std::string::npos) << md;
  EXPECT_NE(md.find("| cuda:0 | NVIDIA H100 80GB HBM3 | memory (STREAM triad) | 3000 GB/s | - | - | 3350 GB/s | 89.6% |"),
            std::string::npos) << md;

  // A training step's MFU against the datasheet: bf16 at 296.8 model TFLOP/s on an H100 SXM is 30.0% of 989.4.
  const std::string json = R"({"context": {"host_name": "h", "inventory": "{\"cuda\": {\"devices\": [{\"device\": \"cuda:0\", \"name\": \"NVIDIA H100 80GB HBM3\"}]}}"}, "benchmarks": [
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
    const std::string json = R"({"context": {"host_name": "h", "inventory": "{\"cuda\": {\"devices\": [{\"device\": \"cuda:0\", \"name\": \"NVIDIA H100 80GB HBM3\"}]}}"}, "benchmarks": [
      {"name": "op/matmul/cuda:0/n:8192/dtype:bf16/manual_time", "run_type": "iteration", "iterations": 10, "real_time": 2.0,
        "time_unit": "ms", "flops": 1.099511627776e12, "bytes": 402653184, "peak_gb_per_s": 3000, "peak_gflop_per_s": )" +
                             std::to_string(measured_gflop) + "}]}";
    const std::string md = report::to_markdown(report::parse_results(json, "d.json"), {}, report::ReportOptions{});
    const size_t at = md.find("| cuda:0 | NVIDIA H100 80GB HBM3 | bf16");
    return at == std::string::npos ? md : md.substr(at, md.find('\n', at) - at);
  };
  EXPECT_EQ(share_row(989400.0), "| cuda:0 | NVIDIA H100 80GB HBM3 | bf16 | 989 TFLOP/s | - | - | 989 TFLOP/s | 100.0% |");
  EXPECT_EQ(share_row(989500.0),
            "| cuda:0 | NVIDIA H100 80GB HBM3 | bf16 | 990 TFLOP/s | - | - | 989 TFLOP/s | 100.0% (above the datasheet) |");
  EXPECT_EQ(share_row(989300.0), "| cuda:0 | NVIDIA H100 80GB HBM3 | bf16 | 989 TFLOP/s | - | - | 989 TFLOP/s | 100.0% |");
}

TEST(ReportLabels, TwoMachinesWithOneHostNameAreToldApartByTheirPart) {
  const auto run = [](const std::string& gpu, const std::string& ms) {
    return R"({"context": {"host_name": "vm", "inventory": "{\"cuda\": {\"devices\": [{\"device\": \"cuda:0\", \"name\": \")" + gpu +
           R"(\"}]}}"}, "benchmarks": [{"name": "train_step/net/cuda:0/batch:64/manual_time", "run_type": "iteration",
           "iterations": 10, "real_time": )" + ms + R"(, "time_unit": "ms", "images_per_s": 1000.0}]})";
  };
  const std::string dir = ::testing::TempDir();
  torchprobe::io::write_text_file(dir + "/h100.json", run("NVIDIA H100 80GB HBM3", "2.0"));
  torchprobe::io::write_text_file(dir + "/h200.json", run("NVIDIA H200", "1.5"));
  const auto set = report::load_results({dir + "/h100.json", dir + "/h200.json"});
  ASSERT_EQ(set.results.size(), 2u);
  EXPECT_EQ(set.results[0].device_label, "cuda:0 (NVIDIA H100 80GB HBM3)");
  EXPECT_EQ(set.results[1].device_label, "cuda:0 (NVIDIA H200)");
  EXPECT_EQ(report::train_view(set).devices.size(), 2u);
}

TEST(ReportSummary, OneSentencePerDeviceAgainstTheCpu) {
  const auto set = fixture();  // net at batch 64: the CPU 5 818 images/s, the H100 64 000
  const std::string md = report::to_markdown(set, {}, report::ReportOptions{});
  EXPECT_NE(md.find("- cuda:0 (NVIDIA H100 80GB HBM3) is 11.0x cpu (Fixture CPU) on net at batch 64 (64 000 vs 5 818 images/s).\n"),
            std::string::npos) << md;
  EXPECT_NE(report::to_console_summary(set, report::ReportOptions{}).find("cuda:0 (NVIDIA H100 80GB HBM3) is 11.0x cpu"),
            std::string::npos);
}

// The sentence compares at the largest batch both devices ran (a batch only one device ran, or a variant, is
// not that batch): here 64, not 4 (both ran it too) nor 256 (the GPU alone).
TEST(ReportSummary, TheSentenceTakesTheLargestBatchBothDevicesRan) {
  const auto entry = [](const std::string& device, int batch, double images_per_s, const std::string& variant = "") {
    return R"({"name": "train_step/net/)" + device + "/batch:" + std::to_string(batch) +
           (variant.empty() ? std::string("/dtype:fp32/layout:nchw") : variant) +
           (device == "cpu" ? "" : "/cudnn:off/graph:off") + R"(/manual_time", "run_type": "iteration", "real_time": 1, )" +
           R"("time_unit": "ms", "images_per_s": )" + std::to_string(images_per_s) + "}";
  };
  const std::string json = R"({"benchmarks": [)" + entry("cpu", 4, 1000) + "," + entry("cuda:0", 4, 2000) + "," +
                           entry("cpu", 64, 5000) + "," + entry("cuda:0", 64, 40000) + "," + entry("cuda:0", 256, 90000) +
                           "," + entry("cpu", 128, 6000, "/dtype:bf16/layout:cl") + "," +
                           entry("cuda:0", 128, 99000, "/dtype:bf16/layout:cl") + "]}";
  const auto set = report::parse_results(json, "batches.json");
  const std::string md = report::to_markdown(set, {}, report::ReportOptions{});
  EXPECT_NE(md.find("- cuda:0 is 8.00x cpu on net at batch 64 (40 000 vs 5 000 images/s).\n"), std::string::npos) << md;
  EXPECT_EQ(md.find("at batch 4 ("), std::string::npos) << md;
  EXPECT_EQ(md.find("at batch 256"), std::string::npos) << md;
}

// ---- Every documented threshold: exactly at it, and one step to each side (tests/README.md) ----

namespace {

// One benchmark of one repetition, with these counters.
report::ResultSet one(const std::string& name, double ms, const std::string& counters = "") {
  return report::parse_results(R"({"benchmarks": [{"name": ")" + name + R"(", "run_type": "iteration", "real_time": )" +
                                   std::to_string(ms) + R"(, "time_unit": "ms")" + counters + "}]}",
                               "one.json");
}

// A double as JSON that reads back as the same double.
std::string exact(double value) {
  std::ostringstream out;
  out << std::setprecision(17) << value;
  return out.str();
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
  EXPECT_NE(below[0].find("`op/add/cpu/n:1024`: CV 5.0% over 5 repetitions exceeds the 5.0% noise threshold"), std::string::npos)
      << below[0];
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

// A figure above 100% of its roof carries a label; exactly 100% does not (it is a plain measurement at the roof).
TEST(ReportBoundaries, RoofAndMfuLabelsOnlyAbove100Percent) {
  const double above = std::nextafter(100.0, 200.0), below = std::nextafter(100.0, 0.0);
  for (const std::string bound : {"compute", "memory"}) {
    EXPECT_EQ(torchprobe::roof_label(100.0, bound), "") << bound;
    EXPECT_EQ(torchprobe::roof_label(below, bound), "") << bound;
    EXPECT_EQ(torchprobe::roof_label(above, bound), bound == "memory" ? "cache-resident" : "effective");
  }
  EXPECT_EQ(torchprobe::roof_label(std::nan(""), "compute"), "");
  // The MFU of a training step: its label and its warning line.
  const auto mfu = [](double pct) {
    return one("train_step/net/cpu/batch:64/dtype:fp32/layout:nchw", 4.0, R"(, "mfu_pct": )" + exact(pct));
  };
  EXPECT_EQ(report::mfu_label(mfu(100.0).results[0]), "");
  EXPECT_EQ(lines_with(report::warnings(mfu(100.0), 5.0), "above the compute roof"), 0u);
  EXPECT_EQ(report::mfu_label(mfu(above).results[0]), "effective");
  EXPECT_EQ(lines_with(report::warnings(mfu(above), 5.0), "above the compute roof"), 1u);
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

// ---- Hostile results files (found by fuzz_results; the seeds are in tests/fuzz/corpus/results) ----

// A count of repetitions or a repetition's index is never negative in a results file: "repetitions": -2147483648
// made the repetitions left after failed ones overflow an int. 0 is the boundary: it loads; -1 is refused.
TEST(ReportLoad, NegativeRepetitionCountsAreRefused) {
  const auto aggregate = [](const std::string& repetitions) {
    return R"({"benchmarks": [{"name": "a", "run_type": "aggregate", "aggregate_name": "median", "real_time": 1,
               "repetitions": )" + repetitions + R"(}, {"name": "a", "error_occurred": true}]})";
  };
  EXPECT_THROW_WITH(report::parse_results(aggregate("-2147483648"), "r.json"), InputError,
                    "r.json: benchmarks[0] (a): \"repetitions\" must not be negative, got -2147483648");
  EXPECT_THROW_WITH(report::parse_results(aggregate("-1"), "r.json"), InputError,
                    "r.json: benchmarks[0] (a): \"repetitions\" must not be negative, got -1");
  const auto zero = report::parse_results(aggregate("0"), "r.json");
  ASSERT_EQ(zero.results.size(), 1u);
  EXPECT_EQ(zero.results[0].repetitions, 0);  // none left after the failed one
  EXPECT_EQ(zero.results[0].failed_repetitions, 1);
  const auto indexed = [](const std::string& index) {
    return R"({"benchmarks": [{"name": "b", "real_time": 1, "repetition_index": )" + index + "}]}";
  };
  EXPECT_THROW_WITH(report::parse_results(indexed("-1"), "i.json"), InputError,
                    "i.json: benchmarks[0] (b): \"repetition_index\" must not be negative, got -1");
  EXPECT_EQ(report::parse_results(indexed("0"), "i.json").results.size(), 1u);
  // The context's num_cpus is no count of ours: old Google Benchmarks write -1 when they cannot read it.
  EXPECT_EQ(report::parse_results(R"({"context": {"num_cpus": -1}, "benchmarks": []})", "c.json").contexts[0].num_cpus, -1);
}

// nlohmann's dump recurses once per level: 25 000 nested arrays in a context field overflowed the stack. JSON
// nested deeper than 128 levels is refused: the document, and the JSON it carries in the inventory and
// trust_warnings strings. 128 levels load; 129 do not.
TEST(ReportLoad, JsonNestedDeeperThan128LevelsIsRefused) {
  const auto nested = [](int levels) {
    return std::string(static_cast<size_t>(levels), '[') + std::string(static_cast<size_t>(levels), ']');
  };
  // The document's object and its context are two levels; host_name's arrays the rest.
  const auto host_nested = [&](int levels) {
    return R"({"benchmarks": [], "context": {"host_name": )" + nested(levels - 2) + "}}";
  };
  EXPECT_EQ(report::parse_results(host_nested(128), "d.json").contexts[0].host, nested(126));
  EXPECT_THROW_WITH(report::parse_results(host_nested(129), "d.json"), InputError,
                    "d.json: JSON nested more than 128 levels deep");
  EXPECT_THROW_WITH(report::parse_results(host_nested(25000), "d.json"), InputError,
                    "d.json: JSON nested more than 128 levels deep");
  // Brackets in a string are text.
  EXPECT_EQ(report::parse_results(R"({"benchmarks": [], "context": {"host_name": ")" + nested(200) + R"("}})", "s.json")
                .contexts[0]
                .host,
            nested(200));
  const auto in_context = [](const std::string& key, const std::string& json) {
    return R"({"benchmarks": [], "context": {")" + key + R"(": ")" + json + R"("}})";
  };
  EXPECT_NO_THROW(report::parse_results(in_context("inventory", nested(128)), "v.json"));
  EXPECT_THROW_WITH(report::parse_results(in_context("inventory", nested(129)), "v.json"), InputError,
                    "v.json: context.inventory: JSON nested more than 128 levels deep");
  EXPECT_EQ(report::parse_results(in_context("trust_warnings", nested(128)), "w.json").contexts[0].trust_warnings.size(),
            1u);
  EXPECT_THROW_WITH(report::parse_results(in_context("trust_warnings", nested(129)), "w.json"), InputError,
                    "w.json: context.trust_warnings: JSON nested more than 128 levels deep");
}

// Axis ticks for any finite range: at least one, each finite, a bounded number. A subnormal span once gave none
// (and the chart read ticks.back() of an empty vector); a log axis from 5e-324 started at 0 and never advanced.
TEST(ReportSvg, AxisTicksForAnyFiniteRangeAreFiniteBoundedAndNeverNone) {
  const auto sane = [](const std::vector<double>& ticks, const std::string& what) {
    EXPECT_FALSE(ticks.empty()) << what;
    EXPECT_LE(ticks.size(), 700u) << what;
    for (const double t : ticks) EXPECT_TRUE(std::isfinite(t)) << what << ": " << t;
  };
  const double tiny = std::numeric_limits<double>::denorm_min(), huge = std::numeric_limits<double>::max();
  const std::vector<std::pair<double, double>> ranges = {{0.0, tiny}, {0.0, 1.5e308}, {0.0, huge}, {-huge, huge},
                                                         {1e300, 1e300}, {5.0, 5.0},  {1e16, 1e16 + 2}};
  for (const auto& [lo, hi] : ranges) {
    for (const int target : {1, 4, 5}) {
      std::ostringstream what;
      what << "linear_ticks(" << lo << ", " << hi << ", " << target << ")";
      sane(report::linear_ticks(lo, hi, target), what.str());
    }
  }
  sane(report::log_ticks(tiny, 1.0), "log_ticks(5e-324, 1)");
  sane(report::log_ticks(1.0, 1.5e308), "log_ticks(1, 1.5e308)");
  sane(report::log_ticks(tiny, huge), "log_ticks(5e-324, max)");
  // Ordinary ranges as before: a 1-2-5 step; each power of ten around the values.
  EXPECT_EQ(report::linear_ticks(0.0, 110.0, 5), (std::vector<double>{0.0, 50.0, 100.0}));
  EXPECT_EQ(report::log_ticks(3.0, 4000.0), (std::vector<double>{1.0, 10.0, 100.0, 1000.0, 10000.0}));
}

namespace {

// The images/s chart of one device, "cpu", at one batch size per value (JSON numbers as written).
std::string rate_chart(const std::vector<std::string>& rates) {
  std::string json = R"({"benchmarks": [)";
  for (size_t i = 0; i < rates.size(); ++i) {
    json += std::string(i ? "," : "") + R"({"name": "train_step/m/cpu/batch:)" + std::to_string(i + 1) +
            R"(", "real_time": 1, "images_per_s": )" + rates[i] + "}";
  }
  const auto charts = report::make_charts(report::parse_results(json + "]}", "range.json"));
  EXPECT_EQ(charts.size(), 1u);
  return charts.empty() ? std::string() : charts[0].svg;
}

}  // namespace

// A value no axis can place is not drawn: the chart says so in the bar's place and draws the rest. 1.7e308 made
// the axis infinite, 5e-324 made it empty, and both next to a 1 made the log axis loop for ever. The charted range
// is 1e-9 to 1e12, ends included.
TEST(ReportSvg, ValuesOutOfTheChartsRangeAreNotedNotDrawn) {
  static const std::regex non_finite(R"(="-?(nan|inf))");
  for (const auto& rates : std::vector<std::vector<std::string>>{{"1.7e308"}, {"5e-324"}, {"5e-324", "1"}, {"1.5e308", "1"}}) {
    const std::string svg = rate_chart(rates);
    std::string why;
    EXPECT_TRUE(well_formed_xml(svg, why)) << why << "\n" << svg;
    EXPECT_FALSE(std::regex_search(svg, non_finite)) << svg;
    EXPECT_EQ(count(svg, "is outside the charted range"), 1u) << svg;
    EXPECT_EQ(count(svg, R"(class="bar")"), rates.size() - 1) << svg;  // the 1 is drawn
  }
  EXPECT_NE(rate_chart({"1.7e308"}).find(">cpu: 1.7e+308 is outside the charted range<"), std::string::npos);
  for (const double drawn : {1e-9, 1e12}) {
    const std::string svg = rate_chart({exact(drawn)});
    EXPECT_EQ(count(svg, R"(class="bar")"), 1u) << exact(drawn) << "\n" << svg;
    EXPECT_EQ(count(svg, "outside the charted range"), 0u) << svg;
  }
  for (const double noted : {std::nextafter(1e-9, 0.0), std::nextafter(1e12, INFINITY)}) {
    const std::string svg = rate_chart({exact(noted)});
    EXPECT_EQ(count(svg, R"(class="bar")"), 0u) << exact(noted) << "\n" << svg;
    EXPECT_EQ(count(svg, "outside the charted range"), 1u) << svg;
  }
}

namespace {

// Model m<i> on the CPU (100 images/s) and on cuda:<i> (100 x (i + 1)), for i = 1 .. devices - 1: `devices`
// devices in all, each GPU in one model's table.
report::ResultSet cpu_and_gpus(size_t devices) {
  std::string json = R"({"benchmarks": [)";
  for (size_t i = 1; i < devices; ++i) {
    const std::string model = "m" + std::to_string(i);
    json += std::string(i > 1 ? "," : "") + R"({"name": "train_step/)" + model +
            R"(/cpu/batch:1", "real_time": 1, "images_per_s": 100}, {"name": "train_step/)" + model + "/cuda:" +
            std::to_string(i) + R"(/batch:1", "real_time": 1, "images_per_s": )" + std::to_string(100 * (i + 1)) + "}";
  }
  return report::parse_results(json + "]}", "many.json");
}

}  // namespace

// A chart series and a table column per device stop at 64 devices (kMaxSideBySideDevices): 1 328 devices made the
// report grow as models x devices (minutes of work for a 64 KB file). 63 and 64 devices are set side by side; with
// 65 the charts say why they are not drawn and each model's table lists one device per line.
TEST(ReportLarge, MoreThan64DevicesAreListedNotSetSideBySide) {
  ASSERT_EQ(report::kMaxSideBySideDevices, 64u);
  for (const size_t devices : {size_t{63}, size_t{64}}) {
    const auto set = cpu_and_gpus(devices);
    const auto charts = report::make_charts(set);
    ASSERT_EQ(charts.size(), 2u);
    EXPECT_EQ(count(charts[0].svg, R"(class="bar")"), 2 * (devices - 1));
    EXPECT_EQ(count(charts[1].svg, R"(class="bar")"), devices - 1);
    const std::string md = report::to_markdown(set, charts, report::ReportOptions{});
    const std::string last = "cuda:" + std::to_string(devices - 1);
    EXPECT_NE(md.find("| batch | cpu images/s | cuda:1 images/s |"), std::string::npos) << devices;
    EXPECT_NE(md.find(" " + last + " vs cpu |\n"), std::string::npos) << devices;
  }
  const auto set = cpu_and_gpus(65);
  const auto charts = report::make_charts(set);
  expect_the_two_charts(charts);
  for (const auto& chart : charts) {
    EXPECT_EQ(count(chart.svg, R"(class="bar")"), 0u) << chart.file;
    EXPECT_NE(chart.svg.find("Not drawn: 65 devices, more than the 64 a chart shows"), std::string::npos) << chart.svg;
  }
  const std::string md = report::to_markdown(set, charts, report::ReportOptions{});
  EXPECT_EQ(md.find("images/s | cuda:"), std::string::npos) << "a column per device";
  EXPECT_NE(md.find("### m1\n\n| batch | device | images/s | vs cpu |\n|---:|---|---:|---:|\n| 1 | cpu | 100 | - |\n"
                    "| 1 | cuda:1 | 200 | 2.00x |\n"),
            std::string::npos)
      << md.substr(0, 4000);
  EXPECT_NE(md.find("### m64\n\n| batch | device | images/s | vs cpu |\n|---:|---|---:|---:|\n| 1 | cpu | 100 | - |\n"
                    "| 1 | cuda:64 | 6 500 | 65.0x |\n"),
            std::string::npos);
  // One sentence per model and GPU, in their order.
  EXPECT_EQ(count(md, "\n- cuda:"), 64u);
  EXPECT_NE(md.find("- cuda:1 is 2.00x cpu on m1 at batch 1 (200 vs 100 images/s).\n- cuda:2 is 3.00x cpu on m2"),
            std::string::npos);
  EXPECT_NE(md.find("- cuda:64 is 65.0x cpu on m64 at batch 1 (6 500 vs 100 images/s).\n"), std::string::npos);
  const std::string console = report::to_console_summary(set, report::ReportOptions{});
  EXPECT_NE(console.find("train_step/m64\nbatch  device   images/s  vs cpu\n"), std::string::npos) << console.substr(0, 4000);
}

// The sentences follow the models in first-seen order, then the devices in first-seen order, whatever order the
// results come in; each at the largest batch both devices ran.
TEST(ReportSummary, SentencesFollowTheModelsThenTheDevicesAsFirstSeen) {
  const auto entry = [](const std::string& model, const std::string& device, int batch, double images_per_s) {
    return R"({"name": "train_step/)" + model + "/" + device + "/batch:" + std::to_string(batch) +
           R"(", "real_time": 1, "images_per_s": )" + std::to_string(images_per_s) + "}";
  };
  const std::string json = R"({"benchmarks": [)" + entry("b", "cuda:1", 8, 800) + "," + entry("a", "cpu", 8, 100) + "," +
                           entry("a", "cuda:0", 8, 400) + "," + entry("b", "cpu", 8, 100) + "," +
                           entry("a", "cuda:1", 8, 200) + "," + entry("b", "cuda:0", 8, 300) + "," +
                           entry("b", "cpu", 16, 150) + "," + entry("b", "cuda:0", 16, 600) + "]}";
  const std::string md = report::to_markdown(report::parse_results(json, "order.json"), {}, report::ReportOptions{});
  EXPECT_NE(md.find("- cuda:1 is 8.00x cpu on b at batch 8 (800 vs 100 images/s).\n"
                    "- cuda:0 is 4.00x cpu on b at batch 16 (600 vs 150 images/s).\n"
                    "- cuda:1 is 2.00x cpu on a at batch 8 (200 vs 100 images/s).\n"
                    "- cuda:0 is 4.00x cpu on a at batch 8 (400 vs 100 images/s).\n"),
            std::string::npos)
      << md;
}

// report --traces: self time is an event's duration less the events directly inside it on its thread, per
// profiled step (forward phases), largest first, ties by name; exact on a hand-made trace (microseconds).
TEST(ReportTraces, SelfTimePerStepFromAChromeTrace) {
  const std::string text = R"({"traceEvents": [
    {"name": "forward", "cat": "torchprobe", "ph": "X", "ts": 0, "dur": 100, "tid": 1},
    {"name": "aten::conv2d", "cat": "aten", "ph": "X", "ts": 10, "dur": 50, "tid": 1},
    {"name": "aten::mkldnn_convolution", "cat": "aten", "ph": "X", "ts": 15, "dur": 40, "tid": 1},
    {"name": "aten::relu", "cat": "aten", "ph": "X", "ts": 70, "dur": 10, "tid": 1},
    {"name": "backward", "cat": "torchprobe", "ph": "X", "ts": 100, "dur": 100, "tid": 1},
    {"name": "aten::convolution_backward", "cat": "aten", "ph": "X", "ts": 110, "dur": 80, "tid": 1},
    {"name": "a mark", "ph": "i", "ts": 5, "tid": 1}],
    "displayTimeUnit": "ms"})";
  const auto s = report::summarize_trace("train_step/net/cpu/batch:4", "t.json", text, /*top=*/3);
  EXPECT_EQ(s.steps, 1);
  EXPECT_DOUBLE_EQ(s.step_ms, 0.2);
  ASSERT_EQ(s.top.size(), 3u);
  EXPECT_EQ(s.top[0].name, "aten::convolution_backward");
  EXPECT_DOUBLE_EQ(s.top[0].self_ms_per_step, 0.08);
  EXPECT_EQ(s.top[1].name, "aten::mkldnn_convolution");
  EXPECT_DOUBLE_EQ(s.top[1].self_ms_per_step, 0.04);
  EXPECT_EQ(s.top[2].name, "aten::conv2d");  // 10 us, tied with relu: by name
  EXPECT_DOUBLE_EQ(s.top[2].self_ms_per_step, 0.01);
  EXPECT_DOUBLE_EQ(s.top[2].calls_per_step, 1.0);
  const std::string md = report::traces_markdown({s});
  EXPECT_NE(md.find("## Where a step's time goes"), std::string::npos) << md;
  EXPECT_NE(md.find("trace: [t.json](t.json)"), std::string::npos) << md;
  EXPECT_NE(md.find("| aten::convolution_backward | 1 | 80.0 us | 40.0% |"), std::string::npos) << md;
  EXPECT_EQ(report::traces_markdown({}), "");
  EXPECT_THROW(report::summarize_trace("b", "t.json", "not json", 8), torchprobe::InputError);
  EXPECT_THROW(report::summarize_trace("b", "t.json", R"({"events": []})", 8), torchprobe::InputError);
  EXPECT_THROW(report::summarize_trace("b", "t.json", R"({"traceEvents": [{"name": "aten::mm", "ph": "X", "ts": 0, "dur": 1}]})", 8),
               torchprobe::InputError);  // no training phase
}
