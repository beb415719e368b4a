#include "torchprobe/report/traces.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include "torchprobe/escape.h"
#include "torchprobe/input_error.h"
#include "torchprobe/report/table.h"

namespace torchprobe::report {
namespace {

struct Event {
  std::string name;
  bool phase = false;
  double ts = 0.0, dur = 0.0, inside = 0.0;  // microseconds; inside: the durations directly within it
  std::string tid;
};

// A path as a Markdown link target: every byte outside [A-Za-z0-9._~/-] percent-encoded, so no space,
// parenthesis or bracket ends the link.
std::string link_target(const std::string& path) {
  std::string out;
  for (const char c : path) {
    const auto u = static_cast<unsigned char>(c);
    const bool plain = (u >= 'a' && u <= 'z') || (u >= 'A' && u <= 'Z') || (u >= '0' && u <= '9') || c == '.' ||
                       c == '_' || c == '~' || c == '/' || c == '-';
    out += plain ? std::string(1, c) : fmt::format("%{:02X}", u);
  }
  return out;
}

}  // namespace

TraceSummary summarize_trace(const std::string& benchmark, const std::string& file, const std::string& text, size_t top) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(fmt::format("{}: not a JSON trace: {}", file, e.what()));
  }
  if (!doc.is_object() || !doc.contains("traceEvents") || !doc["traceEvents"].is_array()) {
    throw InputError(fmt::format("{}: not a Chrome trace (no \"traceEvents\" array)", file));
  }
  std::map<std::string, std::vector<Event>> by_thread;
  for (const auto& e : doc["traceEvents"]) {
    if (!e.is_object() || e.value("ph", "") != "X") continue;
    const auto ts = e.find("ts"), dur = e.find("dur"), name = e.find("name");
    if (ts == e.end() || dur == e.end() || name == e.end() || !ts->is_number() || !dur->is_number() || !name->is_string()) {
      throw InputError(fmt::format("{}: a complete event without a numeric ts and dur and a name", file));
    }
    Event ev{name->get<std::string>(), e.value("cat", "") == "torchprobe", ts->get<double>(), dur->get<double>(), 0.0,
             e.contains("tid") ? e["tid"].dump() : ""};
    by_thread[ev.tid].push_back(std::move(ev));
  }
  TraceSummary s{benchmark, file, 0, 0.0, {}};
  std::map<std::string, OpTime> ops;
  double phase_us = 0.0;
  for (auto& [tid, events] : by_thread) {
    // Outer events first where two start together, so nesting follows time.
    std::sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
      return a.ts != b.ts ? a.ts < b.ts : a.dur > b.dur;
    });
    std::vector<Event*> open;
    for (auto& ev : events) {
      while (!open.empty() && open.back()->ts + open.back()->dur <= ev.ts) open.pop_back();
      if (!open.empty()) open.back()->inside += ev.dur;
      open.push_back(&ev);
    }
    for (const auto& ev : events) {
      if (ev.phase) {
        phase_us += ev.dur;
        s.steps += ev.name == "forward" ? 1 : 0;
        continue;
      }
      OpTime& op = ops[ev.name];
      op.name = ev.name;
      op.self_ms_per_step += std::max(0.0, ev.dur - ev.inside) / 1e3;
      op.calls_per_step += 1.0;
    }
  }
  if (s.steps == 0) throw InputError(fmt::format("{}: no training phase in this trace (a torchprobe-bench --trace file?)", file));
  s.step_ms = phase_us / 1e3 / s.steps;
  for (auto& [name, op] : ops) {
    op.self_ms_per_step /= s.steps;
    op.calls_per_step /= s.steps;
    s.top.push_back(op);
  }
  std::sort(s.top.begin(), s.top.end(), [](const OpTime& a, const OpTime& b) {
    return a.self_ms_per_step != b.self_ms_per_step ? a.self_ms_per_step > b.self_ms_per_step : a.name < b.name;
  });
  if (s.top.size() > top) s.top.resize(top);
  return s;
}

std::string traces_markdown(const std::vector<TraceSummary>& traces) {
  if (traces.empty()) return "";
  std::string out = "\n## Where a step's time goes\n\nFrom LibTorch's profiler (`torchprobe-bench --trace`), after the timed "
                    "run: the ops with the most self time per training step (time in the op itself, not in the ops it "
                    "called), against the step's phases. Open a trace in ui.perfetto.dev for the whole timeline.\n";
  for (const auto& t : traces) {
    out += fmt::format("\n### {}\n\n{} step{}, {} per step in its phases; trace: [{}]({})\n\n", markdown_text(t.benchmark),
                       t.steps, t.steps == 1 ? "" : "s", format_duration(t.step_ms), markdown_text(t.file),
                       link_target(t.file));
    Table table{{"op", "calls per step", "self time per step", "share of the step"}, {false, true, true, true}, {}};
    for (const auto& op : t.top) {
      table.add({markdown_text(op.name), fmt::format("{:g}", op.calls_per_step), format_duration(op.self_ms_per_step),
                 fmt::format("{:.1f}%", t.step_ms > 0.0 ? 100.0 * op.self_ms_per_step / t.step_ms : 0.0)});
    }
    out += table.markdown();
  }
  return out;
}

}  // namespace torchprobe::report
