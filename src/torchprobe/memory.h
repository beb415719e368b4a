#pragma once
#include <cstdint>

namespace torchprobe {

/// Resident set size of this process now (VmRSS), in bytes; 0 where /proc is unavailable.
std::int64_t current_rss_bytes();
/// Peak resident set size (VmHWM) since start or the last reset_peak_rss(), in bytes.
std::int64_t peak_rss_bytes();
/// Resets the kernel's peak-RSS mark (Linux /proc/self/clear_refs); false if not supported. Hands the
/// heap's free pages back first (malloc_trim), so that what is measured after the reset counts even
/// where it reuses memory that earlier work freed.
bool reset_peak_rss();
/// Bytes in use on the C heap now (glibc mallinfo2: in-use chunks plus mmapped ones): every
/// malloc/new of the process, tensor storage and autograd graph nodes alike; 0 where unknown.
std::int64_t host_heap_bytes();
/// Address space this process has mapped now (VmSize), in bytes.
std::int64_t virtual_memory_bytes();
/// Lets this process allocate at most `budget_bytes` more address space than it has mapped now
/// (setrlimit RLIMIT_AS), so allocations beyond it fail with ENOMEM instead of waking the kernel's
/// OOM killer. First makes glibc hand freed memory back to the system at once (a fixed mmap
/// threshold of 64 KiB, trimming, malloc_trim), so the cap tracks live memory rather than freed
/// blocks the heap kept. For a process of its own (a child). Only the soft limit is lowered, so
/// lift_address_space_cap() can end it. Returns the cap; throws std::runtime_error.
std::int64_t cap_address_space(std::int64_t budget_bytes);
/// Ends cap_address_space()'s cap (the soft limit back to the hard one): for what the process does after
/// the capped work, e.g. writing its report, or a sanitizer's leak check at exit, which maps memory of its own.
void lift_address_space_cap();

}  // namespace torchprobe
