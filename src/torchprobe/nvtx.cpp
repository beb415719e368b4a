#include "torchprobe/nvtx.h"

#include <ATen/record_function.h>

#include <atomic>
#include <vector>

#include "torchprobe/config.h"

#ifdef TORCHPROBE_HAS_NVTX
#include <nvtx3/nvToolsExt.h>
#endif

namespace torchprobe::nvtx {

namespace {
std::atomic<bool> g_record_function{false};
// The open record_function ranges of this thread, innermost last (Ranges nest, so they close in order).
thread_local std::vector<std::unique_ptr<at::RecordFunction>> t_open;

bool open_record_function(const Name& name) noexcept {
  if (!g_record_function.load(std::memory_order_relaxed)) return false;
  try {
    auto range = std::make_unique<at::RecordFunction>(at::RecordScope::USER_SCOPE);
    if (range->isActive()) range->before(name.text().c_str(), c10::ArrayRef<const c10::IValue>{});
    t_open.push_back(std::move(range));
    return true;
  } catch (...) {  // a profiler that cannot record is no reason to fail the step
    return false;
  }
}

void close_record_function(bool opened) noexcept {
  if (opened && !t_open.empty()) t_open.pop_back();  // its destructor ends the range
}
}  // namespace

void record_function_ranges(bool on) { g_record_function.store(on); }

#ifdef TORCHPROBE_HAS_NVTX

namespace {
nvtxDomainHandle_t domain() {
  static const nvtxDomainHandle_t handle = nvtxDomainCreateA("torchprobe");
  return handle;
}
}  // namespace

struct Name::Attributes {
  nvtxEventAttributes_t value{};
};

Name::Name(const std::string& text, std::uint32_t argb) : text_(text), attributes_(std::make_unique<Attributes>()) {
  nvtxEventAttributes_t& a = attributes_->value;
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.colorType = NVTX_COLOR_ARGB;
  a.color = argb;
  a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  a.message.registered = nvtxDomainRegisterStringA(domain(), text_.c_str());
}

Range::Range(const Name& name) noexcept : recorded_(open_record_function(name)) {
  nvtxDomainRangePushEx(domain(), &name.attributes_->value);
}
Range::~Range() {
  nvtxDomainRangePop(domain());
  close_record_function(recorded_);
}
bool enabled() { return true; }

#else

struct Name::Attributes {};
Name::Name(const std::string& text, std::uint32_t) : text_(text) {}
Range::Range(const Name& name) noexcept : recorded_(open_record_function(name)) {}
Range::~Range() { close_record_function(recorded_); }
bool enabled() { return false; }

#endif

Name::~Name() = default;

}  // namespace torchprobe::nvtx
