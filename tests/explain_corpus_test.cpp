// explain on real messages users pasted or PyTorch's source prints (tests/fixtures/explain/*.jsonl: each entry with
// its source): the kind; for memory errors the confidence and the numbers; for device errors the devices and the
// argument. Near-misses (dtype, shape, device-side asserts: kind "unknown") must stay unknown.
// Every entry is locked: one that was right and goes wrong fails the test, named by its id and line. The few the
// classifier gets wrong today are listed below with why (tests/README.md says how to add one).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "diagnostics/classify.h"
#include "torchprobe/strings.h"

namespace dx = torchprobe::diagnostics;

namespace {

// The entries of a .jsonl corpus with the line each is on (from 1).
std::vector<std::pair<size_t, nlohmann::json>> corpus(const std::string& file) {
  std::ifstream in(std::string(TORCHPROBE_EXPLAIN_CORPUS_DIR) + "/" + file);
  std::vector<std::pair<size_t, nlohmann::json>> entries;
  size_t number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    if (!line.empty()) entries.emplace_back(number, nlohmann::json::parse(line));
  }
  return entries;
}

std::string as_text(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
  return "[" + out + "]";
}

// The argument an entry records ("" for null), as Diagnosis::argument.value_or("") gives it.
std::string recorded_argument(const nlohmann::json& entry) {
  return entry.at("argument").is_null() ? "" : entry.at("argument").get<std::string>();
}

std::optional<std::int64_t> optional_bytes(const nlohmann::json& entry, const char* key) {
  if (!entry.contains(key) || entry[key].is_null()) return std::nullopt;
  return entry[key].get<std::int64_t>();
}

// Entries the classifier gets wrong today, by id, each with why. Nothing else may go wrong.
const std::map<std::string, std::string> kMemoryKnownMisses = {};
const std::map<std::string, std::string> kDeviceKnownMisses = {
    // line 215: the corpus records no device (the message names none the user asked for), explain reports "cuda"
    // from "DeviceGuardImpl for cuda"; the kind is right. docs/diagnostics.md names this miss.
    {"cuda-deviceguard-cpp-terminate-pt15702", "devices: [] recorded, [cuda] read (the kind is right)"},
};

struct Outcome {
  std::string id;
  size_t line = 0;  // from 1, in the .jsonl file
  bool right = false;
  std::string detail;  // expected and got, when wrong
};

// Every entry right but the known misses; a known miss that is right now must leave the list (so the list stays
// true), and every listed id must exist. Prints the score either way.
void expect_locked(const std::string& file, const std::vector<Outcome>& outcomes,
                   const std::map<std::string, std::string>& known_misses) {
  int right = 0;
  std::set<std::string> ids;
  for (const auto& o : outcomes) {
    EXPECT_TRUE(ids.insert(o.id).second) << file << ":" << o.line << ": id " << o.id << " is not unique";
    const bool known = known_misses.count(o.id) != 0;
    right += o.right ? 1 : 0;
    if (!o.right && !known) ADD_FAILURE() << file << ":" << o.line << ": " << o.id << " regressed: " << o.detail;
    if (o.right && known) {
      ADD_FAILURE() << file << ":" << o.line << ": " << o.id << " is listed as a known miss but is right now: "
                    << "remove it from the list in " << __FILE__;
    }
  }
  for (const auto& [id, why] : known_misses) {
    EXPECT_TRUE(ids.count(id)) << "known miss " << id << " (" << why << ") is not in " << file;
  }
  ::testing::Test::RecordProperty("right", right);
  ::testing::Test::RecordProperty("entries", static_cast<int>(outcomes.size()));
  std::printf("%s: %d of %zu right, %zu known misses listed\n", file.c_str(), right, outcomes.size(), known_misses.size());
}

}  // namespace

