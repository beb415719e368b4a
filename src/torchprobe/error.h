#pragma once
#include <c10/util/Exception.h>

#include <exception>
#include <stdexcept>
#include <string>

namespace torchprobe {

/// Bad input from the user: a flag, a device string, a data file. The CLI exits 2 on it.
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// First line of an exception's message, without LibTorch's C++ backtrace.
inline std::string short_message(const std::exception& e) {
  std::string text = e.what();
  if (const auto* c10_error = dynamic_cast<const c10::Error*>(&e)) text = c10_error->what_without_backtrace();
  const auto newline = text.find('\n');
  return newline == std::string::npos ? text : text.substr(0, newline);
}

}  // namespace torchprobe
