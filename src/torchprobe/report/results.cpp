#include "torchprobe/report/results.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <climits>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "torchprobe/device_token.h"
#include "torchprobe/input_error.h"
#include "torchprobe/io.h"
#include "torchprobe/report/schema.h"
#include "torchprobe/stats.h"
#include "torchprobe/units.h"

namespace torchprobe::report {

namespace {

using nlohmann::json;

// Entry keys that are Google Benchmark's own, not user counters.
const std::set<std::string> kGbenchKeys = {
    "name", "family_index", "per_family_instance_index", "run_name", "run_type", "repetitions",
    "repetition_index", "threads", "iterations", "real_time", "cpu_time", "time_unit", "label",
    "aggregate_name", "aggregate_unit", "error_occurred", "error_message", "skipped", "skip_message",
    "big_o", "rms", "complexity", "items_per_second", "bytes_per_second"};

double ms_per_unit(const std::string& unit, const std::string& where) {
  if (unit == "ns") return 1e-6;
  if (unit == "us") return 1e-3;
  if (unit == "ms") return 1.0;
  if (unit == "s") return 1e3;
  throw InputError(fmt::format("{}: unknown time_unit '{}'", where, unit));
}

// nlohmann's dump, copies and comparisons recurse once per level of nesting: a document nested deeper than
// this (Google Benchmark's files are 3 levels deep) is refused before it is parsed, so that no value of it
// can overflow the stack.
constexpr int kMaxJsonDepth = 128;

// Throws when `text` nests arrays and objects more than kMaxJsonDepth deep; `what` names it in the message.
// Brackets inside strings do not count; unbalanced ones are left to the parser to report.
void check_nesting(const std::string& text, const std::string& what) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth) {
        throw InputError(fmt::format("{}: JSON nested more than {} levels deep", what, kMaxJsonDepth));
      }
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
}

std::string string_or(const json& object, const char* key, const std::string& fallback = "") {
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) return fallback;
  return it->is_string() ? it->get<std::string>() : it->dump();
}

bool ends_with(const std::string& text, const std::string& tail) {
  return text.size() >= tail.size() && text.compare(text.size() - tail.size(), tail.size(), tail) == 0;
}

// A number for display: 0 when absent or not a number (the inventory is informational).
double number_or_zero(const json& object, const char* key) {
  const auto it = object.find(key);
  return it != object.end() && it->is_number() ? it->get<double>() : 0.0;
}

std::vector<DeviceInfo> devices_from_inventory(const std::string& text, const std::string& source) {
  std::vector<DeviceInfo> devices;
  if (text.empty()) return devices;
  check_nesting(text, source + ": context.inventory");
  json inv;
  try {
    inv = json::parse(text);
  } catch (const json::exception& e) {
    throw InputError(fmt::format("{}: context.inventory is not valid JSON: {}", source, e.what()));
  }
  if (inv.contains("cpu") && inv["cpu"].is_object()) {
    const auto& cpu = inv["cpu"];
    devices.push_back({"cpu", string_or(cpu, "model", "CPU"),
                       fmt::format("{} logical cores, {} LibTorch threads{}", string_or(cpu, "logical_cores", "?"),
                                   string_or(cpu, "torch_threads", "?"),
                                   string_or(cpu, "vector_isa").empty() ? "" : ", " + string_or(cpu, "vector_isa"))});
  }
  if (inv.contains("cuda") && inv["cuda"].is_object() && inv["cuda"].contains("devices") &&
      inv["cuda"]["devices"].is_array()) {
    for (const auto& g : inv["cuda"]["devices"]) {
      if (!g.is_object()) continue;
      devices.push_back({string_or(g, "device"), string_or(g, "name"),
                         fmt::format("{}, compute capability {}, {} SMs",
                                     units::format_bytes(number_or_zero(g, "total_memory_bytes")),
                                     string_or(g, "compute_capability"), string_or(g, "multiprocessors", "?"))});
    }
  }
  return devices;
}