TEST(ExplainCorpus, MemoryErrorsIncludingTheDisguisedOnes) {
  const auto entries = corpus("corpus_memory.jsonl");
  ASSERT_GE(entries.size(), 100u);
  std::vector<Outcome> outcomes;
  for (const auto& [line, e] : entries) {
    const std::string text = e.at("text").get<std::string>(), expected = e.at("kind").get<std::string>();
    const dx::Diagnosis d = dx::explain_error(text);
    const std::string got = dx::kind_name(d.kind);
    Outcome o{e.at("id").get<std::string>(), line, got == expected, ""};
    std::string numbers;
    if (o.right && expected != "unknown") {
      // The memory kinds' confidence is the corpus's (the few no-GPU texts here record none).
      if (expected == "out_of_memory_gpu" || expected == "out_of_memory_cpu") {
        o.right = d.confidence == e.value("confidence", "");
      }
      // The numbers the message gives, where the corpus records them.
      const struct {
        const char* key;
        const std::optional<std::int64_t>& value;
      } read[] = {{"requested_bytes", d.memory.requested}, {"total_bytes", d.memory.total}, {"free_bytes", d.memory.free}};
      for (const auto& n : read) {
        const auto want = optional_bytes(e, n.key);
        if (want && n.value != want) {
          o.right = false;
          numbers += fmt::format("; {} {} expected, {} read", n.key, *want, n.value ? std::to_string(*n.value) : "none");
        }
      }
    }
    if (!o.right) {
      o.detail = fmt::format("expected {} {}, got {} {}{} ({})", expected, e.value("confidence", ""), got, d.confidence,
                             numbers, d.message.substr(0, 120));
    }
    outcomes.push_back(o);
  }
  expect_locked("corpus_memory.jsonl", outcomes, kMemoryKnownMisses);
}

