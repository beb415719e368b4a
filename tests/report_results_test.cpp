#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "report_test_util.h"
#include "test_util.h"
#include "torchprobe/input_error.h"
#include "torchprobe/io.h"
#include "torchprobe/report/printers.h"
#include "torchprobe/report/results.h"
#include "torchprobe/report/views.h"

using torchprobe::InputError;

TEST(ReportNames, CompletesTrainingNamesFromBeforeTheVariantAxes) {
  // Baselines recorded before the variant axes existed ran fp32, NCHW, no autotuning, no graph.
  report::Result cpu, gpu;
  report::parse_benchmark_name("train_step/net/cpu/batch:64/manual_time", cpu);
  EXPECT_EQ(cpu.name, "train_step/net/cpu/batch:64/dtype:fp32/layout:nchw");
  EXPECT_EQ(cpu.dtype, "fp32");
  report::parse_benchmark_name("train_step/net/cuda:0/batch:64", gpu);
  EXPECT_EQ(gpu.name, "train_step/net/cuda:0/batch:64/dtype:fp32/layout:nchw/cudnn:off/graph:off");
  EXPECT_EQ(report::train_variant(gpu, "/"), "") << "the baseline has no variant label";
  report::Result bf16;
  report::parse_benchmark_name("train_step/net/cuda:0/batch:64/dtype:bf16/layout:cl/cudnn:on/graph:off", bf16);
  EXPECT_EQ(report::train_variant(bf16, "/"), "cudnn:on/dtype:bf16/layout:cl");
}

TEST(ReportNames, SplitsSuiteSubjectDeviceAndParameters) {
  report::Result r;
  report::parse_benchmark_name(
      "train_step/resnet18/cuda:1/batch:256/dtype:bf16/layout:cl/cudnn:on/graph:off/manual_time", r);
  EXPECT_EQ(r.name, "train_step/resnet18/cuda:1/batch:256/dtype:bf16/layout:cl/cudnn:on/graph:off");
  EXPECT_EQ(r.suite, "train_step");
  EXPECT_EQ(r.subject, "resnet18");
  EXPECT_EQ(r.device, "cuda:1");
  EXPECT_EQ(r.batch, 256);
  EXPECT_EQ(r.dtype, "bf16");
  EXPECT_EQ(r.params.at("layout"), "cl");

  report::Result data;
  report::parse_benchmark_name("data/parse_cifar10/images:50000/real_time", data);
  EXPECT_EQ(data.suite, "data");
  EXPECT_EQ(data.subject, "parse_cifar10");
  EXPECT_EQ(data.device, "cpu");  // host-side work
  EXPECT_EQ(data.dtype, "");
}

TEST(ReportNames, EveryDeviceTheGrammarNamesIsTheResultsDevice) {
  // An Apple or Intel GPU's results read as the CPU's would land in its rows and become its baseline.
  for (const char* device :
       {"cpu", "mps", "cuda", "xpu", "cuda:0", "cuda:12", "cuda:123", "xpu:1", "xpu:999", "cuda:0,cuda:1"}) {
    report::Result r;
    report::parse_benchmark_name(std::string("train_step/net/") + device + "/batch:64", r);
    EXPECT_EQ(r.device, device);
    EXPECT_EQ(r.subject, "net") << device;
  }
  // Not devices: the name's device is then the CPU's, and the token is a subject or a parameter.
  for (const char* other :
       {"mpsx", "npu", "cuda:1234", "xpu:1000", "cuda:", "cuda:x", "cuda:1x", "cuda:0,tpu", "cuda:0,"}) {
    report::Result r;
    report::parse_benchmark_name(std::string("op/") + other + "/batch:64", r);
    EXPECT_EQ(r.device, "cpu") << other;
  }
}

