#include "torchprobe/memory.h"

#include <malloc.h>
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TORCHPROBE_ASAN 1
#endif
#endif
#if !defined(TORCHPROBE_ASAN) && defined(__SANITIZE_ADDRESS__)
#define TORCHPROBE_ASAN 1
#endif
#if defined(TORCHPROBE_ASAN)
#include <sanitizer/allocator_interface.h>
#else
#define TORCHPROBE_ASAN 0
#endif
#include <sys/resource.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <sstream>
#include <string>

namespace torchprobe {
namespace {

std::int64_t status_field_kib(const std::string& key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.compare(0, key.size(), key) == 0 && line.size() > key.size() && line[key.size()] == ':') {
      std::istringstream fields(line.substr(key.size() + 1));
      std::int64_t kib = 0;
      fields >> kib;
      return kib;
    }
  }
  return 0;
}

}  // namespace

std::int64_t current_rss_bytes() { return status_field_kib("VmRSS") * 1024; }
std::int64_t peak_rss_bytes() { return status_field_kib("VmHWM") * 1024; }

bool reset_peak_rss() {
  // Free heap pages first: memory that later work reuses from the heap then counts as growth, as a
  // fresh mapping would, instead of hiding in pages that earlier work left resident.
  malloc_trim(0);
  std::ofstream out("/proc/self/clear_refs");
  out << "5";  // "5" resets VmHWM to the current RSS (Linux >= 4.0)
  out.flush();
  return static_cast<bool>(out);
}

std::int64_t host_heap_bytes() {
#if TORCHPROBE_ASAN
  // ASan serves every malloc from its own allocator: glibc's counters would stay flat.
  return static_cast<std::int64_t>(__sanitizer_get_current_allocated_bytes());
#elif defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
  const struct mallinfo2 info = mallinfo2();
  return static_cast<std::int64_t>(info.uordblks + info.hblkhd);
#else
  return 0;
#endif
}

std::int64_t virtual_memory_bytes() { return status_field_kib("VmSize") * 1024; }

std::int64_t cap_address_space(std::int64_t budget_bytes) {
  mallopt(M_MMAP_THRESHOLD, 64 * 1024);  // a fixed threshold also stops glibc from raising it on its own
  mallopt(M_TRIM_THRESHOLD, 1024 * 1024);
  mallopt(M_ARENA_MAX, 1);  // no 64 MiB arena reservations for other threads or after a failed allocation
  malloc_trim(0);
  const std::int64_t cap = virtual_memory_bytes() + budget_bytes;
  struct rlimit limit {};
  if (getrlimit(RLIMIT_AS, &limit) != 0) {
    throw std::runtime_error(std::string("getrlimit(RLIMIT_AS) failed: ") + std::strerror(errno));
  }
  limit.rlim_cur = static_cast<rlim_t>(cap);
  if (limit.rlim_max != RLIM_INFINITY && limit.rlim_cur > limit.rlim_max) limit.rlim_cur = limit.rlim_max;
  if (setrlimit(RLIMIT_AS, &limit) != 0) {
    throw std::runtime_error(std::string("setrlimit(RLIMIT_AS) failed: ") + std::strerror(errno));
  }
  return static_cast<std::int64_t>(limit.rlim_cur);
}

void lift_address_space_cap() {
  struct rlimit limit {};
  if (getrlimit(RLIMIT_AS, &limit) == 0) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_AS, &limit);
  }
}

}  // namespace torchprobe
