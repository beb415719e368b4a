#include "isolate.h"

#include <sys/wait.h>

#include <fmt/format.h>

#include <cstdio>
#include <filesystem>

#include "torchprobe/interrupt.h"
#include "torchprobe/io.h"
#include "torchprobe/report/results_writer.h"
#include "torchprobe/report/schema.h"
#include "torchprobe/subprocess.h"
#include "torchprobe/temp_dir.h"

namespace torchprobe::bench {
namespace {

constexpr size_t kTailBytes = 16 * 1024;

}  // namespace

std::string exact_filter(const std::string& name) {
  std::string escaped;
  for (const char c : name) {
    if (std::string(".[]()*+?{}|^$\\").find(c) != std::string::npos) escaped += '\\';
    escaped += c;
  }
  std::string timings;
  for (const auto suffix : report::schema::kTimingSuffixes) timings += std::string(suffix) + "|";
  return "^" + escaped + "(/(" + timings +
         "min_time:[^/]*|min_warmup_time:[^/]*|iterations:[0-9]+|repeats:[0-9]+|threads:[0-9]+))*$";
}

std::string failure_entry(const std::string& name, const std::string& message) {
  report::Entry entry;
  entry.name = name;
  entry.iterations = 0;
  entry.error = message;
  return report::entries_json({entry});
}

IsolatedRun run_isolated(const std::vector<std::string>& names, const IsolateOptions& options, ResultsFile& file) {
  IsolatedRun run;
  const TempDir dir("torchprobe-isolate");
  const std::string peaks = dir.file("peaks.json");
  for (size_t i = 0; i < names.size(); ++i) {
    if (interrupt::requested()) {
      run.stopped = true;
      break;
    }
    const std::string& name = names[i];
    if (options.on_start) options.on_start(name);
    const std::string out = dir.file(fmt::format("benchmark-{}.json", i));
    std::vector<std::string> argv{options.program};
    argv.insert(argv.end(), options.args.begin(), options.args.end());
    argv.insert(argv.end(), {"--benchmark_filter=" + exact_filter(name), "--benchmark_out=" + out,
                             "--benchmark_out_format=json", "--isolated-child", "--peak-store", peaks});
    std::string tail;
    subprocess::Options child;
    if (!options.pass_stdout) child.on_stdout_line = [](const std::string&) {};
    child.on_stderr_line = [&tail](const std::string& line) {
      std::fprintf(stderr, "%s\n", line.c_str());
      tail += line + "\n";
      if (tail.size() > kTailBytes) tail.erase(0, tail.size() - kTailBytes);
    };
    const int status = subprocess::run(argv, child);
    std::error_code ec;
    const std::string entries =
        std::filesystem::exists(out, ec) ? report::benchmark_entries(io::read_text_file(out)) : std::string();
    const bool exited = WIFEXITED(status);
    const int code = exited ? WEXITSTATUS(status) : -1;
    if (interrupt::requested() && (code == 130 || code == 143 || entries.empty())) {
      // Stopped: what the child finished is kept; the benchmark it was in is not a result.
      if (!entries.empty()) {
        file.add_json_entries(entries, 1);
        ++run.finished;
      }
      run.stopped = true;
      break;
    }
    if (!entries.empty()) {
      file.add_json_entries(entries, 1);
      if (code != 0) ++run.failed;
    } else {
      const std::string said = subprocess::last_lines(tail, 3);
      const std::string message = fmt::format("the benchmark's process (--isolate) {}{}", subprocess::describe_status(status),
                                              said.empty() ? "" : "; it said: " + said);
      std::fprintf(stderr, "torchprobe-bench: %s: %s\n", name.c_str(), message.c_str());
      file.add_json_entries(failure_entry(name, message), 1);
      ++run.failed;
    }
    ++run.finished;
  }
  return run;
}

}  // namespace torchprobe::bench
