#pragma once
// Classifies PyTorch / LibTorch device and memory error messages (1.13 and 2.x wordings, C++ or
// Python, with or without backtraces) and explains them: which devices, which argument, the fix.
#include <optional>
#include <string>
#include <vector>

#include "diagnostics/oom.h"

namespace torchprobe::diagnostics {

enum class ErrorKind {
  kDeviceMismatch,
  kCudaUnavailable,
  kInvalidDevice,
  kMetaTensor,
  kOutOfMemoryGpu,
  kOutOfMemoryCpu,
  kUnknown
};
/// "device_mismatch", "cuda_unavailable", ... as in the JSON output.
std::string kind_name(ErrorKind kind);

struct Diagnosis {
  ErrorKind kind = ErrorKind::kUnknown;
  std::string message;               ///< the error line found in the text, without prefixes or backtrace
  std::vector<std::string> devices;  ///< devices the message names, in order ("cuda:0", "cpu", "cuda")
  std::optional<std::string> argument;  ///< the argument the message names (mat1, weight, self, ...)
  std::string op;                       ///< the op the message names, when it does (addmm, nll_loss_forward)
  std::string explanation;
  std::string fix_cpp, fix_python;
  OomFacts memory;  ///< out-of-memory kinds: the numbers the message gives
  /// Out-of-memory kinds: "certain" when the message itself says memory ran out, "likely" for status codes
  /// that usually mean it but have other causes too (CUBLAS_STATUS_NOT_INITIALIZED at cublasCreate,
  /// CUDNN_STATUS_INTERNAL_ERROR, ...); "" for other kinds.
  std::string confidence;
  /// Out-of-memory kinds: which allocator or library failed ("LibTorch CUDA caching allocator", "cuBLAS",
  /// "cuDNN", "NCCL", "CUDA runtime", "LibTorch CPU allocator", "OpenBLAS", ...).
  std::string allocator;
};

/// Finds and classifies the error in `text`. Unrecognised text gives kind kUnknown.
Diagnosis explain_error(const std::string& text);

/// The first line of an exception's message without LibTorch's C++ backtrace (and without the
/// dispatcher's list of every backend an op has).
std::string raw_message(const std::exception& e);

std::string diagnosis_text(const Diagnosis& d);
/// {"kind", "message", "devices", "argument" (string or null), "op", "explanation", "fix", "fix_python"}; for
/// out-of-memory kinds also "confidence" and "allocator", and with numbers "memory": {requested_bytes, total_bytes,
/// free_bytes, allocated_bytes, reserved_bytes, process_in_use_bytes (each null when absent), fragmentation}
std::string diagnosis_json(const Diagnosis& d, int indent = 2);

}  // namespace torchprobe::diagnostics
