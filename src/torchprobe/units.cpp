#include "torchprobe/units.h"

#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <cstdlib>

namespace torchprobe::units {

std::optional<std::int64_t> parse_bytes(const std::string& text) {
  size_t i = 0;
  const auto skip_spaces = [&] {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  };
  skip_spaces();
  const size_t number_start = i;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
  if (i == number_start) return std::nullopt;
  if (i < text.size() && text[i] == '.') {
    ++i;
    const size_t decimals = i;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
    if (i == decimals) return std::nullopt;
  }
  const double value = std::strtod(text.substr(number_start, i - number_start).c_str(), nullptr);
  skip_spaces();
  const size_t unit_start = i;
  while (i < text.size() && std::isalpha(static_cast<unsigned char>(text[i]))) ++i;
  const std::string unit = text.substr(unit_start, i - unit_start);
  skip_spaces();
  if (i != text.size()) return std::nullopt;
  double scale = 0.0;
  if (unit.empty() || unit == "B" || unit == "bytes") scale = 1.0;
  if (unit == "KiB") scale = 1024.0;
  if (unit == "MiB") scale = 1024.0 * 1024;
  if (unit == "GiB") scale = 1024.0 * 1024 * 1024;
  if (unit == "TiB") scale = 1024.0 * 1024 * 1024 * 1024;
  if (scale == 0.0) return std::nullopt;
  const double bytes = std::round(value * scale);
  if (!std::isfinite(bytes) || bytes >= 9.2233720368547758e18) return std::nullopt;
  return static_cast<std::int64_t>(bytes);
}

std::string format_bytes(double bytes) {
  const double a = std::fabs(bytes);
  if (a >= 1024.0 * 1024 * 1024) return fmt::format("{:.2f} GiB", bytes / (1024.0 * 1024 * 1024));
  if (a >= 1024.0 * 1024) return fmt::format("{:.1f} MiB", bytes / (1024.0 * 1024));
  if (a >= 1024.0) return fmt::format("{:.1f} KiB", bytes / 1024.0);
  return fmt::format("{:.0f} B", bytes);
}

}  // namespace torchprobe::units
