#include "suite.h"

#include <benchmark/benchmark.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>

#include "isolate.h"
#include "progress.h"
#include "results_file.h"
#include "test_util.h"
#include "torchprobe/error.h"
#include "torchprobe/io.h"
#include "torchprobe/report/results.h"
#include "torchprobe/report/results_writer.h"
#include "torchprobe/report/schema.h"
#include "torchprobe/report/views.h"

using namespace torchprobe;

TEST(Suite, QuickVariantsPerDeviceModelAndBatch) {
  bench::SuiteOptions options;
  options.devices = {torch::Device(torch::kCPU), torch::Device(torch::kCUDA, 0), torch::Device(torch::kCUDA, 1)};
  options.models = {"net", "resnet18"};
  options.batch_sizes = {4, 64, 256};
  const auto plan = bench::plan_train_benchmarks(options);
  // Per model: the baseline at 3 batches + bf16/cl at the largest; GPUs also a graph at the smallest.
  ASSERT_EQ(plan.size(), 2u * 4u + 2u * 2u * 5u);
  std::set<std::string> names;
  for (const auto& config : plan) names.insert(bench::train_benchmark_name(config));
  EXPECT_EQ(names.size(), plan.size());
  EXPECT_TRUE(names.count("train_step/net/cpu/batch:4/dtype:fp32/layout:nchw"));
  EXPECT_TRUE(names.count("train_step/net/cpu/batch:256/dtype:bf16/layout:cl"));
  EXPECT_TRUE(names.count("train_step/resnet18/cuda:1/batch:256/dtype:fp32/layout:nchw/cudnn:off/graph:off"));
  EXPECT_TRUE(names.count("train_step/resnet18/cuda:1/batch:256/dtype:bf16/layout:cl/cudnn:on/graph:off"));
  EXPECT_TRUE(names.count("train_step/net/cuda:0/batch:4/dtype:fp32/layout:nchw/cudnn:off/graph:on"));
  EXPECT_FALSE(names.count("train_step/net/cuda:0/batch:64/dtype:fp32/layout:nchw/cudnn:off/graph:on"));
}

TEST(Suite, QuickSubsetLeavesEmulatedBf16OutOnTheCpuOnly) {
  bench::SuiteOptions options;
  options.devices = {torch::Device(torch::kCPU), torch::Device(torch::kCUDA, 0)};
  options.models = {"net"};
  options.batch_sizes = {4, 64};
  options.cpu_native_bf16 = false;  // e.g. AMD Zen 3: AVX2 and FMA, no AVX512_BF16
  std::set<std::string> names;
  for (const auto& config : bench::plan_train_benchmarks(options)) names.insert(bench::train_benchmark_name(config));
  EXPECT_EQ(names.size(), 2u + 4u) << "CPU: the two baselines; GPU: baselines, bf16/cl and a graph";
  EXPECT_FALSE(names.count("train_step/net/cpu/batch:64/dtype:bf16/layout:cl"));
  EXPECT_TRUE(names.count("train_step/net/cuda:0/batch:64/dtype:bf16/layout:cl/cudnn:on/graph:off"));
  // Asked for, it runs: --dtypes (any axis given leaves the quick subset) and the full sweep.
  options.variants.dtypes = {"fp32", "bf16"};
  names.clear();
  for (const auto& config : bench::plan_train_benchmarks(options)) names.insert(bench::train_benchmark_name(config));
  EXPECT_TRUE(names.count("train_step/net/cpu/batch:64/dtype:bf16/layout:nchw"));
  options.variants = {};
  options.variants.full = true;
  names.clear();
  for (const auto& config : bench::plan_train_benchmarks(options)) names.insert(bench::train_benchmark_name(config));
  EXPECT_TRUE(names.count("train_step/net/cpu/batch:64/dtype:bf16/layout:cl"));
  EXPECT_TRUE(bench::quick_subset({}));
  EXPECT_FALSE(bench::quick_subset(options.variants));
}

