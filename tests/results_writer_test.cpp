// The one results writer (report/results_writer.h) and the schema (report/schema.h), read back by the one reader.
#include "torchprobe/report/results_writer.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "test_util.h"
#include "torchprobe/input_error.h"
#include "torchprobe/io.h"
#include "torchprobe/report/printers.h"
#include "torchprobe/report/results.h"
#include "torchprobe/report/schema.h"

using namespace torchprobe;

namespace {

report::Entry entry(const std::string& name, size_t index, double ms) {
  report::Entry e;
  e.name = name;
  e.repetition_index = index;
  e.repetitions = 3;
  e.time = ms;
  e.counters = {{"images_per_s", 1000.0 / ms}};
  return e;
}

ContextEntries context(const std::string& version) {
  return {{std::string(report::schema::kVersionKey), version}, {"host_name", "h"}, {"num_cpus", "8"}};
}

}  // namespace

TEST(ResultsWriter, WhatItWritesTheReaderReads) {
  std::vector<report::Entry> entries = {entry("s/net/cpu/batch:4", 0, 2.0), entry("s/net/cpu/batch:4", 1, 4.0),
                                        entry("s/net/cpu/batch:4", 2, 3.0)};
  report::Entry failed;
  failed.name = "s/resnet18/cpu/batch:4";
  failed.iterations = 0;
  failed.error = "out of memory";
  entries.push_back(failed);
  const std::string text = report::results_document(context("1"), entries);
  EXPECT_EQ(nlohmann::json::parse(text)["context"]["num_cpus"], 8) << "a number, as Google Benchmark writes it";
  const report::ResultSet set = report::parse_results(text, "w.json");
  ASSERT_EQ(set.results.size(), 2u);
  EXPECT_EQ(set.results[0].name, "s/net/cpu/batch:4");
  EXPECT_EQ(set.results[0].repetitions, 3);
  EXPECT_DOUBLE_EQ(set.results[0].median_ms, 3.0);
  EXPECT_DOUBLE_EQ(set.results[0].counter("images_per_s"), 1000.0 / 3.0);
  EXPECT_TRUE(set.results[1].failed());
  EXPECT_EQ(set.results[1].error, "out of memory");
}

TEST(ResultsWriter, EntriesOfOneDocumentJoinAnother) {
  const std::string child = report::results_document(context("1"), {entry("a", 0, 1.0), entry("b", 0, 2.0)});
  const std::string inside = report::benchmark_entries(child);
  const auto joined = nlohmann::json::parse("[" + inside + "," + report::entries_json({entry("c", 0, 3.0)}) + "]");
  ASSERT_EQ(joined.size(), 3u);
  EXPECT_EQ(joined[0]["name"], "a");
  EXPECT_EQ(joined[2]["name"], "c");
  EXPECT_EQ(report::benchmark_entries(child.substr(0, child.size() / 2)), "") << "a child cut off while writing";
  EXPECT_EQ(report::benchmark_entries("{\"benchmarks\": {}}"), "");
}

// A file of a newer schema is refused, not misread; a file without one (an older torchprobe, any Google Benchmark
// program) is read.
TEST(ResultsSchema, ANewerSchemaIsRefusedAndNoneIsRead) {
  const std::string newer = report::results_document(context("2"), {entry("a", 0, 1.0)});
  EXPECT_THROW_WITH(report::parse_results(newer, "new.json"), InputError,
                    "new.json: results schema 2 (context.torchprobe_schema); this torchprobe reads schema 1");
  const std::string none = report::results_document({{"host_name", "h"}}, {entry("a", 0, 1.0)});
  EXPECT_EQ(report::parse_results(none, "old.json").results.size(), 1u);
  EXPECT_EQ(report::without_timing_suffix("op/add/cpu/process_time"), "op/add/cpu");
}

// `dist dataparallel` over two GPUs names its device "cuda:0,cuda:1" (tests/fixtures/report/dist_dataparallel.json,
// written by dist::train_json in dist_test's DataParallel.ResultsAreFiledUnderTheirGpus): the reader files it under
// those GPUs and their names, never under the CPU, and the CSV says so.
TEST(ResultsReader, DataParallelResultsAreFiledUnderTheirGpus) {
  const report::ResultSet set = report::load_results({std::string(TORCHPROBE_FIXTURE_DIR) + "/dist_dataparallel.json"});
  ASSERT_EQ(set.results.size(), 1u);
  EXPECT_EQ(set.results[0].device, "cuda:0,cuda:1");
  EXPECT_EQ(set.results[0].device_name, "2 x NVIDIA H100 80GB HBM3");
  const std::string csv = report::to_csv(set);
  EXPECT_NE(csv.find("cuda:0,cuda:1"), std::string::npos) << csv;
  EXPECT_NE(csv.find("2 x NVIDIA H100 80GB HBM3"), std::string::npos) << csv;
  EXPECT_EQ(csv.find(",cpu,"), std::string::npos) << csv;
}
