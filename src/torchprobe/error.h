#pragma once
#include <c10/util/Exception.h>

#include <exception>
#include <stdexcept>
#include <string>

#include "torchprobe/input_error.h"
#include "torchprobe/strings.h"

namespace torchprobe {

/// An exception's message, without LibTorch's C++ backtrace (c10::Error's what() appends it).
inline std::string message_without_backtrace(const std::exception& e) {
  if (const auto* c10_error = dynamic_cast<const c10::Error*>(&e)) return c10_error->what_without_backtrace();
  return e.what();
}

/// First line of an exception's message, without LibTorch's C++ backtrace.
inline std::string short_message(const std::exception& e) { return first_line(message_without_backtrace(e)); }

}  // namespace torchprobe