TEST(Suite, CpuBf16IsNativeWhereTheCoreHasABf16FigureOrTheSettingSaysSo) {
  CoreFlops zen3;  // AVX2 + FMA: fp32 32 FLOP/cycle, no bf16 unit
  zen3.fp32 = 32.0;
  CoreFlops emr = zen3;
  emr.fp32 = 64.0, emr.bf16 = 64.0;
  EXPECT_FALSE(bench::cpu_native_bf16(zen3, nullptr));
  EXPECT_FALSE(bench::cpu_native_bf16(zen3, ""));
  EXPECT_TRUE(bench::cpu_native_bf16(emr, nullptr));
  EXPECT_TRUE(bench::cpu_native_bf16(CoreFlops{}, nullptr)) << "an unknown core: nothing known to leave out";
  EXPECT_TRUE(bench::cpu_native_bf16(zen3, "native"));
  EXPECT_FALSE(bench::cpu_native_bf16(emr, "emulated"));
  EXPECT_THROW_WITH(bench::cpu_native_bf16(emr, "yes"), InputError,
                    "TORCHPROBE_CPU_BF16='yes': use native or emulated");
}

TEST(Suite, FullSweepCoversEveryVariantTheDeviceRuns) {
  bench::SuiteOptions options;
  options.devices = {torch::Device(torch::kCPU), torch::Device(torch::kCUDA, 0)};
  options.models = {"net"};
  options.batch_sizes = {4};
  options.variants.full = true;
  const auto plan = bench::plan_train_benchmarks(options);
  // CPU: {fp32, bf16} x {nchw, cl}; GPU: {fp32, bf16, fp16} x {nchw, cl} x cudnn {off, on} x graph {off, on}.
  ASSERT_EQ(plan.size(), 4u + 24u);
  std::set<std::string> names;
  for (const auto& config : plan) names.insert(bench::train_benchmark_name(config));
  EXPECT_EQ(names.size(), plan.size());
  EXPECT_TRUE(names.count("train_step/net/cuda:0/batch:4/dtype:fp16/layout:cl/cudnn:on/graph:on"));
  for (const auto& name : names) {
    if (name.find("/cpu/") != std::string::npos) {
      EXPECT_EQ(name.find("fp16"), std::string::npos) << name;
    }
  }
  // Every name carries the axes of the one table (report/schema.h) in its order, a GPU's two more, each with one of the
  // table's values, so the reader completes nothing, and only the all-baseline step has no variant label.
  size_t baselines = 0;
  for (const auto& name : names) {
    torchprobe::report::Result r;
    torchprobe::report::parse_benchmark_name(name, r);
    EXPECT_EQ(r.name, name) << "the reader completed an axis";
    std::string axes;
    for (const auto& axis : torchprobe::report::schema::kTrainAxes) {
      if (axis.gpu_only && r.device == "cpu") continue;
      const auto value = r.params.at(std::string(axis.key));
      EXPECT_NE(std::find(axis.values.begin(), axis.values.end(), value), axis.values.end()) << name;
      axes += "/" + std::string(axis.key) + ":" + value;
    }
    EXPECT_TRUE(name.size() > axes.size() && name.compare(name.size() - axes.size(), axes.size(), axes) == 0)
        << name << " vs " << axes;
    baselines += torchprobe::report::train_variant(r, "/").empty();
  }
  EXPECT_EQ(baselines, 2u) << "one baseline per device";
  // An axis given narrows the sweep; the others stay full.
  options.variants.graphs = {"on"};
  EXPECT_EQ(bench::plan_train_benchmarks(options).size(), 12u) << "graphs on: GPU only, 3 x 2 x 2";
  options.variants.dtypes = {"fp16"};
  options.devices = {torch::Device(torch::kCPU)};
  EXPECT_THROW_WITH(bench::plan_train_benchmarks(options), InputError,
                    "none of the selected training variants runs on the selected devices");
  options.variants = {};
  options.variants.layouts = {"nhwc"};
  EXPECT_THROW_WITH(bench::plan_train_benchmarks(options), InputError, "unknown memory layout 'nhwc'");
}

TEST(Suite, RegistersWhatItPlansWithGoogleBenchmark) {
  bench::SuiteOptions options;
  options.devices = {torch::Device(torch::kCPU)};
  options.models = {"net"};
  options.batch_sizes = {2, 8};
  options.op_selection.ops = {"add", "copy"};
  options.op_selection.batch_sizes = {16};
  auto ds = std::make_shared<const data::Dataset>(data::make_synthetic(16, 1));
  const auto names = bench::register_suites(options, [ds] { return ds; }, "synthetic");
  EXPECT_EQ(names, (std::vector<std::string>{"train_step/net/cpu/batch:2/dtype:fp32/layout:nchw",
                                             "train_step/net/cpu/batch:8/dtype:fp32/layout:nchw",
                                             "train_step/net/cpu/batch:8/dtype:bf16/layout:cl",
                                             "data/parse_cifar10/images:50000", "data/assemble_batch/batch:256",
                                             "op/add/cpu/input:16x64x32x32/dtype:fp32", "op/copy/cpu/kind:d2d/mib:64"}));
  options.suites = {"op"};
  options.op_selection.ops = {"gemm"};
  EXPECT_THROW_WITH(bench::register_suites(options, [ds] { return ds; }, "synthetic"), InputError, "unknown op 'gemm'");
}

