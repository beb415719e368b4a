// The CI gate: pairing, verdicts, exit codes, the significance tests against scipy, and the printers
// (console, Markdown, JUnit, JSON) on golden files.
#include "torchprobe/report/compare.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <regex>

#include "test_util.h"
#include "torchprobe/input_error.h"
#include "torchprobe/io.h"

using namespace torchprobe;

namespace {

const std::string kFixtures = TORCHPROBE_COMPARE_FIXTURE_DIR;

report::ResultSet load(const std::string& file) { return report::load_results({kFixtures + "/" + file}); }

report::CompareReport fixture_report(const report::CompareOptions& options = {}) {
  return report::compare_results(load("baseline.json"), load("current.json"), options);
}

const report::Comparison& row(const report::CompareReport& r, const std::string& name) {
  for (const auto& c : r.rows) {
    if (c.name == name) return c;
  }
  throw std::runtime_error("no row " + name);
}

// Five repetitions per side around the given medians, as a Google Benchmark file.
report::ResultSet timings(const std::vector<double>& ms) {
  std::string runs;
  for (size_t i = 0; i < ms.size(); ++i) {
    runs += (i ? "," : "") + fmt::format(R"({{"name": "b", "run_type": "iteration", "real_time": {}, "time_unit": "ms"}})", ms[i]);
  }
  return report::parse_results(R"({"benchmarks": [)" + runs + "]}", "t.json");
}

}  // namespace

TEST(MannWhitney, MatchesScipy) {
  struct Case {
    std::vector<double> x, y;
    double u, p;
    bool exact;
  };
  std::vector<Case> cases = {
      {{1, 2, 3}, {4, 5, 6}, 0.0, 0.1, true},
      {{10.0, 10.1, 10.2, 10.3, 10.4}, {11.0, 11.1, 11.2, 11.3, 11.4}, 0.0, 0.007936507936507936, true},
      {{1.1, 2.3, 3.2, 4.8, 5.0}, {2.0, 3.9, 6.1, 7.2, 8.4, 9.9}, 6.0, 0.12554112554112554, true},
      {{1, 2, 2, 3, 4}, {2, 3, 3, 5, 6}, 6.0, 0.19882894401644247, false},
      {{0, 3, 6, 9, 12, 15, 18, 21, 24, 27},
       {5.5, 7.5, 9.5, 11.5, 13.5, 15.5, 17.5, 19.5, 21.5, 23.5, 25.5, 27.5, 29.5, 31.5, 33.5},
       48.0, 0.14157380116882784, false},
      {{5, 5, 5}, {5, 5, 5}, 4.5, 1.0, false},
      {{0, 1, 2, 3, 4, 5, 6, 7, 8}, {0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5, 8.5, 9.5, 10.5, 11.5}, 36.0, 0.2136207303090525, false},
  };
  // Exact whenever one side has <= 8 values and there are no ties, as scipy: also far beyond the
  // 2 500 cells an earlier version capped it at.
  Case wide{{1.505, 7.255, 3.1255}, {}, 1072.0, 0.5579371175359248, true};
  for (int k = 1; k <= 900; ++k) wide.y.push_back(static_cast<double>(k * 7919 % 1000) / 100.0);
  cases.push_back(wide);
  Case eight{{}, {}, 23.0, 4.5303507105201405e-13, true};
  for (int i = 0; i < 8; ++i) eight.x.push_back(10.0 + 0.01 * i);
  for (int i = 0; i < 400; ++i) eight.y.push_back(10.0047 + 0.013 * i);
  cases.push_back(eight);
  for (const auto& c : cases) {
    const auto t = report::mann_whitney_u(c.x, c.y);
    EXPECT_DOUBLE_EQ(t.u, c.u) << c.x.size() << "x" << c.y.size();
    EXPECT_NEAR(t.p, c.p, 1e-12 + 1e-9 * c.p) << c.x.size() << "x" << c.y.size();
    EXPECT_EQ(t.exact, c.exact) << c.x.size() << "x" << c.y.size();
  }
  EXPECT_DOUBLE_EQ(report::mann_whitney_min_p(3, 3), 0.1);
  EXPECT_NEAR(report::mann_whitney_min_p(5, 5), 2.0 / 252.0, 1e-15);
  EXPECT_NEAR(report::mann_whitney_min_p(2, 2), 1.0 / 3.0, 1e-15);
}

