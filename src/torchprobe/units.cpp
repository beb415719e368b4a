#include "torchprobe/units.h"

#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <limits>

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
  const size_t integer_end = i;
  if (i < text.size() && text[i] == '.') {
    ++i;
    const size_t decimals = i;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
    if (i == decimals) return std::nullopt;
  }
  const std::string number = text.substr(number_start, i - number_start);
  skip_spaces();
  const size_t unit_start = i;
  while (i < text.size() && std::isalpha(static_cast<unsigned char>(text[i]))) ++i;
  const std::string unit = text.substr(unit_start, i - unit_start);
  skip_spaces();
  if (i != text.size()) return std::nullopt;
  int shift = -1;  // the unit as a power of two
  if (unit.empty() || unit == "B" || unit == "bytes") shift = 0;
  if (unit == "KiB") shift = 10;
  if (unit == "MiB") shift = 20;
  if (unit == "GiB") shift = 30;
  if (unit == "TiB") shift = 40;
  if (shift < 0) return std::nullopt;
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  if (integer_end == number_start + number.size()) {
    // A whole number is read exactly, up to 2^63 - 1 bytes (a double would round the last 10 bits).
    std::int64_t value = 0;
    for (const char digit : number) {
      const int d = digit - '0';
      if (value > (kMax - d) / 10) return std::nullopt;
      value = value * 10 + d;
    }
    if (value > (kMax >> shift)) return std::nullopt;
    return value << shift;
  }
  const double bytes = std::round(std::strtod(number.c_str(), nullptr) * std::ldexp(1.0, shift));
  if (!std::isfinite(bytes) || bytes >= 9.2233720368547758e18) return std::nullopt;  // 2^63
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
