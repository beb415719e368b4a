#pragma once
#include <cstdint>

namespace torchprobe {

/// Resident set size of this process now (VmRSS), in bytes; 0 where /proc is unavailable.
std::int64_t current_rss_bytes();
/// Peak resident set size (VmHWM) since start or the last reset_peak_rss(), in bytes.
std::int64_t peak_rss_bytes();
/// Resets the kernel's peak-RSS mark (Linux /proc/self/clear_refs); false if not supported.
bool reset_peak_rss();

}  // namespace torchprobe
