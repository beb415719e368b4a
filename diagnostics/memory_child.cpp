#include "diagnostics/memory_child.h"

#include <signal.h>
#include <sys/wait.h>

#include <ATen/Context.h>
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "diagnostics/probe_json.h"
#include "torchprobe/io.h"
#include "torchprobe/memory.h"
#include "torchprobe/report/results.h"
#include "torchprobe/subprocess.h"
#include "torchprobe/temp_dir.h"

namespace torchprobe::diagnostics {
namespace {

constexpr size_t kTailBytes = 64 * 1024;  // of the child's output kept for the error message

void emit(const nlohmann::json& event) {
  std::printf("%s\n", event.dump().c_str());
  std::fflush(stdout);  // the parent must see each event before a library can end this process
}

void keep_tail(std::string& tail, const std::string& more) {
  tail += more;
  if (tail.size() > kTailBytes) tail.erase(0, tail.size() - kTailBytes);
}

/// What one child run left behind.
struct ChildRun {
  int status = 0;
  std::vector<Trial> trials;  ///< finished in this run
  std::optional<std::int64_t> trial_running, recovery_running;
  std::optional<std::string> report;  ///< the report event's JSON
  std::string output_tail;            ///< stderr and non-event stdout, last kTailBytes
};

ChildRun run_child_once(const std::string& exe, const std::vector<std::string>& args) {
  std::vector<std::string> argv{exe};
  argv.insert(argv.end(), args.begin(), args.end());
  ChildRun run;
  subprocess::Options options;
  options.on_stdout_line = [&](const std::string& line) {
    nlohmann::json event;
    try {
      event = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception&) {
      event = nullptr;
    }
    const std::string kind = event.is_object() ? event.value("event", "") : "";
    if (kind == "trial_start") {
      run.trial_running = event.at("batch").get<std::int64_t>();
    } else if (kind == "trial") {
      run.trials.push_back(trial_from_json(event.at("trial")));
      run.trial_running.reset();
    } else if (kind == "recovery_start") {
      run.recovery_running = event.at("batch").get<std::int64_t>();
    } else if (kind == "report") {
      run.report = event.at("report").dump();
      run.recovery_running.reset();
    } else {  // not ours (OpenBLAS prints some of its errors on stdout): pass it on and keep it
      std::fprintf(stderr, "%s\n", line.c_str());
      keep_tail(run.output_tail, line + "\n");
    }
  };
  options.on_stderr_line = [&](const std::string& line) {
    std::fprintf(stderr, "%s\n", line.c_str());
    keep_tail(run.output_tail, line + "\n");
  };
  run.status = subprocess::run(argv, options);
  return run;
}

[[noreturn]] void child_failed(const std::string& exe, const ChildRun& run) {
  const std::string said = subprocess::last_lines(run.output_tail, 3);
  const std::string tail = said.empty() ? "" : "; it said: " + said;
  const bool failed = WIFSIGNALED(run.status) || (WIFEXITED(run.status) && WEXITSTATUS(run.status) != 0);
  if (!failed) throw std::runtime_error(fmt::format("the memory probe child ({}) ended without a report{}", exe, tail));
  const bool killed = WIFSIGNALED(run.status) && WTERMSIG(run.status) == SIGKILL;
  throw std::runtime_error(fmt::format("the memory probe child ({}) {}{}{}", exe, subprocess::describe_status(run.status),
                                       killed ? ": the kernel's OOM killer, or a container memory limit below the "
                                                "address-space limit (lower --cpu-limit)"
                                              : "",
                                       tail));
}

}  // namespace

std::optional<LibraryOom> find_library_oom(const std::string& output) {
  const auto line_at = [&](size_t pos) {
    const size_t start = output.rfind('\n', pos) == std::string::npos ? 0 : output.rfind('\n', pos) + 1;
    const size_t end = std::min(output.find('\n', pos), output.size());
    std::string line = output.substr(start, end - start);
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    return line;
  };
  static const std::string kOpenBlas = "OpenBLAS: malloc failed in ";
  if (const size_t pos = output.rfind(kOpenBlas); pos != std::string::npos) {
    const std::string line = line_at(pos);
    std::string function = line.substr(line.find(kOpenBlas) + kOpenBlas.size());
    function = function.substr(0, function.find_first_of(" \t"));
    return LibraryOom{"OpenBLAS (" + (function.empty() ? "its work buffers" : function) + ")", line};
  }
  static const std::string kBadAlloc = "terminate called after throwing an instance of 'std::bad_alloc'";
  if (const size_t pos = output.rfind(kBadAlloc); pos != std::string::npos) {
    return LibraryOom{"C++ operator new (a std::bad_alloc outside LibTorch's error handling)", line_at(pos)};
  }
  return std::nullopt;
}

int run_memory_child(const ChildOptions& child) {
  ProbeOptions options;
  options.model = child.model;
  options.search = child.search;
  options.on_trial = [&child](const Trial& t) {
    emit({{"event", "trial"}, {"trial", trial_to_json(t)}});
    if (child.on_trial) child.on_trial(t);
  };
  options.on_trial_start = [](std::int64_t batch) { emit({{"event", "trial_start"}, {"batch", batch}}); };
  options.on_recovery_start = [](std::int64_t batch) { emit({{"event", "recovery_start"}, {"batch", batch}}); };
  if (!child.resume_path.empty()) {
    const auto resume = nlohmann::json::parse(torchprobe::io::read_text_file(child.resume_path));
    for (const auto& t : resume.at("trials")) options.known_trials.push_back(trial_from_json(t));
    for (const auto& t : resume.at("recovery_failures")) options.known_recovery_failures.push_back(trial_from_json(t));
  }
  // oneDNN off (Python: torch.backends.mkldnn.enabled = False): under the limit its JIT crashes
  // (SIGSEGV in dnnl_primitive_create) instead of raising, and its per-shape code caches take
  // address space for good, so the boundary would depend on the search's history.
  at::globalContext().setUserEnabledMkldnn(false);
  const std::int64_t budget = child.budget_bytes;
  options.on_ready = [budget] {
    cap_address_space(budget);
    return budget;
  };
  const ProbeReport report = run_memory_probe(torch::Device(torch::kCPU), options);
  lift_address_space_cap();  // the report, and exit, need memory of their own
  emit({{"event", "report"}, {"report", nlohmann::json::parse(probe_to_json(report))}});
  return 0;
}

ProbeReport run_probe_in_child(const std::string& exe, const std::vector<std::string>& args, int max_restarts) {
  std::vector<Trial> known, recovery_failures;
  std::optional<TempDir> resume_dir;
  for (int restarts = 0;; ++restarts) {
    std::vector<std::string> child_args = args;
    if (restarts > 0) {
      if (!resume_dir) resume_dir.emplace("torchprobe-probe");
      nlohmann::json resume = {{"trials", nlohmann::json::array()}, {"recovery_failures", nlohmann::json::array()}};
      for (const auto& t : known) resume["trials"].push_back(trial_to_json(t));
      for (const auto& t : recovery_failures) resume["recovery_failures"].push_back(trial_to_json(t));
      const std::string path = resume_dir->file("resume.json");
      torchprobe::io::write_text_file(path, resume.dump());
      child_args.insert(child_args.end(), {"--child-resume", path});
    }
    const auto start = std::chrono::steady_clock::now();
    ChildRun run = run_child_once(exe, child_args);
    const bool exited_ok = WIFEXITED(run.status) && WEXITSTATUS(run.status) == 0;
    if (run.report && exited_ok) {
      ProbeReport report;
      try {
        report = probe_from_json(*run.report);
      } catch (const nlohmann::json::exception& e) {
        throw std::runtime_error(fmt::format("the memory probe child ({}) printed no valid report: {}", exe, e.what()));
      }
      report.child_restarts = restarts;
      return report;
    }
    for (auto& t : run.trials) known.push_back(std::move(t));
    const auto library = find_library_oom(run.output_tail);
    const bool in_work = run.trial_running || run.recovery_running;
    if (!library || !in_work || restarts >= max_restarts) {
      if (library && in_work) {
        throw std::runtime_error(fmt::format("the memory probe child ({}) was ended {} times by {} running out of memory; "
                                             "giving up (lower --cpu-limit or --threads)",
                                             exe, restarts + 1, library->allocator));
      }
      child_failed(exe, run);
    }
    Trial t;
    t.fits = false;
    t.error = library->message;
    t.allocator = library->allocator;
    t.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::fprintf(stderr, "torchprobe: the probe's process was ended by %s running out of memory at batch %lld; "
                 "recording that as an out-of-memory error and going on in a new process\n",
                 library->allocator.c_str(), static_cast<long long>(run.trial_running ? *run.trial_running : *run.recovery_running));
    if (run.trial_running) {
      t.batch = *run.trial_running;
      known.push_back(t);
    } else {
      t.batch = *run.recovery_running;
      recovery_failures.push_back(t);
    }
  }
}

}  // namespace torchprobe::diagnostics
