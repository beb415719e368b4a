#pragma once
// Small string helpers every library shares (header-only, torchprobe::base).
#include <algorithm>
#include <cctype>
#include <string>

namespace torchprobe {

/// `s` without leading and trailing white space.
inline std::string trim(std::string s) {
  const auto not_space = [](unsigned char c) { return !std::isspace(c); };
  s.erase(s.begin(), std::find_if(s.begin(), s.end(), not_space));
  s.erase(std::find_if(s.rbegin(), s.rend(), not_space).base(), s.end());
  return s;
}

/// The first line of `text` (all of it when it has no newline).
inline std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

/// `s` in lower case (ASCII letters; other bytes as they are).
inline std::string to_lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

}  // namespace torchprobe
