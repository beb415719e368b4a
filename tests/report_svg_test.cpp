#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <regex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "report_test_util.h"
#include "torchprobe/report/printers.h"
#include "torchprobe/report/results.h"
#include "torchprobe/report/svg_util.h"

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
  const auto charts = report::make_charts(set);
  ASSERT_EQ(charts.size(), 1u);
  EXPECT_EQ(charts[0].file, "images_per_s.svg");
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
