#pragma once
#include <stdexcept>

namespace torchprobe {

/// Bad input from the user: a flag, a device string, a data or results file. The CLI exits 2 on it.
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace torchprobe
