#include <fmt/format.h>
#include <gtest/gtest.h>

#include <regex>
#include <string>

#include "history_test_util.h"
#include "test_util.h"
#include "torchprobe/history/dashboard.h"
#include "torchprobe/history/store.h"
#include "torchprobe/input_error.h"

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
  // Cost per epoch: epoch_s 5.75 * 0.78 s at 0.36 USD/h; per million images: 1e6 / (64000 / 5.75) s.
  EXPECT_NE(html.find(fmt::format("<td class=\"num\">{:.4g}</td>", 5.75 * 0.78 / 3600 * 0.36)), std::string::npos);
  EXPECT_NE(html.find(fmt::format("<td class=\"num\">{:.4g}</td>", 1e6 / (64000 / 5.75) / 3600 * 0.36)),
            std::string::npos);
}

TEST(HistoryDashboard, PricesAreDeviceEqualsUsdPerHour) {
  const auto prices = history::parse_prices("cpu=0.10,cuda:0=2.5,cpu@gpu-host=0");
  ASSERT_EQ(prices.size(), 3u);
  EXPECT_DOUBLE_EQ(prices.at("cuda:0"), 2.5);
  EXPECT_DOUBLE_EQ(prices.at("cpu@gpu-host"), 0.0);
  for (const char* bad : {"cpu", "cpu=", "=1", "cpu=abc", "cpu=-1", "cpu=1x"}) {
    EXPECT_THROW_WITH(history::parse_prices(bad), InputError, "--price: expected DEVICE=USD_PER_HOUR");
  }
  EXPECT_THROW_WITH(history::parse_prices("cpu=1,,cuda=2"), InputError, "--price: empty item");
}
