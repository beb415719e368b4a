#pragma once
// Small string helpers every library shares (header-only, torchprobe::base).
#include <algorithm>
#include <cctype>
#include <string>
#include <string_view>
#include <vector>

namespace torchprobe {

/// `s` without leading and trailing white space (a view into the same characters).
inline std::string_view trim_view(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

/// `s` without leading and trailing white space.
inline std::string trim(const std::string& s) { return std::string(trim_view(s)); }

/// The first line of `text` (all of it when it has no newline).
inline std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

/// The items of `text` between each `separator`, empty ones kept ("a,,b" has 3; "" has 1, empty).
inline std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> items;
  for (size_t start = 0;;) {
    const size_t end = text.find(separator, start);
    items.push_back(text.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) return items;
    start = end + 1;
  }
}

/// `s` in lower case (ASCII letters; other bytes as they are).
inline std::string to_lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

}  // namespace torchprobe