TEST(ReportLoad, PerRepetitionRunsGiveMedianCvAndCounters) {
  const auto set = fixture();
  ASSERT_EQ(set.results.size(), 6u);  // aggregates folded into their benchmark
  const auto& cpu = find(set, "train_step/net/cpu/batch:64/dtype:fp32/layout:nchw");
  EXPECT_EQ(cpu.repetitions, 3);
  EXPECT_DOUBLE_EQ(cpu.median_ms, 11.0);
  EXPECT_NEAR(cpu.cv_pct, 100.0 * 1.0 / 11.0, 1e-9);  // stddev 1 over mean 11
  EXPECT_DOUBLE_EQ(cpu.counter("images_per_s"), 5818.18);
  EXPECT_DOUBLE_EQ(cpu.counter("forward_ms"), 3.0);
  EXPECT_EQ(cpu.device_name, "Fixture CPU");
  const auto& gpu = find(set, "train_step/net/cuda:0/batch:64/dtype:fp32/layout:nchw/cudnn:off/graph:off");
  EXPECT_EQ(gpu.device_name, "NVIDIA H100 80GB HBM3");
  const auto& oom = find(set, "train_step/resnet18/cuda:0/batch:256/dtype:fp32/layout:nchw/cudnn:off/graph:off");
  EXPECT_TRUE(oom.failed());
  EXPECT_EQ(oom.error, "CUDA out of memory. Tried to allocate 2.00 GiB");
  const auto& data = find(set, "data/parse_cifar10/images:50000");
  EXPECT_EQ(data.repetitions, 1);
  EXPECT_LT(data.cv_pct, 0.0);  // undefined for one repetition
  ASSERT_EQ(set.contexts.size(), 1u);
  EXPECT_EQ(set.contexts[0].host, "fixture-host");
  ASSERT_EQ(set.contexts[0].devices.size(), 2u);
  EXPECT_EQ(set.contexts[0].devices[1].id, "cuda:0");
}

TEST(ReportLoad, AggregatesOnlyFilesUseTheMedianAggregate) {
  const std::string json = R"({"benchmarks": [
    {"name": "op/add/cpu/n:1024_mean", "run_name": "op/add/cpu/n:1024", "run_type": "aggregate", "aggregate_name": "mean",
     "repetitions": 5, "real_time": 2000.0, "time_unit": "us"},
    {"name": "op/add/cpu/n:1024_median", "run_name": "op/add/cpu/n:1024", "run_type": "aggregate", "aggregate_name": "median",
     "repetitions": 5, "real_time": 1500.0, "time_unit": "us", "flops": 1024},
    {"name": "op/add/cpu/n:1024_cv", "run_name": "op/add/cpu/n:1024", "run_type": "aggregate", "aggregate_name": "cv",
     "aggregate_unit": "percentage", "repetitions": 5, "real_time": 0.04, "time_unit": "us"}]})";
  const auto set = report::parse_results(json, "agg.json");
  ASSERT_EQ(set.results.size(), 1u);
  EXPECT_DOUBLE_EQ(set.results[0].median_ms, 1.5);
  EXPECT_DOUBLE_EQ(set.results[0].cv_pct, 4.0);
  EXPECT_EQ(set.results[0].repetitions, 5);
  EXPECT_DOUBLE_EQ(set.results[0].counter("flops"), 1024.0);
  EXPECT_TRUE(set.results[0].samples_ms.empty());
}

TEST(ReportLoad, AggregatesOnlyFilesCountOnlyTheRepetitionsThatRan) {
  // Google Benchmark's aggregates count every repetition asked for; the failed ones come as their own entries.
  // Two of five failed: the statistics rest on three (compare's reps column, the Welch test, history's store).
  const std::string json = R"({"benchmarks": [
    {"name": "op/mm/cpu/n:64", "run_name": "op/mm/cpu/n:64", "run_type": "iteration", "repetitions": 5,
     "repetition_index": 1, "error_occurred": true, "error_message": "out of memory"},
    {"name": "op/mm/cpu/n:64", "run_name": "op/mm/cpu/n:64", "run_type": "iteration", "repetitions": 5,
     "repetition_index": 3, "error_occurred": true, "error_message": "out of memory"},
    {"name": "op/mm/cpu/n:64_median", "run_name": "op/mm/cpu/n:64", "run_type": "aggregate", "aggregate_name": "median",
     "repetitions": 5, "real_time": 3.0, "time_unit": "ms"},
    {"name": "op/mm/cpu/n:64_stddev", "run_name": "op/mm/cpu/n:64", "run_type": "aggregate", "aggregate_name": "stddev",
     "repetitions": 5, "real_time": 0.5, "time_unit": "ms"}]})";
  const auto set = report::parse_results(json, "agg.json");
  ASSERT_EQ(set.results.size(), 1u);
  const report::Result& r = set.results[0];
  EXPECT_TRUE(r.aggregates_only);
  EXPECT_EQ(r.repetitions, 3);
  EXPECT_EQ(r.failed_repetitions, 2);
  EXPECT_EQ(r.failed_reason, "out of memory");
  EXPECT_DOUBLE_EQ(r.median_ms, 3.0);
  EXPECT_DOUBLE_EQ(r.stddev_ms, 0.5);
  EXPECT_EQ(r.error, "");
}

