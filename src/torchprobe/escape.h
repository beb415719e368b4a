#pragma once
// Text that is not ours (benchmark names, host and CPU names, error messages, commits, log lines) made inert
// for the output it is written into: one function per output context, applied where such text meets it.
#include <string>
#include <string_view>

namespace torchprobe {

/// Markdown inline text (a table cell, a heading's or a list item's text; never the start of a line):
/// \ | < > [ ] ` are backslash-escaped, so no table column, HTML tag, link, image or code span can start;
/// control characters show as escapes (\n, \x1b), so no new line, table row or heading can; invalid UTF-8
/// becomes U+FFFD.
std::string markdown_text(std::string_view text);

/// A Markdown code span showing `text` literally: fenced by one backtick more than its longest run of
/// backticks, control characters shown as escapes, invalid UTF-8 as U+FFFD. Not for table cells (GitHub
/// splits a cell on | even inside a code span): use markdown_text there.
std::string markdown_code(std::string_view text);

/// One CSV field: RFC 4180 quoting (quoted when it holds , " CR or LF; " doubled) and OWASP's rule against
/// formula injection: a field starting with = + - @ TAB or CR gets a leading ' so a spreadsheet shows it as
/// text. Numbers ("-12.5", "+3", "-1e-05") and a lone "-" are no formulas and stay as they are.
std::string csv_field(std::string_view text);

/// XML 1.0 text and attribute values (SVG, HTML, JUnit): & < > " ' as entities; what XML 1.0 forbids (C0
/// controls other than TAB, LF and CR, U+FFFE, U+FFFF) and invalid UTF-8 (lone surrogates, overlong forms,
/// stray bytes) become U+FFFD, so a parser accepts the document whatever the text.
std::string xml_escape(std::string_view text);

/// One line for a terminal: every control character (C0 including TAB, CR and LF; DEL; C1) and the bidi
/// overrides (U+202A-U+202E, U+2066-U+2069) shown as an escape (\t, \r, \n, \x1b, \u009b, \u202e), bytes that
/// are not UTF-8 as \xNN. Nothing a terminal acts on gets through. A backslash stays as it is: the escapes are
/// for people to read, not to decode.
std::string terminal_line(std::string_view text);

/// Lines for a terminal: as terminal_line, but LF and TAB pass (a multi-line message, a log excerpt).
std::string terminal_text(std::string_view text);

}  // namespace torchprobe
