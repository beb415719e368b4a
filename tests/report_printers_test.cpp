#include <gtest/gtest.h>

#include <regex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "report_test_util.h"
#include "test_util.h"
#include "torchprobe/io.h"
#include "torchprobe/report/printers.h"
#include "torchprobe/report/results.h"
#include "torchprobe/report/table.h"
#include "torchprobe/report/traces.h"
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

// Without a CPU the first device seen is the reference, and the sentences compare the others against it.
TEST(ReportSummary, WithoutACpuTheFirstDeviceIsTheReference) {
  const std::string json = R"({"benchmarks": [
    {"name": "train_step/net/cuda:0/batch:64", "real_time": 1, "images_per_s": 1000},
    {"name": "train_step/net/cuda:1/batch:64", "real_time": 1, "images_per_s": 2000}]})";
  const std::string md = report::to_markdown(report::parse_results(json, "gpus.json"), {}, report::ReportOptions{});
  EXPECT_NE(md.find("## In short"), std::string::npos) << md;
  EXPECT_NE(md.find("- cuda:1 is 2.00x cuda:0 on net at batch 64 (2 000 vs 1 000 images/s).\n"), std::string::npos)
      << md;
  EXPECT_EQ(md.find("- cuda:0 is"), std::string::npos) << md;
}

// A failed variant keeps the table's shape when the datasheet's MFU column is shown: as many cells as the header.
TEST(ReportVariants, AFailedRowHasEveryColumnBesideTheDatasheet) {
  const std::string json =
      R"({"context": {"host_name": "h", "inventory": "{\"cuda\": {\"devices\": [{\"device\": \"cuda:0\", \"name\": \"NVIDIA H100 80GB HBM3\"}]}}"}, "benchmarks": [
    {"name": "train_step/resnet18/cuda:0/batch:512/dtype:fp32/layout:nchw/cudnn:off/graph:off/manual_time", "run_type": "iteration",
     "iterations": 10, "real_time": 20.0, "time_unit": "ms", "images_per_s": 25600.0, "model_tflop_per_s": 98.94, "mfu_pct": 25.0},
    {"name": "train_step/resnet18/cuda:0/batch:512/dtype:bf16/layout:cl/cudnn:on/graph:off/manual_time", "run_type": "iteration",
     "iterations": 10, "real_time": 6.67, "time_unit": "ms", "images_per_s": 76800.0, "model_tflop_per_s": 296.82, "mfu_pct": 37.1},
    {"name": "train_step/resnet18/cuda:0/batch:512/dtype:fp16/layout:cl/cudnn:on/graph:off/manual_time", "run_type": "iteration",
     "error_occurred": true, "error_message": "CUDA out of memory"}]})";
  const std::string md = report::to_markdown(report::parse_results(json, "v.json"), {}, report::ReportOptions{});
  const size_t header = md.find("| MFU | MFU (datasheet) | vs baseline |");
  ASSERT_NE(header, std::string::npos) << md;
  const size_t header_start = md.rfind('\n', header) + 1;
  const std::string header_line = md.substr(header_start, md.find('\n', header) - header_start);
  const std::string failed_row =
      "| resnet18 | cuda:0 | 512 | cudnn:on dtype:fp16 layout:cl | failed | - | - | - | - | - | - |";
  EXPECT_NE(md.find(failed_row + "\n"), std::string::npos) << md;
  EXPECT_EQ(count(header_line, "|"), count(failed_row, "|")) << header_line;
}

