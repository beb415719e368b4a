// torchprobe diagnose device [--scenario NAME|all] [--device cuda:N] [--json]
// torchprobe diagnose memory [--devices ...] [--models ...] [--cpu-limit 512MiB] [--json] ...
#include <fmt/format.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>

#include "commands.h"
#include "measuring.h"
#include "diagnostics/memory_child.h"
#include "diagnostics/memory_diagnosis.h"
#include "diagnostics/scenarios.h"
#include "torchprobe/blas.h"
#include "torchprobe/device_spec.h"
#include "torchprobe/input_error.h"
#include "torchprobe/interrupt.h"
#include "torchprobe/io.h"
#include "torchprobe/models/registry.h"
#include "torchprobe/units.h"

namespace torchprobe::cli {
namespace {

namespace dx = diagnostics;

/// The largest --cpu-limit: x86-64's user address space (47 bits), beyond which a budget means nothing.
constexpr std::int64_t kMaxCpuLimit = std::int64_t{1} << 47;

Command add_device(CLI::App& diagnose) {
  struct Flags {
    std::string scenario = "all", device;
    bool json = false;
  };
  auto flags = std::make_shared<Flags>();
  auto* cmd = diagnose.add_subcommand("device", "The device-mismatch catalogue (GPU scenarios skip without GPUs)");
  std::string names;
  for (const auto& name : dx::scenario_names()) names += (names.empty() ? "" : ", ") + name;
  cmd->add_option("--scenario", flags->scenario, "A scenario name or all: " + names)->capture_default_str();
  cmd->add_option("--device", flags->device, "The CUDA device for GPU scenarios (default cuda:0)");
  cmd->add_flag("--json", flags->json, "Print the results as JSON");
  return {cmd, [flags] {
            std::optional<torch::Device> gpu;
            if (!flags->device.empty()) {
              gpu = parse_device(flags->device);
              if (!gpu->is_cuda()) throw InputError("--device: the GPU scenarios need a CUDA device (cuda:N), got " + flags->device);
            }
            const auto results = dx::run_scenarios(flags->scenario, gpu);
            int failed = 0, reproduced = 0, skipped = 0;
            for (const auto& r : results) {
              failed += r.status == dx::ScenarioStatus::kFailed;
              reproduced += r.status == dx::ScenarioStatus::kReproduced;
              skipped += r.status == dx::ScenarioStatus::kSkipped;
            }
            if (flags->json) {
              std::printf("%s\n", dx::scenarios_json(results).c_str());
            } else {
              for (const auto& r : results) std::printf("%s\n", dx::scenario_text(r).c_str());
              std::printf("%d reproduced and explained, %d skipped, %d failed\n", reproduced, skipped, failed);
            }
            return failed > 0 ? 1 : 0;
          }};
}

Command add_memory(CLI::App& diagnose) {
  struct Flags {
    std::string devices = "all", models = "net,resnet18", cpu_limit = "512MiB";
    std::int64_t max_batch = 1 << 20;
    double tolerance_pct = 2.0;
    int leak_steps = 15, threads = 0;
    bool json = false, child = false;
    std::string child_resume, charts;
  };
  auto flags = std::make_shared<Flags>();
  auto* cmd = diagnose.add_subcommand("memory",
                                      "Reproduce a real out-of-memory error, explain it, find the largest batch, check for leaks");
  cmd->add_option("--devices,--device", flags->devices, "cpu, cuda:N, a comma list, or all")->capture_default_str();
  cmd->add_option("--models,--model", flags->models, "net, resnet18, a comma list, or all")->capture_default_str();
  cmd->add_option("--cpu-limit", flags->cpu_limit, "CPU: the address space the child may allocate beyond what it has mapped, e.g. 2GiB")
      ->capture_default_str();
  cmd->add_option("--max-batch", flags->max_batch, "Stop doubling the batch here")
      ->check(in_range(std::int64_t{1}, std::int64_t{1} << 40))
      ->capture_default_str();
  cmd->add_option("--tolerance", flags->tolerance_pct, "Largest-batch precision, % (0: exact)")
      ->check(in_range(0.0, 50.0))
      ->capture_default_str();
  cmd->add_option("--leak-steps", flags->leak_steps, "Steps the leak detector watches")
      ->check(in_range(3, 100000))
      ->capture_default_str();
  cmd->add_option("--threads", flags->threads, "LibTorch intra-op threads (default: every core)")
      ->check(in_range(1, kMaxThreads));
  cmd->add_flag("--json", flags->json, "Print the reports as JSON");
  cmd->add_option("--charts", flags->charts,
                  "Also write each probe's chart here: memory_MODEL_DEVICE.svg (peak vs batch)");
  cmd->add_flag("--child", flags->child, "internal: the CPU probe's child process")->group("");
  cmd->add_option("--child-resume", flags->child_resume, "internal: trials an earlier child ran")->group("");
  return {cmd, [flags] {
            // Not a benchmark: every core (OpenMP's default may be 1 thread), unless told otherwise.
            const ThreadSetup threads = configure_threads(flags->threads > 0 ? flags->threads : available_cores());
            const std::int64_t budget = byte_size_flag("--cpu-limit", flags->cpu_limit, kMaxCpuLimit);
            dx::SearchOptions search;
            search.max_batch = flags->max_batch;
            search.tolerance = flags->tolerance_pct / 100.0;
            const auto on_trial = [](const dx::Trial& t) {
              std::fprintf(stderr, "  trial batch %lld: %s (%.1f s)\n", static_cast<long long>(t.batch),
                           t.fits ? fmt::format("ran, peak {}", units::format_bytes(static_cast<double>(t.peak_bytes))).c_str()
                                  : ("out of memory in " + t.allocator).c_str(),
                           t.seconds);
            };
            if (flags->child) {
              dx::ChildOptions child;
              child.model = flags->models;
              child.budget_bytes = budget;
              child.search = search;
              child.resume_path = flags->child_resume;
              child.on_trial = on_trial;
              return dx::run_memory_child(child);
            }
            dx::MemoryDiagnosisOptions options;
            options.devices = parse_device_list(flags->devices);
            options.models = list_flag("--models", flags->models);
            if (options.models == std::vector<std::string>{"all"}) options.models = models::model_names();
            options.search = search;
            options.leak_steps = flags->leak_steps;
            options.on_trial = on_trial;
            options.child_args = [flags, budget, intra = threads.intra_op](const std::string& model) {
              return std::vector<std::string>{"diagnose", "memory", "--child", "--models", model, "--cpu-limit",
                                              std::to_string(budget), "--max-batch", std::to_string(flags->max_batch),
                                              "--tolerance", fmt::format("{}", flags->tolerance_pct), "--threads",
                                              std::to_string(intra)};
            };
            options.on_start = [](const std::string& model, const std::string& device) {
              std::fprintf(stderr, "torchprobe: diagnose memory: %s on %s\n", model.c_str(), device.c_str());
            };
            options.on_leak_start = [steps = flags->leak_steps](const std::string& model, const std::string& device,
                                                                const std::string& loop) {
              std::fprintf(stderr, "torchprobe: diagnose memory: leak check of %s on %s, %s: %d steps\n", model.c_str(),
                           device.c_str(), loop.c_str(), steps);
            };
            // Nothing lost on a stop: what finished is kept here as it finishes, and a SIGINT/SIGTERM prints it as
            // JSON (marked "interrupted") before the program exits 130/143. Text streams as it goes.
            struct Finished {
              std::mutex mutex;
              dx::MemoryDiagnosis diagnosis;
            };
            const auto finished = std::make_shared<Finished>();
            const bool json = flags->json;
            const std::string charts = flags->charts;
            if (!charts.empty()) std::filesystem::create_directories(charts);  // before the minutes of probing
            options.on_probe = [finished, json, charts](const dx::ProbeReport& r) {
              if (!charts.empty()) {
                std::string file = "memory_" + r.model + "_" + r.device + ".svg";
                std::replace(file.begin(), file.end(), ':', '_');
                const std::string path = (std::filesystem::path(charts) / file).string();
                io::write_text_file(path, dx::probe_chart(r));
                std::fprintf(stderr, "torchprobe: wrote %s\n", path.c_str());
              }
              {
                std::lock_guard<std::mutex> lock(finished->mutex);
                finished->diagnosis.probes.push_back(r);
              }
              if (!json) {
                std::printf("%s\n", dx::probe_text(r).c_str());
                std::fflush(stdout);
              }
              if (const char* fault = std::getenv("TORCHPROBE_TEST_FAULT");
                  fault != nullptr && std::string(fault) == "diagnose_memory:interrupt_after_probe") {
                std::raise(SIGINT);  // tests: a stop once the first probe has finished
              }
            };
            options.on_leak = [finished, json](const dx::LeakCheck& check) {
              {
                std::lock_guard<std::mutex> lock(finished->mutex);
                finished->diagnosis.leaks.push_back(check);
              }
              if (!json) {
                std::printf("leak check, %s%s", dx::leak_text(check.report).c_str(),
                            check.as_expected() ? "" : "  ^ NOT AS EXPECTED\n");
                std::fflush(stdout);
              }
            };
            const int cleanup = !json ? -1 : interrupt::add_cleanup([finished] {
              std::lock_guard<std::mutex> lock(finished->mutex);
              finished->diagnosis.interrupted = interrupt::signal_name(interrupt::signal_number());
              std::printf("%s\n", dx::memory_diagnosis_json(finished->diagnosis).c_str());
            });
            const dx::MemoryDiagnosis diagnosis = dx::run_memory_diagnosis(options);
            if (cleanup >= 0) interrupt::remove_cleanup(cleanup);
            if (json) std::printf("%s\n", dx::memory_diagnosis_json(diagnosis).c_str());
            return diagnosis.ok() ? 0 : 1;
          }};
}

}  // namespace

std::vector<Command> add_diagnose_command(CLI::App& app) {
  auto* diagnose = app.add_subcommand("diagnose", std::string(measuring_description("diagnose")));
  diagnose->require_subcommand(1);
  return {add_device(*diagnose), add_memory(*diagnose)};
}

}  // namespace torchprobe::cli
