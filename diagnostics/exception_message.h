#pragma once
// What explain_error reads from a caught exception (torchprobe::diagnostics, LibTorch: it knows c10::Error).
#include <exception>
#include <string>

namespace torchprobe::diagnostics {

/// The first line of an exception's message without LibTorch's C++ backtrace (c10::Error's message, never
/// its symbolized frames) and without the dispatcher's list of every backend an op has.
std::string raw_message(const std::exception& e);

}  // namespace torchprobe::diagnostics
