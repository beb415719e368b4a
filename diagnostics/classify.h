#pragma once
// Classifies PyTorch / LibTorch device and memory error messages (the wordings of 0.3 to 2.x, C++ or
// Python, pasted alone, in a traceback or in a whole log) and explains them: which devices, which
// argument, the fix. Matching is linear in the input (RE2): any size, any bytes.
#include <cstddef>
#include <iosfwd>
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
  kNotATensor,       ///< .cuda() / .to() on a Python list, tuple, dict, NumPy array or None: not a tensor
  kStateDictPrefix,  ///< a checkpoint of a DataParallel/DDP model loaded into a plain one, or back ("module.")
  kUnknown
};
/// "device_mismatch", "cuda_unavailable", ... as in the JSON output.
std::string kind_name(ErrorKind kind);

struct Diagnosis {
  ErrorKind kind = ErrorKind::kUnknown;
  /// The error found in the text: the exception's line (the last `XxxError: ...`, LibTorch's what()), lines a
  /// logger wrapped joined back, without log, exception and traceback prefixes; long ones shortened.
  std::string message;
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

/// One distinct error in a log: its diagnosis, the line it first appears on (from 1), how often it appears.
struct LogFinding {
  Diagnosis diagnosis;
  std::size_t line = 0;
  std::size_t count = 0;
};
/// A log lists at most this many distinct errors; later new ones are counted, not listed.
constexpr std::size_t kMaxLogFindings = 1000;
struct LogScan {
  std::vector<LogFinding> findings;  ///< in the order they first appear; errors of known kinds only
  std::size_t lines = 0;             ///< lines read
  std::size_t error_lines = 0;       ///< every error of a known kind seen (where each starts), listed or not
  std::size_t unlisted_error_lines = 0;  ///< of those, the errors not listed: new ones after the listing stopped
  bool listing_stopped = false;      ///< a new distinct error came after kMaxLogFindings were listed
};
/// Reads a whole log (a training run's output, a CI log) line by line and classifies every error in it;
/// the same message seen again counts as the same error. Memory stays bounded by the longest line: after
/// `max_findings` distinct errors, new ones are counted (error_lines, unlisted_error_lines) but not listed.
LogScan scan_log(std::istream& in, std::size_t max_findings = kMaxLogFindings);
/// The listing; its first line says when the listing stopped, and how many error lines it left out.
std::string log_scan_text(const LogScan& scan);
/// {"lines", "error_lines", "distinct_errors" (listed), "listing_stopped_at" (null, or the number listed),
/// "unlisted_error_lines", "errors": per distinct error the fields of diagnosis_json plus "line" and "count"}.
std::string log_scan_json(const LogScan& scan, int indent = 2);

/// A message's first line without the dispatcher's list of every backend an op has (replaced by a short note).
/// raw_message (diagnostics/exception_message.h, LibTorch) applies it to a caught exception.
std::string without_backend_list(const std::string& first_line);

std::string diagnosis_text(const Diagnosis& d);
/// {"kind", "message", "devices", "argument" (string or null), "op", "explanation", "fix", "fix_python"}; for
/// out-of-memory kinds also "confidence" and "allocator", and with numbers "memory": {requested_bytes, total_bytes,
/// free_bytes, allocated_bytes, reserved_bytes, process_in_use_bytes (each null when absent), fragmentation}
/// Text that is not valid UTF-8 is written with U+FFFD in its place: the output is always valid JSON.
std::string diagnosis_json(const Diagnosis& d, int indent = 2);

/// The patterns of the classifier and of the OOM parser that RE2 rejects, each with RE2's reason (empty when
/// all compile): for the tests, since a rejected pattern would silently match nothing.
std::vector<std::string> invalid_patterns();

}  // namespace torchprobe::diagnostics
