#pragma once
// The CPU memory probe runs in a child process, so the real allocator error appears under an
// address-space limit (setrlimit RLIMIT_AS) without endangering the caller. The child announces each
// trial on stdout as it starts and as it ends. Memory does not only run out in LibTorch's allocator:
// OpenBLAS, for one, prints "OpenBLAS: malloc failed in gemm_driver" and exits instead of raising.
// The parent then records that trial as an out-of-memory error of that library and starts the child
// again, which replays the trials so far and goes on with the search.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "diagnostics/memory_probe.h"

namespace torchprobe::diagnostics {

/// What the child needs (the hidden `torchprobe diagnose memory --child` flags).
struct ChildOptions {
  std::string model = "net";
  std::int64_t budget_bytes = 0;  ///< address space the child may allocate beyond what it has mapped when ready
  SearchOptions search;
  std::string resume_path;  ///< JSON of the trials (and recovery batches) an earlier child already ran; "" for none
  /// Progress lines on stderr, as the parent's own probe prints them.
  std::function<void(const Trial&)> on_trial;
};

/// The child's side: oneDNN off (under the limit its JIT crashes instead of raising, and its
/// per-shape code caches would take budget for good), the probe in this process with the limit set
/// once the step is ready, and on stdout one JSON event per line: {"event": "trial_start", "batch"},
/// {"event": "trial", "trial"}, {"event": "recovery_start", "batch"}, then {"event": "report", "report"}.
/// Returns the exit code.
int run_memory_child(const ChildOptions& options);

/// A library that ended a process on a failed allocation, recognised in what the process printed.
struct LibraryOom {
  std::string allocator;  ///< e.g. "OpenBLAS (gemm_driver)"
  std::string message;    ///< the line it printed
};
/// OpenBLAS's "OpenBLAS: malloc failed in <function>" (stderr, then exit(1)), and a std::bad_alloc
/// that escaped to std::terminate. Not OpenBLAS's "too many memory regions": that is its thread limit.
std::optional<LibraryOom> find_library_oom(const std::string& output);

/// The parent's side: runs `exe args` (the child side, e.g. the torchprobe CLI's `diagnose memory
/// --child ...`), forwarding its stderr, and returns its report. When a library ends the child in the
/// middle of a trial (or of a recovery batch) with an out-of-memory error, that batch is recorded as
/// out of memory in that library and a new child goes on (`--child-resume FILE` is appended to
/// `args`), at most `max_restarts` times. Throws std::runtime_error naming the exit status or signal
/// and the child's last lines when it fails otherwise. The child dies with this process.
ProbeReport run_probe_in_child(const std::string& exe, const std::vector<std::string>& args, int max_restarts = 6);

}  // namespace torchprobe::diagnostics