TEST(ReportLoad, NonFiniteValuesFromGoogleBenchmarkAreTolerated) {
  const auto set = report::parse_results(
      R"({"benchmarks": [{"name": "x/cpu", "run_type": "iteration", "real_time": 1.0, "time_unit": "ms",
          "a": NaN, "b": -nan, "c": inf, "label": "NaN inside a string stays"}]})",
      "nan.json");
  ASSERT_EQ(set.results.size(), 1u);
  EXPECT_FALSE(set.results[0].has("a"));
  EXPECT_FALSE(set.results[0].has("c"));
  // Each spelling of an infinity, either sign (a counter that is the log of 0).
  const auto signs = report::parse_results(
      R"({"benchmarks": [{"name": "x/cpu", "run_type": "iteration", "real_time": 1.0, "time_unit": "ms",
          "a": -inf, "b": Infinity, "c": -Infinity, "d": 2.5}]})",
      "inf.json");
  ASSERT_EQ(signs.results.size(), 1u);
  for (const char* name : {"a", "b", "c"}) EXPECT_FALSE(signs.results[0].has(name)) << name;
  EXPECT_DOUBLE_EQ(signs.results[0].counter("d"), 2.5);
}

// Google Benchmark's SkipWithMessage writes "skipped": true, the sibling of "error_occurred": not a 0 ms sample.
TEST(ReportLoad, ASkippedBenchmarkIsAFailureWithItsMessage) {
  const auto set = report::parse_results(
      R"({"benchmarks": [{"name": "BM_Multi", "run_type": "iteration", "skipped": true, "skip_message": "needs 2 GPUs",
          "real_time": 0, "time_unit": "ms"},
          {"name": "BM_Ran", "run_type": "iteration", "real_time": 3.0, "time_unit": "ms"}]})",
      "skip.json");
  ASSERT_EQ(set.results.size(), 2u);
  EXPECT_TRUE(set.results[0].failed());
  EXPECT_EQ(set.results[0].error, "needs 2 GPUs");
  EXPECT_TRUE(set.results[0].samples_ms.empty());
  EXPECT_FALSE(set.results[1].failed());
  EXPECT_DOUBLE_EQ(set.results[1].median_ms, 3.0);
}

TEST(ReportLoad, BadInputNamesTheFileAndTheProblem) {
  EXPECT_THROW_WITH(report::load_results({kFixtures + "/malformed.json"}), InputError,
                    "malformed.json: not valid JSON");
  EXPECT_THROW_WITH(report::load_results({"/nonexistent/r.json"}), InputError, "/nonexistent/r.json: cannot open");
  EXPECT_THROW_WITH(report::parse_results(R"({"context": {}})", "f.json"), InputError,
                    "f.json: no \"benchmarks\" array");
  EXPECT_THROW_WITH(report::parse_results(R"({"benchmarks": [{"name": "a", "real_time": "fast"}]})", "g.json"),
                    InputError, "g.json: benchmarks[0] (a): no numeric \"real_time\"");
  EXPECT_THROW_WITH(report::parse_results(R"({"benchmarks": [{"real_time": 1}]})", "h.json"), InputError,
                    "h.json: benchmarks[0]: an entry without a \"name\" string");
  EXPECT_THROW_WITH(report::load_results({}), InputError, "no results files given");
  // Integers that do not fit an int (found by fuzz_results: a float one was converted with undefined behaviour).
  EXPECT_THROW_WITH(report::parse_results(R"({"context": {"num_cpus": 5.5e65}, "benchmarks": []})", "i.json"),
                    InputError, "i.json: context: \"num_cpus\" must be an integer, got 5.5e+65");
  EXPECT_THROW_WITH(report::parse_results(
                        R"({"benchmarks": [{"name": "a", "real_time": 1, "repetition_index": 4294967296}]})", "j.json"),
                    InputError, "\"repetition_index\" is out of range (4294967296)");
}

