#include <fmt/format.h>
#include <gtest/gtest.h>

#include <regex>
#include <string>

#include "history_test_util.h"
#include "test_util.h"
#include "torchprobe/history/dashboard.h"
#include "torchprobe/history/store.h"
#include "torchprobe/input_error.h"
#include "torchprobe/report/results.h"

using torchprobe::InputError;

// ---- the dashboard (its rendering is checked in a browser by history_browser_test) ----

TEST(HistoryDashboard, OneChartPerSeriesChangePointsMarkedNothingFromTheNetwork) {
  TempDir dir("torchprobe-history");
  history::Store store(dir.file("h.sqlite"), history::Store::Mode::kCreate);
  add_series(store, step_values(30, 15, 5.0, 5.75));
  history::DashboardOptions options;
  options.usd_per_hour = history::parse_prices("cpu=0.36");
  const auto reports = analyze_stored(store);
  const std::string html = history::dashboard_html(reports, store.latest_runs({}), options);
  const auto count = [&](const std::string& what) {
    size_t n = 0;
    for (size_t at = html.find(what); at != std::string::npos; at = html.find(what, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count("<section class=\"series\""), 2u);
  EXPECT_EQ(count("class=\"change-point\" data-commit=\"c0015\""), 1u);
  EXPECT_TRUE(std::regex_search(html, std::regex(R"(>c0015 \+1[45]\.[0-9]%<title>)"))) << "no change point label";
  EXPECT_EQ(count("<input id=\"filter\""), 1u);
  EXPECT_EQ(count("id=\"device-images_per_s\""), 1u);  // the report's chart of the latest run
  // Every URL is an XML namespace: no CDN, no fetch.
  EXPECT_EQ(count("http://"), count("http://www.w3.org/2000/svg"));
  EXPECT_EQ(count("https://"), 0u);
  // Cost per epoch: epoch_s 5.75 * 0.78 s at 0.36 USD/h = 0.0004485 USD; per million images: 1e6 / (64000 / 5.75) s
  // = 0.008984 USD. In plain decimals, 3 significant digits: never 4.485e-04.
  EXPECT_TRUE(std::regex_search(html, std::regex(R"(<td class="num">0\.00044[89]</td>)"))) << "cost per epoch";
  EXPECT_NE(html.find("<td class=\"num\">0.00898</td>"), std::string::npos);
  EXPECT_NE(html.find("<td class=\"num\">0.36</td>"), std::string::npos);  // USD/hour as given
  EXPECT_FALSE(std::regex_search(html, std::regex(R"(>[0-9.]+e[-+][0-9]+<)"))) << "a number in scientific notation";
}

// docs/history.md: a change point's line and label are red when slower, green when faster.
TEST(HistoryDashboard, ASlowdownIsDrawnRedAndASpeedUpGreen) {
  TempDir dir("torchprobe-history");
  history::Store store(dir.file("h.sqlite"), history::Store::Mode::kCreate);
  std::vector<double> values = step_values(45, 15, 5.0, 5.75);
  std::fill(values.begin() + 30, values.end(), 5.0);
  add_series(store, values);
  const std::string html = history::dashboard_html(analyze_stored(store), store.latest_runs({}), {});
  const auto drawn = [&](const std::string& commit, const std::string& colour) {
    const std::regex drawing("class=\"change-point\" data-commit=\"" + commit + "\"[^>]*stroke=\"" + colour +
                             "\"[^>]*/><text [^>]*fill=\"" + colour + "\">" + commit + " ");
    return std::regex_search(html, drawing);
  };
  EXPECT_TRUE(drawn("c0015", "#d62728")) << "the slowdown, red";
  EXPECT_TRUE(drawn("c0030", "#2ca02c")) << "the speed-up, green";
  EXPECT_FALSE(drawn("c0015", "#2ca02c"));
  EXPECT_FALSE(drawn("c0030", "#d62728"));
}

// A device without a price has no costs ("-"), never a cost of 0 as if it were free.
TEST(HistoryDashboard, AnUnpricedDeviceHasNoCosts) {
  TempDir dir("torchprobe-history");
  history::Store store(dir.file("h.sqlite"), history::Store::Mode::kCreate);
  add_series(store, step_values(30, 15, 5.0, 5.75));
  history::DashboardOptions options;
  options.usd_per_hour = history::parse_prices("cuda:0=2.5");
  const std::string html = history::dashboard_html(analyze_stored(store), store.latest_runs({}), options);
  EXPECT_NE(html.find("USD/hour</th>"), std::string::npos) << "the price columns are shown";
  EXPECT_NE(html.find(R"(<td class="num">-</td><td class="num">-</td><td class="num">-</td></tr>)"), std::string::npos)
      << html;
  EXPECT_EQ(html.find(R"(<td class="num">0</td>)"), std::string::npos) << html;
}

// docs/history.md: a tooltip per point while a series has at most 60; past that the markers would hide the line.
TEST(HistoryDashboard, EachPointHasATooltipWhileThereAreAtMostSixty) {
  TempDir dir("torchprobe-history");
  history::Store store(dir.file("h.sqlite"), history::Store::Mode::kCreate);
  add_series(store, std::vector<double>(60, 5.0));  // two series (a training step and an op) of 60 runs
  const auto circles = [&] {
    const std::string html = history::dashboard_html(analyze_stored(store), store.latest_runs({}), {});
    size_t n = 0;
    for (size_t at = html.find("<circle "); at != std::string::npos; at = html.find("<circle ", at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(circles(), 120u);
  std::mt19937_64 rng(7);
  store.add_documents({{"run60.json", run(rng, 60, 5.0)}}, labels("c0060"));
  EXPECT_EQ(circles(), 0u);
}

// The dashboard says what the report would warn about the latest figures, names as code, text from the files inert.
TEST(HistoryDashboard, TheLatestRunsWarningsAreShown) {
  const auto latest = torchprobe::report::parse_results(
      R"({"benchmarks": [{"name": "train_step/net/cpu/batch:64", "real_time": 10, "time_unit": "ms", "images_per_s": 6400},
                         {"name": "train_step/resnet18/cpu/batch:64", "error_occurred": true,
                          "error_message": "out of <memory> | `x` \\"}]})",
      "latest.json");
  const std::string html = history::dashboard_html({}, latest, {});
  EXPECT_NE(html.find("<details class=\"warnings\" open><summary>1 warning about these figures</summary>"),
            std::string::npos)
      << html;
  EXPECT_NE(html.find("<li><code>train_step/resnet18/cpu/batch:64/dtype:fp32/layout:nchw</code> did not run: out of "
                      "&lt;memory&gt; | `x` \\</li>"),
            std::string::npos)
      << html;
  EXPECT_EQ(history::dashboard_html({},
                                    torchprobe::report::parse_results(
                                        R"({"benchmarks": [{"name": "train_step/net/cpu/batch:64", "real_time": 10,
                                                "time_unit": "ms", "images_per_s": 6400}]})",
                                        "quiet.json"),
                                    {})
                .find("class=\"warnings\""),
            std::string::npos);
}