// The progress line: what is left, the time so far, and from the second benchmark on the time to go at the finished
// ones' average (this one and those left): 3 finished in 42 s, 14 s each; 8 left and this one: 9 x 14 s = 2:06.
TEST(Progress, TheLineSaysWhatIsLeftAndEstimatesTheTimeToGo) {
  EXPECT_EQ(bench::progress_text(1, 12, "a", 0.2), "[1/12] a (11 left, 0:00 so far)");
  EXPECT_EQ(bench::progress_text(4, 12, "b", 42.0), "[4/12] b (8 left, 0:42 so far, ~2:06 to go)");
  EXPECT_EQ(bench::progress_text(12, 12, "c", 110.0), "[12/12] c (0 left, 1:50 so far, ~0:10 to go)");
  EXPECT_EQ(bench::progress_text(3, 0, "d", 5.0), "[3] d");
}

TEST(Suite, ProgressCountsWhatTheFilterSelects) {
  const std::vector<std::string> names = {"train_step/net/cpu/batch:4", "train_step/resnet18/cpu/batch:4",
                                          "op/add/cpu/input:64x64x32x32/dtype:fp32"};
  EXPECT_EQ(bench::filter_names(names, ""), names);
  EXPECT_EQ(bench::filter_names(names, "all"), names);
  EXPECT_EQ(bench::filter_names(names, "resnet|op/"),
            (std::vector<std::string>{"train_step/resnet18/cpu/batch:4", "op/add/cpu/input:64x64x32x32/dtype:fp32"}));
  EXPECT_EQ(bench::filter_names(names, "-^op/"),
            (std::vector<std::string>{"train_step/net/cpu/batch:4", "train_step/resnet18/cpu/batch:4"}));
}

TEST(Suite, TheStopRuleIsTheDevicesWithTheFlagsGivenAndTheBoundIsSaidBeforeTheRun) {
  bench::StopFlags flags;
  const torch::Device cpu(torch::kCPU), gpu(torch::kCUDA, 0);
  EXPECT_DOUBLE_EQ(bench::stop_rule(flags, cpu).max_noise_pct, 1.0);
  EXPECT_DOUBLE_EQ(bench::stop_rule(flags, gpu).max_noise_pct, 0.5);
  flags.max_noise_pct = 2.0;
  flags.timeout_s = 3.0;
  const auto given = bench::stop_rule(flags, gpu);
  EXPECT_DOUBLE_EQ(given.max_noise_pct, 2.0);
  EXPECT_DOUBLE_EQ(given.timeout_s, 3.0);
  EXPECT_DOUBLE_EQ(given.min_time_s, 0.25) << "what is not given stays the device's";
  flags.min_samples = 1;
  EXPECT_THROW_WITH(bench::stop_rule(flags, cpu), InputError, "--min-samples");
  // 17 benchmarks x (3 repetitions x 5 s + one warm-up of 0.2 s) = 258.4 s: 4:19 at most.
  EXPECT_EQ(bench::sampling_bound_text(17, 3, measure::default_stop_rule(cpu).timeout_s),
            "at most 4:19 of sampling (17 benchmark(s) x 3 repetition(s), each stopping once its noise is under its "
            "target, or at 5 s; most stop well before; where one call takes over 2.5 s, longer: a repetition takes "
            "at least 2 samples)");
  EXPECT_NE(bench::sampling_bound_text(700, 5, measure::default_stop_rule(cpu).timeout_s).find("at most 4:54:00 "),
            std::string::npos);
}

TEST(Suite, UnknownSuiteIsRejected) {
  EXPECT_THROW_WITH(bench::check_suites({"train", "ops"}), InputError, "unknown suite 'ops' (known: train, data, op)");
}

