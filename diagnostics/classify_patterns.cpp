#include "diagnostics/classify_patterns.h"

#include "diagnostics/re2_options.h"

namespace torchprobe::diagnostics::detail {

// ---- Patterns ---------------------------------------------------------------------------------------------
Registry& registry() {
  static Registry r;
  return r;
}
const RE2& compile(const std::string& pattern) {
  Registry& r = registry();
  const std::lock_guard<std::mutex> lock(r.mutex);
  return r.patterns.emplace_back(pattern, pattern_options());
}

bool contains(const std::string& text, const char* what) { return text.find(what) != std::string::npos; }

}  // namespace torchprobe::diagnostics::detail