TEST(Welch, MatchesScipyFromSummaryStatistics) {
  // scipy.stats.ttest_ind_from_stats(m1, s1, n1, m2, s2, n2, equal_var=False).pvalue
  EXPECT_NEAR(report::welch_p(9.2, 0.09, 5, 8.0, 0.08, 5), 2.0782277097541372e-08, 1e-15);
  EXPECT_NEAR(report::welch_p(10.0, 1.0, 3, 10.5, 2.0, 7), 0.614419626225593, 1e-12);
  EXPECT_NEAR(report::welch_p(100.0, 5.0, 30, 101.0, 9.0, 12), 0.7220033926366902, 1e-12);
  EXPECT_EQ(report::welch_p(5.0, 0.0, 4, 5.0, 0.0, 4), 1.0);
  EXPECT_THROW(report::welch_p(5.0, 1.0, 1, 5.0, 1.0, 4), std::invalid_argument);
}

TEST(Compare, VerdictsFollowThresholdAndSignificance) {
  const report::CompareOptions options;  // 5%, alpha 0.05
  const std::vector<double> base = {10.0, 10.1, 9.9, 10.05, 9.95};
  const auto verdict = [&](const std::vector<double>& current) {
    return report::compare_results(timings(base), timings(current), options).rows.at(0).verdict;
  };
  EXPECT_EQ(verdict({12.0, 12.1, 11.9, 12.05, 11.95}), report::Verdict::kSlower);  // +20%, p = 0.008
  EXPECT_EQ(verdict({8.0, 8.1, 7.9, 8.05, 7.95}), report::Verdict::kFaster);       // speedups never fail
  EXPECT_EQ(verdict({10.3, 10.4, 10.2, 10.35, 10.25}), report::Verdict::kSame);    // +3%: significant, small
  // +8% median but overlapping samples: not significant, so not a regression.
  EXPECT_EQ(verdict({10.8, 9.8, 12.0, 10.0, 11.5}), report::Verdict::kSame);
  // Three repetitions each cannot reach p < 0.05: UNCONFIRMED, with the smallest reachable p.
  const auto few = report::compare_results(timings({10, 10.1, 9.9}), timings({12, 12.1, 11.9}), options);
  EXPECT_EQ(few.rows.at(0).verdict, report::Verdict::kUnconfirmed);
  EXPECT_DOUBLE_EQ(few.rows.at(0).min_p, 0.1);
  EXPECT_NE(few.rows.at(0).note.find("cannot reach p < 0.05"), std::string::npos) << few.rows.at(0).note;
  EXPECT_EQ(few.exit_code(options), 0);
  report::CompareOptions strict = options;
  strict.fail_unconfirmed = true;
  EXPECT_EQ(few.exit_code(strict), 1);
}

// A partial current run (interrupted) fails the gate: the benchmarks it did not reach cannot pass it.
TEST(Compare, APartialCurrentRunFailsTheGate) {
  const report::CompareOptions options;
  const std::string runs = R"([{"name": "a", "run_type": "iteration", "real_time": 10, "time_unit": "ms"},
                               {"name": "b", "run_type": "iteration", "real_time": 10, "time_unit": "ms"}])";
  const auto baseline = report::parse_results(R"({"benchmarks": )" + runs + "}", "base.json");
  const auto partial = report::parse_results(
      R"({"context": {"torchprobe_run": "partial: interrupted by SIGINT after 1 of 2 benchmarks"},
          "benchmarks": [{"name": "a", "run_type": "iteration", "real_time": 10, "time_unit": "ms"}]})", "cur.json");
  const auto r = report::compare_results(baseline, partial, options);
  EXPECT_EQ(row(r, "b").verdict, report::Verdict::kGone);
  EXPECT_EQ(row(r, "b").note, "not reached: the current run is partial");
  EXPECT_EQ(r.exit_code(options), 1);
  EXPECT_NE(report::compare_summary(r, options).find("FAIL: 1 SAME, 1 GONE (the current run is partial: cur.json: interrupted by SIGINT"),
            std::string::npos) << report::compare_summary(r, options);
  EXPECT_NE(report::compare_junit(r, options).find("the current run is partial"), std::string::npos);
  // A partial baseline only adds a note.
  const auto back = report::compare_results(partial, report::parse_results(R"({"benchmarks": )" + runs + "}", "full.json"), options);
  EXPECT_EQ(back.exit_code(options), 0);
  EXPECT_NE(report::compare_summary(back, options).find("note: the baseline is partial"), std::string::npos);
}