namespace {
// Says in `log` when it is made and when dropped.
struct Logged {
  Logged(std::vector<std::string>& log, std::string name) : log(log), name(std::move(name)) {
    log.push_back("make " + this->name);
  }
  ~Logged() { log.push_back("drop " + name); }
  std::vector<std::string>& log;
  std::string name;
};

class Silent : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>&) override {}
};
}  // namespace

TEST(Suite, ABenchmarksStateIsKeptForItsNextRepetitionAndDroppedBeforeAnothersIsMade) {
  std::vector<std::string> log;
  std::vector<bool> kept;
  const auto repetition = [&](const std::string& name) -> Logged& {
    auto [state, was_kept] =
        bench::keep_between_repetitions<Logged>(name, [&] { return std::make_shared<Logged>(log, name); });
    kept.push_back(was_kept);
    return state;
  };
  Logged& first = repetition("a");
  EXPECT_EQ(&repetition("a"), &first);  // its second repetition starts where the first left off
  repetition("b");                      // the next benchmark: a's memory goes before b's is taken
  repetition("a");                      // interleaved repetitions: each made anew
  EXPECT_EQ(log, (std::vector<std::string>{"make a", "drop a", "make b", "drop b", "make a"}));
  EXPECT_EQ(kept, (std::vector<bool>{false, true, false, false}));
  bench::kept_state() = bench::KeptState{};
  EXPECT_EQ(log.back(), "drop a");
}

TEST(Suite, AFailedRepetitionDropsTheKeptStateSoTheNextOneStartsAfresh) {
  std::vector<std::string> log;
  std::vector<bool> kept;
  int repetition = 0;
  const std::string name = "keep_test/fails_in_its_second_repetition";
  benchmark::RegisterBenchmark(name.c_str(),
                               [&](benchmark::State& state) {
                                 bench::run_guarded(state, name, [&] {
                                   kept.push_back(bench::keep_between_repetitions<Logged>(name, [&] {
                                                    return std::make_shared<Logged>(log, "x");
                                                  }).second);
                                   for (auto _ : state) state.SetIterationTime(1e-3);
                                   if (++repetition == 2) throw std::runtime_error("broken");
                                 });
                               })
      ->UseManualTime()
      ->Iterations(1)
      ->Repetitions(3);
  Silent silent;
  benchmark::RunSpecifiedBenchmarks(&silent, "keep_test/");
  EXPECT_EQ(kept, (std::vector<bool>{false, true, false}));
  EXPECT_EQ(log, (std::vector<std::string>{"make x", "drop x", "make x"}));
  bench::kept_state() = bench::KeptState{};
}

// The results file: a complete JSON document after every benchmark, saying whether the run is complete.
namespace {
benchmark::BenchmarkReporter::Run fake_run(const std::string& name, double ms) {
  benchmark::BenchmarkReporter::Run run;
  run.run_name.function_name = name;
  run.iterations = 10;
  run.real_accumulated_time = ms * 10 / 1e3;
  run.cpu_accumulated_time = ms * 10 / 1e3;
  run.time_unit = benchmark::kMillisecond;
  // Google Benchmark 1.7's Run leaves these uninitialised; its runner always sets them.
  run.threads = 1;
  run.repetition_index = 0;
  run.repetitions = 1;
  return run;
}

nlohmann::json parse_file(const std::string& path) { return nlohmann::json::parse(io::read_text_file(path)); }
}  // namespace

TEST(ResultsFile, EveryWriteIsACompleteDocumentWithItsStatus) {
  const TempDir dir;
  const std::string path = dir.file("run.json");
  bench::ResultsFile file(path, bench::ResultsFile::Format::kJson, 3);
  file.set_context(benchmark::BenchmarkReporter::Context());
  file.finish("");  // nothing finished: no file at all
  EXPECT_FALSE(std::filesystem::exists(path));
  file.add({fake_run("bm/a", 1.0)});
  auto doc = parse_file(path);
  EXPECT_EQ(doc["context"]["torchprobe_run"], "partial: still running, or killed, after 1 of 3 benchmarks");
  ASSERT_EQ(doc["benchmarks"].size(), 1u);
  EXPECT_EQ(doc["benchmarks"][0]["name"], "bm/a");
  file.add({fake_run("bm/b", 2.0)});
  doc = parse_file(path);
  ASSERT_EQ(doc["benchmarks"].size(), 2u);
  EXPECT_EQ(doc["benchmarks"][1]["name"], "bm/b");
  file.finish("interrupted by SIGINT");
  EXPECT_EQ(parse_file(path)["context"]["torchprobe_run"], "partial: interrupted by SIGINT after 2 of 3 benchmarks");
  file.add_json_entries(bench::failure_entry("bm/c", "the benchmark's process (--isolate) was killed by SIGSEGV"), 1);
  file.finish("");
  doc = parse_file(path);
  EXPECT_EQ(doc["context"]["torchprobe_run"], "complete (3 of 3 benchmarks)");
  ASSERT_EQ(doc["benchmarks"].size(), 3u);
  EXPECT_EQ(doc["benchmarks"][2]["error_occurred"], true);
  // The report's loader reads it, failure included.
  const auto results = report::load_results({path});
  ASSERT_EQ(results.results.size(), 3u);
  EXPECT_TRUE(results.results[2].failed());
  EXPECT_FALSE(results.contexts[0].partial());
}