// The device comparison shows the newest run of the branches asked for: a newer run on a PR branch stays out.
TEST(HistoryDashboard, TheLatestRunIsTheNewestOnTheBranchesAsked) {
  TempDir dir("torchprobe-history");
  history::Store store(dir.file("h.sqlite"), history::Store::Mode::kCreate);
  std::mt19937_64 rng(9);
  store.add_documents({{"main.json", run(rng, 0, 5.0)}}, labels("c0001", "main"));
  store.add_documents({{"pr.json", run(rng, 1, 6.0)}}, labels("c0002", "pr-7"));
  const auto median_of_the_step = [](const torchprobe::report::ResultSet& set) {
    for (const auto& r : set.results) {
      if (r.name == kStep) return r.median_ms;
    }
    return -1.0;
  };
  EXPECT_NEAR(median_of_the_step(store.latest_runs({"main"})), 5.0, 0.2);
  EXPECT_NEAR(median_of_the_step(store.latest_runs({})), 6.0, 0.2);
  EXPECT_NEAR(median_of_the_step(store.latest_runs({"pr-7"})), 6.0, 0.2);
}

TEST(HistoryDashboard, PricesAreDeviceEqualsUsdPerHour) {
  const auto prices = history::parse_prices("cpu=0.10,cuda:0=2.5,cpu@gpu-host=0");
  ASSERT_EQ(prices.size(), 3u);
  EXPECT_DOUBLE_EQ(prices.at("cuda:0"), 2.5);
  EXPECT_DOUBLE_EQ(prices.at("cpu@gpu-host"), 0.0);
  for (const char* bad : {"cpu", "cpu=", "=1", "cpu=abc", "cpu=-1", "cpu=1x", "cpu=inf", "cpu=nan", "cpu=1e400"}) {
    EXPECT_THROW_WITH(history::parse_prices(bad), InputError, "--price: expected DEVICE=USD_PER_HOUR");
  }
  EXPECT_THROW_WITH(history::parse_prices("cpu=1,,cuda=2"), InputError, "--price: empty item");
}
