// torchprobe: the command-line front end. Thin: parse flags, call the core library, print.
#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "diagnostics/classify.h"
#include "diagnostics/leak.h"
#include "diagnostics/memory_child.h"
#include "diagnostics/memory_probe.h"
#include "diagnostics/oom.h"
#include "diagnostics/scenarios.h"
#include "torchprobe/io.h"
#include "torchprobe/units.h"
#include "torchprobe/backend.h"
#include "torchprobe/cli_support.h"
#include "torchprobe/device_spec.h"
#include "torchprobe/inventory.h"
#include "torchprobe/run_context.h"
#include "torchprobe/trust.h"
#include "torchprobe/dist/dist_bench.h"
#include "torchprobe/error.h"
#include "torchprobe/measure.h"
#include "torchprobe/memory.h"
#include "torchprobe/models/registry.h"
#include "torchprobe/report/compare.h"
#include "torchprobe/report/printers.h"

namespace {

int devices_command(bool json, int threads) {
  torchprobe::configure_threads(threads);
  const torchprobe::Inventory inventory = torchprobe::collect_inventory();
  std::printf("%s", json ? (torchprobe::inventory_json(inventory) + "\n").c_str()
                         : torchprobe::inventory_text(inventory).c_str());
  if (json) {
    for (const auto& w : torchprobe::trust::threading_warnings(inventory.threads)) {
      std::fprintf(stderr, "torchprobe: warning: %s\n", w.message.c_str());
    }
  }
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
  torchprobe::io::write_text_file((out / "results.csv").string(), report::to_csv(results));
  for (const auto& chart : charts) torchprobe::io::write_text_file((out / chart.file).string(), chart.svg);
  torchprobe::io::write_text_file((out / "report.md").string(), report::to_markdown(results, charts, options));
  if (!flags.quiet) std::printf("%s", report::to_console_summary(results, options).c_str());
  std::fprintf(stderr, "torchprobe: wrote %s, %s and %zu chart(s) for %zu benchmark(s)\n",
               (out / "report.md").c_str(), (out / "results.csv").c_str(), charts.size(), results.results.size());
  return 0;
}

struct CompareFlags {
  std::string baseline, current, threshold = "5%", markdown, junit, json;
  double alpha = 0.05;
  bool fail_unconfirmed = false;
};

int compare_command(const CompareFlags& flags) {
  namespace report = torchprobe::report;
  report::CompareOptions options;
  options.threshold_pct = report::parse_percent(flags.threshold, "--threshold");
  options.alpha = flags.alpha;
  options.fail_unconfirmed = flags.fail_unconfirmed;
  const report::ResultSet baseline = report::load_results({flags.baseline});
  const report::ResultSet current = report::load_results({flags.current});
  const report::CompareReport comparison = report::compare_results(baseline, current, options);
  // Every file first: a write error is exit 2, whatever the verdict.
  if (!flags.markdown.empty()) torchprobe::io::write_text_file(flags.markdown, report::compare_markdown(comparison, options));
  if (!flags.junit.empty()) torchprobe::io::write_text_file(flags.junit, report::compare_junit(comparison, options));
  if (!flags.json.empty()) torchprobe::io::write_text_file(flags.json, report::compare_json(comparison, options));
  std::printf("%s", report::compare_console(comparison, options).c_str());
  return comparison.exit_code(options);
}

int diagnose_device_command(const std::string& scenario, const std::string& device, bool json) {
  namespace dx = torchprobe::diagnostics;
  std::optional<torch::Device> gpu;
  if (!device.empty()) {
    gpu = torchprobe::parse_device(device);
    if (!gpu->is_cuda()) throw torchprobe::InputError("--device: the GPU scenarios need a CUDA device (cuda:N), got " + device);
  }
  const auto results = dx::run_scenarios(scenario, gpu);
  int failed = 0, reproduced = 0, skipped = 0;
  for (const auto& r : results) {
    failed += r.status == dx::ScenarioStatus::kFailed;
    reproduced += r.status == dx::ScenarioStatus::kReproduced;
    skipped += r.status == dx::ScenarioStatus::kSkipped;
  }
  if (json) {
    std::printf("%s\n", dx::scenarios_json(results).c_str());
  } else {
    for (const auto& r : results) std::printf("%s\n", dx::scenario_text(r).c_str());
    std::printf("%d reproduced and explained, %d skipped, %d failed\n", reproduced, skipped, failed);
  }
  return failed > 0 ? 1 : 0;
}

struct MemoryFlags {
  std::string devices = "all", models = "net,resnet18", cpu_limit = "512MiB";
  std::int64_t max_batch = 1 << 20;
  double tolerance_pct = 2.0;
  int leak_steps = 15, threads = 0;
  bool json = false, child = false;
  std::string child_resume;
};

/// The one way a size flag is read: "512MiB", "2GiB", "64KiB" or a byte count, above 0.
std::int64_t byte_size_flag(const std::string& flag, const std::string& text) {
  const auto bytes = torchprobe::units::parse_bytes(text);
  if (!bytes || *bytes < 1) {
    throw torchprobe::InputError(fmt::format("{}: expected a size like 512MiB or 2GiB, got '{}'", flag, text));
  }
  return *bytes;
}

int diagnose_memory_command(const MemoryFlags& flags) {
  namespace dx = torchprobe::diagnostics;
  // Not a benchmark: use every core (OpenMP's default may be 1 thread), unless told otherwise.
  torchprobe::configure_threads(flags.threads > 0 ? flags.threads : torchprobe::available_cores());
  dx::ProbeOptions options;
  options.search.max_batch = flags.max_batch;
  options.search.tolerance = flags.tolerance_pct / 100.0;
  options.on_trial = [](const dx::Trial& t) {
    std::fprintf(stderr, "  trial batch %lld: %s (%.1f s)\n", static_cast<long long>(t.batch),
                 t.fits ? fmt::format("ran, peak {}", torchprobe::units::format_bytes(static_cast<double>(t.peak_bytes))).c_str()
                        : "out of memory",
                 t.seconds);
  };
  const std::int64_t budget = byte_size_flag("--cpu-limit", flags.cpu_limit);
  if (flags.child) {
    dx::ChildOptions child;
    child.model = flags.models;
    child.budget_bytes = budget;
    child.search = options.search;
    child.resume_path = flags.child_resume;
    child.on_trial = options.on_trial;
    return dx::run_memory_child(child);
  }

  const auto devices = torchprobe::parse_device_list(flags.devices);
  std::vector<std::string> models;
  for (std::string rest = flags.models; !rest.empty();) {
    const auto comma = rest.find(',');
    models.push_back(rest.substr(0, comma));
    rest = comma == std::string::npos ? "" : rest.substr(comma + 1);
  }
  if (models.size() == 1 && models.front() == "all") models = torchprobe::models::model_names();
  for (const auto& m : models) torchprobe::models::make_model(m);  // unknown names fail here, before any work

  nlohmann::ordered_json out = {{"probes", nlohmann::json::array()}, {"leaks", nlohmann::json::array()}};
  bool ok = true;
  for (const auto& device : devices) {
    for (const auto& model : models) {
      std::fprintf(stderr, "torchprobe: diagnose memory: %s on %s\n", model.c_str(), torchprobe::device_string(device).c_str());
      dx::ProbeReport report;
      if (device.is_cuda()) {
        dx::ProbeOptions o = options;
        o.model = model;
        report = dx::run_memory_probe(device, o);
      } else {
        report = dx::run_probe_in_child(
            "/proc/self/exe", {"diagnose", "memory", "--child", "--models", model, "--cpu-limit", std::to_string(budget),
                               "--max-batch", std::to_string(flags.max_batch), "--tolerance",
                               fmt::format("{}", flags.tolerance_pct), "--threads", std::to_string(at::get_num_threads())});
      }
      ok = ok && report.ok();
      if (flags.json) {
        out["probes"].push_back(nlohmann::ordered_json::parse(dx::probe_to_json(report)));
      } else {
        std::printf("%s\n", dx::probe_text(report).c_str());
        std::fflush(stdout);
      }
      dx::LeakOptions leak_options;
      leak_options.steps = flags.leak_steps;
      for (const auto loop : {dx::LeakLoop::kCorrect, dx::LeakLoop::kKeptLosses}) {
        const dx::LeakReport leak = dx::run_leak_scenario(loop, model, device, leak_options);
        const bool expected = leak.leak == (loop == dx::LeakLoop::kKeptLosses);
        ok = ok && expected;
        if (flags.json) {
          out["leaks"].push_back(nlohmann::ordered_json{{"scenario", leak.scenario}, {"model", model}, {"device", leak.device}, {"steps", leak.steps},
                                  {"leak", leak.leak}, {"expected_leak", loop == dx::LeakLoop::kKeptLosses},
                                  {"tensor_bytes_per_step", leak.tensor_bytes_per_step},
                                  {"live_tensors_per_step", leak.live_tensors_per_step},
                                  {"heap_bytes_per_step", leak.heap_bytes_per_step}, {"verdict", leak.verdict}});
        } else {
          std::printf("leak check, %s%s", dx::leak_text(leak).c_str(), expected ? "" : "  ^ NOT AS EXPECTED\n");
        }
      }
      if (!flags.json) std::printf("\n");
    }
  }
  out["ok"] = ok;
  if (flags.json) std::printf("%s\n", out.dump(2).c_str());
  return ok ? 0 : 1;
}

struct DistFlags {
  std::string min_bytes = "1KiB", max_bytes = "1GiB";
  int iterations = 20;
  int repetitions = 5;
  std::string model = "net";
  std::int64_t batch = 64;
  int steps = 20, warmup = 3;
  double bucket_mib = 25.0;
  double timeout_s = 60.0;
  int threads = 0;
  std::string device = "cpu";      ///< per rank: cpu (Gloo) or cuda (cuda:LOCAL_RANK, NCCL)
  std::string devices = "all";     ///< data_parallel's devices
  bool json = false;
  std::string out;
};

/// Rank 0's (or the one process's) output: text or JSON on stdout, the JSON also to --out.
void print_dist(const DistFlags& flags, const std::string& json, std::string text) {
  text += fmt::format("  (LibTorch intra-op threads: {})\n", at::get_num_threads());
  if (!flags.out.empty()) {
    torchprobe::io::write_text_file(flags.out, json + "\n");
    std::fprintf(stderr, "torchprobe: wrote %s\n", flags.out.c_str());
  }
  std::printf("%s", flags.json ? (json + "\n").c_str() : text.c_str());
}

/// The context a dist results file records: Google Benchmark's keys and torchprobe's, as torchprobe-bench's files.
torchprobe::ContextEntries dist_context(const torchprobe::ThreadSetup& threads, const std::string& allocator) {
  auto context = torchprobe::standard_context();
  for (auto& entry : torchprobe::torchprobe_context(threads, allocator, torchprobe::trust::threading_warnings(threads))) {
    context.push_back(std::move(entry));
  }
  return context;
}

/// `torchprobe dist allreduce|train`: one rank of a torchrun-style job (scripts/launch.sh N runs N).
/// Every rank measures; rank 0 prints (or writes --out).
int dist_command(const DistFlags& flags, bool all_reduce) {
  namespace dist = torchprobe::dist;
  const dist::DistEnv env = dist::env_from_environment();
  const std::string allocator = torchprobe::measure::steady_state_allocator();  // a benchmark: as torchprobe-bench has it
  const torchprobe::ThreadSetup threads = torchprobe::configure_threads(flags.threads);
  const auto timeout = std::chrono::milliseconds(static_cast<std::int64_t>(flags.timeout_s * 1e3));
  dist::ProcessGroup group(env, timeout, dist::rank_device(env, flags.device));
  std::string json, text;
  if (all_reduce) {
    const std::int64_t min_bytes = byte_size_flag("--min-bytes", flags.min_bytes), max_bytes = byte_size_flag("--max-bytes", flags.max_bytes);
    if (min_bytes > max_bytes) throw torchprobe::InputError("--min-bytes is larger than --max-bytes");
    const auto rows = dist::all_reduce_sweep(group, min_bytes, max_bytes, flags.iterations, flags.repetitions);
    json = dist::all_reduce_json(group, rows, dist_context(threads, allocator));
    text = dist::all_reduce_text(group, rows);
  } else {
    torchprobe::models::make_model(flags.model);  // an unknown model is an InputError before any step
    const auto bucket = static_cast<std::int64_t>(flags.bucket_mib * (1 << 20));
    const auto result =
        dist::distributed_train(group, flags.model, flags.batch, flags.steps, flags.warmup, bucket, flags.repetitions);
    json = dist::train_json(result, dist_context(threads, allocator));
    text = dist::train_text(result);
  }
  group.barrier();
  group.shutdown();
  if (group.rank() == 0) print_dist(flags, json, text);
  return 0;
}

/// `torchprobe dist dataparallel`: one process, torch::nn::parallel::data_parallel over its GPUs.
int data_parallel_command(const DistFlags& flags) {
  namespace dist = torchprobe::dist;
  const std::string allocator = torchprobe::measure::steady_state_allocator();  // a benchmark: as torchprobe-bench has it
  const torchprobe::ThreadSetup threads = torchprobe::configure_threads(flags.threads);
  torchprobe::models::make_model(flags.model);  // an unknown model is an InputError before any step
  const auto devices = torchprobe::backend::parse_cuda_devices(flags.devices);
  const auto result = dist::data_parallel_train(flags.model, devices, flags.batch, flags.steps, flags.warmup, flags.repetitions);
  print_dist(flags, dist::train_json(result, dist_context(threads, allocator)), dist::train_text(result));
  return 0;
}

int explain_command(const std::string& text_arg, bool json) {
  std::string text = text_arg;
  if (text.empty() || text == "-") {  // the message on stdin, e.g. a pasted traceback
    std::ostringstream in;
    in << std::cin.rdbuf();
    text = in.str();
  }
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) {
    throw torchprobe::InputError("explain: no error message given (pass it as an argument, or on stdin with -)");
  }
  const auto diagnosis = torchprobe::diagnostics::explain_error(text);
  std::printf("%s", json ? (torchprobe::diagnostics::diagnosis_json(diagnosis) + "\n").c_str()
                         : torchprobe::diagnostics::diagnosis_text(diagnosis).c_str());
  return 0;
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
  auto* compare = app.add_subcommand(
      "compare", "Baseline vs current benchmark JSON: exit 1 on a significant slow-down or a newly failing benchmark, 2 on bad input");
  compare->add_option("baseline", compare_flags.baseline, "Baseline JSON")->required()->check(CLI::ExistingFile);
  compare->add_option("current", compare_flags.current, "Current JSON")->required()->check(CLI::ExistingFile);
  compare->add_option("--threshold", compare_flags.threshold, "Slow-downs of the median beyond this fail, e.g. 5%")
      ->capture_default_str();
  compare->add_option("--alpha", compare_flags.alpha, "Significance level of the Mann-Whitney U test")
      ->check(CLI::Range(1e-9, 0.5))
      ->capture_default_str();
  compare->add_option("--md", compare_flags.markdown, "Also write the comparison as Markdown (a PR comment, a step summary)");
  compare->add_option("--junit", compare_flags.junit, "Also write JUnit XML: one test case per benchmark, failures for SLOWER/FAILED");
  compare->add_option("--json", compare_flags.json, "Also write every row and the verdict counts as JSON");
  compare->add_flag("--fail-unconfirmed", compare_flags.fail_unconfirmed,
                    "UNCONFIRMED (slower beyond the threshold, too few repetitions to test) fails the gate too");