// A suffix that can tell two benchmarks of one program apart never merges them: each is compared with
// its own baseline, and only the one that regressed fails.
TEST(Compare, EveryDistinguishingSuffixKeepsBenchmarksApart) {
  const auto r = fixture_report();
  for (const auto& [same, slower] : std::vector<std::pair<std::string, std::string>>{
           {"BM_Par/threads:1", "BM_Par/threads:2"},
           {"BM_Iter/iterations:10", "BM_Iter/iterations:100"},
           {"BM_Min/min_time:0.500", "BM_Min/min_time:1.000"}}) {
    EXPECT_EQ(row(r, same).verdict, report::Verdict::kSame) << same;
    EXPECT_EQ(row(r, same).baseline.repetitions, 5) << same << ": not merged with " << slower;
    EXPECT_EQ(row(r, slower).verdict, report::Verdict::kSlower) << slower;
  }
  EXPECT_EQ(row(r, "BM_Rep/repeats:3").verdict, report::Verdict::kSame);
  EXPECT_EQ(row(r, "BM_Rep/repeats:5").verdict, report::Verdict::kFaster);
  // The timing suffix never tells two of one program apart: an old /real_time name pairs with the new /manual_time.
  EXPECT_EQ(row(r, "BM_Timing").verdict, report::Verdict::kSame);
  EXPECT_EQ(row(r, "BM_Timing").current.repetitions, 5);
}

TEST(Compare, TwoEntriesDifferingOnlyInTheirTimingSuffixStayApart) {
  const auto set = report::parse_results(R"({"benchmarks": [
      {"name": "BM/real_time", "real_time": 1.0, "time_unit": "ms"},
      {"name": "BM/manual_time", "real_time": 2.0, "time_unit": "ms"}]})",
                                         "both.json");
  ASSERT_EQ(set.results.size(), 2u);
  EXPECT_EQ(set.results[0].name, "BM/real_time");
  EXPECT_EQ(set.results[1].name, "BM/manual_time");
}

TEST(Compare, FailuresFailTheGateAndPartialFailuresAreComparedWithTheRest) {
  const auto r = fixture_report();
  const auto& fails = row(r, "BM_Fails");
  EXPECT_EQ(fails.verdict, report::Verdict::kFailed);
  EXPECT_NE(fails.note.find("ran in the baseline, fails now: CUDA out of memory"), std::string::npos) << fails.note;
  const auto& partial = row(r, "BM_Partial");
  EXPECT_EQ(partial.verdict, report::Verdict::kSame);
  EXPECT_EQ(partial.current.repetitions, 4);
  EXPECT_EQ(partial.current.failed_repetitions, 1);
  EXPECT_NE(partial.note.find("1 of 5 current repetitions failed and were dropped (out of memory in repetition 2)"),
            std::string::npos)
      << partial.note;
  EXPECT_EQ(row(r, "BM_Gone").verdict, report::Verdict::kGone);
  EXPECT_EQ(row(r, "BM_New").verdict, report::Verdict::kNew);
  EXPECT_EQ(r.exit_code({}), 1);

  // A current file with no benchmarks at all fails, whatever the baseline holds.
  const auto empty = report::compare_results(load("baseline.json"), load("empty.json"), {});
  EXPECT_TRUE(empty.current_empty);
  EXPECT_EQ(empty.count(report::Verdict::kFailed), static_cast<int>(empty.rows.size()));
  EXPECT_EQ(empty.exit_code({}), 1);
  EXPECT_NE(report::compare_summary(empty, {}).find("FAIL"), std::string::npos);
  EXPECT_NE(report::compare_summary(empty, {}).find("the current file has no benchmarks"), std::string::npos);
  EXPECT_THROW_WITH(report::compare_results(load("empty.json"), load("current.json"), {}), InputError,
                    "the baseline has no benchmarks");
}

