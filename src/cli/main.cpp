// torchprobe: the command-line front end. Thin: parse flags, call the core library, print.
#include <ATen/Parallel.h>
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "torchprobe/cli_support.h"
#include "torchprobe/device.h"
#include "torchprobe/report/compare.h"
#include "torchprobe/report/printers.h"

namespace {

int devices_command(bool json, int threads) {
  if (threads > 0) at::set_num_threads(threads);
  const torchprobe::Inventory inventory = torchprobe::collect_inventory();
  std::printf("%s", json ? (torchprobe::inventory_json(inventory) + "\n").c_str()
                         : torchprobe::inventory_text(inventory).c_str());
  const std::string warning = torchprobe::blas_warning(inventory.blas);
  if (json && !warning.empty()) std::fprintf(stderr, "torchprobe: warning: %s\n", warning.c_str());
  return 0;
}

struct ReportFlags {
  std::vector<std::string> inputs;
  std::string out_dir;  // default: the first input's directory
  double noise_cv_pct = 5.0;
  bool quiet = false;
};

int report_command(const ReportFlags& flags) {
  namespace report = torchprobe::report;
  const report::ResultSet results = report::load_results(flags.inputs);
  const std::filesystem::path out =
      flags.out_dir.empty() ? std::filesystem::path(flags.inputs.front()).parent_path()
                            : std::filesystem::path(flags.out_dir);
  const report::ReportOptions options{flags.noise_cv_pct};
  const auto charts = report::make_charts(results);
  report::write_text_file((out / "results.csv").string(), report::to_csv(results));
  for (const auto& chart : charts) report::write_text_file((out / chart.file).string(), chart.svg);
  report::write_text_file((out / "report.md").string(), report::to_markdown(results, charts, options));
  if (!flags.quiet) std::printf("%s", report::to_console_summary(results, options).c_str());
  std::fprintf(stderr, "torchprobe: wrote %s, %s and %zu chart(s) for %zu benchmark(s)\n",
               (out / "report.md").c_str(), (out / "results.csv").c_str(), charts.size(), results.results.size());
  return 0;
}

struct CompareFlags {
  std::string baseline, current, threshold = "5%", markdown;
  double alpha = 0.05;
};

int compare_command(const CompareFlags& flags) {
  namespace report = torchprobe::report;
  report::CompareOptions options;
  options.threshold_pct = report::parse_percent(flags.threshold, "--threshold");
  options.alpha = flags.alpha;
  const report::ResultSet baseline = report::load_results({flags.baseline});
  const report::ResultSet current = report::load_results({flags.current});
  const report::CompareReport comparison = report::compare_results(baseline, current, options);
  std::printf("%s", report::compare_console(comparison, options).c_str());
  if (!flags.markdown.empty()) report::write_text_file(flags.markdown, report::compare_markdown(comparison, options));
  return comparison.regressions() > 0 ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"torchprobe: LibTorch benchmarks and diagnostics for the CPU and every GPU"};
  app.require_subcommand(1);

  bool devices_json = false;
  int threads = 0;
  auto* devices = app.add_subcommand("devices", "Inventory of the CPU, every CUDA device, LibTorch and BLAS");
  devices->add_flag("--json", devices_json, "Print the inventory as JSON");
  devices->add_option("--threads", threads, "LibTorch intra-op threads to report (default: LibTorch's own)")
      ->check(CLI::PositiveNumber);

  ReportFlags report_flags;
  auto* report = app.add_subcommand("report", "Benchmark JSON -> results.csv, report.md and SVG charts");
  report->add_option("results", report_flags.inputs, "Google Benchmark JSON files (torchprobe-bench --benchmark_out)")
      ->required()
      ->check(CLI::ExistingFile);
  report->add_option("--out", report_flags.out_dir, "Output directory (default: the first file's directory)");
  report->add_option("--noise-cv", report_flags.noise_cv_pct, "Warn when a benchmark's CV over repetitions exceeds this %")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  report->add_flag("--quiet", report_flags.quiet, "Do not print the summary tables");

  CompareFlags compare_flags;
  auto* compare = app.add_subcommand("compare", "Baseline vs current benchmark JSON; exit 1 on a significant slow-down");
  compare->add_option("baseline", compare_flags.baseline, "Baseline JSON")->required()->check(CLI::ExistingFile);
  compare->add_option("current", compare_flags.current, "Current JSON")->required()->check(CLI::ExistingFile);
  compare->add_option("--threshold", compare_flags.threshold, "Slow-downs of the median beyond this fail, e.g. 5%")
      ->capture_default_str();
  compare->add_option("--alpha", compare_flags.alpha, "Significance level of the Mann-Whitney U test")
      ->check(CLI::Range(1e-9, 0.5))
      ->capture_default_str();
  compare->add_option("--md", compare_flags.markdown, "Also write the comparison as Markdown to this file");

  return torchprobe::run_cli(app, argc, argv, [&] {
    if (*report) return report_command(report_flags);
    if (*compare) return compare_command(compare_flags);
    return devices_command(devices_json, threads);
  });
}
