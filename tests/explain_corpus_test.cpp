// explain on real messages users pasted or PyTorch's source prints (tests/fixtures/explain/*.jsonl: each entry with
// its source): the kind; for memory errors the confidence and the numbers; for device errors the devices and the
// argument. Near-misses (dtype, shape, device-side asserts: kind "unknown") must stay unknown.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "diagnostics/classify.h"

namespace dx = torchprobe::diagnostics;

namespace {

std::vector<nlohmann::json> corpus(const std::string& file) {
  std::ifstream in(std::string(TORCHPROBE_EXPLAIN_CORPUS_DIR) + "/" + file);
  std::vector<nlohmann::json> entries;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) entries.push_back(nlohmann::json::parse(line));
  }
  return entries;
}

std::string as_text(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
  return "[" + out + "]";
}

std::optional<std::int64_t> optional_bytes(const nlohmann::json& entry, const char* key) {
  if (!entry.contains(key) || entry[key].is_null()) return std::nullopt;
  return entry[key].get<std::int64_t>();
}

// The targets both corpora share: >= 95% right, no near-miss given a known kind. Prints the score either way.
void expect_score(const char* corpus_name, int right, size_t entries, int wrong_known, int near_misses,
                  const std::string& failures) {
  const double share = static_cast<double>(right) / static_cast<double>(entries);
  ::testing::Test::RecordProperty("right", right);
  ::testing::Test::RecordProperty("entries", static_cast<int>(entries));
  std::printf("%s corpus: %d of %zu right (%.1f%%), %d of %d near-misses given a known kind\n", corpus_name, right,
              entries, 100.0 * share, wrong_known, near_misses);
  EXPECT_GE(share, 0.95) << failures;
  EXPECT_EQ(wrong_known, 0) << failures;
  if (!failures.empty()) std::printf("%s", failures.c_str());
}

}  // namespace

TEST(ExplainCorpus, MemoryErrorsIncludingTheDisguisedOnes) {
  const auto entries = corpus("corpus_memory.jsonl");
  ASSERT_GE(entries.size(), 100u);
  int right = 0, wrong_known = 0, near_misses = 0;
  std::string failures;
  for (const auto& e : entries) {
    const std::string text = e.at("text").get<std::string>(), expected = e.at("kind").get<std::string>();
    const dx::Diagnosis d = dx::explain_error(text);
    const std::string got = dx::kind_name(d.kind);
    bool ok = got == expected;
    if (ok && expected != "unknown") {
      ok = d.confidence == e.value("confidence", "");
      // The numbers the message gives, where the corpus records them.
      const struct {
        const char* key;
        const std::optional<std::int64_t>& value;
      } numbers[] = {{"requested_bytes", d.memory.requested}, {"total_bytes", d.memory.total}, {"free_bytes", d.memory.free}};
      for (const auto& n : numbers) {
        const auto want = optional_bytes(e, n.key);
        if (want && n.value != want) {
          ok = false;
          failures += fmt::format("  {}: {} {} expected, {} read\n", e.at("id").get<std::string>(), n.key, *want,
                                  n.value ? std::to_string(*n.value) : "none");
        }
      }
    }
    if (expected == "unknown") {
      ++near_misses;
      if (got != "unknown") ++wrong_known;
    }
    if (ok) {
      ++right;
    } else {
      failures += fmt::format("  {}: expected {} {}, got {} {} ({})\n", e.at("id").get<std::string>(), expected,
                              e.value("confidence", ""), got, d.confidence, d.message.substr(0, 120));
    }
  }
  expect_score("memory", right, entries.size(), wrong_known, near_misses, failures);
}

// Devices are compared as the corpus records them: as the message writes them ("cuda:1", "mps:0", "cuda" for a
// torch.cuda.FloatTensor), each once, in the order the message names them. The order is compared because it says which
// side is which ("expected device cuda:0 but got device cpu", "Expected object of backend CPU but got backend CUDA"),
// and the explanation repeats it. The argument counts in any of the versions' forms ("argument #2 'mat2'", "argument
// mat1", "got weight is on", "for argument 'index'"), compared by name.
TEST(ExplainCorpus, DeviceErrorsOfEveryVersionWithDevicesAndArgument) {
  const auto entries = corpus("corpus_device.jsonl");
  ASSERT_GE(entries.size(), 150u);
  int right = 0, wrong_known = 0, near_misses = 0;
  std::set<std::string> kinds;
  std::string failures;
  for (const auto& e : entries) {
    const std::string text = e.at("text").get<std::string>(), expected = e.at("kind").get<std::string>();
    const auto devices = e.at("devices").get<std::vector<std::string>>();
    const std::string argument = e.at("argument").is_null() ? "" : e.at("argument").get<std::string>();
    kinds.insert(expected);
    const dx::Diagnosis d = dx::explain_error(text);
    const std::string got = dx::kind_name(d.kind);
    if (expected == "unknown") {
      ++near_misses;
      if (got != "unknown") ++wrong_known;
    }
    if (got == expected && d.devices == devices && d.argument.value_or("") == argument) {
      ++right;
    } else {
      failures += fmt::format("  {}: expected {} {} '{}', got {} {} '{}' ({})\n", e.at("id").get<std::string>(), expected,
                              as_text(devices), argument, got, as_text(d.devices), d.argument.value_or(""),
                              d.message.substr(0, 160));
    }
  }
  // Every kind the classifier knows, next to the near-misses.
  EXPECT_EQ(kinds, (std::set<std::string>{"device_mismatch", "cuda_unavailable", "invalid_device", "meta_tensor",
                                          "not_a_tensor", "state_dict_prefix", "unknown"}));
  expect_score("device", right, entries.size(), wrong_known, near_misses, failures);
}

// `torchprobe diagnose device --json` as real runs printed it (tests/fixtures/explain/scenarios/*.json, one file per
// LibTorch version and device, named for them; scripts/gpu_session.sh writes the GPU ones): every error a scenario
// reproduced must still be classified as the scenario expects, with the devices and argument recorded then.
TEST(ExplainCorpus, RecordedScenarioMessagesKeepTheirKindDevicesAndArgument) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(TORCHPROBE_EXPLAIN_CORPUS_DIR) / "scenarios";
  int files = 0, messages = 0;
  std::string failures;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".json") continue;
    ++files;
    std::ifstream in(entry.path());
    const auto scenarios = nlohmann::json::parse(in);
    for (const auto& s : scenarios) {
      if (!s.contains("raw")) continue;  // skipped on that host
      ++messages;
      const std::string where = entry.path().filename().string() + ": " + s.at("scenario").get<std::string>();
      const auto& recorded = s.at("diagnosis");
      const dx::Diagnosis d = dx::explain_error(s.at("raw").get<std::string>());
      const std::string argument = recorded.at("argument").is_null() ? "" : recorded.at("argument").get<std::string>();
      if (dx::kind_name(d.kind) != s.at("expected_kind").get<std::string>() ||
          d.devices != recorded.at("devices").get<std::vector<std::string>>() || d.argument.value_or("") != argument) {
        failures += fmt::format("  {}: expected {} {} '{}', got {} {} '{}' ({})\n", where,
                                s.at("expected_kind").get<std::string>(), recorded.at("devices").dump(), argument,
                                dx::kind_name(d.kind), as_text(d.devices), d.argument.value_or(""), d.message.substr(0, 160));
      }
    }
  }
  std::printf("recorded scenarios: %d messages in %d files\n", messages, files);
  EXPECT_GE(files, 2) << "the CPU runs of both LibTorch versions are committed";
  EXPECT_GE(messages, 6);
  EXPECT_EQ(failures, "");
}