TEST(Compare, AggregatesOnlyFilesAreTestedWithTheirOwnStatistics) {
  const auto r = fixture_report();
  const auto& agg = row(r, "BM_Agg");
  EXPECT_TRUE(agg.baseline.aggregates_only);
  EXPECT_EQ(agg.baseline.repetitions, 5);
  EXPECT_NEAR(agg.baseline.cv_pct, 1.0, 1e-9) << "the file's own CV";
  EXPECT_EQ(agg.test, "Welch t");
  EXPECT_NEAR(agg.p, 2.0782277097541372e-08, 1e-14);
  EXPECT_EQ(agg.verdict, report::Verdict::kSlower);
  const auto& two = row(r, "BM_Two");
  EXPECT_EQ(two.verdict, report::Verdict::kUnconfirmed);
  EXPECT_NEAR(two.min_p, 1.0 / 3.0, 1e-12);
}

TEST(Compare, GeometricMeanOfRatios) {
  std::string two = R"({"benchmarks": [
      {"name": "a", "real_time": 1.0, "time_unit": "ms"}, {"name": "b", "real_time": 4.0, "time_unit": "ms"}]})";
  std::string two_later = R"({"benchmarks": [
      {"name": "a", "real_time": 2.0, "time_unit": "ms"}, {"name": "b", "real_time": 2.0, "time_unit": "ms"}]})";
  const auto r = report::compare_results(report::parse_results(two, "b.json"), report::parse_results(two_later, "c.json"),
                                         report::CompareOptions{});
  EXPECT_NEAR(r.geomean_ratio, 1.0, 1e-12);  // sqrt(2 * 0.5)
  EXPECT_EQ(r.rows[0].verdict, report::Verdict::kUnconfirmed) << "one repetition: no test possible";
  EXPECT_DOUBLE_EQ(r.rows[0].min_p, 1.0);
  EXPECT_EQ(r.rows[1].verdict, report::Verdict::kSame) << "faster, but not confirmed";
}

TEST(Compare, WrongTypesNameTheFileAndTheField) {
  EXPECT_THROW_WITH(load("bad_types.json"), InputError, "bad_types.json: benchmarks[1] (BM_Fails): \"error_occurred\" must be true or false, got \"yes\"");
  EXPECT_THROW_WITH(report::parse_results(R"({"benchmarks": [{"name": "a", "real_time": -2, "time_unit": "ms"}]})", "n.json"),
                    InputError, "n.json: benchmarks[0] (a): \"real_time\" is negative");
  EXPECT_THROW_WITH(
      report::parse_results(R"({"benchmarks": [{"name": "a", "real_time": 1, "repetitions": "5", "run_type": "aggregate", "aggregate_name": "median"}]})",
                            "r.json"),
      InputError, "r.json: benchmarks[0] (a): \"repetitions\" must be an integer");
}

TEST(Compare, UnitsScaleToEachTime) {
  const std::string console = report::compare_console(fixture_report(), {});
  EXPECT_NE(console.find("101 ns"), std::string::npos) << console;
  EXPECT_NE(console.find("1.50 s"), std::string::npos);
  EXPECT_NE(console.find("6.60 ms"), std::string::npos);
  EXPECT_EQ(console.find("0.000101"), std::string::npos);
}

// Golden files: regenerate with `torchprobe compare tests/fixtures/compare/baseline.json
// tests/fixtures/compare/current.json --md ... --junit ... --json ...` and review the diff.
TEST(CompareGolden, ConsoleMarkdownJunitAndJson) {
  const report::CompareOptions options;
  const auto r = fixture_report(options);
  EXPECT_EQ(report::compare_console(r, options), io::read_text_file(kFixtures + "/expected/console.txt"));
  EXPECT_EQ(report::compare_markdown(r, options), io::read_text_file(kFixtures + "/expected/compare.md"));
  EXPECT_EQ(report::compare_junit(r, options), io::read_text_file(kFixtures + "/expected/junit.xml"));
  EXPECT_EQ(report::compare_json(r, options), io::read_text_file(kFixtures + "/expected/compare.json"));
  // The summary a CI log reader sees first is the console's last line.
  const std::string console = report::compare_console(r, options);
  const std::string last = console.substr(console.rfind('\n', console.size() - 2) + 1);
  EXPECT_EQ(last.rfind("FAIL: 4 SLOWER, 1 FAILED", 0), 0u) << last;
  const auto doc = nlohmann::json::parse(report::compare_json(r, options));
  EXPECT_EQ(doc["exit_code"], 1);
  EXPECT_EQ(doc["counts"]["SLOWER"], 4);
}