TEST(ReportLoad, TwoBenchmarksUnderOneNameAreAnErrorNotAMerge) {
  const std::string entry =
      R"({"name": "bm/x", "run_name": "bm/x", "run_type": "iteration", "repetition_index": 0, "real_time": 1, "time_unit": "ms"})";
  EXPECT_THROW_WITH(report::parse_results(R"({"benchmarks": [)" + entry + "," + entry + "]}", "dup.json"), InputError,
                    "dup.json: benchmarks[1] (bm/x): repetition 0 of 'bm/x' appears twice");
  // Repetitions 0 and 1 of one benchmark are one result.
  const std::string second =
      R"({"name": "bm/x", "run_name": "bm/x", "run_type": "iteration", "repetition_index": 1, "real_time": 3, "time_unit": "ms"})";
  const auto set = report::parse_results(R"({"benchmarks": [)" + entry + "," + second + "]}", "ok.json");
  ASSERT_EQ(set.results.size(), 1u);
  EXPECT_EQ(set.results[0].repetitions, 2);
}

// Names are user text of any length: a 60 KB one (a generated parameter list) loads and every printer takes it.
TEST(ReportLoad, ASixtyKilobyteBenchmarkNameLoadsAndPrints) {
  std::string name = "op/add/cpu/n:1024/";
  while (name.size() < 60 * 1024) name += "shape:2x64x32x32_";
  const std::string json = R"({"benchmarks": [{"name": ")" + name +
                           R"(", "run_type": "iteration", "iterations": 10, "real_time": 2.0, "time_unit": "ms"}]})";
  const auto set = report::parse_results(json, "long.json");
  ASSERT_EQ(set.results.size(), 1u);
  EXPECT_EQ(set.results[0].name, name);
  const auto charts = report::make_charts(set);
  EXPECT_NE(report::to_csv(set).find(name.substr(0, 1000)), std::string::npos);
  EXPECT_FALSE(report::to_markdown(set, charts, report::ReportOptions{}).empty());
  EXPECT_FALSE(report::to_console_summary(set, report::ReportOptions{}).empty());
  for (const auto& chart : charts) {
    std::string why;
    EXPECT_TRUE(well_formed_xml(chart.svg, why)) << chart.file << ": " << why;
  }
}

TEST(ReportLoad, APartialRunSaysSo) {
  const auto set = report::parse_results(
      R"({"context": {"torchprobe_run": "partial: interrupted by SIGTERM after 2 of 5 benchmarks"}, "benchmarks": []})",
      "p.json");
  EXPECT_TRUE(set.contexts[0].partial());
  EXPECT_EQ(set.partial_runs(), "p.json: interrupted by SIGTERM after 2 of 5 benchmarks");
  const auto done = report::parse_results(
      R"j({"context": {"torchprobe_run": "complete (5 of 5 benchmarks)"}, "benchmarks": []})j", "c.json");
  EXPECT_FALSE(done.contexts[0].partial());
  EXPECT_EQ(done.partial_runs(), "");
}

// Each partial file of a set is named, in the order given, with its reason (or none, for a bare "partial"); the
// complete files between them are not.
TEST(ReportLoad, EveryPartialFileIsNamedInOrder) {
  const std::string dir = ::testing::TempDir();
  const auto run = [&](const std::string& file, const std::string& status) {
    torchprobe::io::write_text_file(dir + "/" + file,
                                    R"({"context": {"torchprobe_run": ")" + status + R"("}, "benchmarks": []})");
    return dir + "/" + file;
  };
  const auto set = report::load_results({run("p1.json", "partial: interrupted by SIGINT after 1 of 3 benchmarks"),
                                         run("full.json", "complete (3 of 3 benchmarks)"), run("p2.json", "partial")});
  EXPECT_EQ(set.partial_runs(), dir + "/p1.json: interrupted by SIGINT after 1 of 3 benchmarks; " + dir + "/p2.json: ");
}

