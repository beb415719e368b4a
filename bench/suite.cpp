#include "suite.h"

#include <sys/resource.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <cstdio>
#include <map>
#include <mutex>

#include "progress.h"
#include "results_file.h"
#include "torchprobe/device_spec.h"
#include "torchprobe/error.h"
#include "torchprobe/interrupt.h"
#include "torchprobe/report/schema.h"

namespace torchprobe::bench {
namespace {
const char* on_off(bool on) { return on ? "on" : "off"; }

bool selected(const SuiteOptions& options, const std::string& suite) {
  return std::find(options.suites.begin(), options.suites.end(), suite) != options.suites.end();
}

using report::schema::kTrainAxes;
static_assert(kTrainAxes[0].key == "dtype" && kTrainAxes[1].key == "layout" && kTrainAxes[2].key == "cudnn" &&
                  kTrainAxes[3].key == "graph",
              "TrainVariant's fields are named in the order of the axes' table");

/// The variant's value on each of kTrainAxes, in the table's order.
std::array<std::string, kTrainAxes.size()> axis_values(const TrainVariant& v) {
  return {train::precision_name(v.precision), train::layout_name(v.layout), on_off(v.cudnn_benchmark), on_off(v.graph)};
}

/// The values of `axis` to run: those given (checked by whoever reads them), else every value of the axis in the full
/// sweep and its baseline otherwise.
std::vector<std::string> values_to_run(const std::vector<std::string>& given, const report::schema::TrainAxis& axis,
                                       bool full) {
  if (!given.empty()) return given;
  if (!full) return {std::string(axis.baseline())};
  std::vector<std::string> all;
  for (const auto value : axis.values) {
    if (!value.empty()) all.emplace_back(value);
  }
  return all;
}
}  // namespace

std::string train_benchmark_name(const TrainConfig& config) {
  std::string name =
      fmt::format("train_step/{}/{}/batch:{}", config.model, device_string(config.device), config.batch_size);
  const auto values = axis_values(config.variant);
  for (size_t i = 0; i < kTrainAxes.size(); ++i) {
    if (!kTrainAxes[i].gpu_only || config.device.is_cuda()) name += fmt::format("/{}:{}", kTrainAxes[i].key, values[i]);
  }
  return name;
}

bool quick_subset(const VariantSelection& sel) {
  return !sel.full && sel.dtypes.empty() && sel.layouts.empty() && sel.cudnn.empty() && sel.graphs.empty();
}

bool cpu_native_bf16(const CoreFlops& flops, const char* setting) {
  if (setting != nullptr && *setting != '\0') {
    const std::string value = setting;
    if (value == "native") return true;
    if (value == "emulated") return false;
    throw InputError(fmt::format("TORCHPROBE_CPU_BF16='{}': use native or emulated (or leave it unset)", value));
  }
  return !flops.emulates("bf16");
}

std::vector<TrainConfig> plan_train_benchmarks(const SuiteOptions& options) {
  const VariantSelection& sel = options.variants;
  std::vector<train::Precision> precisions;
  for (const auto& d : values_to_run(sel.dtypes, kTrainAxes[0], sel.full))
    precisions.push_back(train::parse_precision(d));
  std::vector<train::Layout> layouts;
  for (const auto& l : values_to_run(sel.layouts, kTrainAxes[1], sel.full)) layouts.push_back(train::parse_layout(l));
  const auto switches = [&](const std::vector<std::string>& given, const report::schema::TrainAxis& axis,
                            const char* flag) {
    std::vector<bool> out;
    for (const auto& value : values_to_run(given, axis, sel.full)) {
      if (value != "on" && value != "off")
        throw InputError(fmt::format("{}: expected on or off, got '{}'", flag, value));
      out.push_back(value == "on");
    }
    return out;
  };
  const std::vector<bool> cudnn = switches(sel.cudnn, kTrainAxes[2], "--cudnn");
  const std::vector<bool> graphs = switches(sel.graphs, kTrainAxes[3], "--graphs");
  const bool quick = quick_subset(sel);

  std::vector<TrainConfig> plan;
  for (const auto& device : options.devices) {
    const bool gpu = device.is_cuda();
    for (const auto& model : options.models) {
      for (const auto batch : options.batch_sizes) {
        std::vector<TrainVariant> variants;
        for (const auto precision : precisions) {
          for (const auto layout : layouts) {
            for (const bool autotune : cudnn) {
              for (const bool graph : graphs) {
                // The CPU autocasts to bf16 only, and has neither cuDNN nor CUDA graphs.
                if (!gpu && (precision == train::Precision::kFp16 || autotune || graph)) continue;
                variants.push_back({precision, layout, autotune, graph});
              }
            }
          }
        }
        if (quick && !options.batch_sizes.empty()) {
          const auto [smallest, largest] = std::minmax_element(options.batch_sizes.begin(), options.batch_sizes.end());
          if (batch == *largest && (gpu || options.cpu_native_bf16)) {
            variants.push_back({train::Precision::kBf16, train::Layout::kChannelsLast, gpu, false});
          }
          if (gpu && batch == *smallest) variants.push_back({train::Precision::kFp32, train::Layout::kNchw, false, true});
        }
        for (const auto& v : variants) plan.push_back({model, device, batch, v});
      }
    }
  }
  const bool train_selected =
      std::find(options.suites.begin(), options.suites.end(), "train") != options.suites.end();
  if (plan.empty() && train_selected && !options.devices.empty() && !options.models.empty() &&
      !options.batch_sizes.empty()) {
    throw InputError("none of the selected training variants runs on the selected devices (fp16, cuDNN autotuning "
                     "and CUDA graphs need a CUDA device; the CPU runs fp32 and bf16)");
  }
  return plan;
}

double time_samples(benchmark::State& state, measure::Sampler& sampler) {
  double total_ms = 0.0;
  while (state.KeepRunningBatch(sampler.calls_per_sample())) {
    const double ms = sampler.sample();
    total_ms += ms;
    state.SetIterationTime(ms / 1e3);
    interrupt::check();  // a signal: stop after this sample
  }
  return total_ms;
}

measure::StopRule stop_rule(const StopFlags& flags, const torch::Device& device) {
  measure::StopRule rule = measure::default_stop_rule(device);
  if (flags.max_noise_pct) rule.max_noise_pct = *flags.max_noise_pct;
  if (flags.min_samples) rule.min_samples = *flags.min_samples;
  if (flags.min_time_s) rule.min_time_s = *flags.min_time_s;
  if (flags.timeout_s) rule.timeout_s = *flags.timeout_s;
  measure::check_stop_rule(rule);
  return rule;
}

measure::Measurement time_until_stable(benchmark::State& state, measure::Sampler& sampler,
                                       const measure::StopRule& rule) {
  measure::Measurement m;
  while (state.KeepRunningBatch(1)) {
    m = sampler.measure(rule);
    state.SetIterationTime(m.mean_ms / 1e3);
  }
  state.counters["samples"] = static_cast<double>(m.per_call_ms.size());
  state.counters["noise_pct"] = m.noise_pct;
  state.counters["max_noise_pct"] = rule.max_noise_pct;
  state.counters["timed_out"] = m.timed_out ? 1 : 0;
  state.counters[kCpuPerCallCounter] = m.cpu_ms;
  return m;
}

std::string sampling_bound_text(size_t benchmarks, int repetitions, double timeout_s) {
  const double warm_up_s = measure::Policy{}.warmup_s;
  const double bound_s = static_cast<double>(benchmarks) * (std::max(1, repetitions) * timeout_s + warm_up_s);
  const auto s = static_cast<long>(std::ceil(bound_s));
  const std::string clock = s >= 3600 ? fmt::format("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
                                      : fmt::format("{}:{:02}", s / 60, s % 60);
  return fmt::format(
      "at most {} of sampling ({} benchmark(s) x {} repetition(s), each stopping once its noise is "
      "under its target, or at {} s; most stop well before; where one call takes over {} s, longer: a "
      "repetition takes at least 2 samples)",
      clock, benchmarks, std::max(1, repetitions), timeout_s, timeout_s / 2.0);
}

/// TORCHPROBE_TEST_FAULT=PART:KIND, for tests: in the benchmarks whose name contains PART, "abort",
/// "segv", "throw", "interrupt@N" (a SIGINT as the Nth repetition starts; its first sample then stops it), or
/// "fill@FILE" (FILE written with zeros until its disk is full, once: the results written after this benchmark
/// then meet a full disk mid-run).
void inject_fault(const std::string& name, const std::string& spec) {
  const size_t colon = spec.rfind(':');
  if (colon == std::string::npos || colon == 0 || name.find(spec.substr(0, colon)) == std::string::npos) return;
  const std::string kind = spec.substr(colon + 1);
  if (kind.rfind("interrupt@", 0) == 0) {
    static std::map<std::string, int> runs;
    if (++runs[name] == std::atoi(kind.c_str() + 10)) std::raise(SIGINT);
    return;
  }
  if (kind.rfind("fill@", 0) == 0) {
    static bool filled = false;
    if (filled) return;
    filled = true;
    if (std::FILE* f = std::fopen(kind.c_str() + 5, "wb")) {
      static const char zeros[64 * 1024] = {};
      while (std::fwrite(zeros, 1, sizeof(zeros), f) == sizeof(zeros)) {
      }
      std::fclose(f);
    }
    return;
  }
  const rlimit no_core{0, 0};
  setrlimit(RLIMIT_CORE, &no_core);  // a test's deliberate crash leaves no core file
  if (kind == "abort") std::abort();
  if (kind == "segv") {
    std::signal(SIGSEGV, SIG_DFL);  // die by the signal itself, past any handler (ASan's reports and exits 1)
    std::raise(SIGSEGV);
  }
  throw std::runtime_error("injected fault (TORCHPROBE_TEST_FAULT=" + spec + ")");
}

KeptState& kept_state() {
  static KeptState& kept = *new KeptState;
  return kept;
}

void run_guarded(benchmark::State& state, const std::string& name, const std::function<void()>& body) {
  // Google Benchmark (1.7's ComputeStats) aborts the program unless every repetition of a benchmark reports
  // the iteration count the finished ones reached, failed ones included: a repetition that a stop (or an
  // error) cuts short or skips runs its loop out to that count, without work, before it is marked failed.
  static std::map<std::string, benchmark::IterationCount> finished_iterations;
  try {
    interrupt::check();
    Progress::instance().start(name);
    if (const char* fault = std::getenv("TORCHPROBE_TEST_FAULT")) inject_fault(name, fault);
    body();
    finished_iterations[name] = state.iterations();
  } catch (const std::exception& e) {
    kept_state() = KeptState{};
    const auto finished = finished_iterations.find(name);
    if (finished != finished_iterations.end() && finished->second > state.iterations()) {
      static_cast<void>(state.KeepRunningBatch(finished->second - state.iterations()));
    }
    state.SkipWithError(short_message(e).c_str());
  }
}

namespace {
/// The suites, in the order they register and run: the name --suites takes, and what registers its benchmarks.
struct SuiteEntry {
  const char* name;
  std::vector<std::string> (*registration)(const SuiteOptions&, DatasetSource, const std::string&);
};
const SuiteEntry kSuites[] = {
    {"train", register_train_benchmarks},
    {"data",
     [](const SuiteOptions& options, DatasetSource, const std::string&) { return register_data_benchmarks(options); }},
    {"op",
     [](const SuiteOptions& options, DatasetSource, const std::string&) { return register_op_benchmarks(options); }},
};
}  // namespace

const std::vector<std::string>& suite_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& suite : kSuites) out.emplace_back(suite.name);
    return out;
  }();
  return names;
}

void check_suites(const std::vector<std::string>& suites) {
  for (const auto& s : suites) {
    if (std::find(suite_names().begin(), suite_names().end(), s) == suite_names().end()) {
      throw InputError(fmt::format("unknown suite '{}' (known: {})", s, fmt::join(suite_names(), ", ")));
    }
  }
}

DatasetSource make_once(std::function<data::Dataset()> make) {
  struct Once {
    std::once_flag flag;
    std::shared_ptr<const data::Dataset> dataset;
  };
  auto once = std::make_shared<Once>();
  return [once, make = std::move(make)] {
    std::call_once(once->flag, [&] { once->dataset = std::make_shared<const data::Dataset>(make()); });
    return once->dataset;
  };
}

std::vector<std::string> register_suites(const SuiteOptions& options,
                                         DatasetSource train_data,
                                         const std::string& data_label) {
  check_suites(options.suites);
  std::vector<std::string> names;
  for (const auto& suite : kSuites) {
    if (!selected(options, suite.name)) continue;
    const auto registered = suite.registration(options, train_data, data_label);
    names.insert(names.end(), registered.begin(), registered.end());
  }
  return names;
}

}  // namespace torchprobe::bench
