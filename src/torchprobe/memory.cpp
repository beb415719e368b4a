#include "torchprobe/memory.h"

#include <fstream>
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

}  // namespace torchprobe
