#pragma once
// The numbers in an out-of-memory message (CUDA caching allocator of LibTorch 1.13 and 2.x, the
// CPU allocator) and what they say: how much was asked for, what was free, whether it is
// fragmentation.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace torchprobe::diagnostics {

struct OomFacts {
  std::optional<std::int64_t> requested;  ///< "Tried to allocate 2.00 GiB" / "you tried to allocate N bytes"
  std::optional<std::int64_t> total;      ///< the GPU's total capacity
  std::optional<std::int64_t> free;       ///< free on the GPU at the failure
  std::optional<std::int64_t> allocated;  ///< bytes in live tensors (allocated by PyTorch)
  std::optional<std::int64_t> reserved;   ///< bytes the caching allocator holds (allocated + cached)
  std::optional<std::int64_t> process_in_use;  ///< 2.x: this process's memory in use, non-PyTorch included
  bool any() const { return requested || total || free || allocated || reserved; }
};

/// Reads the numbers out of an OOM message; absent ones stay empty. Sizes like "20.00 MiB".
OomFacts parse_oom(const std::string& message);

/// The plain-words reading of the numbers, e.g. "asked for 2.00 GiB; 1.19 GiB free of 15.78 GiB;
/// tensors hold 12.35 GiB, the allocator 13.10 GiB (0.75 GiB cached but unused) -> ...", ending
/// in a verdict: fragmentation (cached-but-unused >= the request: PYTORCH_CUDA_ALLOC_CONF
/// expandable_segments / max_split_size_mb) or a working set larger than the device.
std::string explain_oom_facts(const OomFacts& facts, bool gpu);

/// True when the cached-but-unallocated bytes alone would have covered the request.
bool looks_fragmented(const OomFacts& facts);

/// The parser's patterns that RE2 rejects, each with RE2's reason (empty when all compile): for the tests.
std::vector<std::string> oom_pattern_errors();

}  // namespace torchprobe::diagnostics
