#include "torchprobe/memory.h"

#include <malloc.h>
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
  std::ofstream out("/proc/self/clear_refs");
  out << "5";  // "5" resets VmHWM to the current RSS (Linux >= 4.0)
  out.flush();
  return static_cast<bool>(out);
}

std::int64_t host_heap_bytes() {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
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
  limit.rlim_cur = limit.rlim_max = static_cast<rlim_t>(cap);
  if (setrlimit(RLIMIT_AS, &limit) != 0) {
    throw std::runtime_error(std::string("setrlimit(RLIMIT_AS) failed: ") + std::strerror(errno));
  }
  return cap;
}

}  // namespace torchprobe