// Google Benchmark says "debug" when its own library was built so (Debian's is): the report says what that does
// and does not affect; a release library says nothing.
TEST(ReportWarnings, ADebugBuildOfGoogleBenchmarkIsSaidOncePerFile) {
  const auto lines_of = [](const std::string& build_type) {
    return report::warnings(
        report::parse_results(R"({"context": {"library_build_type": ")" + build_type + R"("}, "benchmarks": []})",
                              "x.json"),
        5.0);
  };
  const auto debug = lines_of("debug");
  ASSERT_EQ(debug.size(), 1u);
  EXPECT_EQ(debug[0],
            "x.json: the Google Benchmark library reports a Debug build (Debian's package does): its loop overhead is "
            "higher; torchprobe's own timers are unaffected");
  EXPECT_TRUE(lines_of("release").empty());
}

// The devices of one data_parallel process by their names: "2 x NAME" when alike, "A + B" when not, and no name
// when the inventory lacks one of them (never a neighbour's).
TEST(ReportLabels, ADataParallelProcessNamesEachOfItsDevices) {
  const auto name_of = [](const std::string& devices) {
    const std::string inventory =
        R"({\"cuda\": {\"devices\": [{\"device\": \"cuda:0\", \"name\": \"NVIDIA H100 80GB HBM3\"}, )"
        R"({\"device\": \"cuda:1\", \"name\": \"NVIDIA A100-SXM4-80GB\"}, )"
        R"({\"device\": \"cuda:2\", \"name\": \"NVIDIA H100 80GB HBM3\"}]}})";
    const auto set = report::parse_results(
        R"({"context": {"inventory": ")" + inventory + R"("}, "benchmarks": [{"name": "dist_train/net/)" + devices +
            R"(/batch:64", "run_type": "iteration", "iterations": 1, "real_time": 2.0, "time_unit": "ms"}]})",
        "d.json");
    return set.results.at(0).device_name;
  };
  EXPECT_EQ(name_of("cuda:0,cuda:1"), "NVIDIA H100 80GB HBM3 + NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(name_of("cuda:1,cuda:0"), "NVIDIA A100-SXM4-80GB + NVIDIA H100 80GB HBM3");
  EXPECT_EQ(name_of("cuda:0,cuda:2"), "2 x NVIDIA H100 80GB HBM3");
  EXPECT_EQ(name_of("cuda:0,cuda:1,cuda:2"), "NVIDIA H100 80GB HBM3 + NVIDIA A100-SXM4-80GB + NVIDIA H100 80GB HBM3");
  EXPECT_EQ(name_of("cuda:0,cuda:3"), "");
  EXPECT_EQ(name_of("cuda:3,cuda:0"), "");
  EXPECT_EQ(name_of("cuda:1"), "NVIDIA A100-SXM4-80GB");
}

