// libFuzzer target: `torchprobe explain`'s classifier on arbitrary text (any length, any bytes).
#include <cstddef>
#include <cstdint>
#include <string>

#include "diagnostics/classify.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  (void)torchprobe::diagnostics::explain_error(text);
  return 0;
}
