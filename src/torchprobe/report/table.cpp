#include "torchprobe/report/table.h"

#include "torchprobe/escape.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace torchprobe::report {
namespace {

// Display width of UTF-8 text (counts code points; our cells use only narrow characters).
size_t width(const std::string& text) {
  return static_cast<size_t>(std::count_if(text.begin(), text.end(), [](char c) { return (c & 0xC0) != 0x80; }));
}

std::string pad(const std::string& text, size_t to, bool right) {
  const std::string fill(to > width(text) ? to - width(text) : 0, ' ');
  return right ? fill + text : text + fill;
}

bool right(const Table& t, size_t column) { return column < t.right_aligned.size() && t.right_aligned[column]; }

}  // namespace

std::string Table::markdown() const {
  std::string out = "|";
  for (const auto& h : header) out += " " + markdown_text(h) + " |";
  out += "\n|";
  for (size_t c = 0; c < header.size(); ++c) out += right(*this, c) ? "---:|" : "---|";
  out += "\n";
  for (const auto& row : rows) {
    out += "|";
    for (const auto& cell : row) out += " " + markdown_text(cell) + " |";
    out += "\n";
  }
  return out;
}

std::string Table::html() const {
  const auto cell = [&](const char* tag, size_t c, const std::string& text) {
    return fmt::format("<{0}{1}>{2}</{0}>", tag, right(*this, c) ? " class=\"num\"" : "", xml_escape(text));
  };
  std::string out = "<table>\n<tr>";
  for (size_t c = 0; c < header.size(); ++c) out += cell("th", c, header[c]);
  out += "</tr>\n";
  for (const auto& row : rows) {
    out += "<tr>";
    for (size_t c = 0; c < row.size(); ++c) out += cell("td", c, row[c]);
    out += "</tr>\n";
  }
  return out + "</table>\n";
}

std::string Table::console() const {
  const auto shown = [](const std::vector<std::string>& cells) {
    std::vector<std::string> out;
    for (const auto& cell : cells) out.push_back(terminal_line(cell));
    return out;
  };
  const std::vector<std::string> head = shown(header);
  std::vector<std::vector<std::string>> body;
  for (const auto& row : rows) body.push_back(shown(row));
  std::vector<size_t> widths(head.size(), 0);
  for (size_t c = 0; c < head.size(); ++c) widths[c] = width(head[c]);
  for (const auto& row : body) {
    for (size_t c = 0; c < row.size() && c < widths.size(); ++c) widths[c] = std::max(widths[c], width(row[c]));
  }
  const auto line = [&](const std::vector<std::string>& cells) {
    std::string out;
    for (size_t c = 0; c < cells.size() && c < widths.size(); ++c) {
      out += (c ? "  " : "") + pad(cells[c], widths[c], right(*this, c));
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out + "\n";
  };
  std::string out = line(head);
  size_t total = 0;
  for (const auto w : widths) total += w;
  out += std::string(total + 2 * (widths.empty() ? 0 : widths.size() - 1), '-') + "\n";
  for (const auto& row : body) out += line(row);
  return out;
}

std::string format_number(double value, int significant) {
  if (!std::isfinite(value)) return "-";
  if (value == 0.0) return "0";
  const int magnitude = static_cast<int>(std::floor(std::log10(std::fabs(value))));
  const int decimals = std::max(0, significant - 1 - magnitude);
  return fmt::format("{:.{}f}", value, decimals);
}

std::string format_ms(double ms) { return format_number(ms, 3); }

std::string format_duration(double ms) {
  if (!std::isfinite(ms)) return "-";
  const double a = std::fabs(ms);
  if (a >= 1000.0) return format_number(ms / 1000.0, 3) + " s";
  if (a >= 1.0 || a == 0.0) return format_number(ms, 3) + " ms";
  if (a >= 1e-3) return format_number(ms * 1e3, 3) + " us";
  return format_number(ms * 1e6, 3) + " ns";
}

std::string format_rate(double per_s) {
  if (!std::isfinite(per_s)) return "-";
  if (per_s >= 1000.0) {  // thousands separated by spaces (SI style): 12 345
    std::string digits = fmt::format("{:.0f}", per_s);
    for (int i = static_cast<int>(digits.size()) - 3; i > 0; i -= 3) digits.insert(static_cast<size_t>(i), " ");
    return digits;
  }
  return format_number(per_s, 3);
}

std::string format_ratio(double ratio) {
  if (!std::isfinite(ratio)) return "-";
  return format_number(ratio, 3) + "x";
}

std::string format_pct(double pct, bool sign) {
  if (!std::isfinite(pct)) return "-";
  return sign ? fmt::format("{:+.1f}%", pct) : fmt::format("{:.1f}%", pct);
}

std::string format_cv(double cv_pct) { return cv_pct >= 0.0 ? format_pct(cv_pct) : "-"; }

std::string format_roof_pct(double pct, const std::string& label) {
  const std::string text = format_pct(pct);
  return label.empty() || text == "-" ? text : text + " (" + label + ")";
}

}  // namespace torchprobe::report