int int_field(const json& entry, const char* key, const std::string& where) {
  const auto it = entry.find(key);
  if (it == entry.end() || it->is_null()) return 0;
  if (!it->is_number_integer()) throw InputError(fmt::format("{}: \"{}\" must be an integer, got {}", where, key, it->dump()));
  // Signed or unsigned, it must fit an int: a conversion out of range would be undefined.
  const bool fits = it->is_number_unsigned() ? it->get<std::uint64_t>() <= static_cast<std::uint64_t>(INT_MAX)
                                             : it->get<std::int64_t>() >= INT_MIN && it->get<std::int64_t>() <= INT_MAX;
  if (!fits) throw InputError(fmt::format("{}: \"{}\" is out of range ({})", where, key, it->dump()));
  return it->get<int>();
}

// A count or an index of one benchmark entry (repetitions, repetition_index): Google Benchmark never writes a
// negative one, and the repetition arithmetic assumes there is none.
int count_field(const json& entry, const char* key, const std::string& where) {
  const int value = int_field(entry, key, where);
  if (value < 0) throw InputError(fmt::format("{}: \"{}\" must not be negative, got {}", where, key, value));
  return value;
}

RunContext parse_context(const json& doc, const std::string& source) {
  RunContext ctx;
  ctx.source = source;
  if (!doc.contains("context")) return ctx;
  const json& c = doc["context"];
  if (!c.is_object()) throw InputError(fmt::format("{}: \"context\" is not an object", source));
  ctx.host = string_or(c, "host_name");
  ctx.date = string_or(c, "date");
  ctx.executable = string_or(c, "executable");
  ctx.build_type = string_or(c, "library_build_type");
  ctx.num_cpus = int_field(c, "num_cpus", source + ": context");
  ctx.torchprobe_version = string_or(c, "torchprobe_version");
  ctx.libtorch_version = string_or(c, "libtorch_version");
  ctx.threads = string_or(c, "torch_threads");
  ctx.blas = string_or(c, "blas");
  ctx.data = string_or(c, "data");
  const std::string version = string_or(c, std::string(schema::kVersionKey).c_str());
  if (!version.empty() && version != std::to_string(schema::kVersion)) {
    throw InputError(
        fmt::format("{}: results schema {} (context.{}); this torchprobe reads schema {}: read it with "
                    "the torchprobe that wrote it, or a newer one",
                    source, version.substr(0, 20), schema::kVersionKey, schema::kVersion));
  }
  ctx.run_status = string_or(c, std::string(schema::kRunStatusKey).c_str());
  ctx.devices = devices_from_inventory(string_or(c, std::string(schema::kInventoryKey).c_str()), source);
  const std::string warnings = string_or(c, "trust_warnings");
  if (!warnings.empty()) {
    check_nesting(warnings, source + ": context.trust_warnings");
    json list;
    try {
      list = json::parse(warnings);
    } catch (const json::exception& e) {
      throw InputError(fmt::format("{}: context.trust_warnings is not valid JSON: {}", source, e.what()));
    }
    if (!list.is_array()) throw InputError(fmt::format("{}: context.trust_warnings is not a JSON array", source));
    for (const auto& w : list) ctx.trust_warnings.push_back(w.is_object() ? string_or(w, "message") : w.dump());
  }
  return ctx;
}

struct Accumulator {
  Result result;
  std::vector<double> aggregate_median_ms;  // used only when the file has no per-repetition runs
  double aggregate_cv = -1.0, aggregate_mean_ms = std::numeric_limits<double>::quiet_NaN(),
         aggregate_stddev_ms = std::numeric_limits<double>::quiet_NaN();
  int aggregate_repetitions = 0;
  std::map<std::string, std::vector<double>> counters;
  std::map<std::string, double> aggregate_counters;
  int failed = 0;
  std::string failed_reason;
  std::set<int> repetitions_seen;
};

// A field of one entry, checked for its type: InputError naming the file, the entry and the field.
bool bool_field(const json& entry, const char* key, const std::string& where) {
  const auto it = entry.find(key);
  if (it == entry.end() || it->is_null()) return false;
  if (!it->is_boolean()) throw InputError(fmt::format("{}: \"{}\" must be true or false, got {}", where, key, it->dump()));
  return it->get<bool>();
}

double number_field(const json& entry, const char* key, const std::string& where) {
  const auto it = entry.find(key);
  if (it == entry.end() || !it->is_number()) {
    throw InputError(fmt::format("{}: no numeric \"{}\"{}", where, key,
                                 it == entry.end() ? "" : ", got " + it->dump().substr(0, 60)));
  }
  const double value = it->get<double>();
  if (value < 0.0 && (std::string(key) == "real_time" || std::string(key) == "cpu_time")) {
    throw InputError(fmt::format("{}: \"{}\" is negative ({}): not a time", where, key, value));
  }
  return value;
}

