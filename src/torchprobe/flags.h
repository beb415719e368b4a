#pragma once
// The one way every program reads its list, number and size flags: each bad value is one InputError
// naming the flag (exit 2), at parse time, before any work.
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace torchprobe {

/// A comma-separated list flag: no empty items, no duplicates.
std::vector<std::string> list_flag(const std::string& flag, const std::string& text);
/// The same rule for a list already split (by CLI11): `text`, the list as given, is what the error quotes.
void check_list_items(const std::string& flag, const std::vector<std::string>& items, const std::string& text);
/// A comma-separated list of whole numbers in [min, max]: no empty items, no duplicates, no overflow.
std::vector<std::int64_t> int_list_flag(const std::string& flag, const std::string& text, std::int64_t min,
                                        std::int64_t max);
/// A size flag: "512MiB", "2GiB", "64KiB" or a byte count, above 0 and at most `max` bytes.
std::int64_t byte_size_flag(const std::string& flag, const std::string& text,
                            std::int64_t max = std::numeric_limits<std::int64_t>::max());

}  // namespace torchprobe