// Identical repetitions have a CV of 0: shown as "±0.0%" and written as 0 in the CSV; one repetition has none
// (no "±", an empty CSV cell), which is not the same thing.
TEST(ReportBoundaries, ACvOfZeroIsShownAndOneRepetitionHasNone) {
  const auto set_of = [](int repetitions) {
    std::string runs;
    for (int i = 0; i < repetitions; ++i) {
      runs += std::string(i ? "," : "") + R"({"name": "train_step/net/cpu/batch:64", "run_type": "iteration", )" +
              R"("repetitions": )" + std::to_string(repetitions) + R"(, "repetition_index": )" + std::to_string(i) +
              R"(, "real_time": 10.0, "time_unit": "ms", "images_per_s": 6400})";
    }
    return report::parse_results(R"({"benchmarks": [)" + runs + "]}", "r.json");
  };
  const auto cv_cell = [](const report::ResultSet& set) {
    const std::string csv = report::to_csv(set);
    const std::string row = csv.substr(csv.find('\n') + 1, csv.find('\n', csv.find('\n') + 1) - csv.find('\n') - 1);
    std::vector<std::string> fields;
    std::istringstream in(row);
    for (std::string f; std::getline(in, f, ',');) fields.push_back(f);
    return fields.size() > 9 ? fields[9]
                             : "?";  // suite,name,subject,device,device_name,batch,dtype,phase,median_ms,cv_pct
  };
  const auto three = set_of(3);
  ASSERT_EQ(three.results.size(), 1u);
  EXPECT_EQ(three.results[0].cv_pct, 0.0);
  EXPECT_NE(report::to_markdown(three, {}, report::ReportOptions{}).find(" 6 400 ±0.0% "), std::string::npos);
  EXPECT_EQ(cv_cell(three), "0");
  const auto one = set_of(1);
  const std::string md = report::to_markdown(one, {}, report::ReportOptions{});
  EXPECT_NE(md.find(" 6 400 |"), std::string::npos) << md;
  EXPECT_EQ(md.find(" 6 400 ±"), std::string::npos) << md;
  EXPECT_EQ(cv_cell(one), "");
}

// The Devices table lists each device once per label: a rerun on the same host adds no rows; two hosts are told
// apart by their names.
TEST(ReportDevices, EachDeviceIsListedOncePerHost) {
  const std::string dir = ::testing::TempDir();
  const std::string original = torchprobe::io::read_text_file(kFixtures + "/results.json");
  const auto with = [&](const std::string& file, const std::string& from, const std::string& to) {
    std::string text = original;
    const size_t at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos) text.replace(at, from.size(), to);
    torchprobe::io::write_text_file(dir + "/" + file, text);
    return dir + "/" + file;
  };
  const std::string rerun = with("rerun.json", "2026-11-22T08:00:00+00:00", "2026-11-23T08:00:00+00:00");
  const std::string md =
      report::to_markdown(report::load_results({kFixtures + "/results.json", rerun}), {}, report::ReportOptions{});
  const auto devices_table = [](const std::string& report_md) {
    const size_t at = report_md.find("## Devices");
    return at == std::string::npos ? std::string() : report_md.substr(at, report_md.find("\n## ", at + 1) - at);
  };
  const std::string table = devices_table(md);
  EXPECT_EQ(count(table, "| cpu | Fixture CPU |"), 1u) << md;
  EXPECT_EQ(count(table, "| cuda:0 | NVIDIA H100 80GB HBM3 |"), 1u) << md;
  const std::string other_host = with("other.json", "\"fixture-host\"", "\"host-b\"");
  const std::string two = devices_table(report::to_markdown(
      report::load_results({kFixtures + "/results.json", other_host}), {}, report::ReportOptions{}));
  EXPECT_EQ(count(two, "| cpu@fixture-host | Fixture CPU |"), 1u) << two;
  EXPECT_EQ(count(two, "| cpu@host-b | Fixture CPU |"), 1u) << two;
  EXPECT_EQ(count(two, "| cuda:0@host-b | NVIDIA H100 80GB HBM3 |"), 1u) << two;
}

// Console columns line up by characters, not bytes: "±" and "µ" are two bytes each.
TEST(ReportFormat, ConsoleColumnsAreAlignedByCharacter) {
  const report::Table t{{"a", "b"},
                        {false, true},
                        {{"x",
                          "\xC2\xB1"
                          "1"},
                         {"y", "22"}}};
  EXPECT_EQ(t.console(),
            "a   b\n-----\nx  \xC2\xB1"
            "1\ny  22\n");
  const report::Table left{{"time", "n"}, {false, false}, {{"5 \xC2\xB5s", "1"}, {"10 ms", "2"}}};
  EXPECT_EQ(left.console(), "time   n\n--------\n5 \xC2\xB5s   1\n10 ms  2\n");
}

// A trace's link survives any path: every byte outside [A-Za-z0-9._~/-] is percent-encoded.
TEST(ReportTraces, TheLinkToATraceIsPercentEncoded) {
  report::TraceSummary s;
  s.benchmark = "train_step/net/cpu/batch:4";
  s.file = "my traces/run (1)[2]\xC2\xB5_a-b.c~d.json";
  s.steps = 1;
  s.step_ms = 1.0;
  const std::string md = report::traces_markdown({s});
  EXPECT_NE(md.find("](my%20traces/run%20%281%29%5B2%5D%C2%B5_a-b.c~d.json)\n"), std::string::npos) << md;
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
