// libFuzzer target: the out-of-memory message parser (sizes, free and total memory, the allocator).
#include <cstddef>
#include <cstdint>
#include <string>

#include "diagnostics/oom.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const auto facts = torchprobe::diagnostics::parse_oom(text);
  (void)torchprobe::diagnostics::explain_oom_facts(facts, /*gpu=*/size % 2 == 0);
  return 0;
}