TEST(Compare, ParsePercent) {
  EXPECT_DOUBLE_EQ(report::parse_percent("5%", "--threshold"), 5.0);
  EXPECT_DOUBLE_EQ(report::parse_percent("2.5", "--threshold"), 2.5);
  EXPECT_EQ(report::parse_percent("0", "--threshold"), 0.0);  // the smallest: any change counts
  EXPECT_EQ(report::parse_percent("0%", "--threshold"), 0.0);
  EXPECT_THROW_WITH(report::parse_percent("five", "--threshold"), InputError, "--threshold: 'five' is not a percentage");
  EXPECT_THROW_WITH(report::parse_percent("-1%", "--threshold"), InputError, "not a percentage");
  EXPECT_THROW_WITH(report::parse_percent("%", "--threshold"), InputError, "not a percentage");
}

// ---- Every documented threshold: exactly at it, and one step to each side (tests/README.md) ----

namespace {

report::CompareOptions with(double threshold_pct, double alpha, bool fail_unconfirmed = false) {
  report::CompareOptions o;
  o.threshold_pct = threshold_pct;
  o.alpha = alpha;
  o.fail_unconfirmed = fail_unconfirmed;
  return o;
}

const report::Comparison& only_row(const report::CompareReport& r) {
  EXPECT_EQ(r.rows.size(), 1u);
  return r.rows.at(0);
}

// Nine baseline repetitions 10.0 .. 10.8 (median 10.4).
std::vector<double> nine_base() {
  std::vector<double> base;
  for (int i = 0; i < 9; ++i) base.push_back(10.0 + 0.1 * i);
  return base;
}

}  // namespace

// Exact two-sided p of the Mann-Whitney U test for small samples without ties, written as fractions. Computed by
// enumerating every placement of the first sample among the pooled ranks (python3 itertools.combinations, Fraction:
// p = 2 * #{U >= max(u, n1 n2 - u)} / C(n1 + n2, n1), capped at 1), not by this code.
TEST(MannWhitney, ExactSmallSamplePValuesByEnumeration) {
  struct Case {
    std::vector<double> x, y;
    double u, p;
  };
  const std::vector<Case> cases = {
      {{1, 2, 3}, {4, 5, 6}, 0.0, 2.0 / 20.0},               // 3 v 3 separated: the smallest p, 1/10
      {{1, 2, 3, 4}, {5, 6, 7, 8}, 0.0, 2.0 / 70.0},         // 1/35
      {{1, 2, 5, 6}, {3, 4, 7, 8}, 4.0, 24.0 / 70.0},        // 12/35
      {{1, 3}, {2, 4, 5}, 1.0, 4.0 / 10.0},                  // 2/5
      {{4, 5, 6, 7}, {1, 2, 3}, 12.0, 4.0 / 70.0},           // 4 v 3 separated: 2/35
      {{10.45, 11.5, 11.6}, nine_base(), 23.0, 22.0 / 220.0},  // 3 v 9, U = 23: exactly 1/10
      {{2, 4, 6, 8, 10}, {1, 3, 5, 7, 9, 11}, 15.0, 1.0},    // the middle U: 1
  };
  for (const auto& c : cases) {
    const auto t = report::mann_whitney_u(c.x, c.y);
    EXPECT_TRUE(t.exact) << c.x.size() << "x" << c.y.size();
    EXPECT_EQ(t.u, c.u) << c.x.size() << "x" << c.y.size();
    EXPECT_DOUBLE_EQ(t.p, c.p) << c.x.size() << "x" << c.y.size() << " u " << c.u;
    EXPECT_DOUBLE_EQ(report::mann_whitney_u(c.y, c.x).p, c.p) << "two-sided: the order of the samples does not matter";
  }
}

