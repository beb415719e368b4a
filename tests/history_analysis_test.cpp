#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "history_test_util.h"
#include "test_util.h"
#include "torchprobe/history/analysis.h"
#include "torchprobe/history/store.h"

// ---- show and check ----

TEST(HistoryAnalysis, ShowAndCheckFindTheSlowdownOnTheNewestCommit) {
  TempDir dir("torchprobe-history");
  history::Store store(dir.file("h.sqlite"), history::Store::Mode::kCreate);
  add_series(store, step_values(40, 38, 5.0, 5.6), /*new_runs=*/2);  // two runs of the newest commit, 12% slower
  const auto reports = analyze_stored(store);
  ASSERT_EQ(reports.size(), 2u);
  const history::SeriesReport* step = nullptr;
  for (const auto& r : reports) step = r.series.name == kStep ? &r : step;
  ASSERT_NE(step, nullptr);
  ASSERT_EQ(step->changes.size(), 1u);
  const auto& change = step->changes[0];
  EXPECT_EQ(change.commit, "new");
  EXPECT_EQ(change.index, 38u);
  EXPECT_NEAR(change.before_ms, 5.0, 0.1);
  EXPECT_NEAR(change.after_ms, 5.6, 0.1);
  EXPECT_NEAR(change.change_pct, 12.0, 2.5);
  EXPECT_LT(change.p_value, 0.05);

  const auto slow = history::slowdowns_at(reports, store.newest_commit());
  ASSERT_EQ(slow.size(), 1u);
  EXPECT_EQ(slow[0].report, step);
  const std::string text = history::check_console(slow, "new", reports.size(), {});
  EXPECT_TRUE(std::regex_search(
      text, std::regex("SLOWER  train_step/net/cpu/batch:64/dtype:fp32/layout:nchw  device cpu  host host-a")))
      << text;
  EXPECT_NE(text.find("FAIL: 1 of 2 series slowed down at commit new"), std::string::npos) << text;
  EXPECT_TRUE(history::slowdowns_at(reports, "c0037").empty());
  EXPECT_NE(history::check_console({}, "c0038", 2, {}).find("OK: no slowdown change point at commit c0038 in 2 series"),
            std::string::npos);

  const auto json = nlohmann::json::parse(history::show_json(reports));
  ASSERT_EQ(json["benchmarks"].size(), 2u);
  for (const auto& b : json["benchmarks"]) {
    for (const char* key : {"name", "device", "host", "points", "change_points"}) EXPECT_TRUE(b.contains(key)) << key;
    EXPECT_EQ(b["points"].size(), 40u);
    if (b["name"] != kStep) continue;
    ASSERT_EQ(b["change_points"].size(), 1u);
    const auto& c = b["change_points"][0];
    for (const char* key : {"commit", "before_ms", "after_ms", "change_pct", "p_value"})
      EXPECT_TRUE(c.contains(key)) << key;
    EXPECT_EQ(c["commit"], "new");
    // The change's place, date and interval, each the change point's own: the first run at the new level.
    EXPECT_EQ(c["index"], 38);
    EXPECT_EQ(c["date"], b["points"][38]["date"]);
    EXPECT_EQ(c["commit"], b["points"][38]["commit"]);
    EXPECT_NE(c["date"], b["points"][37]["date"]);
    EXPECT_LT(c["change_low_pct"].get<double>(), c["change_pct"].get<double>());
    EXPECT_GT(c["change_high_pct"].get<double>(), c["change_pct"].get<double>());
    EXPECT_DOUBLE_EQ(c["change_low_pct"].get<double>(), change.low_pct);
    EXPECT_DOUBLE_EQ(c["change_high_pct"].get<double>(), change.high_pct);
    EXPECT_DOUBLE_EQ(c["before_ms"].get<double>(), change.before_ms);
    EXPECT_DOUBLE_EQ(c["after_ms"].get<double>(), change.after_ms);
  }
  // --last 0 lists every run, as does a --last above the count.
  for (const size_t last : {size_t{0}, size_t{40}, size_t{41}}) {
    const std::string all = history::show_console(reports, last);
    EXPECT_EQ(all.find("earlier runs not listed"), std::string::npos) << last;
    EXPECT_NE(all.find("c0000"), std::string::npos) << last;
  }
  EXPECT_NE(history::show_console(reports, 39).find("(1 earlier runs not listed)"), std::string::npos);
  const std::string console = history::show_console(reports, 5);
  EXPECT_NE(console.find("(35 earlier runs not listed)"), std::string::npos) << console;
  EXPECT_NE(console.find("change point at new"), std::string::npos) << console;
  EXPECT_NE(console.find("2 series, 1 with change points"), std::string::npos) << console;
}

TEST(HistoryAnalysis, AFasterCommitIsNotASlowdown) {
  TempDir dir("torchprobe-history");
  history::Store store(dir.file("h.sqlite"), history::Store::Mode::kCreate);
  add_series(store, step_values(40, 20, 5.0, 4.0));
  const auto reports = analyze_stored(store);
  ASSERT_EQ(find(store.series({}), kStep)->points.size(), 40u);
  EXPECT_TRUE(history::slowdowns_at(reports, "c0020").empty());
  bool found = false;
  for (const auto& r : reports) {
    for (const auto& c : r.changes) found = found || (c.commit == "c0020" && c.change_pct < -15.0);
  }
  EXPECT_TRUE(found);
}

