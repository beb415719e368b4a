#include <gtest/gtest.h>

#include <regex>
#include <stdexcept>
#include <string>
#include <vector>

#include "report_test_util.h"
#include "test_util.h"
#include "torchprobe/io.h"
#include "torchprobe/report/printers.h"
#include "torchprobe/report/results.h"
#include "torchprobe/report/views.h"

// Golden files: regenerate with `torchprobe report tests/fixtures/report/results.json --out DIR` and review the diff.
TEST(ReportGolden, CsvMatchesTheExpectedFile) {
  EXPECT_EQ(report::to_csv(fixture()), torchprobe::io::read_text_file(kFixtures + "/expected/results.csv"));
}

TEST(ReportGolden, MarkdownMatchesTheExpectedFile) {
  const auto set = fixture();
  std::string markdown = report::to_markdown(set, report::make_charts(set), report::ReportOptions{});
  markdown = std::regex_replace(markdown, std::regex(kFixtures + "/"), "");  // the expected file names "results.json"
  EXPECT_EQ(markdown, torchprobe::io::read_text_file(kFixtures + "/expected/report.md"));
}

// A run that cannot be trusted as it stands: host warnings from its context, a CPU step whose phases
// do not add up, an MFU and op figures above their roofs. Every one is said, and no figure above 100%
// appears without its label.
TEST(ReportGolden, TrustWarningsAndRoofLabels) {
  const auto set = report::load_results({kFixtures + "/trust.json"});
  const auto charts = report::make_charts(set);
  std::string markdown = report::to_markdown(set, charts, report::ReportOptions{});
  markdown = std::regex_replace(markdown, std::regex(kFixtures + "/"), "");
  EXPECT_EQ(markdown, torchprobe::io::read_text_file(kFixtures + "/expected/trust_report.md"));
  EXPECT_EQ(report::to_csv(set), torchprobe::io::read_text_file(kFixtures + "/expected/trust_results.csv"));
  // Any percentage above 100 in the report carries a label.
  const std::regex over_100(
      R"((1[0-9]{2}|[2-9][0-9]{2})\.[0-9]%( \((cache-resident|effective|at roof|roof measured low)\))?)");
  for (auto it = std::sregex_iterator(markdown.begin(), markdown.end(), over_100); it != std::sregex_iterator(); ++it) {
    EXPECT_TRUE((*it)[2].matched) << "unlabelled: " << it->str();
  }
  const auto lines = report::warnings(set, /*noise_cv_pct=*/5.0);
  ASSERT_EQ(lines.size(), 9u);
  // A theoretical roof far above what the run measured is named as suspect, once, and not used.
  EXPECT_EQ(count(markdown,
                  "the theoretical fp32 compute roof, 7050 GFLOP/s, is 7.05x the best GEMM or convolution "
                  "measured in this run (1000 GFLOP/s): suspect"),
            1u)
      << markdown;
  EXPECT_NE(lines[0].find("other processes were busy"), std::string::npos);
  EXPECT_NE(lines[2].find("phases add up to 2.74 ms"), std::string::npos) << lines[2];
  // A benchmark whose sampling the timeout stopped above its noise target (median over its repetitions).
  EXPECT_NE(
      lines[3].find("resnet18/cpu/batch:64/dtype:fp32/layout:nchw`: the timeout stopped its sampling with the noise "
                    "of its mean at 1.8% (target 1.0%, 2 samples per repetition)"),
      std::string::npos)
      << lines[3];
  EXPECT_NE(lines[4].find("MFU 131.5% (effective) is above the compute roof"), std::string::npos) << lines[4];
  // A GEMM above its roof did not do fewer FLOPs (its count is exact): the roof was measured low.
  EXPECT_NE(lines[8].find("op/matmul/cpu/n:512/dtype:fp32`: 107.4% (roof measured low) of the compute roof: a GEMM's "
                          "FLOP count is exact"),
            std::string::npos)
      << lines[8];
}

TEST(ReportFiles, WriteCreatesDirectoriesAndFailsWithThePath) {
  TempDir dir("torchprobe-report");
  const std::string path = dir.file("a/b/report.md");
  torchprobe::io::write_text_file(path, "hello\n");
  EXPECT_EQ(torchprobe::io::read_text_file(path), "hello\n");
  EXPECT_THROW_WITH(torchprobe::io::write_text_file(dir.file("a/b/report.md/x.csv"), "x"), std::runtime_error,
                    "report.md");
}