TEST(ResultsFile, CsvAndConsoleFilesGrowByWholeRows) {
  const TempDir dir;
  bench::ResultsFile csv(dir.file("run.csv"), bench::ResultsFile::Format::kCsv, 2);
  csv.set_context(benchmark::BenchmarkReporter::Context());
  csv.add({fake_run("bm/a", 1.0)});
  csv.add({fake_run("bm/b", 2.0)});
  const std::string text = io::read_text_file(dir.file("run.csv"));
  EXPECT_NE(text.find("name,iterations,real_time"), std::string::npos) << text;
  EXPECT_NE(text.find("\"bm/b\",10,"), std::string::npos) << text;
  EXPECT_THROW_WITH(bench::ResultsFile::parse_format("xml"), InputError, "expected json, csv or console");
}

TEST(Isolate, ExactFilterSelectsOneBenchmarkWhateverItsSuffixes) {
  const std::regex filter(bench::exact_filter("train_step/net/cpu/batch:4/dtype:fp32/layout:nchw"), std::regex::extended);
  EXPECT_TRUE(std::regex_search("train_step/net/cpu/batch:4/dtype:fp32/layout:nchw/manual_time", filter));
  EXPECT_TRUE(std::regex_search("train_step/net/cpu/batch:4/dtype:fp32/layout:nchw/repeats:3/manual_time", filter));
  EXPECT_FALSE(std::regex_search("train_step/net/cpu/batch:48/dtype:fp32/layout:nchw/manual_time", filter));
  EXPECT_FALSE(std::regex_search("train_step/net/cpu/batch:4/dtype:fp32/layout:nchw/cudnn:on/manual_time", filter));
  const std::regex dots(bench::exact_filter("op/a.b(c)"), std::regex::extended);
  EXPECT_TRUE(std::regex_search("op/a.b(c)/real_time", dots));
  EXPECT_FALSE(std::regex_search("op/aXb(c)/real_time", dots));
}

TEST(Isolate, EntriesComeOnlyFromACompleteDocument) {
  const std::string doc = "{\n  \"context\": {},\n  \"benchmarks\": [\n    {\"name\": \"a\"},\n    {\"name\": \"b\"}\n  ]\n}\n";
  EXPECT_EQ(nlohmann::json::parse("[" + report::benchmark_entries(doc) + "]"),
            nlohmann::json::parse(R"([{"name": "a"}, {"name": "b"}])"));
  EXPECT_EQ(report::benchmark_entries(doc.substr(0, doc.size() - 4)), "");
  EXPECT_EQ(report::benchmark_entries("{\n  \"context\": {},\n  \"benchmarks\": [\n\n  ]\n}\n"), "");
  EXPECT_EQ(report::benchmark_entries("[1, 2]"), "");
  const auto entry = nlohmann::json::parse(bench::failure_entry("x/\"y\"", "killed by SIGSEGV"));
  EXPECT_EQ(entry["name"], "x/\"y\"");
  EXPECT_EQ(entry["error_occurred"], true);
  EXPECT_EQ(entry["error_message"], "killed by SIGSEGV");
}

