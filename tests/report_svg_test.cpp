#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <regex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "report_test_util.h"
#include "torchprobe/report/compare.h"
#include "torchprobe/report/memory_chart.h"
#include "torchprobe/report/plot.h"
#include "torchprobe/report/printers.h"
#include "torchprobe/report/results.h"
#include "torchprobe/report/svg_util.h"
#include "torchprobe/report/views.h"

namespace {

std::vector<std::string> files_of(const std::vector<report::Chart>& charts) {
  std::vector<std::string> files;
  for (const auto& chart : charts) files.push_back(chart.file);
  return files;
}

}  // namespace

TEST(ReportSvg, WellFormedWithOneBarPerDevicePerConfiguration) {
  const auto charts = report::make_charts(fixture());
  expect_the_two_charts(charts);
  ASSERT_EQ(files_of(charts),
            (std::vector<std::string>{"images_per_s.svg", "speedup_vs_cpu.svg", "phases.svg", "roofline_cuda_0.svg"}));
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
  const std::string entry =
      R"({"name": "train_step/resnet18/cpu/batch:64/dtype:bf16/layout:cl/manual_time", "run_type": "iteration",
                                "real_time": 500, "time_unit": "ms", "images_per_s": 128})";
  const std::string fast = R"({"name": "train_step/net/cpu/batch:4/manual_time", "run_type": "iteration",
                               "real_time": 0.5, "time_unit": "ms", "images_per_s": 8000})";
  const auto charts =
      report::make_charts(report::parse_results(R"({"benchmarks": [)" + entry + "," + fast + "]}", "long.json"));
  ASSERT_EQ(charts.size(), 1u);
  const std::string& svg = charts[0].svg;
  const std::string label = "resnet18 batch:64 dtype:bf16/layout:cl";
  const std::regex anchored_end(
      R"re(<text x="([0-9.]+)" y="[0-9.]+" font-size="12" text-anchor="end">([^<]*)<title>)re");
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
  EXPECT_EQ(files_of(report::make_charts(set)), (std::vector<std::string>{"images_per_s.svg", "phases.svg"}));
}

// ---- Hostile results files (found by fuzz_results; the seeds are in tests/fuzz/corpus/results) ----

