#pragma once
// Byte sizes, read and written the one way every command uses.
#include <cstdint>
#include <optional>
#include <string>

namespace torchprobe::units {

/// "2GiB", "512 MiB", "2.00 GiB", "64KiB", "1TiB", "123 bytes", "123B" or a plain byte count "1048576"
/// -> bytes; std::nullopt for anything else, a negative value, or one beyond 2^63.
std::optional<std::int64_t> parse_bytes(const std::string& text);

/// "1.50 GiB", "12.0 MiB", "3.0 KiB", "512 B".
std::string format_bytes(double bytes);

}  // namespace torchprobe::units