// Expected values from scipy.stats.mannwhitneyu(x, y) (scipy 1.17, default method).
TEST(ReportVariants, EachVariantAgainstItsBaselineWithEpochAndMfu) {
  const std::string json = R"({"context": {"host_name": "h", "date": "d"}, "benchmarks": [
    {"name": "train_step/net/cpu/batch:64/dtype:fp32/layout:nchw/manual_time", "run_type": "iteration",
     "iterations": 10, "real_time": 20.0, "time_unit": "ms", "images_per_s": 3200.0, "epoch_s": 15.6,
     "model_tflop_per_s": 0.0125, "mfu_pct": 1.24},
    {"name": "train_step/net/cpu/batch:64/dtype:bf16/layout:cl/manual_time", "run_type": "iteration",
     "iterations": 10, "real_time": 10.0, "time_unit": "ms", "images_per_s": 6400.0, "epoch_s": 7.8,
     "model_tflop_per_s": 0.025},
    {"name": "train_step/net/cuda:0/batch:4/dtype:fp32/layout:nchw/cudnn:off/graph:on/manual_time",
     "run_type": "iteration", "error_occurred": true, "error_message": "CUDA graphs: capture failed"}]})";
  const auto set = report::parse_results(json, "variants.json");
  const std::string md = report::to_markdown(set, {}, report::ReportOptions{});
  EXPECT_NE(md.find("### Variants"), std::string::npos) << md;
  EXPECT_NE(md.find("| net | cpu | 64 | baseline | 20.0 | 3 200 | 15.6 | 0.0125 | 1.2% | 1.00x |"), std::string::npos)
      << md;
  // bf16 has no measured CPU peak here: no MFU, but its speedup over the baseline.
  EXPECT_NE(md.find("| net | cpu | 64 | dtype:bf16 layout:cl | 10.0 | 6 400 | 7.80 | 0.0250 | - | 2.00x |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| net | cuda:0 | 4 | graph:on | failed |"), std::string::npos) << md;
}

TEST(ReportSummary, OneSentencePerDeviceAgainstTheCpu) {
  const auto set = fixture();  // net at batch 64: the CPU 5 818 images/s, the H100 64 000
  const std::string md = report::to_markdown(set, {}, report::ReportOptions{});
  EXPECT_NE(md.find("- cuda:0 (NVIDIA H100 80GB HBM3) is 11.0x cpu (Fixture CPU) on net at batch 64 (64 000 vs 5 818 "
                    "images/s).\n"),
            std::string::npos)
      << md;
  EXPECT_NE(
      report::to_console_summary(set, report::ReportOptions{}).find("cuda:0 (NVIDIA H100 80GB HBM3) is 11.0x cpu"),
      std::string::npos);
}

// The sentence compares at the largest batch both devices ran (a batch only one device ran, or a variant, is
// not that batch): here 64, not 4 (both ran it too) nor 256 (the GPU alone).
TEST(ReportSummary, TheSentenceTakesTheLargestBatchBothDevicesRan) {
  const auto entry = [](const std::string& device, int batch, double images_per_s, const std::string& variant = "") {
    return R"({"name": "train_step/net/)" + device + "/batch:" + std::to_string(batch) +
           (variant.empty() ? std::string("/dtype:fp32/layout:nchw") : variant) +
           (device == "cpu" ? "" : "/cudnn:off/graph:off") +
           R"(/manual_time", "run_type": "iteration", "real_time": 1, )" + R"("time_unit": "ms", "images_per_s": )" +
           std::to_string(images_per_s) + "}";
  };
  const std::string json = R"({"benchmarks": [)" + entry("cpu", 4, 1000) + "," + entry("cuda:0", 4, 2000) + "," +
                           entry("cpu", 64, 5000) + "," + entry("cuda:0", 64, 40000) + "," +
                           entry("cuda:0", 256, 90000) + "," + entry("cpu", 128, 6000, "/dtype:bf16/layout:cl") + "," +
                           entry("cuda:0", 128, 99000, "/dtype:bf16/layout:cl") + "]}";
  const auto set = report::parse_results(json, "batches.json");
  const std::string md = report::to_markdown(set, {}, report::ReportOptions{});
  EXPECT_NE(md.find("- cuda:0 is 8.00x cpu on net at batch 64 (40 000 vs 5 000 images/s).\n"), std::string::npos) << md;
  EXPECT_EQ(md.find("at batch 4 ("), std::string::npos) << md;
  EXPECT_EQ(md.find("at batch 256"), std::string::npos) << md;
}

// The sentences follow the models in first-seen order, then the devices in first-seen order, whatever order the
// results come in; each at the largest batch both devices ran.
TEST(ReportSummary, SentencesFollowTheModelsThenTheDevicesAsFirstSeen) {
  const auto entry = [](const std::string& model, const std::string& device, int batch, double images_per_s) {
    return R"({"name": "train_step/)" + model + "/" + device + "/batch:" + std::to_string(batch) +
           R"(", "real_time": 1, "images_per_s": )" + std::to_string(images_per_s) + "}";
  };
  const std::string json = R"({"benchmarks": [)" + entry("b", "cuda:1", 8, 800) + "," + entry("a", "cpu", 8, 100) +
                           "," + entry("a", "cuda:0", 8, 400) + "," + entry("b", "cpu", 8, 100) + "," +
                           entry("a", "cuda:1", 8, 200) + "," + entry("b", "cuda:0", 8, 300) + "," +
                           entry("b", "cpu", 16, 150) + "," + entry("b", "cuda:0", 16, 600) + "]}";
  const std::string md = report::to_markdown(report::parse_results(json, "order.json"), {}, report::ReportOptions{});
  EXPECT_NE(md.find("- cuda:1 is 8.00x cpu on b at batch 8 (800 vs 100 images/s).\n"
                    "- cuda:0 is 4.00x cpu on b at batch 16 (600 vs 150 images/s).\n"
                    "- cuda:1 is 2.00x cpu on a at batch 8 (200 vs 100 images/s).\n"
                    "- cuda:0 is 4.00x cpu on a at batch 8 (400 vs 100 images/s).\n"),
            std::string::npos)
      << md;
}