// Axis ticks for any finite range: at least one, each finite, a bounded number. A subnormal span once gave none
// (and the chart read ticks.back() of an empty vector); a log axis from 5e-324 started at 0 and never advanced.
TEST(ReportSvg, AxisTicksForAnyFiniteRangeAreFiniteBoundedAndNeverNone) {
  const auto sane = [](const std::vector<double>& ticks, const std::string& what) {
    EXPECT_FALSE(ticks.empty()) << what;
    EXPECT_LE(ticks.size(), 700u) << what;
    for (const double t : ticks) EXPECT_TRUE(std::isfinite(t)) << what << ": " << t;
  };
  const double tiny = std::numeric_limits<double>::denorm_min(), huge = std::numeric_limits<double>::max();
  const std::vector<std::pair<double, double>> ranges = {{0.0, tiny},    {0.0, 1.5e308}, {0.0, huge},     {-huge, huge},
                                                         {1e300, 1e300}, {5.0, 5.0},     {1e16, 1e16 + 2}};
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
  for (const auto& rates :
       std::vector<std::vector<std::string>>{{"1.7e308"}, {"5e-324"}, {"5e-324", "1"}, {"1.5e308", "1"}}) {
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

// ---- The pictures beyond the bar charts (issue 37): each from real-shaped results, checked for what it must show.
// Their rendering (every text inside the canvas, no point label over another) is checked in a browser:
// history_browser_test's ReportChartsInABrowser.

namespace {

const report::Chart& chart_named(const std::vector<report::Chart>& charts, const std::string& file) {
  for (const auto& chart : charts) {
    if (chart.file == file) return chart;
  }
  ADD_FAILURE() << "no chart " << file;
  static const report::Chart none;
  return none;
}

}  // namespace

// Each training step's phases end to end in one bar, in the order they run, with the sum at its end.
TEST(ReportSvg, PhasesStackInOneBarPerStepWithTheirSumAtItsEnd) {
  const auto charts = report::make_charts(fixture());
  const report::Chart& phases = chart_named(charts, "phases.svg");
  EXPECT_EQ(phases.section, "phases");
  EXPECT_EQ(count(phases.svg, R"(class="segment")"), 10u);  // 5 phases x (cpu, cuda:0); resnet18 failed
  EXPECT_EQ(count(phases.svg, R"(class="segment" data-segment="forward" data-group="net batch:64 on cpu")"), 1u);
  EXPECT_NE(phases.svg.find(">9.35 ms<"), std::string::npos);  // 0.1 + 3 + 0.05 + 6 + 0.2
  EXPECT_NE(phases.svg.find(">1.25 ms<"), std::string::npos);
  // Segments follow each other: backward starts where loss ends.
  const std::regex segment(
      R"re(data-segment="(\w+)" data-group="net batch:64 on cpu" x="([0-9.]+)" y="[0-9.]+" width="([0-9.]+)")re");
  std::vector<std::pair<double, double>> spans;
  for (auto it = std::sregex_iterator(phases.svg.begin(), phases.svg.end(), segment); it != std::sregex_iterator();
       ++it) {
    spans.emplace_back(std::stod((*it)[2].str()), std::stod((*it)[3].str()));
  }
  ASSERT_EQ(spans.size(), 5u);
  for (size_t i = 1; i < spans.size(); ++i)
    EXPECT_NEAR(spans[i].first, spans[i - 1].first + spans[i - 1].second, 0.6) << i;
}

// The roofline: log-log, the measured roofs as one line per dtype bending at the ridge (peak / bandwidth), each op
// that computes a point named by its op, copies left to the table and said so.
TEST(ReportSvg, RooflineDrawsTheMeasuredRoofsAndEachOpAsANamedPoint) {
  const auto charts = report::make_charts(report::load_results({kFixtures + "/trust.json"}));
  const report::Chart& roof = chart_named(charts, "roofline_cpu.svg");
  EXPECT_EQ(roof.section, "ops");
  EXPECT_EQ(count(roof.svg, R"(class="point")"), 4u);  // relu, conv2d, matmul n:512, matmul n:1024
  for (const std::string label : {">relu<", ">conv2d<", ">matmul n:512<", ">matmul n:1024<"}) {
    EXPECT_EQ(count(roof.svg, label), 1u) << label << "\n" << roof.svg;
  }
  EXPECT_NE(roof.svg.find("fp32 roof: 1000 GFLOP/s; memory 200 GB/s"), std::string::npos) << roof.svg;
  EXPECT_NE(roof.svg.find("arithmetic intensity (FLOP/byte, log scale)"), std::string::npos);
  // The roof's polyline: up the bandwidth slope to the ridge at 1000 / 200 = 5 FLOP/byte, then flat.
  const std::regex polyline(R"re(<polyline points="([0-9.]+),([0-9.]+) ([0-9.]+),([0-9.]+) ([0-9.]+),([0-9.]+) ")re");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(roof.svg, m, polyline)) << roof.svg;
  EXPECT_LT(std::stod(m[2].str()), std::stod(m[4].str()) + 1e9);  // parsed
  EXPECT_GT(std::stod(m[2].str()), std::stod(m[4].str()));        // it rises (SVG y grows down) to the ridge
  EXPECT_EQ(m[4].str(), m[6].str());                              // and is flat after it
  EXPECT_EQ(count(report::make_charts(fixture())[3].svg, "1 op that only moves bytes (copies) not on it"), 1u);
}

// Scaling efficiency per world size against the 100% line, a world-1 efficiency above 100% flagged (it was printed
// as 183.9% unremarked); the all-reduce's busbw against message size.
TEST(ReportSvg, ScalingAndBusBandwidthChartsFlagAnEfficiencyAbove100) {
  const auto set = report::load_results({kFixtures + "/dist_scaling.json"});
  const auto charts = report::make_charts(set);
  const report::Chart& scaling = chart_named(charts, "scaling.svg");
  EXPECT_EQ(count(scaling.svg, R"(class="point")"), 3u);
  EXPECT_NE(scaling.svg.find(">183.9%<"), std::string::npos);
  EXPECT_NE(scaling.svg.find("linear scaling (100%)"), std::string::npos);
  EXPECT_NE(scaling.svg.find("Efficiency above 100% is not super-linear scaling"), std::string::npos);
  const report::Chart& busbw = chart_named(charts, "allreduce_busbw.svg");
  EXPECT_EQ(busbw.section, "other");
  EXPECT_EQ(count(busbw.svg, R"(class="point")"), 9u);  // 1 KiB to 64 MiB, x4
  EXPECT_NE(busbw.svg.find("message size (bytes, log scale)"), std::string::npos);
  const std::string md = report::to_markdown(set, charts, report::ReportOptions{});
  EXPECT_NE(md.find("| 183.9% (above 100%: see Warnings) |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 80.0% |"), std::string::npos);
  EXPECT_NE(md.find("`dist_train/net/cpu/world:1/batch:32/engine:gloo`: scaling efficiency 183.9%. Efficiency above"),
            std::string::npos);
  EXPECT_NE(md.find("![Scaling efficiency vs world size](scaling.svg)"), std::string::npos);
  for (const auto& chart : charts) {
    std::string why;
    EXPECT_TRUE(well_formed_xml(chart.svg, why)) << chart.file << ": " << why;
  }
}

// compare's forest plot: each benchmark's change and its 95% interval, the threshold band, what fails in red.
TEST(ReportSvg, CompareForestPlotShowsEachChangeItsIntervalAndTheBand) {
  const report::CompareOptions options;
  const auto result = report::compare_results(report::load_results({kFixtures + "/compare_baseline.json"}),
                                              report::load_results({kFixtures + "/compare_regression.json"}), options);
  const std::string svg = report::compare_chart(result, options);
  std::string why;
  ASSERT_TRUE(well_formed_xml(svg, why)) << why;
  EXPECT_EQ(count(svg, R"(class="point")"), 2u);
  EXPECT_EQ(count(svg, R"(class="interval")"), 2u);
  EXPECT_EQ(count(svg, R"(class="band")"), 1u);
  EXPECT_NE(svg.find(R"(fill="#e15759">+20.0% SLOWER<)"), std::string::npos) << svg;
  EXPECT_NE(svg.find(">+0.0% SAME<"), std::string::npos);
  EXPECT_NE(svg.find("within the threshold (5%)"), std::string::npos);
  for (const auto& row : result.rows) {
    ASSERT_TRUE(std::isfinite(row.change_lo_pct)) << row.name;
    EXPECT_LE(row.change_lo_pct, row.change_pct + 1e-9) << row.name;
    EXPECT_GE(row.change_hi_pct, row.change_pct - 1e-9) << row.name;
  }
  EXPECT_NE(report::compare_markdown(result, options, "cmp.svg").find("![Change of each benchmark](cmp.svg)"),
            std::string::npos);
}

// At most 60 rows are drawn: unchanged ones are left out first, so every change that matters is on the chart
// whatever its place in the file. 65 unchanged benchmarks and 5 slower ones listed last: 55 + 5 drawn.
TEST(ReportSvg, CompareChartDrawsEveryChangeAndLeavesUnchangedOnesOutFirst) {
  // `benchmarks` of five repetitions each, the last five of them at `last_five_ms` instead of 10 ms.
  const auto file = [](int benchmarks, double last_five_ms) {
    std::string runs;
    for (int b = 0; b < benchmarks; ++b) {
      for (const double ms : {10.0, 10.1, 9.9, 10.05, 9.95}) {
        runs += (runs.empty() ? "" : ",") + fmt::format(R"({{"name": "b{:02d}", "real_time": {}, "time_unit": "ms"}})",
                                                        b, b >= benchmarks - 5 ? ms * last_five_ms / 10.0 : ms);
      }
    }
    return report::parse_results(R"({"benchmarks": [)" + runs + "]}", "c.json");
  };
  const report::CompareOptions options;
  const auto result = report::compare_results(file(70, 10.0), file(70, 12.0), options);
  const std::string svg = report::compare_chart(result, options);
  std::string why;
  ASSERT_TRUE(well_formed_xml(svg, why)) << why;
  EXPECT_EQ(count(svg, R"(class="point")"), 60u);
  EXPECT_EQ(count(svg, R"(fill="#e15759">+20.0% SLOWER<)"), 5u) << svg;
  EXPECT_NE(svg.find("10 benchmark(s) not drawn (at most 60 rows, unchanged ones left out"), std::string::npos) << svg;
  // 60 benchmarks: all drawn, no note.
  const std::string all =
      report::compare_chart(report::compare_results(file(60, 10.0), file(60, 12.0), options), options);
  EXPECT_EQ(count(all, R"(class="point")"), 60u);
  EXPECT_EQ(all.find("not drawn"), std::string::npos);
}

// The scaling table and chart go by world size whatever order the file lists them in.
TEST(ReportSvg, ScalingRowsAndPointsGoByWorldSize) {
  std::string runs;
  for (const int world : {4, 1, 2}) {
    runs += (runs.empty() ? "" : ",") +
            fmt::format(R"({{"name": "dist_train/net/cpu/world:{0}/batch:32/engine:gloo", "real_time": {1},
                "time_unit": "ms", "world_size": {0}, "images_per_s": {2}, "scaling_efficiency": {3}}})",
                        world, 10.0 + world, 3200.0 * world / (1.0 + 0.1 * world), 1.0 / (1.0 + 0.1 * (world - 1)));
  }
  const auto set = report::parse_results(R"({"benchmarks": [)" + runs + "]}", "s.json");
  const std::string md = report::to_markdown(set, {}, report::ReportOptions{});
  const size_t one = md.find("| dist_train/net/cpu/batch:32/engine:gloo | 1 | 11.0 |");
  const size_t two = md.find("| dist_train/net/cpu/batch:32/engine:gloo | 2 | 12.0 |");
  const size_t four = md.find("| dist_train/net/cpu/batch:32/engine:gloo | 4 | 14.0 |");
  ASSERT_NE(one, std::string::npos) << md;
  ASSERT_NE(two, std::string::npos) << md;
  ASSERT_NE(four, std::string::npos) << md;
  EXPECT_LT(one, two);
  EXPECT_LT(two, four);
  const std::string svg = chart_named(report::make_charts(set), "scaling.svg").svg;
  std::smatch points;
  ASSERT_TRUE(std::regex_search(svg, points, std::regex(R"re(<polyline points="([^"]*)")re"))) << svg;
  std::istringstream xs(points[1].str());
  std::vector<double> x;
  for (std::string pair; xs >> pair;) x.push_back(std::stod(pair.substr(0, pair.find(','))));
  ASSERT_EQ(x.size(), 3u) << points[1];
  EXPECT_LT(x[0], x[1]);
  EXPECT_LT(x[1], x[2]);
}

// diagnose memory's chart, from an H100 run's resnet18 search (reports/nvidia-h100): peaks, the fit, the budget, the
// failed trials as crosses on it, the largest batch marked.
TEST(ReportSvg, MemoryChartShowsTrialsFitBudgetAndLargestBatch) {
  report::MemoryChartInput in;
  in.model = "resnet18";
  in.device = "cuda:0";
  in.device_name = "NVIDIA H100 80GB HBM3";
  in.gpu = true;
  in.capacity_bytes = 85'045'870'592;
  const double per_image = 4.52e6, fixed = 2.9e9;
  for (const std::int64_t b : {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384}) {
    in.trials.push_back({b, true, static_cast<std::int64_t>(fixed + per_image * static_cast<double>(b))});
  }
  in.trials.push_back({32768, false, 0});
  in.trials.push_back({17679, false, 0});
  in.trials.push_back({17333, true, static_cast<std::int64_t>(fixed + per_image * 17333)});
  in.fit_intercept = fixed, in.fit_slope = per_image, in.fit_points = 16;
  in.largest = 17333, in.smallest_failing = 17679;
  const std::string svg = report::memory_chart(in);
  std::string why;
  ASSERT_TRUE(well_formed_xml(svg, why)) << why;
  EXPECT_EQ(count(svg, "<circle class=\"point\""), 16u);
  EXPECT_EQ(count(svg, "<path class=\"point\""), 2u);  // the two out-of-memory trials
  EXPECT_NE(svg.find("device memory: 79.21 GiB"), std::string::npos) << svg;
  EXPECT_NE(svg.find("largest batch that ran: 17333"), std::string::npos);
  EXPECT_NE(svg.find("The smallest batch that ran out of memory: 17679."), std::string::npos);
  in.gpu = false;
  EXPECT_NE(report::memory_chart(in).find("address-space budget (--cpu-limit)"), std::string::npos);
}

// Point labels never overlap: one that would is left out (its point keeps its name as a tooltip) and counted.
TEST(ReportSvg, PointLabelsThatWouldOverlapAreLeftOutAndCounted) {
  report::XYPlot plot{"t", {"x", false, false}, {"y", false, false}, {}, {}};
  report::PlotSeries s;
  s.points.push_back({0.0, 0.0, "", ""});  // the corners set the axes: 0 to 10 both ways
  s.points.push_back({10.0, 10.0, "", ""});
  for (int i = 0; i < 8; ++i) s.points.push_back({5.0, 5.0, "the same place " + std::to_string(i), ""});
  s.points.push_back({2.0, 8.0, "far", ""});
  plot.series.push_back(s);
  const std::string svg = report::xy_plot(plot);
  EXPECT_EQ(count(svg, R"(class="label")"), 5u);  // right, left, above, below the shared point; "far"
  EXPECT_NE(svg.find("4 point labels left out where they would overlap another"), std::string::npos) << svg;
  EXPECT_EQ(count(svg, "<title>the same place 7</title>"), 1u);
}

// A value no axis can place (a hostile file's 1.7e308, NaN, a non-positive value on a log axis) is not drawn and is
// counted; the rest is; no coordinate is NaN or infinite. The same for a forest plot's rows and band.
TEST(ReportSvg, PlotsLeaveOutWhatNoAxisCanPlace) {
  static const std::regex non_finite(R"(="-?(nan|inf))");
  report::XYPlot plot{"t", {"x", true, false}, {"y", false, false}, {}, {}};
  report::PlotSeries s;
  s.line = true;
  for (const double x : {1.0, 10.0, 1.7e308, std::nan(""), -1.0, 0.0}) s.points.push_back({x, 2.0, "p", ""});
  s.points.push_back({100.0, -1.7e308, "q", ""});
  plot.series.push_back(s);
  const std::string svg = report::xy_plot(plot);
  std::string why;
  EXPECT_TRUE(well_formed_xml(svg, why)) << why;
  EXPECT_FALSE(std::regex_search(svg, non_finite)) << svg;
  EXPECT_EQ(count(svg, R"(<circle class="point")"), 2u);
  EXPECT_NE(svg.find("5 points not drawn: outside what the axes can show"), std::string::npos) << svg;
  const report::ForestPlot forest{
      "f",   "change, %", -1e308,
      1e308, "band",      {{"a", 1e300, -1e300, 1e300, "+1e300%", true}, {"b", 3.0, 1.0, 5.0, "+3.0%", false}},
      {}};
  const std::string rows = report::forest_plot(forest);
  EXPECT_TRUE(well_formed_xml(rows, why)) << why;
  EXPECT_FALSE(std::regex_search(rows, non_finite)) << rows;
  EXPECT_EQ(count(rows, R"(class="point")"), 1u);
  EXPECT_EQ(count(rows, R"(class="band")"), 0u);
  EXPECT_NE(rows.find(">+1e300%<"), std::string::npos);  // its text still says it
}

// The scaling flag's boundary: 102.0% is noise, a hair above it is flagged, in the table, the warnings and the chart.
TEST(ReportSvg, ScalingEfficiencyIsFlaggedOnlyAbove102Percent) {
  EXPECT_FALSE(report::efficiency_above_noise(1.02));
  EXPECT_TRUE(report::efficiency_above_noise(std::nextafter(1.02, 2.0)));
  EXPECT_FALSE(report::efficiency_above_noise(std::nextafter(1.02, 0.0)));
  const auto set_of = [](const std::string& efficiency) {
    return report::parse_results(
        R"({"benchmarks": [{"name": "dist_train/net/cpu/world:1/batch:8/engine:gloo", "real_time": 5,
                                     "time_unit": "ms", "world_size": 1, "images_per_s": 1600, "scaling_efficiency": )" +
            efficiency + "}]}",
        "s.json");
  };
  for (const auto& [efficiency, flagged] :
       std::vector<std::pair<std::string, bool>>{{"1.02", false}, {"1.0200001", true}}) {
    const auto set = set_of(efficiency);
    const std::string md = report::to_markdown(set, report::make_charts(set), report::ReportOptions{});
    EXPECT_EQ(md.find("above 100%: see Warnings") != std::string::npos, flagged) << efficiency << "\n" << md;
    EXPECT_EQ(report::warnings(set, 5.0).size(), flagged ? 1u : 0u) << efficiency;
    EXPECT_EQ(chart_named(report::make_charts(set), "scaling.svg").svg.find("not super-linear") != std::string::npos,
              flagged);
  }
}
