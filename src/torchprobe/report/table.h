#pragma once
// A table of already-formatted plain-text cells, printed as GitHub Markdown, aligned console text or HTML;
// each rendering escapes every cell for its output (torchprobe/escape.h), so a cell never carries markup.
#include <string>
#include <vector>

namespace torchprobe::report {

struct Table {
  std::vector<std::string> header;
  std::vector<bool> right_aligned;  ///< per column; numbers are right-aligned
  std::vector<std::vector<std::string>> rows;

  void add(std::vector<std::string> row) { rows.push_back(std::move(row)); }
  std::string markdown() const;  ///< cells through markdown_text: no cell adds a column, a row or markup
  std::string console() const;   ///< cells through terminal_line: no control character reaches the terminal
  std::string html() const;  ///< a <table>, cells escaped; right-aligned cells get class "num"
};

/// Number formatting shared by every printer; NaN prints as "-" ("" in CSV).
std::string format_ms(double ms);          ///< 3 significant digits, e.g. "0.123", "12.3", "1234"
/// A time given in ms, in the unit that fits it: "101 ns", "12.3 us", "4.56 ms", "1.23 s".
std::string format_duration(double ms);
std::string format_rate(double per_s);     ///< e.g. "12 345", "987", "1.23"
std::string format_ratio(double ratio);    ///< e.g. "3.42x"
std::string format_pct(double pct, bool sign = false);  ///< e.g. "4.2%" / "+4.2%"
/// A CV over repetitions in %, "-" when below 0 (the schema's "fewer than 2 repetitions").
std::string format_cv(double cv_pct);
/// A % of a roof with its label when above 100%, e.g. "87.0%", "142.3% (cache-resident)".
std::string format_roof_pct(double pct, const std::string& label);
std::string format_number(double value, int significant = 3);

}  // namespace torchprobe::report