// Google Benchmark writes non-finite values as bare NaN / inf (e.g. the CV of an all-zero counter),
// which is not JSON. Outside strings, such a value becomes null.
std::string nonfinite_to_null(const std::string& text) {
  static const char* const kTokens[] = {"-Infinity", "Infinity", "-NaN", "NaN", "-nan", "nan", "-inf", "inf"};
  std::string out;
  out.reserve(text.size());
  bool in_string = false;
  char previous = 0;  // last non-space character outside strings
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      out += c;
      if (c == '\\' && i + 1 < text.size()) {
        out += text[++i];
      } else if (c == '"') {
        in_string = false;
        previous = c;
      }
      continue;
    }
    if (c == '"') in_string = true;
    if (previous == ':' || previous == '[' || previous == ',') {
      bool replaced = false;
      for (const char* token : kTokens) {
        const size_t n = std::char_traits<char>::length(token);
        if (text.compare(i, n, token) == 0) {
          out += "null";
          i += n - 1;
          previous = 'l';
          replaced = true;
          break;
        }
      }
      if (replaced) continue;
    }
    out += c;
    if (!std::isspace(static_cast<unsigned char>(c))) previous = c;
  }
  return out;
}

}  // namespace

namespace {
// The name a run's inventory gives one device; "" where it has none.
std::string one_device_name(const RunContext& context, const std::string& device) {
  for (const auto& d : context.devices) {
    if (d.id == device) return d.name;
  }
  return "";
}

// The name a run's inventory gives `device`; "" where it has none. The devices of one data_parallel process
// ("cuda:0,cuda:1") by their names: "2 x NVIDIA H100 80GB HBM3", or "A + B" where they differ.
std::string device_name_in(const RunContext& context, const std::string& device) {
  if (device.find(',') == std::string::npos) return one_device_name(context, device);
  std::vector<std::string> names;
  for (const auto item : device_list_items(device)) {
    names.push_back(one_device_name(context, std::string(item)));
    if (names.back().empty()) return "";
  }
  if (std::all_of(names.begin(), names.end(), [&](const std::string& n) { return n == names.front(); })) {
    return fmt::format("{} x {}", names.size(), names.front());
  }
  return fmt::format("{}", fmt::join(names, " + "));
}
}  // namespace

std::string device_label(const ResultSet& set, size_t context, const std::string& device) {
  std::set<std::string> hosts;
  for (const auto& c : set.contexts) hosts.insert(c.host);
  const auto base = [&](size_t i) { return hosts.size() > 1 ? device + "@" + set.contexts[i].host : device; };
  const auto name_in = [&](size_t i) { return device_name_in(set.contexts[i], device); };
  const std::string label = base(context), name = name_in(context);
  // Two machines with one host name (VMs of one image) can each have a cuda:0 of another part.
  for (size_t i = 0; i < set.contexts.size(); ++i) {
    const std::string other = name_in(i);
    if (base(i) == label && !other.empty() && !name.empty() && other != name) return label + " (" + name + ")";
  }
  return label;
}

void label_devices(ResultSet& set) {
  for (auto& r : set.results) {
    r.device_label = device_label(set, r.context, r.device);
    r.device_name = device_name_in(set.contexts[r.context], r.device);
  }
}

std::string ResultSet::partial_runs() const {
  std::string out;
  for (const auto& c : contexts) {
    if (!c.partial()) continue;
    std::string why = c.run_status.substr(std::char_traits<char>::length("partial"));
    if (why.rfind(": ", 0) == 0) why.erase(0, 2);
    out += (out.empty() ? "" : "; ") + c.source + ": " + why;
  }
  return out;
}

double Result::counter(const std::string& name) const {
  const auto it = counters.find(name);
  return it == counters.end() ? std::numeric_limits<double>::quiet_NaN() : it->second;
}

std::string without_timing_suffix(const std::string& name) {
  for (const auto suffix : schema::kTimingSuffixes) {
    if (ends_with(name, "/" + std::string(suffix))) return name.substr(0, name.size() - suffix.size() - 1);
  }
  return name;
}