// "SLOWER when p < alpha": a p exactly equal to alpha is not significant. 3 current against 9 baseline repetitions
// with U = 23 gives p = 1/10 exactly (see ExactSmallSamplePValuesByEnumeration), while 3 + 9 repetitions can reach
// p = 2/220, so the test is possible and only the comparison with alpha decides.
TEST(CompareBoundaries, SignificantOnlyWhenPIsBelowAlphaNeverEqual) {
  const auto slower = [](double alpha) {
    return report::compare_results(timings(nine_base()), timings({10.45, 11.5, 11.6}), with(5.0, alpha));
  };
  const auto at = slower(0.1);
  EXPECT_EQ(only_row(at).p, 0.1);
  EXPECT_GT(only_row(at).change_pct, 10.0);
  EXPECT_EQ(only_row(at).verdict, report::Verdict::kSame);
  EXPECT_NE(only_row(at).note.find("but not significant (p = 0.1)"), std::string::npos) << only_row(at).note;
  EXPECT_EQ(at.exit_code(with(5.0, 0.1)), 0);
  EXPECT_EQ(only_row(slower(std::nextafter(0.1, 1.0))).verdict, report::Verdict::kSlower);
  EXPECT_EQ(only_row(slower(std::nextafter(0.1, 0.0))).verdict, report::Verdict::kSame);

  // The same rule for speed-ups: U = 4 of 27 is the mirror image, p = 1/10.
  const auto faster = [](double alpha) {
    return report::compare_results(timings(nine_base()), timings({8.5, 8.6, 10.35}), with(5.0, alpha));
  };
  EXPECT_EQ(only_row(faster(0.1)).p, 0.1);
  EXPECT_EQ(only_row(faster(0.1)).verdict, report::Verdict::kSame);
  EXPECT_NE(only_row(faster(0.1)).note.find("faster by"), std::string::npos);
  EXPECT_EQ(only_row(faster(std::nextafter(0.1, 1.0))).verdict, report::Verdict::kFaster);
}

// "SLOWER when the median grew by more than the threshold": +5.0% exactly (10 ms -> 10.5 ms) is SAME, also when the
// test is significant (5 v 5 separated, p = 2/252); a threshold one step lower makes it SLOWER. Likewise -5.0%.
// Repetitions without spread, so the change's interval is its point (a spread would let the interval reach past
// the threshold: CompareBoundaries.ASignificantChangeWhoseIntervalReachesPastTheThresholdIsSlower).
TEST(CompareBoundaries, AChangeExactlyAtTheThresholdIsSame) {
  const std::vector<double> base(5, 10.0);
  const std::vector<double> up(5, 10.5), down(5, 9.5);
  const auto verdict = [&](const std::vector<double>& current, double threshold) {
    const auto r = report::compare_results(timings(base), timings(current), with(threshold, 0.05));
    EXPECT_LT(only_row(r).p, 0.05);
    return only_row(r).verdict;
  };
  EXPECT_EQ(only_row(report::compare_results(timings(base), timings(up), {})).change_pct, 5.0);
  EXPECT_EQ(only_row(report::compare_results(timings(base), timings(down), {})).change_pct, -5.0);
  EXPECT_EQ(verdict(up, 5.0), report::Verdict::kSame);
  EXPECT_EQ(verdict(up, std::nextafter(5.0, 0.0)), report::Verdict::kSlower);
  EXPECT_EQ(verdict(up, std::nextafter(5.0, 10.0)), report::Verdict::kSame);
  EXPECT_EQ(verdict(down, 5.0), report::Verdict::kSame);
  EXPECT_EQ(verdict(down, std::nextafter(5.0, 0.0)), report::Verdict::kFaster);
  EXPECT_EQ(verdict(down, std::nextafter(5.0, 10.0)), report::Verdict::kSame);
  // A user's threshold is the boundary in the same way: +20.0% exactly against --threshold 20%.
  const std::vector<double> fifth(5, 12.0);
  EXPECT_EQ(verdict(fifth, 20.0), report::Verdict::kSame);
  EXPECT_EQ(verdict(fifth, std::nextafter(20.0, 0.0)), report::Verdict::kSlower);
}

