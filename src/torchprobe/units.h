#pragma once
// Byte sizes, read and written the one way every command uses.
#include <cstdint>
#include <optional>
#include <string>

namespace torchprobe::units {

inline constexpr std::int64_t kKiB = 1024;
inline constexpr std::int64_t kMiB = 1024 * kKiB;

/// "2GiB", "512 MiB", "2.00 GiB", "64KiB", "1TiB", "123 bytes", "123B" or a plain byte count "1048576"
/// -> bytes (binary units only, case as written; spaces around the number and unit allowed); std::nullopt
/// for anything else (KB, MB, kib, K, 1e3, 1., .5, a sign), or a size of 2^63 bytes or more. Whole
/// numbers are exact up to 2^63 - 1; decimals are rounded to the nearest byte.
std::optional<std::int64_t> parse_bytes(const std::string& text);

/// "1.50 GiB", "12.0 MiB", "3.0 KiB", "512 B".
std::string format_bytes(double bytes);

}  // namespace torchprobe::units