// ---- Hostile results files (found by fuzz_results; the seeds are in tests/fuzz/corpus/results) ----

namespace {

// Model m<i> on the CPU (100 images/s) and on cuda:<i> (100 x (i + 1)), for i = 1 .. devices - 1: `devices`
// devices in all, each GPU in one model's table.
report::ResultSet cpu_and_gpus(size_t devices) {
  std::string json = R"({"benchmarks": [)";
  for (size_t i = 1; i < devices; ++i) {
    const std::string model = "m" + std::to_string(i);
    json += std::string(i > 1 ? "," : "") + R"({"name": "train_step/)" + model +
            R"(/cpu/batch:1", "real_time": 1, "images_per_s": 100}, {"name": "train_step/)" + model +
            "/cuda:" + std::to_string(i) + R"(/batch:1", "real_time": 1, "images_per_s": )" +
            std::to_string(100 * (i + 1)) + "}";
  }
  return report::parse_results(json + "]}", "many.json");
}

}  // namespace

// A chart series and a table column per device stop at 64 devices (kMaxSideBySideDevices): 1 328 devices made the
// report grow as models x devices (minutes of work for a 64 KB file). 63 and 64 devices are set side by side; with
// 65 the charts say why they are not drawn and each model's table lists one device per line.
TEST(ReportLarge, MoreThan64DevicesAreListedNotSetSideBySide) {
  ASSERT_EQ(report::kMaxSideBySideDevices, 64u);
  for (const size_t devices : {size_t{63}, size_t{64}}) {
    const auto set = cpu_and_gpus(devices);
    const auto charts = report::make_charts(set);
    ASSERT_GE(charts.size(), 2u);
    expect_the_two_charts(charts);
    EXPECT_EQ(count(charts[0].svg, R"(class="bar")"), 2 * (devices - 1));
    EXPECT_EQ(count(charts[1].svg, R"(class="bar")"), devices - 1);
    const std::string md = report::to_markdown(set, charts, report::ReportOptions{});
    const std::string last = "cuda:" + std::to_string(devices - 1);
    EXPECT_NE(md.find("| batch | cpu images/s | cuda:1 images/s |"), std::string::npos) << devices;
    EXPECT_NE(md.find(" " + last + " vs cpu |\n"), std::string::npos) << devices;
  }
  const auto set = cpu_and_gpus(65);
  const auto charts = report::make_charts(set);
  expect_the_two_charts(charts);
  for (const auto& chart : charts) {
    EXPECT_EQ(count(chart.svg, R"(class="bar")"), 0u) << chart.file;
    EXPECT_NE(chart.svg.find("Not drawn: 65 devices, more than the 64 a chart shows"), std::string::npos) << chart.svg;
  }
  const std::string md = report::to_markdown(set, charts, report::ReportOptions{});
  EXPECT_EQ(md.find("images/s | cuda:"), std::string::npos) << "a column per device";
  EXPECT_NE(md.find("### m1\n\n| batch | device | images/s | vs cpu |\n|---:|---|---:|---:|\n| 1 | cpu | 100 | - |\n"
                    "| 1 | cuda:1 | 200 | 2.00x |\n"),
            std::string::npos)
      << md.substr(0, 4000);
  EXPECT_NE(md.find("### m64\n\n| batch | device | images/s | vs cpu |\n|---:|---|---:|---:|\n| 1 | cpu | 100 | - |\n"
                    "| 1 | cuda:64 | 6 500 | 65.0x |\n"),
            std::string::npos);
  // One sentence per model and GPU, in their order.
  EXPECT_EQ(count(md, "\n- cuda:"), 64u);
  EXPECT_NE(md.find("- cuda:1 is 2.00x cpu on m1 at batch 1 (200 vs 100 images/s).\n- cuda:2 is 3.00x cpu on m2"),
            std::string::npos);
  EXPECT_NE(md.find("- cuda:64 is 65.0x cpu on m64 at batch 1 (6 500 vs 100 images/s).\n"), std::string::npos);
  const std::string console = report::to_console_summary(set, report::ReportOptions{});
  EXPECT_NE(console.find("train_step/m64\nbatch  device   images/s  vs cpu\n"), std::string::npos)
      << console.substr(0, 4000);
}