// --isolate counts a failure by what each child did: results with an error and exit 1 (a benchmark that threw), no
// results and a signal (a crash); a child that succeeded is not one. The run's exit code is that count's (runner.cpp).
TEST(Isolate, EveryChildThatFailedIsCountedAndRecorded) {
  const TempDir dir;
  const std::string child = dir.file("child.sh");
  io::write_text_file(child, R"(#!/bin/sh
for a in "$@"; do case "$a" in --benchmark_out=*) out="${a#--benchmark_out=}";; esac; done
case "$*" in
  *filter=^ok*) rc=0; entry='{"name": "ok", "iterations": 1}' ;;
  *filter=^threw*) rc=1; entry='{"name": "threw", "iterations": 0, "error_occurred": true, "error_message": "boom"}' ;;
  *) kill -SEGV $$ ;;
esac
printf '{\n  "context": {},\n  "benchmarks": [\n    %s\n  ]\n}\n' "$entry" > "$out"
exit $rc
)");
  std::filesystem::permissions(child, std::filesystem::perms::owner_all);
  bench::ResultsFile file(dir.file("run.json"), bench::ResultsFile::Format::kJson, 3);
  file.set_context(benchmark::BenchmarkReporter::Context());
  bench::IsolateOptions options;
  options.program = child;
  options.pass_stdout = false;
  const bench::IsolatedRun run = bench::run_isolated({"ok", "threw", "crashed"}, options, file);
  EXPECT_EQ(run.finished, 3u);
  EXPECT_EQ(run.failed, 2) << "the benchmark that threw and the one that crashed";
  EXPECT_FALSE(run.stopped);
  file.finish("");
  const auto doc = parse_file(dir.file("run.json"));
  ASSERT_EQ(doc["benchmarks"].size(), 3u) << doc.dump();
  EXPECT_EQ(doc["benchmarks"][0]["name"], "ok");
  EXPECT_EQ(doc["benchmarks"][1]["error_message"], "boom");
  EXPECT_EQ(doc["benchmarks"][2]["name"], "crashed");
  EXPECT_EQ(doc["benchmarks"][2]["error_message"].get<std::string>().rfind(
                "the benchmark's process (--isolate) was killed by SIGSEGV", 0),
            0u)
      << doc["benchmarks"][2];
}

// The console shows the headline counters, and a ms benchmark under 1 ms in microseconds; the file keeps it all.
TEST(ResultsFile, TheDisplayShowsHeadlineCountersAndMicrosecondsUnder1Ms) {
  using Run = benchmark::BenchmarkReporter::Run;
  const auto run_of = [](double seconds_per_iteration, Run::RunType type) {
    Run run;
    run.run_type = type;
    run.time_unit = benchmark::kMillisecond;
    run.iterations = 1000;
    run.real_accumulated_time = seconds_per_iteration * 1000;
    run.counters = {{"images_per_s", benchmark::Counter(1.0)}, {"roof_gemm_gflop_per_s", benchmark::Counter(2.0)}};
    return run;
  };
  // 3 repetitions of 1 us, 0.999 ms and 2 ms: the median is under 1 ms, so all of them and their median show in us.
  std::vector<Run> runs = {run_of(1e-6, Run::RT_Iteration), run_of(0.999e-3, Run::RT_Iteration),
                           run_of(2e-3, Run::RT_Iteration), run_of(0.999e-3, Run::RT_Aggregate)};
  const auto shown = bench::for_display(runs, {"images_per_s"});
  ASSERT_EQ(shown.size(), 4u);
  for (const Run& run : shown) {
    EXPECT_EQ(run.time_unit, benchmark::kMicrosecond);
    EXPECT_EQ(run.counters.size(), 1u);
    EXPECT_EQ(run.counters.count("images_per_s"), 1u);
  }
  EXPECT_DOUBLE_EQ(shown[0].GetAdjustedRealTime(), 1.0);
  EXPECT_EQ(runs[0].counters.size(), 2u);  // the caller's runs (the file's) are untouched
  // A median of exactly 1 ms stays in ms; no counter filter keeps every counter.
  const auto at_1ms = bench::for_display({run_of(1e-3, Run::RT_Iteration)}, {});
  EXPECT_EQ(at_1ms[0].time_unit, benchmark::kMillisecond);
  EXPECT_EQ(at_1ms[0].counters.size(), 2u);
  // A benchmark in another unit is left in it.
  Run ns = run_of(1e-9, Run::RT_Iteration);
  ns.time_unit = benchmark::kNanosecond;
  EXPECT_EQ(bench::for_display({ns}, {})[0].time_unit, benchmark::kNanosecond);
}

