// A minimal NVTX injection library for the tests: NVTX loads it when NVTX_INJECTION64_PATH names
// it, and it records every range pushed and popped in any domain as text lines
// ("push <domain> <name>" / "pop <domain>"; the default domain reads "<default>"), readable
// through torchprobe_nvtx_log(). Every NVTX instance in the process (ours, LibTorch's) calls
// InitializeInjectionNvtx2 with its own tables, so all of them report here.
#include <nvtx3/nvToolsExt.h>

#include <deque>
#include <mutex>
#include <string>

namespace {

struct Domain {
  std::string name;
};

std::mutex g_mutex;
std::deque<Domain> g_domains;       // stable addresses: handles point into these
std::deque<std::string> g_strings;  // registered strings
std::string g_log;
thread_local int t_depth = 0;

std::string domain_name(nvtxDomainHandle_t domain) {
  return domain ? reinterpret_cast<const Domain*>(domain)->name : std::string("<default>");
}

nvtxDomainHandle_t NVTX_API domain_create(const char* name) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_domains.push_back({name ? name : ""});
  return reinterpret_cast<nvtxDomainHandle_t>(&g_domains.back());
}

nvtxStringHandle_t NVTX_API register_string(nvtxDomainHandle_t, const char* text) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_strings.push_back(text ? text : "");
  return reinterpret_cast<nvtxStringHandle_t>(&g_strings.back());
}

int NVTX_API range_push(nvtxDomainHandle_t domain, const nvtxEventAttributes_t* attributes) {
  std::string message = "<no message>";
  if (attributes && attributes->messageType == NVTX_MESSAGE_TYPE_REGISTERED && attributes->message.registered) {
    message = *reinterpret_cast<const std::string*>(attributes->message.registered);
  } else if (attributes && attributes->messageType == NVTX_MESSAGE_TYPE_ASCII && attributes->message.ascii) {
    message = attributes->message.ascii;
  }
  std::lock_guard<std::mutex> lock(g_mutex);
  g_log += "push " + domain_name(domain) + " " + message + "\n";
  return t_depth++;
}

int NVTX_API range_pop(nvtxDomainHandle_t domain) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_log += "pop " + domain_name(domain) + "\n";
  return --t_depth;
}

// The default domain (what LibTorch's profiler uses in NVTX mode).
int NVTX_API default_push_a(const char* message) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_log += std::string("push <default> ") + (message ? message : "") + "\n";
  return t_depth++;
}
int NVTX_API default_push_ex(const nvtxEventAttributes_t* attributes) { return range_push(nullptr, attributes); }
int NVTX_API default_pop() { return range_pop(nullptr); }

}  // namespace

extern "C" {

/// Called by NVTX on its first use in the process.
__attribute__((visibility("default"))) int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_export_table) {
  const auto* callbacks = static_cast<const NvtxExportTableCallbacks*>(get_export_table(NVTX_ETID_CALLBACKS));
  if (callbacks == nullptr) return 0;
  NvtxFunctionTable table = nullptr;
  unsigned int size = 0;
  if (!callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &table, &size) || table == nullptr) return 0;
  if (size <= NVTX_CBID_CORE2_DomainCreateA) return 0;
  *table[NVTX_CBID_CORE2_DomainCreateA] = reinterpret_cast<NvtxFunctionPointer>(&domain_create);
  *table[NVTX_CBID_CORE2_DomainRegisterStringA] = reinterpret_cast<NvtxFunctionPointer>(&register_string);
  *table[NVTX_CBID_CORE2_DomainRangePushEx] = reinterpret_cast<NvtxFunctionPointer>(&range_push);
  *table[NVTX_CBID_CORE2_DomainRangePop] = reinterpret_cast<NvtxFunctionPointer>(&range_pop);
  NvtxFunctionTable core = nullptr;
  unsigned int core_size = 0;
  if (callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &core, &core_size) && core != nullptr &&
      core_size > NVTX_CBID_CORE_RangePop) {
    *core[NVTX_CBID_CORE_RangePushA] = reinterpret_cast<NvtxFunctionPointer>(&default_push_a);
    *core[NVTX_CBID_CORE_RangePushEx] = reinterpret_cast<NvtxFunctionPointer>(&default_push_ex);
    *core[NVTX_CBID_CORE_RangePop] = reinterpret_cast<NvtxFunctionPointer>(&default_pop);
  }
  return 1;
}

/// Everything recorded so far, one event per line.
__attribute__((visibility("default"))) const char* torchprobe_nvtx_log() {
  static thread_local std::string copy;
  std::lock_guard<std::mutex> lock(g_mutex);
  copy = g_log;
  return copy.c_str();
}

__attribute__((visibility("default"))) void torchprobe_nvtx_clear() {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_log.clear();
}

}  // extern "C"
