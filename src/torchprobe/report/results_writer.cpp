#include "torchprobe/report/results_writer.h"

#include <nlohmann/json.hpp>

namespace torchprobe::report {
namespace {

using ordered_json = nlohmann::ordered_json;

ordered_json entry_object(const Entry& e) {
  ordered_json o = {{"name", e.name},
                    {"run_name", e.name},
                    {"run_type", "iteration"},
                    {"repetitions", e.repetitions},
                    {"repetition_index", e.repetition_index},
                    {"threads", 1},
                    {"iterations", e.iterations},
                    {"real_time", e.time},
                    {"cpu_time", e.time},
                    {"time_unit", e.time_unit}};
  if (!e.error.empty()) {
    o["error_occurred"] = true;
    o["error_message"] = e.error;
  }
  for (const auto& [name, value] : e.counters) o[name] = value;
  return o;
}

// The objects of an array, comma-separated, each indented as in a document written with dump(2).
std::string inside_of(const ordered_json& array) {
  std::string out;
  for (const auto& o : array) {
    if (!out.empty()) out += ",\n";
    std::string text = o.dump(2, ' ', /*ensure_ascii=*/false, ordered_json::error_handler_t::replace);
    std::string indented = "    ";
    for (const char c : text) {
      indented += c;
      if (c == '\n') indented += "    ";
    }
    out += indented;
  }
  return out;
}

}  // namespace

std::string results_document(const ContextEntries& context, const std::vector<Entry>& entries) {
  ordered_json ctx = ordered_json::object();
  for (const auto& [k, v] : context) {
    if (k == "num_cpus") {
      try {
        ctx[k] = std::stoi(v);  // Google Benchmark writes it as a number
      } catch (const std::exception&) {
        ctx[k] = 0;
      }
    } else {
      ctx[k] = v;
    }
  }
  ordered_json doc;
  doc["context"] = ctx;
  doc["benchmarks"] = ordered_json::array();
  for (const auto& e : entries) doc["benchmarks"].push_back(entry_object(e));
  return doc.dump(2, ' ', /*ensure_ascii=*/false, ordered_json::error_handler_t::replace) + "\n";
}

std::string entries_json(const std::vector<Entry>& entries) {
  ordered_json array = ordered_json::array();
  for (const auto& e : entries) array.push_back(entry_object(e));
  return inside_of(array);
}

std::string benchmark_entries(const std::string& document) {
  const ordered_json doc = ordered_json::parse(document, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object()) return "";
  const auto it = doc.find("benchmarks");
  if (it == doc.end() || !it->is_array()) return "";
  return inside_of(*it);
}

}  // namespace torchprobe::report
