#include "torchprobe/flags.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "torchprobe/input_error.h"
#include "torchprobe/strings.h"
#include "torchprobe/units.h"

namespace torchprobe {

std::int64_t byte_size_flag(const std::string& flag, const std::string& text, std::int64_t max) {
  const auto bytes = units::parse_bytes(text);
  if (!bytes) {
    const bool digits = !text.empty() && std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isdigit(c); });
    if (digits) throw InputError(fmt::format("{}: {} bytes is too large", flag, text.substr(0, 40)));
    throw InputError(fmt::format("{}: expected a size like 512MiB or 2GiB, got '{}'", flag, text.substr(0, 80)));
  }
  if (*bytes < 1) throw InputError(fmt::format("{}: the size must be above 0, got '{}'", flag, text));
  if (*bytes > max) {
    throw InputError(fmt::format("{}: {} is above the largest size this flag takes, {}", flag, text.substr(0, 40),
                                 units::format_bytes(static_cast<double>(max))));
  }
  return *bytes;
}

void check_list_items(const std::string& flag, const std::vector<std::string>& items, const std::string& text) {
  for (auto item = items.begin(); item != items.end(); ++item) {
    if (item->empty()) throw InputError(fmt::format("{}: empty item in '{}'", flag, text.substr(0, 200)));
    if (std::find(items.begin(), item, *item) != item) {
      throw InputError(fmt::format("{}: '{}' is listed twice in '{}'", flag, item->substr(0, 80), text.substr(0, 200)));
    }
  }
}

std::vector<std::string> list_flag(const std::string& flag, const std::string& text) {
  if (text.empty()) throw InputError(fmt::format("{}: empty list", flag));
  std::vector<std::string> items = split(text, ',');
  check_list_items(flag, items, text);
  return items;
}

std::vector<std::int64_t> int_list_flag(const std::string& flag, const std::string& text, std::int64_t min,
                                        std::int64_t max) {
  std::vector<std::int64_t> values;
  for (const auto& item : list_flag(flag, text)) {
    std::int64_t value = 0;
    const char* end = item.data() + item.size();
    const auto [ptr, ec] = std::from_chars(item.data() + (item[0] == '+' ? 1 : 0), end, value);
    if (ptr != end || (ec != std::errc() && ec != std::errc::result_out_of_range)) {
      throw InputError(fmt::format("{}: '{}' is not a whole number", flag, item.substr(0, 80)));
    }
    if (ec == std::errc::result_out_of_range || value < min || value > max) {
      throw InputError(fmt::format("{}: {} is out of range ({} to {})", flag, item.substr(0, 40), min, max));
    }
    if (std::find(values.begin(), values.end(), value) != values.end()) {
      throw InputError(fmt::format("{}: {} is listed twice in '{}'", flag, value, text.substr(0, 200)));
    }
    values.push_back(value);
  }
  return values;
}

}  // namespace torchprobe
