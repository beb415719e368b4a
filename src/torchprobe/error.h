#pragma once
#include <c10/util/Exception.h>

#include <exception>
#include <stdexcept>
#include <string>

#include "torchprobe/input_error.h"

namespace torchprobe {

/// First line of an exception's message, without LibTorch's C++ backtrace.
inline std::string short_message(const std::exception& e) {
  std::string text = e.what();
  if (const auto* c10_error = dynamic_cast<const c10::Error*>(&e)) text = c10_error->what_without_backtrace();
  const auto newline = text.find('\n');
  return newline == std::string::npos ? text : text.substr(0, newline);
}

}  // namespace torchprobe
