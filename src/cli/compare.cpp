// torchprobe compare BASELINE.json CURRENT.json [--threshold 5%] [--alpha 0.05] [--fail-unconfirmed]
//                   [--md FILE] [--junit FILE] [--json FILE]
#include <cstdio>
#include <filesystem>
#include <memory>

#include "commands.h"
#include "torchprobe/io.h"
#include "torchprobe/report/compare.h"

namespace torchprobe::cli {

std::vector<Command> add_compare_command(CLI::App& app) {
  struct Flags {
    std::string baseline, current, threshold = "5%", markdown, junit, json;
    double alpha = 0.05;
    bool fail_unconfirmed = false;
  };
  auto flags = std::make_shared<Flags>();
  auto* cmd = app.add_subcommand(
      "compare", "Baseline vs current benchmark JSON: exit 1 on a significant slow-down or a newly failing benchmark, 2 on bad input");
  cmd->add_option("baseline", flags->baseline, "Baseline JSON")->required()->check(CLI::ExistingFile);
  cmd->add_option("current", flags->current, "Current JSON")->required()->check(CLI::ExistingFile);
  cmd->add_option("--threshold", flags->threshold, "Slow-downs of the median beyond this fail, e.g. 5%")->capture_default_str();
  cmd->add_option("--alpha", flags->alpha, "Significance level of the test on the repetitions")
      ->check(in_range(1e-9, 0.5))
      ->capture_default_str();
  cmd->add_flag("--fail-unconfirmed", flags->fail_unconfirmed,
                "UNCONFIRMED (slower beyond the threshold, too few repetitions to test) fails the gate too");
  cmd->add_option("--md", flags->markdown,
                  "Also write the comparison as Markdown (a PR comment, a step summary), with its chart beside it as "
                  "FILE's name .svg");
  cmd->add_option("--junit", flags->junit, "Also write JUnit XML: one test case per benchmark, failures for SLOWER/FAILED");
  cmd->add_option("--json", flags->json, "Also write every row and the verdict counts as JSON");
  return {{cmd, [flags] {
             report::CompareOptions options;
             options.threshold_pct = report::parse_percent(flags->threshold, "--threshold");
             options.alpha = flags->alpha;
             options.fail_unconfirmed = flags->fail_unconfirmed;
             const report::ResultSet baseline = report::load_results({flags->baseline});
             const report::ResultSet current = report::load_results({flags->current});
             const report::CompareReport comparison = report::compare_results(baseline, current, options);
             // Every file first: a write error is exit 2, whatever the verdict.
             if (!flags->markdown.empty()) {
               // The forest plot beside it, linked by its file name: FILE.md -> FILE.svg.
               const std::filesystem::path md(flags->markdown);
               std::filesystem::path chart = std::filesystem::path(md).replace_extension(".svg");
               if (chart == md) chart += ".svg";  // --md x.svg
               io::write_text_file(md.string(),
                                   report::compare_markdown(comparison, options, chart.filename().string()));
               io::write_text_file(chart.string(), report::compare_chart(comparison, options));
             }
             if (!flags->junit.empty()) io::write_text_file(flags->junit, report::compare_junit(comparison, options));
             if (!flags->json.empty()) io::write_text_file(flags->json, report::compare_json(comparison, options));
             std::printf("%s", report::compare_console(comparison, options).c_str());
             return comparison.exit_code(options);
           }}};
}

}  // namespace torchprobe::cli