// Devices are compared as the corpus records them: as the message writes them ("cuda:1", "mps:0", "cuda" for a
// torch.cuda.FloatTensor), each once, in the order the message names them. The order is compared because it says which
// side is which ("expected device cuda:0 but got device cpu", "Expected object of backend CPU but got backend CUDA"),
// and the explanation repeats it. The argument counts in any of the versions' forms ("argument #2 'mat2'", "argument
// mat1", "got weight is on", "for argument 'index'"), compared by name.
TEST(ExplainCorpus, DeviceErrorsOfEveryVersionWithDevicesAndArgument) {
  const auto entries = corpus("corpus_device.jsonl");
  ASSERT_GE(entries.size(), 150u);
  std::set<std::string> kinds;
  std::vector<Outcome> outcomes;
  for (const auto& [line, e] : entries) {
    const std::string text = e.at("text").get<std::string>(), expected = e.at("kind").get<std::string>();
    const auto devices = e.at("devices").get<std::vector<std::string>>();
    const std::string argument = recorded_argument(e);
    kinds.insert(expected);
    const dx::Diagnosis d = dx::explain_error(text);
    const std::string got = dx::kind_name(d.kind);
    Outcome o{e.at("id").get<std::string>(), line, got == expected && d.devices == devices && d.argument.value_or("") == argument, ""};
    if (!o.right) {
      o.detail = fmt::format("expected {} {} '{}', got {} {} '{}' ({})", expected, as_text(devices), argument, got,
                             as_text(d.devices), d.argument.value_or(""), d.message.substr(0, 160));
    }
    outcomes.push_back(o);
  }
  // Every kind the classifier knows, next to the near-misses.
  EXPECT_EQ(kinds, (std::set<std::string>{"device_mismatch", "cuda_unavailable", "invalid_device", "meta_tensor",
                                          "not_a_tensor", "state_dict_prefix", "unknown"}));
  expect_locked("corpus_device.jsonl", outcomes, kDeviceKnownMisses);
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
      const std::string argument = recorded_argument(recorded);
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

// ---- The harvest: real messages from the world, split by project -------------------------------------------------
// tests/fixtures/explain/harvest_{tuning,heldout}.jsonl (README.md there): messages users pasted into the public
// trackers of ~150 projects PyTorch is used through, each labelled from its text, split by project so that a
// repository's near-duplicates stay on one side. The rules are tuned on the tuning half only; the held-out half is
// what predicts how explain does on messages it has never seen, so its score is the one held to a floor.
namespace {

struct HarvestScore {
  int right = 0, total = 0;
  int near_misses = 0, near_misses_given_a_kind = 0;
  std::string misses;  // one line each: id, expected, got
};

// Right: the kind; for device_mismatch also the devices (as written, in order) and the argument; for the memory
// kinds also the confidence. A near-miss (a message that looks like one of ours but is not) must stay unknown.
// `as_pasted`: the text as a log or a paste would carry it (the formats test below); none: as recorded.
HarvestScore score_harvest(const std::string& file,
                           const std::function<std::string(const std::string&)>& as_pasted = nullptr) {
  HarvestScore s;
  for (const auto& [line, e] : corpus(file)) {
    const std::string expected = e.at("kind").get<std::string>();
    const std::string text = e.at("text").get<std::string>();
    const dx::Diagnosis d = dx::explain_error(as_pasted ? as_pasted(text) : text);
    const std::string got = dx::kind_name(d.kind);
    bool right = got == expected;
    if (right && expected == "device_mismatch") {
      const std::string argument = recorded_argument(e);
      right = d.devices == e.at("devices").get<std::vector<std::string>>() && d.argument.value_or("") == argument;
    }
    if (right && (expected == "out_of_memory_gpu" || expected == "out_of_memory_cpu")) {
      right = d.confidence == e.at("confidence").get<std::string>();
    }
    ++s.total;
    s.right += right ? 1 : 0;
    if (e.value("near_miss", false)) {
      ++s.near_misses;
      s.near_misses_given_a_kind += got != "unknown" ? 1 : 0;
    }
    if (!right) {
      s.misses += fmt::format("  {}:{} {}: expected {} {}, got {} {} '{}'\n", file, line, e.at("id").get<std::string>(),
                              expected, e.at("devices").dump(), got, as_text(d.devices), d.argument.value_or(""));
    }
  }
  std::printf("%s: %d of %d right (%.1f%%); near-misses given a known kind: %d of %d\n", file.c_str(), s.right, s.total,
              100.0 * s.right / std::max(s.total, 1), s.near_misses_given_a_kind, s.near_misses);
  ::testing::Test::RecordProperty("right", s.right);
  ::testing::Test::RecordProperty("entries", s.total);
  return s;
}

// Floors, raised as explain improves and never lowered for the same half: a change that makes explain worse on
// messages it has never seen fails here. The goal (issue 36) is 95% held out and no near-miss given a kind. The
// held-out half is harvest nineteen's (307 messages from 301 repositories no other message comes from), collected on
// 2026-11-29 by eight people who never saw the classifier, scored once with the rules of 2c4e820: 294 of 307 (95.8%),
// 2 of 112 near-misses given a kind; the same after two more rules (complete key lists that share no key are no
// prefix; an exception quoted in a sentence is the message). Its misses have not been read
// (tests/fixtures/explain/README.md). The half before it (harvest seventeen), read for its misses when this one came,
// is tuning now. The floor asks for 294.
constexpr double kHeldOutFloor = 0.9577, kTuningFloor = 0.99;
constexpr int kHeldOutNearMissesGivenAKind = 2;

}  // namespace

TEST(ExplainHarvest, HeldOutHalfKeepsItsScoreOnMessagesNeverTunedOn) {
  const HarvestScore s = score_harvest("harvest_heldout.jsonl");
  ASSERT_GE(s.total, 300);
  EXPECT_GE(s.right, static_cast<int>(kHeldOutFloor * s.total)) << "held-out misses:\n" << s.misses;
  EXPECT_LE(s.near_misses_given_a_kind, kHeldOutNearMissesGivenAKind);
  EXPECT_GE(s.near_misses, 60) << "the near-misses are what keep a looser rule honest";
}

TEST(ExplainHarvest, TuningHalfKeepsItsScore) {
  const HarvestScore s = score_harvest("harvest_tuning.jsonl");
  ASSERT_GE(s.total, 300);
  EXPECT_GE(s.right, static_cast<int>(kTuningFloor * s.total)) << "tuning misses:\n" << s.misses;
  EXPECT_EQ(s.near_misses_given_a_kind, 0);
}

// The same messages as logs and pastes carry them: newlines escaped (a JSON field), coloured, behind a logger's
// header, behind a container's or a cluster's prefix on every line, wrapped at a terminal's width, with CRLF, quoted.
// Each format must read (nearly) as the plain text does, and give no near-miss a kind: a rule that only works on a
// clean paste fails here.
namespace {

std::string each_line(const std::string& text, const std::function<std::string(const std::string&)>& change) {
  const std::vector<std::string> lines = torchprobe::split(text, '\n');
  std::string out;
  for (std::size_t i = 0; i < lines.size(); ++i) out += (i ? "\n" : "") + change(lines[i]);
  return out;
}

// Greedy word wrap at `width` columns, as a terminal or a mail client wraps a long line at its blanks.
std::string wrapped(const std::string& line, std::size_t width) {
  std::string out, current;
  std::size_t at = 0;
  while (at < line.size()) {
    const auto blank = line.find(' ', at);
    const std::string word = line.substr(at, blank == std::string::npos ? std::string::npos : blank - at + 1);
    at = blank == std::string::npos ? line.size() : blank + 1;
    if (!current.empty() && current.size() + word.size() > width) {
      out += current + '\n';
      current.clear();
    }
    current += word;
  }
  return out + current;
}

}  // namespace

TEST(ExplainHarvest, TheTuningHalfReadsTheSameInTheFormatsLogsCarryIt) {
  const HarvestScore plain = score_harvest("harvest_tuning.jsonl");
  const std::vector<std::pair<std::string, std::function<std::string(const std::string&)>>> formats = {
      {"newlines escaped (a JSON log's field)",
       [](const std::string& t) {
         std::string out;
         for (const char c : t) out += c == '\n' ? std::string("\\n") : std::string(1, c);
         return out;
       }},
      {"colours", [](const std::string& t) { return each_line(t, [](auto l) { return "\x1b[31m" + l + "\x1b[0m"; }); }},
      {"a logger's header on the exception's line",
       [](const std::string& t) {
         auto at = t.find_last_not_of(" \t\n");
         at = at == std::string::npos ? 0 : t.rfind('\n', at);
         at = at == std::string::npos ? 0 : at + 1;
         return t.substr(0, at) + "2024-05-01 12:00:00,123 - trainer - ERROR - " + t.substr(at);
       }},
      {"loguru's header",
       [](const std::string& t) { return "2024-05-01 12:00:00.123 | ERROR    | __main__:run:12 - " + t; }},
      {"docker compose",
       [](const std::string& t) { return each_line(t, [](auto l) { return "trainer-1       | " + l; }); }},
      {"Ray", [](const std::string& t) { return each_line(t, [](auto l) { return "(RayWorker pid=3478) " + l; }); }},
      {"Kubernetes",
       [](const std::string& t) {
         return each_line(t, [](auto l) { return "2024-05-01T12:00:00.123456789Z stderr F " + l; });
       }},
      {"wrapped at 100 columns",
       [](const std::string& t) { return each_line(t, [](auto l) { return wrapped(l, 100); }); }},
      {"CRLF", [](const std::string& t) { return each_line(t, [](auto l) { return l + "\r"; }); }},
      {"quoted", [](const std::string& t) { return each_line(t, [](auto l) { return "> " + l; }); }},
  };
  for (const auto& [name, as_pasted] : formats) {
    const HarvestScore s = score_harvest("harvest_tuning.jsonl", as_pasted);
    // 2026-11-29: every format within 0.5 points of the plain text's 99.1%, no near-miss given a kind but one when
    // wrapped; before the scanner read them: 87.3% escaped, 97.5% coloured (10 near-misses given a kind).
    EXPECT_GE(s.right, plain.right - plain.total / 100) << name << ":\n" << s.misses;
    EXPECT_LE(s.near_misses_given_a_kind, 1) << name;
  }
}

// The halves share no project: a repository's messages (often the same error pasted again) are on one side only.
TEST(ExplainHarvest, TheHalvesShareNoProject) {
  std::set<std::string> tuning;
  for (const auto& [line, e] : corpus("harvest_tuning.jsonl")) tuning.insert(e.at("project").get<std::string>());
  for (const auto& [line, e] : corpus("harvest_heldout.jsonl")) {
    EXPECT_EQ(tuning.count(e.at("project").get<std::string>()), 0u)
        << "harvest_heldout.jsonl:" << line << ": project " << e.at("project") << " is in the tuning half too";
  }
  // Nor a text: the same message pasted in two repositories is held once, on one side.
  std::map<std::string, std::string> held;
  for (const char* file : {"harvest_tuning.jsonl", "harvest_heldout.jsonl"}) {
    for (const auto& [line, e] : corpus(file)) {
      const auto [at, first] =
          held.emplace(e.at("text").get<std::string>(), std::string(file) + ":" + std::to_string(line));
      EXPECT_TRUE(first) << file << ":" << line << " holds the text of " << at->second;
    }
  }
}