  std::string scenario = "all", diagnose_device;
  bool diagnose_json = false;
  auto* diagnose = app.add_subcommand("diagnose", "Reproduce real errors, catch them and explain cause and fix");
  diagnose->require_subcommand(1);
  auto* diagnose_device_cmd = diagnose->add_subcommand("device", "The device-mismatch catalogue (GPU scenarios skip without GPUs)");
  diagnose_device_cmd->add_option("--scenario", scenario, "A scenario name or all")->capture_default_str();
  diagnose_device_cmd->add_option("--device", diagnose_device, "The CUDA device for GPU scenarios (default cuda:0)");
  diagnose_device_cmd->add_flag("--json", diagnose_json, "Print the results as JSON");

  MemoryFlags memory_flags;
  auto* diagnose_memory_cmd =
      diagnose->add_subcommand("memory", "Reproduce a real out-of-memory error, explain it, find the largest batch, check for leaks");
  diagnose_memory_cmd->add_option("--devices,--device", memory_flags.devices, "cpu, cuda:N, a comma list, or all")->capture_default_str();
  diagnose_memory_cmd->add_option("--models,--model", memory_flags.models, "net, resnet18, a comma list, or all")->capture_default_str();
  diagnose_memory_cmd->add_option("--cpu-limit", memory_flags.cpu_limit,
                                  "CPU: the address space the child may allocate beyond what it has mapped, e.g. 2GiB")
      ->capture_default_str();
  diagnose_memory_cmd->add_option("--max-batch", memory_flags.max_batch, "Stop doubling the batch here")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  diagnose_memory_cmd->add_option("--tolerance", memory_flags.tolerance_pct, "Largest-batch precision, % (0: exact)")
      ->check(CLI::Range(0.0, 50.0))
      ->capture_default_str();
  diagnose_memory_cmd->add_option("--leak-steps", memory_flags.leak_steps, "Steps the leak detector watches")
      ->check(CLI::Range(3, 100000))
      ->capture_default_str();
  diagnose_memory_cmd->add_option("--threads", memory_flags.threads, "LibTorch intra-op threads (default: every core)")
      ->check(CLI::PositiveNumber);
  diagnose_memory_cmd->add_flag("--json", memory_flags.json, "Print the reports as JSON");
  diagnose_memory_cmd->add_flag("--child", memory_flags.child, "internal: the CPU probe's child process")->group("");
  diagnose_memory_cmd->add_option("--child-resume", memory_flags.child_resume, "internal: trials an earlier child ran")->group("");

