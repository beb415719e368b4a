#include "torchprobe/trace.h"

#include <ATen/record_function.h>
#include <fmt/format.h>
#include <torch/csrc/autograd/profiler_legacy.h>

#include <cstring>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "torchprobe/nvtx.h"

namespace torchprobe::trace {
namespace {

namespace profiler = torch::autograd::profiler;
using torch::profiler::impl::ProfilerConfig;
using torch::profiler::impl::ProfilerState;

// Holds the profiler and the record_function twins of nvtx::Range on while alive; off again on unwinding.
class Session {
 public:
  explicit Session(bool cuda) {
    profiler::enableProfilerLegacy(ProfilerConfig(cuda ? ProfilerState::CUDA : ProfilerState::CPU,
                                                  /*report_input_shapes=*/true));
    nvtx::record_function_ranges(true);
  }
  ~Session() {
    nvtx::record_function_ranges(false);
    if (!stopped_) {
      try {
        (void)profiler::disableProfilerLegacy();
      } catch (...) {  // unwinding already: the first error is the one to report
      }
    }
  }
  profiler::thread_event_lists stop() {
    nvtx::record_function_ranges(false);
    stopped_ = true;
    return profiler::disableProfilerLegacy();
  }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

 private:
  bool stopped_ = false;
};

nlohmann::json shapes_of(const profiler::LegacyEvent& e) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& shape : e.shapes()) out.push_back(shape);
  return out;
}

}  // namespace

std::string record(const std::function<void()>& body, bool cuda) {
  profiler::thread_event_lists lists;
  {
    Session session(cuda);
    body();
    lists = session.stop();
  }
  // Times are relative to the profiler's own start mark, in microseconds.
  const profiler::LegacyEvent* start = nullptr;
  for (const auto& list : lists) {
    for (const auto& e : list) {
      if (start == nullptr && e.kind() == profiler::EventKind::Mark && std::strcmp(e.name(), "__start_profile") == 0) {
        start = &e;
      }
    }
  }
  if (start == nullptr) throw std::runtime_error("the profiler recorded no start mark: no trace");
  nlohmann::json events = nlohmann::json::array();
  const auto user_scope = static_cast<std::uint8_t>(at::RecordScope::USER_SCOPE);
  for (const auto& list : lists) {
    std::vector<const profiler::LegacyEvent*> open;  // this thread's pushed ranges, innermost last
    for (const auto& e : list) {
      if (e.kind() == profiler::EventKind::PushRange) {
        open.push_back(&e);
      } else if (e.kind() == profiler::EventKind::PopRange && !open.empty()) {
        const profiler::LegacyEvent& begin = *open.back();
        open.pop_back();
        const std::string name = begin.name();
        nlohmann::json args = {{"shapes", shapes_of(begin)}};
        if (cuda) {
          try {
            args["cuda_us"] = begin.cudaElapsedUs(e);
          } catch (const std::exception&) {  // an op that launched nothing on the device
          }
        }
        events.push_back({{"name", name},
                          {"cat", begin.scope() == user_scope ? "torchprobe" : name.rfind("aten::", 0) == 0 ? "aten" : "op"},
                          {"ph", "X"},
                          {"ts", start->cpuElapsedUs(begin)},
                          {"dur", begin.cpuElapsedUs(e)},
                          {"pid", 0},
                          {"tid", begin.threadId()},
                          {"args", std::move(args)}});
      }
    }
  }
  return nlohmann::json{{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"}}.dump() + "\n";
}

}  // namespace torchprobe::trace
