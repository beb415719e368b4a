#include "torchprobe/nvtx.h"

#include "torchprobe/config.h"

#ifdef TORCHPROBE_HAS_NVTX
#include <nvtx3/nvToolsExt.h>
#endif

namespace torchprobe::nvtx {

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

Range::Range(const Name& name) noexcept { nvtxDomainRangePushEx(domain(), &name.attributes_->value); }
Range::~Range() { nvtxDomainRangePop(domain()); }
bool enabled() { return true; }

#else

struct Name::Attributes {};
Name::Name(const std::string& text, std::uint32_t) : text_(text) {}
Range::Range(const Name&) noexcept {}
Range::~Range() = default;
bool enabled() { return false; }

#endif

Name::~Name() = default;

}  // namespace torchprobe::nvtx