// What history calls a change, compare calls one too: measured +4.0% (10 -> 10.4 ms), significant (5 v 5 separated),
// is SLOWER at a 5% threshold when the current repetitions spread so that the median's 95% bootstrap interval
// reaches past 5%, and SAME when they are tight (the interval stays under 5%). The same, mirrored, for FASTER.
TEST(CompareBoundaries, ASignificantChangeWhoseIntervalReachesPastTheThresholdIsSlower) {
  const std::vector<double> base = {9.98, 9.99, 10.0, 10.01, 10.02};
  const std::vector<double> noisy = {10.2, 10.3, 10.4, 10.9, 11.2}, tight = {10.38, 10.39, 10.4, 10.41, 10.42};
  const auto judged = [&](const std::vector<double>& current) {
    return only_row(report::compare_results(timings(base), timings(current), {}));
  };
  EXPECT_NEAR(judged(noisy).change_pct, 4.0, 1e-9);
  EXPECT_LT(judged(noisy).p, 0.05);
  EXPECT_EQ(judged(noisy).verdict, report::Verdict::kSlower);
  EXPECT_NE(judged(noisy).note.find("measured +4.0%; its 95% interval reaches +"), std::string::npos)
      << judged(noisy).note;
  EXPECT_EQ(judged(tight).verdict, report::Verdict::kSame);
  const std::vector<double> noisy_down = {8.8, 9.1, 9.6, 9.7, 9.8};  // -4.0%, a spread down to -12%
  EXPECT_EQ(judged(noisy_down).verdict, report::Verdict::kFaster);
  // Not significant: the interval alone never makes a verdict (3 v 3 cannot reach p < 0.05).
  const auto few = report::compare_results(timings({9.99, 10.0, 10.01}), timings({10.2, 10.4, 11.2}), {});
  EXPECT_EQ(only_row(few).verdict, report::Verdict::kSame);
}

// "Its interval reaches past the threshold": past, not to. With the threshold set to the interval's far end itself
// the change is SAME; one step below it, SLOWER (FASTER for the mirrored case). The interval is the same on every
// call (its seed is the benchmark's name), so the far end read once is the boundary of the next calls.
TEST(CompareBoundaries, TheIntervalMustReachPastTheThresholdNotOnlyToIt) {
  const std::vector<double> base = {9.98, 9.99, 10.0, 10.01, 10.02};
  const std::vector<double> noisy = {10.2, 10.3, 10.4, 10.9, 11.2}, noisy_down = {8.8, 9.1, 9.6, 9.7, 9.8};
  const auto judged = [&](const std::vector<double>& current, double threshold) {
    return only_row(report::compare_results(timings(base), timings(current), with(threshold, 0.05)));
  };
  const auto up = judged(noisy, 5.0);
  ASSERT_GT(up.change_lo_pct, 0.0);
  const double high = up.change_hi_pct;
  ASSERT_GT(high, std::nextafter(up.change_pct, 100.0)) << "the interval must reach beyond the measured change";
  EXPECT_EQ(judged(noisy, high).change_hi_pct, high);
  EXPECT_EQ(judged(noisy, high).verdict, report::Verdict::kSame);
  EXPECT_EQ(judged(noisy, std::nextafter(high, 0.0)).verdict, report::Verdict::kSlower);
  EXPECT_EQ(judged(noisy, std::nextafter(high, 100.0)).verdict, report::Verdict::kSame);

  const auto down = judged(noisy_down, 5.0);
  ASSERT_LT(down.change_hi_pct, 0.0);
  const double low = -down.change_lo_pct;
  EXPECT_EQ(judged(noisy_down, low).verdict, report::Verdict::kSame);
  EXPECT_EQ(judged(noisy_down, std::nextafter(low, 0.0)).verdict, report::Verdict::kFaster);
  EXPECT_EQ(judged(noisy_down, std::nextafter(low, 100.0)).verdict, report::Verdict::kSame);
}

// UNCONFIRMED: slower beyond the threshold, and the repetitions cannot reach p < alpha. 3 + 3 repetitions reach
// p = 0.1 at best: with alpha 0.1 that is not below alpha, so no data could confirm it (UNCONFIRMED, not "SAME: not
// significant"); with alpha one step above 0.1 the test decides (SLOWER). Beyond the threshold only.
TEST(CompareBoundaries, UnconfirmedWhenTheSmallestReachablePIsNotBelowAlpha) {
  const std::vector<double> base = {9.9, 10.0, 10.1}, slower = {11.9, 12.0, 12.1};
  const auto row_at = [&](double alpha, const std::vector<double>& current, double threshold = 5.0) {
    return only_row(report::compare_results(timings(base), timings(current), with(threshold, alpha)));
  };
  const auto at = row_at(0.1, slower);
  EXPECT_EQ(at.min_p, 0.1);
  EXPECT_EQ(at.p, 0.1);
  EXPECT_EQ(at.verdict, report::Verdict::kUnconfirmed);
  EXPECT_NE(at.note.find("3+3 repetitions cannot reach p < 0.1 (the smallest p they can give is 0.1)"), std::string::npos)
      << at.note;
  EXPECT_EQ(row_at(std::nextafter(0.1, 0.0), slower).verdict, report::Verdict::kUnconfirmed);
  EXPECT_EQ(row_at(std::nextafter(0.1, 1.0), slower).verdict, report::Verdict::kSlower);
  // Not beyond the threshold (+5.0% exactly): SAME, whatever the repetitions.
  const std::vector<double> five = {10.4, 10.5, 10.6};
  EXPECT_EQ(row_at(0.05, five).verdict, report::Verdict::kSame);
  EXPECT_EQ(row_at(0.05, five, std::nextafter(5.0, 0.0)).verdict, report::Verdict::kUnconfirmed);
  // Faster beyond the threshold but untestable is never UNCONFIRMED: it cannot fail the gate.
  EXPECT_EQ(row_at(0.05, {7.9, 8.0, 8.1}).verdict, report::Verdict::kSame);
}