  DistFlags dist_flags;
  auto* dist = app.add_subcommand("dist", "One rank of a distributed job (torchrun's variables; scripts/launch.sh N)");
  dist->require_subcommand(1);
  auto* dist_allreduce = dist->add_subcommand("allreduce", "All-reduce sweep: time, algbw and busbw (nccl-tests' definitions)");
  auto* dist_train = dist->add_subcommand("train", "Data-parallel training steps: per-rank and global images/s, scaling efficiency");
  auto* dist_dp = dist->add_subcommand(
      "dataparallel", "One process: torch::nn::parallel::data_parallel training steps over several GPUs, scaling efficiency");
  for (auto* cmd : {dist_allreduce, dist_train}) {
    cmd->add_option("--timeout", dist_flags.timeout_s, "Seconds to wait for the store and the other ranks")
        ->check(CLI::PositiveNumber)
        ->capture_default_str();
    cmd->add_option("--device", dist_flags.device, "cpu (Gloo) or cuda (cuda:LOCAL_RANK, NCCL)")
        ->check(CLI::IsMember({"cpu", "cuda"}))
        ->capture_default_str();
  }
  for (auto* cmd : {dist_allreduce, dist_train, dist_dp}) {
    cmd->add_option("--threads", dist_flags.threads, "LibTorch intra-op threads per process")->check(CLI::PositiveNumber);
    cmd->add_flag("--json", dist_flags.json, "Print JSON (rank 0): Google Benchmark's schema, for report and compare");
    cmd->add_option("--repetitions", dist_flags.repetitions, "The timed calls are split into this many repetitions")
        ->check(CLI::Range(1, 1000))
        ->capture_default_str();
    cmd->add_option("--out", dist_flags.out, "Also write the JSON here (rank 0)");
  }
  dist_dp->add_option("--devices", dist_flags.devices, "all, or CUDA indices such as 0,1")->capture_default_str();
  dist_allreduce->add_option("--min-bytes", dist_flags.min_bytes, "Smallest message")->capture_default_str();
  dist_allreduce->add_option("--max-bytes", dist_flags.max_bytes, "Largest message (sizes double)")->capture_default_str();
  dist_allreduce->add_option("--iterations", dist_flags.iterations, "Timed calls per size")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  for (auto* cmd : {dist_train, dist_dp}) {
    cmd->add_option("--model", dist_flags.model, "net or resnet18")->capture_default_str();
    cmd->add_option("--batch", dist_flags.batch, "Images per rank (per device) per step")
        ->check(CLI::PositiveNumber)
        ->capture_default_str();
    cmd->add_option("--steps", dist_flags.steps, "Timed steps")->check(CLI::PositiveNumber)->capture_default_str();
    cmd->add_option("--warmup", dist_flags.warmup, "Untimed steps first")->check(CLI::NonNegativeNumber)->capture_default_str();
  }
  dist_train->add_option("--bucket-mib", dist_flags.bucket_mib, "All-reduce bucket size")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();

  std::string explain_text;
  bool explain_json = false;
  auto* explain = app.add_subcommand("explain", "Classify a PyTorch/LibTorch device or memory error message and explain it");
  explain->add_option("text", explain_text, "The message (or - or nothing: read it from stdin)");
  explain->add_flag("--json", explain_json, "Print kind, devices, argument, explanation and fix as JSON");

  return torchprobe::run_cli(app, argc, argv, [&] {
    if (*diagnose_memory_cmd) return diagnose_memory_command(memory_flags);
    if (*diagnose_device_cmd) return diagnose_device_command(scenario, diagnose_device, diagnose_json);
    if (*explain) return explain_command(explain_text, explain_json);
    if (*dist_allreduce) return dist_command(dist_flags, /*all_reduce=*/true);
    if (*dist_train) return dist_command(dist_flags, /*all_reduce=*/false);
    if (*dist_dp) return data_parallel_command(dist_flags);
    if (*report) return report_command(report_flags);
    if (*compare) return compare_command(compare_flags);
    return devices_command(devices_json, threads);
  });
}
