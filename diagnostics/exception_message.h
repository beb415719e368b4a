#pragma once
// What torchprobe reads from a caught exception (torchprobe::diagnostics, LibTorch: it knows c10::Error): the message
// explain_error classifies, and whether the exception is an out-of-memory error and whose.
#include <exception>
#include <string>

namespace torchprobe::diagnostics {

/// The first line of an exception's message without LibTorch's C++ backtrace (c10::Error's message, never
/// its symbolized frames) and without the dispatcher's list of every backend an op has.
std::string raw_message(const std::exception& e);

/// The allocator that failed when `e` is an out-of-memory error, "" when it is not. c10::OutOfMemoryError is the
/// CUDA caching allocator's and std::bad_alloc operator new's; any other error is one when explain_error calls its
/// message (without the backtrace) an out-of-memory for certain, and names the allocator as its rule does: the CPU
/// allocator's "can't allocate memory", CUBLAS_STATUS_ALLOC_FAILED, CUDNN_STATUS_ALLOC_FAILED, "CUDA error: out of
/// memory", NCCL's, ... One that is only likely (a status code that often means it) is not: the largest-batch
/// search would read another fault as "does not fit".
std::string oom_allocator(const std::exception& e);
inline bool is_out_of_memory(const std::exception& e) { return !oom_allocator(e).empty(); }

}  // namespace torchprobe::diagnostics
