// ISO 8601 dates, as the history files a run under and orders its series by (parse_iso8601, store.h).
#include <cctype>
#include <cstdint>
#include <string>

#include "torchprobe/history/store.h"

namespace torchprobe::history {
namespace {

int digits(const std::string& s, size_t pos, size_t count) {
  if (pos + count > s.size()) return -1;
  int value = 0;
  for (size_t i = pos; i < pos + count; ++i) {
    if (!std::isdigit(static_cast<unsigned char>(s[i]))) return -1;
    value = value * 10 + (s[i] - '0');
  }
  return value;
}

// Days since 1970-01-01 of a civil date (Howard Hinnant's algorithm).
std::int64_t days_from_civil(std::int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

}  // namespace

bool parse_iso8601(const std::string& s, std::int64_t& seconds) {
  const int year = digits(s, 0, 4), month = digits(s, 5, 2), day = digits(s, 8, 2);
  if (year < 0 || month < 1 || month > 12 || day < 1 || s[4] != '-' || s[7] != '-') return false;
  // The month's real length: 2026-02-30 or 2025-02-29 is no date.
  const bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  const int month_days[] = {31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (day > month_days[month - 1]) return false;
  int hour = 0, minute = 0, second = 0, offset_minutes = 0;
  size_t pos = 10;
  if (pos < s.size()) {
    if (s[pos] != 'T' && s[pos] != ' ') return false;
    hour = digits(s, pos + 1, 2);
    minute = digits(s, pos + 4, 2);
    if (hour < 0 || hour > 23 || minute < 0 || minute > 59 || s[pos + 3] != ':') return false;
    pos += 6;
    if (pos < s.size() && s[pos] == ':') {
      second = digits(s, pos + 1, 2);
      if (second < 0 || second > 60) return false;
      pos += 3;
      if (pos < s.size() && (s[pos] == '.' || s[pos] == ',')) {
        ++pos;
        const size_t start = pos;
        while (pos < s.size() && std::isdigit(static_cast<unsigned char>(s[pos]))) ++pos;
        if (pos == start) return false;
      }
    }
    if (pos < s.size()) {
      if (s[pos] == 'Z' && pos + 1 == s.size()) {
        pos = s.size();
      } else if (s[pos] == '+' || s[pos] == '-') {
        const int oh = digits(s, pos + 1, 2);
        const bool colon = pos + 3 < s.size() && s[pos + 3] == ':';
        const int om = digits(s, pos + (colon ? 4 : 3), 2);
        if (oh < 0 || oh > 23 || om < 0 || om > 59 || pos + (colon ? 6 : 5) != s.size()) return false;
        offset_minutes = (s[pos] == '+' ? 1 : -1) * (oh * 60 + om);
        pos = s.size();
      } else {
        return false;
      }
    }
  }
  seconds = days_from_civil(year, static_cast<unsigned>(month), static_cast<unsigned>(day)) * 86400 + hour * 3600 +
            minute * 60 + second - offset_minutes * 60;
  return true;
}

}  // namespace torchprobe::history