TEST(ReportLabels, TwoMachinesWithOneHostNameAreToldApartByTheirPart) {
  const auto run = [](const std::string& gpu, const std::string& ms) {
    return R"({"context": {"host_name": "vm", "inventory": "{\"cuda\": {\"devices\": [{\"device\": \"cuda:0\", \"name\": \")" +
           gpu +
           R"(\"}]}}"}, "benchmarks": [{"name": "train_step/net/cuda:0/batch:64/manual_time", "run_type": "iteration",
           "iterations": 10, "real_time": )" +
           ms + R"(, "time_unit": "ms", "images_per_s": 1000.0}]})";
  };
  const std::string dir = ::testing::TempDir();
  torchprobe::io::write_text_file(dir + "/h100.json", run("NVIDIA H100 80GB HBM3", "2.0"));
  torchprobe::io::write_text_file(dir + "/h200.json", run("NVIDIA H200", "1.5"));
  const auto set = report::load_results({dir + "/h100.json", dir + "/h200.json"});
  ASSERT_EQ(set.results.size(), 2u);
  EXPECT_EQ(set.results[0].device_label, "cuda:0 (NVIDIA H100 80GB HBM3)");
  EXPECT_EQ(set.results[1].device_label, "cuda:0 (NVIDIA H200)");
  EXPECT_EQ(report::train_view(set).devices.size(), 2u);
}

// ---- Hostile results files (found by fuzz_results; the seeds are in tests/fuzz/corpus/results) ----

// A count of repetitions or a repetition's index is never negative in a results file: "repetitions": -2147483648
// made the repetitions left after failed ones overflow an int. 0 is the boundary: it loads; -1 is refused.
TEST(ReportLoad, NegativeRepetitionCountsAreRefused) {
  const auto aggregate = [](const std::string& repetitions) {
    return R"({"benchmarks": [{"name": "a", "run_type": "aggregate", "aggregate_name": "median", "real_time": 1,
               "repetitions": )" +
           repetitions + R"(}, {"name": "a", "error_occurred": true}]})";
  };
  EXPECT_THROW_WITH(report::parse_results(aggregate("-2147483648"), "r.json"), InputError,
                    "r.json: benchmarks[0] (a): \"repetitions\" must not be negative, got -2147483648");
  EXPECT_THROW_WITH(report::parse_results(aggregate("-1"), "r.json"), InputError,
                    "r.json: benchmarks[0] (a): \"repetitions\" must not be negative, got -1");
  const auto zero = report::parse_results(aggregate("0"), "r.json");
  ASSERT_EQ(zero.results.size(), 1u);
  EXPECT_EQ(zero.results[0].repetitions, 0);  // none left after the failed one
  EXPECT_EQ(zero.results[0].failed_repetitions, 1);
  const auto indexed = [](const std::string& index) {
    return R"({"benchmarks": [{"name": "b", "real_time": 1, "repetition_index": )" + index + "}]}";
  };
  EXPECT_THROW_WITH(report::parse_results(indexed("-1"), "i.json"), InputError,
                    "i.json: benchmarks[0] (b): \"repetition_index\" must not be negative, got -1");
  EXPECT_EQ(report::parse_results(indexed("0"), "i.json").results.size(), 1u);
  // The context's num_cpus is no count of ours: old Google Benchmarks write -1 when they cannot read it.
  EXPECT_EQ(report::parse_results(R"({"context": {"num_cpus": -1}, "benchmarks": []})", "c.json").contexts[0].num_cpus,
            -1);
}

// nlohmann's dump recurses once per level: 25 000 nested arrays in a context field overflowed the stack. JSON
// nested deeper than 128 levels is refused: the document, and the JSON it carries in the inventory and
// trust_warnings strings. 128 levels load; 129 do not.
TEST(ReportLoad, JsonNestedDeeperThan128LevelsIsRefused) {
  const auto nested = [](int levels) {
    return std::string(static_cast<size_t>(levels), '[') + std::string(static_cast<size_t>(levels), ']');
  };
  // The document's object and its context are two levels; host_name's arrays the rest.
  const auto host_nested = [&](int levels) {
    return R"({"benchmarks": [], "context": {"host_name": )" + nested(levels - 2) + "}}";
  };
  EXPECT_EQ(report::parse_results(host_nested(128), "d.json").contexts[0].host, nested(126));
  EXPECT_THROW_WITH(report::parse_results(host_nested(129), "d.json"), InputError,
                    "d.json: JSON nested more than 128 levels deep");
  EXPECT_THROW_WITH(report::parse_results(host_nested(25000), "d.json"), InputError,
                    "d.json: JSON nested more than 128 levels deep");
  // Brackets in a string are text.
  EXPECT_EQ(report::parse_results(R"({"benchmarks": [], "context": {"host_name": ")" + nested(200) + R"("}})", "s.json")
                .contexts[0]
                .host,
            nested(200));
  const auto in_context = [](const std::string& key, const std::string& json) {
    return R"({"benchmarks": [], "context": {")" + key + R"(": ")" + json + R"("}})";
  };
  EXPECT_NO_THROW(report::parse_results(in_context("inventory", nested(128)), "v.json"));
  EXPECT_THROW_WITH(report::parse_results(in_context("inventory", nested(129)), "v.json"), InputError,
                    "v.json: context.inventory: JSON nested more than 128 levels deep");
  EXPECT_EQ(
      report::parse_results(in_context("trust_warnings", nested(128)), "w.json").contexts[0].trust_warnings.size(), 1u);
  EXPECT_THROW_WITH(report::parse_results(in_context("trust_warnings", nested(129)), "w.json"), InputError,
                    "w.json: context.trust_warnings: JSON nested more than 128 levels deep");
}