namespace {
// `counters` are exactly `want`: each name once, none missing or extra, each value to the last few bits.
void expect_counters(const std::vector<std::pair<std::string, double>>& counters,
                     const std::map<std::string, double>& want) {
  const std::map<std::string, double> got(counters.begin(), counters.end());
  EXPECT_EQ(got.size(), counters.size()) << "each counter once";
  for (const auto& [name, value] : want) {
    if (!got.count(name)) {
      ADD_FAILURE() << "missing " << name;
    } else {
      EXPECT_DOUBLE_EQ(got.at(name), value) << name;
    }
  }
  for (const auto& [name, value] : got) EXPECT_TRUE(want.count(name)) << "unexpected " << name << " = " << value;
}
}  // namespace

// A training repetition's figures, each its formula of the mean step time (the numbers users compare with PyTorch's).
TEST(TrainFigures, EveryCounterIsItsFormulaOfTheMeanStepTime) {
  // 250 ms per step of 64 images, 1 GFLOP forward per image, a 1000 GFLOP/s roof (its GEMM's; the convolution's
  // 800), 3.5 MiB peak memory.
  ops::Peak peak;
  peak.gflop_per_s = 1000.0;
  peak.gemm_gflop_per_s = 1000.0;
  peak.conv_gflop_per_s = 800.0;
  const auto counters = bench::train_step_counters(250.0, 64, 1e9, &peak, 3 * 1024 * 1024 + 512 * 1024);
  const std::map<std::string, double> want = {
      {"images_per_s", 256.0},  // 64 / 0.25 s
      {"ms_per_step", 250.0},
      {"epoch_s", 0.25 * 782},          // ceil(50000 / 64) = 782 steps
      {"model_gflop_per_step", 192.0},  // 3 x 1 GFLOP x 64
      {"model_tflop_per_s", 0.768},     // 192 GFLOP / 0.25 s
      {"peak_mem_mib", 3.5},
      {"peak_tflop_per_s", 1.0},
      {"mfu_pct", 76.8},  // 768 GFLOP/s of 1000
      {"roof_gemm_gflop_per_s", 1000.0},
      {"roof_conv_gflop_per_s", 800.0},
  };
  expect_counters(counters, want);
  // The epoch's steps at the boundaries: a batch that divides 50 000, one that does not, one as large.
  const auto epoch_s = [](std::int64_t batch) {
    for (const auto& [name, value] : bench::train_step_counters(1000.0, batch, 1.0, nullptr, 0)) {
      if (name == "epoch_s") return value;
    }
    return -1.0;
  };
  EXPECT_DOUBLE_EQ(epoch_s(50000), 1.0);
  EXPECT_DOUBLE_EQ(epoch_s(25000), 2.0);
  EXPECT_DOUBLE_EQ(epoch_s(49999), 2.0);
  EXPECT_DOUBLE_EQ(epoch_s(1), 50000.0);
  // No roofs for the precision: none of their counters. A compute roof of 0 or NaN: its parts, but no MFU and no roof
  // figure, never an infinite one.
  for (const auto& [name, value] : bench::train_step_counters(250.0, 64, 1e9, nullptr, 0)) {
    EXPECT_EQ(name.find("roof"), std::string::npos) << name;
    EXPECT_NE(name, "mfu_pct");
    EXPECT_NE(name, "peak_tflop_per_s");
  }
  for (const double roof : {0.0, std::nan("")}) {
    peak.gflop_per_s = roof;
    for (const auto& [name, value] : bench::train_step_counters(250.0, 64, 1e9, &peak, 0)) {
      EXPECT_NE(name, "mfu_pct") << roof;
      EXPECT_NE(name, "peak_tflop_per_s") << roof;
      EXPECT_TRUE(std::isfinite(value)) << name;
    }
  }
}

