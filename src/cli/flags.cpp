#include <fmt/format.h>

#include <algorithm>

#include "commands.h"
#include "torchprobe/input_error.h"
#include "torchprobe/units.h"

namespace torchprobe::cli {

std::int64_t byte_size_flag(const std::string& flag, const std::string& text) {
  const auto bytes = units::parse_bytes(text);
  if (!bytes || *bytes < 1) throw InputError(fmt::format("{}: expected a size like 512MiB or 2GiB, got '{}'", flag, text));
  return *bytes;
}

std::vector<std::string> list_flag(const std::string& flag, const std::string& text) {
  std::vector<std::string> items;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, comma - start);
    if (item.empty()) throw InputError(fmt::format("{}: empty item in '{}'", flag, text));
    if (std::find(items.begin(), items.end(), item) != items.end()) {
      throw InputError(fmt::format("{}: '{}' is listed twice in '{}'", flag, item, text));
    }
    items.push_back(item);
    start = comma + 1;
  }
  return items;
}

}  // namespace torchprobe::cli
