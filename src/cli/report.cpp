// torchprobe report RESULTS.json... [--out DIR] [--noise-cv PCT] [--traces DIR] [--quiet]
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <memory>

#include "commands.h"
#include "torchprobe/escape.h"
#include "torchprobe/io.h"
#include "torchprobe/input_error.h"
#include "torchprobe/report/printers.h"
#include "torchprobe/trace_files.h"

namespace torchprobe::cli {

std::vector<Command> add_report_command(CLI::App& app) {
  struct Flags {
    std::vector<std::string> inputs;
    std::string out_dir;  // default: the first input's directory
    double noise_cv_pct = 5.0;
    std::string traces_dir;
    bool quiet = false;
  };
  auto flags = std::make_shared<Flags>();
  auto* cmd = app.add_subcommand("report", "Benchmark JSON -> results.csv, report.md and SVG charts");
  cmd->add_option("results", flags->inputs, "Google Benchmark JSON files (torchprobe-bench --benchmark_out, dist --out)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--out", flags->out_dir, "Output directory (default: the first file's directory)");
  cmd->add_option("--noise-cv", flags->noise_cv_pct, "Warn when a benchmark's CV over repetitions exceeds this %")
      ->check(in_range(0.01, 1000.0))
      ->capture_default_str();
  cmd->add_option("--traces", flags->traces_dir,
                  "torchprobe-bench --trace's directory: where each traced training step's time goes (top ops)")
      ->check(CLI::ExistingDirectory);
  cmd->add_flag("--quiet", flags->quiet, "Do not print the summary tables");
  return {{cmd, [flags] {
             const report::ResultSet results = report::load_results(flags->inputs);
             const std::filesystem::path out = flags->out_dir.empty()
                                                   ? std::filesystem::path(flags->inputs.front()).parent_path()
                                                   : std::filesystem::path(flags->out_dir);
             report::ReportOptions options{flags->noise_cv_pct, {}};
             if (!flags->traces_dir.empty()) {
               for (const auto& r : results.results) {
                 if (r.suite != "train_step" || r.failed()) continue;
                 const std::string path = (std::filesystem::path(flags->traces_dir) / trace_file_name(r.name)).string();
                 if (!std::filesystem::exists(path)) continue;
                 bool seen = false;  // one benchmark can be in the results once per input file
                 for (const auto& t : options.traces) seen = seen || t.benchmark == r.name;
                 if (seen) continue;
                 options.traces.push_back(report::summarize_trace(r.name, path, io::read_text_file(path)));
                 // report.md links it from its own folder: --traces reports/traces with the report in reports/ once
                 // linked reports/reports/traces/...
                 const auto link = std::filesystem::absolute(path).lexically_normal().lexically_relative(
                     std::filesystem::absolute(out.empty() ? std::filesystem::path(".") : out).lexically_normal());
                 if (!link.empty()) options.traces.back().file = link.generic_string();
               }
               if (options.traces.empty()) {
                 throw InputError(fmt::format("--traces: no trace in {} matches a training benchmark of the results",
                                              flags->traces_dir));
               }
             }
             const auto charts = report::make_charts(results);
             // One set, replaced together: a full disk leaves the old report whole.
             std::vector<std::pair<std::string, std::string>> files{{"results.csv", report::to_csv(results)}};
             for (const auto& chart : charts) files.emplace_back(chart.file, chart.svg);
             files.emplace_back("report.md", report::to_markdown(results, charts, options));
             io::write_file_set(out.string(), files);
             if (!flags->quiet) std::printf("%s", report::to_console_summary(results, options).c_str());
             std::fprintf(stderr, "torchprobe: wrote %s, %s and %zu chart(s) for %zu benchmark(s)\n",
                          (out / "report.md").c_str(), (out / "results.csv").c_str(), charts.size(), results.results.size());
             if (const std::string partial = results.partial_runs(); !partial.empty()) {
               std::fprintf(stderr, "torchprobe: warning: partial run: %s\n", terminal_line(partial).c_str());
             }
             return 0;
           }}};
}

}  // namespace torchprobe::cli