// The phase split's pass: the first step always, then steps while the next would end within the budget, at most
// kMaxPhaseSteps.
TEST(TrainFigures, ThePhasePassStopsAtItsStepCountOrItsBudget) {
  EXPECT_TRUE(bench::another_phase_step(0, 100.0, 100.0)) << "the first step whatever it costs";
  EXPECT_TRUE(bench::another_phase_step(1, 0.25, 0.25));
  EXPECT_TRUE(bench::another_phase_step(4, 0.5, 0.5)) << "ending exactly at the budget";
  EXPECT_TRUE(bench::another_phase_step(4, 0.0, 1.0)) << "a step as long as the budget, on time";
  EXPECT_FALSE(bench::another_phase_step(4, 0.0, std::nextafter(1.0, 2.0))) << "ending just past it";
  EXPECT_FALSE(bench::another_phase_step(1, 0.9, 0.2));
  EXPECT_FALSE(bench::another_phase_step(bench::kMaxPhaseSteps, 0.0, 0.0));
  EXPECT_TRUE(bench::another_phase_step(bench::kMaxPhaseSteps - 1, 0.0, 0.0));
  EXPECT_DOUBLE_EQ(bench::kPhaseBudgetSeconds, 1.0);
}

// An op's rotating input sets: what --op-input-sets asks, else twice the last-level cache's worth, within bounds.
TEST(OpInputs, SetsFillTwiceTheCacheWithinTheirBounds) {
  constexpr std::int64_t kMiB = 1024 * 1024, kGiB = 1024 * kMiB;
  EXPECT_EQ(bench::op_input_set_count(3, 32 * kMiB, 1 * kMiB), 3) << "asked for: as asked";
  EXPECT_EQ(bench::op_input_set_count(0, 32 * kMiB, 32 * kMiB), 2) << "exactly twice the cache";
  EXPECT_EQ(bench::op_input_set_count(0, 32 * kMiB, 3 * kMiB), 22) << "ceil(64 / 3)";
  EXPECT_EQ(bench::op_input_set_count(0, 32 * kMiB, 100 * kMiB), 1) << "one set larger than twice the cache";
  EXPECT_EQ(bench::op_input_set_count(0, 32 * kMiB, 1 * kMiB), 64);
  EXPECT_EQ(bench::op_input_set_count(0, 40 * kMiB, 1 * kMiB), bench::kMaxInputSets) << "80 wanted";
  EXPECT_EQ(bench::op_input_set_count(0, 4 * kGiB, 1 * kGiB), 2) << "8 wanted, 2 GiB in all";
  EXPECT_EQ(bench::op_input_set_count(0, 4 * kGiB, 3 * kGiB), 1) << "one set above the total bound: still one";
  EXPECT_EQ(bench::op_input_set_count(0, 32 * kMiB, 0), bench::kMaxInputSets) << "an empty set";
}

// An op's counters, each its formula of the mean time per call (the console's rates; reports recompute from the
// median): an op below the ridge, a copy (bytes only), an op judged against the compute roof alone.
TEST(OpFigures, EveryCounterIsItsFormulaOfTheMeanTimePerCall) {
  ops::Peak peak;
  peak.gflop_per_s = 1000.0;
  peak.gemm_gflop_per_s = 1000.0;
  peak.conv_gflop_per_s = 800.0;
  peak.gb_per_s = 400.0;
  peak.compute_source = "gemm";
  // 2 GFLOP and 1 GB per call in 4 ms: 500 GFLOP/s, 250 GB/s, 2 FLOP/byte, below the ridge (1000 / 400 = 2.5): bound
  // by memory, 500 of the 800 GFLOP/s the memory roof allows at 2 FLOP/byte.
  std::map<std::string, double> want = {{"flops", 2e9},
                                        {"bytes", 1e9},
                                        {"gb_per_s", 250.0},
                                        {"gflop_per_s", 500.0},
                                        {"flop_per_byte", 2.0},
                                        {"peak_gflop_per_s", 1000.0},
                                        {"roof_gemm_gflop_per_s", 1000.0},
                                        {"roof_conv_gflop_per_s", 800.0},
                                        {"peak_gb_per_s", 400.0},
                                        {"pct_of_roof", 62.5}};
  expect_counters(bench::op_counters(2e9, 1e9, /*bandwidth_roof=*/true, 4.0, peak), want);
  // No memory roof for this op: 500 of the 1000 GFLOP/s compute roof.
  want.erase("peak_gb_per_s");
  want["pct_of_roof"] = 50.0;
  expect_counters(bench::op_counters(2e9, 1e9, false, 4.0, peak), want);
  // A copy: bytes alone, against the memory roof: 250 of 400 GB/s.
  expect_counters(
      bench::op_counters(0.0, 1e9, true, 4.0, peak),
      {{"flops", 0.0}, {"bytes", 1e9}, {"gb_per_s", 250.0}, {"peak_gb_per_s", 400.0}, {"pct_of_roof", 62.5}});
}
