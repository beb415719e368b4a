#include "diagnostics/exception_message.h"

#include <c10/util/Exception.h>

#include <new>

#include "diagnostics/classify.h"
#include "torchprobe/error.h"

namespace torchprobe::diagnostics {

std::string raw_message(const std::exception& e) { return without_backend_list(short_message(e)); }

std::string oom_allocator(const std::exception& e) {
  if (dynamic_cast<const c10::OutOfMemoryError*>(&e) != nullptr) return "LibTorch CUDA caching allocator";
  if (dynamic_cast<const std::bad_alloc*>(&e) != nullptr) return "C++ operator new";
  const Diagnosis d = explain_error(message_without_backtrace(e));
  const bool oom = d.kind == ErrorKind::kOutOfMemoryGpu || d.kind == ErrorKind::kOutOfMemoryCpu;
  if (!oom || d.confidence != "certain") return "";
  return d.allocator.empty() ? "an allocator the message does not name" : d.allocator;
}

}  // namespace torchprobe::diagnostics