void parse_benchmark_name(const std::string& name, Result& result) {
  result.name = without_timing_suffix(name);
  std::vector<std::string> tokens;
  std::stringstream stream(result.name);
  for (std::string token; std::getline(stream, token, '/');) tokens.push_back(token);
  result.suite = tokens.empty() ? "" : tokens[0];
  for (size_t i = 1; i < tokens.size(); ++i) {
    const std::string& token = tokens[i];
    const auto colon = token.find(':');
    if (is_device_list_token(token)) {
      if (result.device.empty()) result.device = token;
    } else if (colon != std::string::npos && colon > 0) {
      result.params[token.substr(0, colon)] = token.substr(colon + 1);
    } else if (result.subject.empty()) {
      result.subject = token;
    }
  }
  if (result.device.empty()) result.device = "cpu";
  if (result.params.count("batch")) {
    try {
      result.batch = std::stoll(result.params["batch"]);
    } catch (const std::exception&) {
      result.batch = 0;
    }
  }
  if (result.suite == "train_step") {
    // Names from before the variant axes existed ran the baseline: complete them, so baselines
    // recorded then still compare with today's names.
    const bool gpu = result.device.rfind("cuda", 0) == 0;
    for (const auto& axis : schema::kTrainAxes) {
      const std::string key(axis.key);
      if ((axis.gpu_only && !gpu) || result.params.count(key)) continue;
      result.params[key] = std::string(axis.baseline());
      result.name += fmt::format("/{}:{}", key, axis.baseline());
    }
  }
  if (result.params.count("dtype")) result.dtype = result.params["dtype"];  // copies have none
}

namespace {
ResultSet parse_document(const std::string& json_text, const std::string& source);
}  // namespace

ResultSet parse_results(const std::string& json_text, const std::string& source) {
  try {
    return parse_document(json_text, source);
  } catch (const json::exception& e) {  // a field of an unexpected type that no check above names
    throw InputError(fmt::format("{}: a field has an unexpected type or value: {}", source, e.what()));
  }
}

