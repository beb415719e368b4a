// The printers of a CompareReport: the console table, Markdown, JUnit XML, JSON and the one-line summary.
#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <cmath>
#include <string>

#include "torchprobe/change_interval.h"
#include "torchprobe/escape.h"
#include "torchprobe/report/compare.h"
#include "torchprobe/report/compare_detail.h"
#include "torchprobe/report/plot.h"
#include "torchprobe/report/table.h"

namespace torchprobe::report {
namespace {

using detail::fails_gate;

std::string pct(double value) { return fmt::format("{:g}%", value); }

std::string cv_text(const Side& s) { return format_cv(s.cv_pct); }

std::string time_text(const Side& s) {
  if (!s.present) return "-";
  if (!s.error.empty()) return "failed";
  return format_duration(s.median_ms);
}

std::string p_text(const Comparison& c) { return c.test.empty() ? "-" : fmt::format("{:.3g}", c.p); }

std::string verdict_cell(const Comparison& c) {
  std::string cell = verdict_name(c.verdict);
  if (c.verdict == Verdict::kUnconfirmed) cell += fmt::format(" (min p {:.2g})", c.min_p);
  return cell;
}

Table comparison_table(const CompareReport& report) {
  Table t;
  t.header = {"benchmark", "baseline", "current", "change", "CV base", "CV cur", "reps", "p", "verdict", "note"};
  t.right_aligned = {false, true, true, true, true, true, true, true, false, false};
  for (const auto& c : report.rows) {
    t.add({c.name, time_text(c.baseline), time_text(c.current),
           c.paired() ? format_pct(c.change_pct, /*sign=*/true) : "-", cv_text(c.baseline), cv_text(c.current),
           fmt::format("{}/{}", c.baseline.repetitions, c.current.repetitions), p_text(c), verdict_cell(c), c.note});
  }
  if (report.paired > 0) {
    t.add({fmt::format("geometric mean ({} paired)", report.paired), "", "",
           format_pct(100.0 * (report.geomean_ratio - 1.0), /*sign=*/true), "", "", "", "", "", ""});
  }
  return t;
}

std::string row_detail(const Comparison& c) {
  std::string text = fmt::format("baseline {} (CV {}, {} reps), current {} (CV {}, {} reps)", time_text(c.baseline),
                                 cv_text(c.baseline), c.baseline.repetitions, time_text(c.current), cv_text(c.current),
                                 c.current.repetitions);
  if (c.paired()) text += fmt::format(", change {}", format_pct(c.change_pct, /*sign=*/true));
  if (!c.test.empty()) text += fmt::format(", {} p = {:.3g}", c.test, c.p);
  if (!c.current.error.empty()) text += ", current error: " + c.current.error;
  if (!c.note.empty()) text += "; " + c.note;
  return text;
}

}  // namespace

std::string compare_summary(const CompareReport& report, const CompareOptions& options) {
  std::string counts;
  for (const Verdict v : {Verdict::kSlower, Verdict::kFailed, Verdict::kUnconfirmed, Verdict::kFaster, Verdict::kSame,
                          Verdict::kNew, Verdict::kGone}) {
    if (const int n = report.count(v)) counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", n, verdict_name(v));
  }
  const int code = report.exit_code(options);
  std::string line = fmt::format("{}: {}", code ? "FAIL" : "OK", counts);
  if (!report.current_failure().empty()) line += " (" + report.current_failure() + ")";
  if (!report.baseline_partial.empty()) line += " (note: the baseline is partial: " + report.baseline_partial + ")";
  line += fmt::format(" (threshold {}, alpha {}{}; exit {})", pct(options.threshold_pct), options.alpha,
                      options.fail_unconfirmed ? ", UNCONFIRMED fails" : "", code);
  return line;
}

std::string compare_console(const CompareReport& report, const CompareOptions& options) {
  return comparison_table(report).console() + terminal_line(compare_summary(report, options)) + "\n";
}

std::string compare_markdown(const CompareReport& report, const CompareOptions& options,
                             const std::string& chart_file) {
  std::string out = "# torchprobe compare\n\n**" + markdown_text(compare_summary(report, options)) + "**\n\n";
  out += fmt::format(
      "Threshold {}, alpha {}: a benchmark is SLOWER when its median time grew by more than the threshold "
      "and the test on its repetitions says p < alpha; change = (current - baseline) / baseline of the "
      "medians, positive is slower.\n\n",
      pct(options.threshold_pct), options.alpha);
  if (!chart_file.empty()) out += fmt::format("![Change of each benchmark]({})\n\n", chart_file);
  out += comparison_table(report).markdown();
  return out;
}

std::string compare_chart(const CompareReport& report, const CompareOptions& options) {
  constexpr size_t kMostRows = 60;  // beyond it, unchanged rows are left out first
  ForestPlot plot{"Change of each benchmark: current vs baseline",
                  "change of the median time, % (> 0 is slower)",
                  -options.threshold_pct,
                  options.threshold_pct,
                  fmt::format("within the threshold ({})", pct(options.threshold_pct)),
                  {},
                  {}};
  size_t unchanged = 0;
  for (const auto& c : report.rows) unchanged += c.verdict == Verdict::kSame ? 1 : 0;
  const size_t keep_same =
      report.rows.size() <= kMostRows ? unchanged : kMostRows - std::min(kMostRows, report.rows.size() - unchanged);
  size_t same_kept = 0, left_out = 0;
  for (const auto& c : report.rows) {
    if (c.verdict == Verdict::kSame && same_kept++ >= keep_same) {
      ++left_out;
      continue;
    }
    if (plot.rows.size() >= kMostRows) {
      ++left_out;
      continue;
    }
    ForestRow row{
        c.name, NAN, c.change_lo_pct, c.change_hi_pct, verdict_name(c.verdict), fails_gate(c.verdict, options)};
    if (c.paired()) {
      row.value = c.change_pct;
      row.value_text = fmt::format("{:+.1f}% {}", c.change_pct, verdict_name(c.verdict));
    }
    plot.rows.push_back(std::move(row));
  }
  plot.notes.push_back(fmt::format(
      "Dots: the change of the medians; lines: its {:g}% bootstrap interval over the repetitions (none with "
      "aggregates only or one repetition).",
      100.0 * kChangeConfidence));
  if (left_out > 0)
    plot.notes.push_back(
        fmt::format("{} benchmark(s) not drawn (at most {} rows, unchanged ones left out first): "
                    "the table lists every one.",
                    left_out, kMostRows));
  return forest_plot(plot);
}

std::string compare_junit(const CompareReport& report, const CompareOptions& options) {
  int failures = 0, skipped = 0;
  std::string cases;
  for (const auto& c : report.rows) {
    const auto slash = c.name.find('/');
    const std::string suite = slash == std::string::npos ? c.name : c.name.substr(0, slash);
    const double seconds = c.current.present && c.current.error.empty() ? c.current.median_ms / 1e3 : 0.0;
    cases += fmt::format("    <testcase classname=\"torchprobe.compare.{}\" name=\"{}\" time=\"{:.6f}\">",
                         xml_escape(suite), xml_escape(c.name), seconds);
    const std::string detail = xml_escape(row_detail(c));
    if (fails_gate(c.verdict, options)) {
      ++failures;
      cases += fmt::format("\n      <failure type=\"{}\" message=\"{}\">{}</failure>\n    ", verdict_name(c.verdict),
                           xml_escape(verdict_name(c.verdict) + ": " + c.name), detail);
    } else if (c.verdict == Verdict::kGone || c.verdict == Verdict::kUnconfirmed) {
      ++skipped;
      cases += fmt::format("\n      <skipped message=\"{}\"/>\n      <system-out>{}</system-out>\n    ",
                           xml_escape(verdict_name(c.verdict)), detail);
    } else {
      cases += fmt::format("\n      <system-out>{}: {}</system-out>\n    ", verdict_name(c.verdict), detail);
    }
    cases += "</testcase>\n";
  }
  const std::string run_failure = report.current_failure();
  if (!run_failure.empty()) {
    ++failures;
    cases += fmt::format(
        "    <testcase classname=\"torchprobe.compare\" name=\"current file\" time=\"0\">\n"
        "      <failure type=\"FAILED\" message=\"{}\"/>\n    </testcase>\n",
        xml_escape(run_failure));
  }
  const int tests = static_cast<int>(report.rows.size()) + (run_failure.empty() ? 0 : 1);
  return fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"torchprobe compare\" tests=\"{}\" "
      "failures=\"{}\" "
      "skipped=\"{}\">\n  <testsuite name=\"torchprobe compare\" tests=\"{}\" failures=\"{}\" skipped=\"{}\">\n"
      "    <properties>\n      <property name=\"summary\" value=\"{}\"/>\n    </properties>\n{}  </testsuite>\n"
      "</testsuites>\n",
      tests, failures, skipped, tests, failures, skipped, xml_escape(compare_summary(report, options)), cases);
}