namespace {

// The training step's report for a series stored as runs of equal medians ({20, 10.0}: 20 runs at 10 ms), analysed as
// show and check do.
history::SeriesReport step_report(const std::vector<std::pair<int, double>>& segments,
                                  const history::ChangePointOptions& options = {}) {
  TempDir dir("torchprobe-history");
  history::Store store(dir.file("h.sqlite"), history::Store::Mode::kCreate);
  std::vector<double> values;
  for (const auto& [runs, ms] : segments) values.insert(values.end(), static_cast<size_t>(runs), ms);
  add_series(store, values);
  for (auto& r : analyze_stored(store, options)) {
    if (r.series.name == kStep) return r;
  }
  ADD_FAILURE() << "no training step series";
  return {};
}

}  // namespace

// Every change kept could be --min-change between its neighbours: with a minimum of 5%, 10 -> 10.4 (+4%) -> 11
// (+5.8%), 20 runs each with 1% noise, keeps only the second, as +7.8% over the first two segments (the +4% split's
// interval stays under 5%).
TEST(HistoryAnalysis, EveryChangeKeptIsAtLeastTheMinimumBetweenItsNeighbours) {
  history::ChangePointOptions five_pct;
  five_pct.min_change_pct = 5.0;
  const auto step = step_report({{20, 10.0}, {20, 10.4}, {20, 11.0}}, five_pct);
  ASSERT_EQ(step.changes.size(), 1u);
  EXPECT_EQ(step.changes[0].index, 40u);
  EXPECT_NEAR(step.changes[0].change_pct, 100.0 * (11.0 - 10.2) / 10.2, 0.5);
  EXPECT_LE(step.changes[0].low_pct, step.changes[0].change_pct);
  EXPECT_GE(step.changes[0].high_pct, step.changes[0].change_pct);
  for (const auto& c : step.changes) EXPECT_GE(std::fabs(c.change_pct), 5.0) << c.commit;
}

// Each change's before and after figures are its own segments' medians, bounded by the changes next to it: 10 -> 12
// -> 15 ms (20 runs each) gives 10 -> 12 and 12 -> 15, not 10 -> 13.5 (every run after the first change).
TEST(HistoryAnalysis, BeforeAndAfterStopAtTheNeighbouringChanges) {
  const auto step = step_report({{20, 10.0}, {20, 12.0}, {20, 15.0}});
  ASSERT_EQ(step.changes.size(), 2u);
  EXPECT_EQ(step.changes[0].index, 20u);
  EXPECT_NEAR(step.changes[0].before_ms, 10.0, 0.2);
  EXPECT_NEAR(step.changes[0].after_ms, 12.0, 0.2);
  EXPECT_EQ(step.changes[1].index, 40u);
  EXPECT_NEAR(step.changes[1].before_ms, 12.0, 0.2);
  EXPECT_NEAR(step.changes[1].after_ms, 15.0, 0.2);
}

// The repetitions are read only where the size rule may draw them: runs within few_runs_reach() (30) of a split.
// A 10% step at run 40 of 100 reads runs 10..69 (each once); a flat series reads none.
TEST(HistoryAnalysis, RepetitionsAreReadOnlyNearASplit) {
  history::Series step{kStep, "cpu", "host-a", {}}, flat{kAdd, "cpu", "host-a", {}};
  const auto values = planted(5, 100, 0.01, {{40, 0.10}});
  for (size_t i = 0; i < values.size(); ++i) {
    history::Point p;
    p.commit = fmt::format("c{:04}", i);
    p.run_id = static_cast<std::int64_t>(i);
    p.median_ms = values[i];
    step.points.push_back(p);
    p.median_ms = 2.0 + 0.001 * static_cast<double>(i % 3);
    flat.points.push_back(p);
  }
  std::map<std::string, std::set<std::int64_t>> read;
  std::map<std::string, int> calls;
  const auto reports = history::analyze({step, flat}, {}, [&](const history::Point& p) {
    const std::string series = p.median_ms < 5.0 ? kAdd : kStep;
    read[series].insert(p.run_id);
    ++calls[series];
    return std::vector<double>{p.median_ms * 0.99, p.median_ms, p.median_ms * 1.01};
  });
  ASSERT_EQ(reports.size(), 2u);
  ASSERT_EQ(reports[0].changes.size(), 1u);
  EXPECT_EQ(reports[0].changes[0].index, 40u);
  EXPECT_EQ(history::few_runs_reach(), 30u);
  EXPECT_EQ(read[kStep].size(), 60u);
  EXPECT_EQ(*read[kStep].begin(), 10);
  EXPECT_EQ(*read[kStep].rbegin(), 69);
  EXPECT_EQ(calls[kStep], 60);
  EXPECT_TRUE(read[kAdd].empty());
}