namespace {
ResultSet parse_document(const std::string& json_text, const std::string& source) {
  check_nesting(json_text, source);
  json doc;
  try {
    doc = json::parse(nonfinite_to_null(json_text));
  } catch (const json::exception& e) {
    throw InputError(fmt::format("{}: not valid JSON: {}", source, e.what()));
  }
  if (!doc.is_object() || !doc.contains("benchmarks") || !doc["benchmarks"].is_array()) {
    throw InputError(fmt::format("{}: no \"benchmarks\" array (expected Google Benchmark JSON, "
                                 "e.g. from --benchmark_out=FILE --benchmark_out_format=json)", source));
  }
  ResultSet set;
  set.contexts.push_back(parse_context(doc, source));

  // Grouped by the name as the program registered it (run_name): repetitions of one benchmark share
  // it, and no two benchmarks do.
  std::vector<std::string> order;
  std::map<std::string, Accumulator> runs;
  size_t index = 0;
  for (const json& entry : doc["benchmarks"]) {
    const std::string where = fmt::format("{}: benchmarks[{}]", source, index++);
    if (!entry.is_object() || !entry.contains("name") || !entry["name"].is_string()) {
      throw InputError(fmt::format("{}: an entry without a \"name\" string", where));
    }
    if (entry.contains("run_name") && !entry["run_name"].is_string()) {
      throw InputError(fmt::format("{}: \"run_name\" must be a string, got {}", where, entry["run_name"].dump()));
    }
    const std::string run_name = string_or(entry, "run_name", entry["name"].get<std::string>());
    const std::string at = fmt::format("{} ({})", where, run_name.substr(0, 200));
    auto [it, inserted] = runs.try_emplace(run_name);
    Accumulator& acc = it->second;
    if (inserted) {
      order.push_back(run_name);
      parse_benchmark_name(run_name, acc.result);
    }
    const bool errored = bool_field(entry, "error_occurred", at) || bool_field(entry, "skipped", at);
    if (errored) {
      ++acc.failed;
      acc.failed_reason = string_or(entry, "error_message", string_or(entry, "skip_message", "failed (no message)"));
      continue;
    }
    const double real_time = number_field(entry, "real_time", at);
    const double to_ms = ms_per_unit(string_or(entry, "time_unit", "ns"), at);
    const std::string run_type = string_or(entry, "run_type", "iteration");
    if (run_type == "iteration" && entry.contains("repetition_index")) {
      // Two benchmarks registered under one name would merge their repetitions silently.
      const int repetition = count_field(entry, "repetition_index", at);
      if (!acc.repetitions_seen.insert(repetition).second) {
        throw InputError(fmt::format("{}: repetition {} of '{}' appears twice: two benchmarks in this file share the name "
                                     "(give them distinct names)", at, repetition, run_name.substr(0, 200)));
      }
    }
    if (run_type == "iteration") {
      acc.result.samples_ms.push_back(real_time * to_ms);
      for (const auto& [k, v] : entry.items()) {
        if (!kGbenchKeys.count(k) && v.is_number()) acc.counters[k].push_back(v.get<double>());
      }
    } else if (run_type == "aggregate") {
      const std::string aggregate = string_or(entry, "aggregate_name");
      acc.aggregate_repetitions = count_field(entry, "repetitions", at);
      if (aggregate == "median") {
        acc.aggregate_median_ms.push_back(real_time * to_ms);
        for (const auto& [k, v] : entry.items()) {
          if (!kGbenchKeys.count(k) && v.is_number()) acc.aggregate_counters[k] = v.get<double>();
        }
      } else if (aggregate == "mean") {
        acc.aggregate_mean_ms = real_time * to_ms;
      } else if (aggregate == "stddev") {
        acc.aggregate_stddev_ms = real_time * to_ms;
      } else if (aggregate == "cv") {
        // gbench reports the CV as a fraction in real_time (aggregate_unit "percentage").
        acc.aggregate_cv = 100.0 * real_time;
      }
    }
  }

  // Two entries that differ only in their timing suffix (one program timing one function two ways)
  // keep it, so they stay apart.
  std::map<std::string, int> uses;
  for (const auto& key : order) ++uses[runs[key].result.name];
  for (const auto& key : order) {
    Accumulator& acc = runs[key];
    Result& r = acc.result;
    if (uses[r.name] > 1) r.name = key;
    if (!r.samples_ms.empty()) {
      const Stats stats = summarize(r.samples_ms);
      r.repetitions = stats.samples;
      r.median_ms = stats.median;
      r.mean_ms = stats.mean;
      r.stddev_ms = stats.stddev;
      r.cv_pct = stats.samples >= 2 && stats.mean > 0.0 ? stats.cv_pct : -1.0;
      for (const auto& [k, values] : acc.counters) r.counters[k] = median(values);
    } else if (!acc.aggregate_median_ms.empty()) {  // --benchmark_report_aggregates_only files
      r.aggregates_only = true;
      r.repetitions = std::max(0, acc.aggregate_repetitions - acc.failed);
      r.median_ms = acc.aggregate_median_ms.front();
      r.mean_ms = std::isfinite(acc.aggregate_mean_ms) ? acc.aggregate_mean_ms : r.median_ms;
      r.stddev_ms = std::isfinite(acc.aggregate_stddev_ms) ? acc.aggregate_stddev_ms : 0.0;
      r.cv_pct = acc.aggregate_cv;
      r.counters = acc.aggregate_counters;
    }
    if (r.samples_ms.empty() && acc.aggregate_median_ms.empty()) {
      r.error = acc.failed > 0 ? acc.failed_reason : "no measurements in the file";
    } else if (acc.failed > 0) {
      r.failed_repetitions = acc.failed;
      r.failed_reason = acc.failed_reason;
    }
    r.context = 0;
    set.results.push_back(std::move(r));
  }
  label_devices(set);
  return set;
}
}  // namespace

ResultSet load_results(const std::vector<std::string>& paths) {
  if (paths.empty()) throw InputError("no results files given");
  ResultSet merged;
  for (const auto& path : paths) {
    ResultSet one = parse_results(io::read_text_file(path), path);
    const size_t offset = merged.contexts.size();
    for (auto& r : one.results) {
      r.context += offset;
      merged.results.push_back(std::move(r));
    }
    for (auto& c : one.contexts) merged.contexts.push_back(std::move(c));
  }
  label_devices(merged);
  return merged;
}

}  // namespace torchprobe::report