std::string compare_json(const CompareReport& report, const CompareOptions& options) {
  using nlohmann::json;
  const auto side = [](const Side& s) -> json {
    if (!s.present) return nullptr;
    return {{"median_ms", s.error.empty() ? json(s.median_ms) : json(nullptr)},
            {"cv_pct", s.cv_pct >= 0.0 ? json(s.cv_pct) : json(nullptr)},
            {"repetitions", s.repetitions},
            {"failed_repetitions", s.failed_repetitions},
            {"aggregates_only", s.aggregates_only},
            {"error", s.error}};
  };
  json rows = json::array();
  for (const auto& c : report.rows) {
    rows.push_back({{"name", c.name},
                    {"verdict", verdict_name(c.verdict)},
                    {"fails_gate", fails_gate(c.verdict, options)},
                    {"baseline", side(c.baseline)},
                    {"current", side(c.current)},
                    {"change_pct", c.paired() ? json(c.change_pct) : json(nullptr)},
                    {"change_interval_pct",
                     std::isfinite(c.change_lo_pct) ? json::array({c.change_lo_pct, c.change_hi_pct}) : json(nullptr)},
                    {"test", c.test},
                    {"p_value", c.test.empty() ? json(nullptr) : json(c.p)},
                    {"min_p", c.verdict == Verdict::kUnconfirmed ? json(c.min_p) : json(nullptr)},
                    {"note", c.note}});
  }
  json counts = json::object();
  for (const Verdict v : {Verdict::kSlower, Verdict::kUnconfirmed, Verdict::kFailed, Verdict::kFaster, Verdict::kSame,
                          Verdict::kNew, Verdict::kGone}) {
    counts[verdict_name(v)] = report.count(v);
  }
  const json doc = {{"threshold_pct", options.threshold_pct},
                    {"alpha", options.alpha},
                    {"fail_unconfirmed", options.fail_unconfirmed},
                    {"exit_code", report.exit_code(options)},
                    {"summary", compare_summary(report, options)},
                    {"counts", counts},
                    {"current_empty", report.current_empty},
                    {"current_partial", report.current_partial},
                    {"baseline_partial", report.baseline_partial},
                    {"paired", report.paired},
                    {"geomean_ratio", report.paired > 0 ? json(report.geomean_ratio) : json(nullptr)},
                    {"rows", rows}};
  // Benchmark names are bytes from a file: never let an odd byte stop the output.
  return doc.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace torchprobe::report