// The gate rule itself, one verdict at a time: SLOWER and FAILED fail (exit 1), UNCONFIRMED only with
// --fail-unconfirmed, the rest never. The JSON's fails_gate, JUnit's <failure> and the summary's FAIL/OK agree.
TEST(CompareGate, EachVerdictAloneDecidesTheExitCode) {
  using V = report::Verdict;
  const struct {
    V verdict;
    int exit_default, exit_strict;
  } rules[] = {{V::kSlower, 1, 1}, {V::kFailed, 1, 1}, {V::kUnconfirmed, 0, 1}, {V::kFaster, 0, 0},
               {V::kSame, 0, 0},   {V::kNew, 0, 0},    {V::kGone, 0, 0}};
  for (const auto& rule : rules) {
    report::CompareReport r;
    report::Comparison c;
    c.name = "b";
    c.verdict = rule.verdict;
    r.rows.push_back(c);
    for (const bool strict : {false, true}) {
      const auto options = with(5.0, 0.05, strict);
      const int expected = strict ? rule.exit_strict : rule.exit_default;
      const std::string what = report::verdict_name(rule.verdict) + (strict ? " with --fail-unconfirmed" : "");
      EXPECT_EQ(r.exit_code(options), expected) << what;
      const auto doc = nlohmann::json::parse(report::compare_json(r, options));
      EXPECT_EQ(doc["rows"][0]["fails_gate"], expected == 1) << what;
      EXPECT_EQ(doc["exit_code"], expected) << what;
      EXPECT_EQ(report::compare_junit(r, options).find("<failure") != std::string::npos, expected == 1) << what;
      EXPECT_EQ(report::compare_summary(r, options).rfind(expected ? "FAIL: " : "OK: ", 0), 0u)
          << what << ": " << report::compare_summary(r, options);
    }
  }
}

// FAILED decided from files: a benchmark that ran in the baseline and fails now is the only row, and it alone fails
// the gate; failing in both runs is SAME and passes; failing only in the baseline is NEW and passes.
TEST(CompareGate, ABenchmarkThatRanAndFailsNowFailsTheGateAlone) {
  const auto ran = report::parse_results(
      R"({"benchmarks": [{"name": "b", "run_type": "iteration", "real_time": 10, "time_unit": "ms"}]})", "ran.json");
  const auto fails = report::parse_results(
      R"({"benchmarks": [{"name": "b", "run_type": "iteration", "real_time": 0, "time_unit": "ms",
          "error_occurred": true, "error_message": "CUDA out of memory"}]})", "fails.json");
  const auto now_fails = report::compare_results(ran, fails, {});
  EXPECT_EQ(only_row(now_fails).verdict, report::Verdict::kFailed);
  EXPECT_EQ(only_row(now_fails).note, "ran in the baseline, fails now: CUDA out of memory");
  EXPECT_EQ(now_fails.current_failure(), "");
  EXPECT_EQ(now_fails.exit_code({}), 1);
  const auto both = report::compare_results(fails, fails, {});
  EXPECT_EQ(only_row(both).verdict, report::Verdict::kSame);
  EXPECT_EQ(both.exit_code({}), 0);
  const auto fixed = report::compare_results(fails, ran, {});
  EXPECT_EQ(only_row(fixed).verdict, report::Verdict::kNew);
  EXPECT_EQ(fixed.exit_code({}), 0);
}
