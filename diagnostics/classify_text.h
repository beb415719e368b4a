#pragma once
// Reading the text: splits it into the reports it holds (entries), past log prefixes, tracebacks and wrapped lines
// (private to torchprobe::explain).
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "diagnostics/classify_patterns.h"

namespace torchprobe::diagnostics::detail {

enum Tier { kException = 0, kErrorLine = 1, kOther = 2 };

/// One report in the text: a line, and the lines a terminal or logger wrapped it onto.
struct Entry {
  std::size_t line = 0;  ///< its first line, from 1
  Tier tier = kOther;    ///< kException: `XxxError: ...` or what(); kErrorLine: a line that mentions an error
  std::string text;      ///< without log and exception prefixes, wrapped lines joined with a space
  /// The exception's type as written ("MemoryError", "torch.OutOfMemoryError"), "" for other lines: the type says
  /// what happened where the message is empty or says little ("MemoryError" alone, "OutOfMemoryError: Allocation on
  /// device").
  std::string type;
  int lines = 0;
  bool open_end = false;       ///< its last line ended in blanks: a terminal's or a logger's wrap, so more follows
  std::size_t last_width = 0;  ///< the length of its last line as read
  bool ends_sentence = false;  ///< its last line ended a sentence ("cuda:1 and cpu!"): a log's next line is news
  /// What the rules read: the type and the text ("MemoryError: ..."), or the text alone.
  std::string subject() const { return type.empty() ? text : text.empty() ? type : type + ": " + text; }
  /// The text names a state_dict or starts as a list of keys (a key report's paragraphs follow, blank lines between):
  /// kept as lines are added, so that each line read does not search the whole entry again.
  bool has_state_dict = false;
};

// The patterns that read a line (prefixes, frames, exceptions), compiled on first use: for invalid_patterns().
struct LinePatterns;
const LinePatterns& line_patterns();

/// Turns lines into entries: drops traceback and backtrace lines, strips log and exception prefixes, joins
/// wrapped lines. Fed one line at a time, it keeps only the entry being read: memory stays bounded by a line.
class Scanner {
 public:
  using Sink = std::function<void(const Entry&, const Scanner&)>;
  explicit Scanner(Sink sink);

  void feed(StringPiece raw);
  void finish() { close(); }

  std::size_t lines() const { return line_; }
  /// Something anywhere in the text so far names a cause other than memory (an assert, a bad access).
  bool another_cause_seen() const { return another_cause_; }
  bool unless_seen(std::size_t rule) const { return unless_seen_[rule]; }
  /// The text without traceback lines (its start, at most kKeptBytes): where an OOM's numbers may be.
  const std::string& kept() const { return kept_; }

 private:
  static constexpr int kMaxWrappedLines = 8, kMaxKeyReportLines = 16;
  // Terminals and loggers wrap at 70 columns or more; a shorter line followed by a lower-case one ended there.
  static constexpr std::size_t kWrapWidth = 60, kHardWrapWidth = 76;
  static constexpr std::size_t kKeptBytes = std::size_t{1} << 20, kKeptLineBytes = 4096;

  void read(StringPiece raw);  // one line, as feed() made it plain
  bool note_context(const StringPiece& raw);
  bool continues(const StringPiece& line) const;
  void keep(const StringPiece& line);
  void close();

  Sink sink_;
  std::size_t line_ = 0;
  bool after_frame_ = false;
  bool another_cause_ = false;
  std::vector<bool> unless_seen_;
  std::string kept_;
  bool open_ = false;
  Entry entry_;
};

/// Feeds each line of `text` to `scanner`, then finishes it.
void scan_text(const std::string& text, Scanner& scanner);

}  // namespace torchprobe::diagnostics::detail
