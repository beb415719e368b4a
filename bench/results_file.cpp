#include "results_file.h"

#include <fmt/format.h>

#include <algorithm>

#include "torchprobe/input_error.h"
#include "torchprobe/io.h"
#include "torchprobe/report/schema.h"

namespace torchprobe::bench {
namespace {

std::string count_text(size_t finished, size_t planned) {
  const size_t n = planned > 0 ? planned : finished;
  const char* noun = n == 1 ? "benchmark" : "benchmarks";
  return planned > 0 ? fmt::format("{} of {} {}", finished, planned, noun) : fmt::format("{} {}", finished, noun);
}

}  // namespace

std::string json_escape(const std::string& text) {
  std::string out;
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += fmt::format("\\u{:04x}", static_cast<int>(c));
    } else {
      out += c;
    }
  }
  return out;
}

std::string run_status(size_t finished, size_t planned, const std::string& stopped_because, bool running) {
  if (running) return fmt::format("partial: still running, or killed, after {}", count_text(finished, planned));
  if (!stopped_because.empty()) return fmt::format("partial: {} after {}", stopped_because, count_text(finished, planned));
  return fmt::format("complete ({})", finished == planned ? count_text(finished, planned) : count_text(finished, 0));
}

ResultsFile::Format ResultsFile::parse_format(const std::string& text) {
  if (text.empty() || text == "json") return Format::kJson;
  if (text == "csv") return Format::kCsv;
  if (text == "console") return Format::kConsole;
  throw InputError(fmt::format("--benchmark_out_format={}: expected json, csv or console", text));
}

ResultsFile::ResultsFile(std::string path, Format format, size_t planned)
    : path_(std::move(path)), format_(format), planned_(planned) {
  rewritable_ = path_.empty() || io::replaces_whole(path_);
  switch (format_) {
    case Format::kJson: renderer_ = std::make_unique<benchmark::JSONReporter>(); break;
    case Format::kCsv:
      // Deprecated in Google Benchmark, still what its own --benchmark_out_format=csv writes: kept for users'
      // scripts that read it (torchprobe report writes its own results.csv).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
      renderer_ = std::make_unique<benchmark::CSVReporter>();
#pragma GCC diagnostic pop
      break;
    case Format::kConsole: renderer_ = std::make_unique<benchmark::ConsoleReporter>(benchmark::ConsoleReporter::OO_None); break;
  }
  // As Google Benchmark's own file output: CSV and console files also get the context lines.
  renderer_->SetOutputStream(format_ == Format::kJson ? &head_ : &body_);
  renderer_->SetErrorStream(format_ == Format::kJson ? &discard_ : &body_);
}

ResultsFile::~ResultsFile() = default;

void ResultsFile::set_context(const benchmark::BenchmarkReporter::Context& context) {
  renderer_->ReportContext(context);
  if (format_ != Format::kJson) return;
  std::ostringstream tail;
  renderer_->SetOutputStream(&tail);
  renderer_->Finalize();
  tail_ = tail.str();
  renderer_->SetOutputStream(&discard_);
}

void ResultsFile::add(const std::vector<benchmark::BenchmarkReporter::Run>& runs) {
  if (runs.empty()) return;
  if (format_ == Format::kJson) {
    std::ostringstream one;
    renderer_->SetOutputStream(&one);
    renderer_->ReportRuns(runs);
    renderer_->SetOutputStream(&discard_);
    std::string text = one.str();
    if (text.rfind(",\n", 0) == 0) text.erase(0, 2);  // the reporter's separator from the previous benchmark
    entries_ += (entries_.empty() ? "" : ",\n") + text;
  } else {
    renderer_->ReportRuns(runs);
  }
  // With repetitions Google Benchmark reports a benchmark twice, its repetitions then its aggregates:
  // a benchmark counts once.
  const std::string name = runs.front().run_name.str();
  if (name != last_counted_) ++benchmarks_;
  last_counted_ = name;
  status_ = run_status(benchmarks_, planned_, "", /*running=*/true);
  write();
}

void ResultsFile::add_json_entries(const std::string& entries, size_t benchmarks) {
  if (format_ != Format::kJson) throw std::logic_error("ResultsFile::add_json_entries: JSON files only");
  if (entries.empty()) return;
  entries_ += (entries_.empty() ? "" : ",\n") + entries;
  benchmarks_ += benchmarks;
  status_ = run_status(benchmarks_, planned_, "", /*running=*/true);
  write();
}

void ResultsFile::finish(const std::string& stopped_because) {
  if (benchmarks_ == 0) return;
  status_ = run_status(benchmarks_, planned_, stopped_because, /*running=*/false);
  write(/*last=*/true);
}

std::string ResultsFile::document() const {
  if (format_ != Format::kJson) return body_.str();
  std::string head = head_.str();
  static const std::string kContext = "\"context\": {\n";
  if (const size_t at = head.find(kContext); at != std::string::npos && !status_.empty()) {
    head.insert(at + kContext.size(),
                fmt::format("    \"{}\": \"{}\",\n", report::schema::kRunStatusKey, json_escape(status_)));
  }
  return head + entries_ + tail_;
}

void ResultsFile::write(bool last) {
  // A device or a pipe (--benchmark_out=/dev/stdout) gets the document once, at the end, not once per benchmark.
  if (!path_.empty() && (last || rewritable_)) io::write_text_file(path_, document());
}

std::vector<benchmark::BenchmarkReporter::Run> per_call_cpu_time(std::vector<benchmark::BenchmarkReporter::Run> runs) {
  using Run = benchmark::BenchmarkReporter::Run;
  for (Run& run : runs) {
    const auto it = run.counters.find(kCpuPerCallCounter);
    if (it == run.counters.end()) continue;
    const double value = it->second.value;
    // A CV aggregate is a fraction (Google Benchmark's percentage unit); every other run holds seconds x iterations.
    const bool cv = run.run_type == Run::RT_Aggregate && run.aggregate_name == "cv";
    run.cpu_accumulated_time =
        cv ? value : value / 1e3 * static_cast<double>(std::max<benchmark::IterationCount>(1, run.iterations));
  }
  return runs;
}

std::vector<benchmark::BenchmarkReporter::Run> for_display(std::vector<benchmark::BenchmarkReporter::Run> runs,
                                                           const std::set<std::string>& counters) {
  using Run = benchmark::BenchmarkReporter::Run;
  std::vector<double> ms;  // the repetitions' times, where every one is in ms
  bool all_ms = true;
  for (const Run& run : runs) {
    if (run.run_type != Run::RT_Iteration) continue;
    all_ms = all_ms && run.time_unit == benchmark::kMillisecond;
    ms.push_back(run.GetAdjustedRealTime());
  }
  std::sort(ms.begin(), ms.end());
  const bool micro = all_ms && !ms.empty() && ms[ms.size() / 2] < 1.0;
  for (Run& run : runs) {
    if (micro && run.time_unit == benchmark::kMillisecond) run.time_unit = benchmark::kMicrosecond;
    if (counters.empty()) continue;
    for (auto it = run.counters.begin(); it != run.counters.end();) {
      it = counters.count(it->first) != 0 ? std::next(it) : run.counters.erase(it);
    }
  }
  return runs;
}

}  // namespace torchprobe::bench
