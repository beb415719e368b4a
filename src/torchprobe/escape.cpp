#include "torchprobe/escape.h"

#include <fmt/format.h>

#include <algorithm>

namespace torchprobe {
namespace {

constexpr const char* kReplacement = "\xEF\xBF\xBD";  // U+FFFD in UTF-8

// One character of UTF-8 text, or one byte that does not start a well-formed one.
struct Char {
  char32_t code = 0;
  std::string_view bytes;
  bool valid = false;
};

// Strict UTF-8: no overlong forms, no surrogates, nothing above U+10FFFF.
Char decode(std::string_view text, size_t at) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(at);
  const Char stray{lead, text.substr(at, 1), false};
  if (lead < 0x80) return {lead, text.substr(at, 1), true};
  size_t length = 0;
  char32_t code = 0, smallest = 0;
  if ((lead & 0xE0) == 0xC0) {
    length = 2, code = lead & 0x1Fu, smallest = 0x80;
  } else if ((lead & 0xF0) == 0xE0) {
    length = 3, code = lead & 0x0Fu, smallest = 0x800;
  } else if ((lead & 0xF8) == 0xF0) {
    length = 4, code = lead & 0x07u, smallest = 0x10000;
  } else {
    return stray;
  }
  if (at + length > text.size()) return stray;
  for (size_t i = 1; i < length; ++i) {
    if ((byte(at + i) & 0xC0) != 0x80) return stray;
    code = (code << 6) | (byte(at + i) & 0x3Fu);
  }
  if (code < smallest || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return stray;
  return {code, text.substr(at, length), true};
}

template <typename Visit>
void for_each_char(std::string_view text, Visit&& visit) {
  for (size_t at = 0; at < text.size();) {
    const Char c = decode(text, at);
    visit(c);
    at += c.bytes.size();
  }
}

// What a terminal or a renderer would act on instead of showing: C0, DEL, C1, and the bidi embeddings,
// overrides and isolates that reorder the rest of a line.
bool acted_on(char32_t code) {
  return code < 0x20 || code == 0x7F || (code >= 0x80 && code <= 0x9F) || (code >= 0x202A && code <= 0x202E) ||
         (code >= 0x2066 && code <= 0x2069);
}

std::string shown(char32_t code) {
  switch (code) {
    case '\n': return "\\n";
    case '\r': return "\\r";
    case '\t': return "\\t";
    default: return code < 0x80 ? fmt::format("\\x{:02x}", static_cast<unsigned>(code)) : fmt::format("\\u{:04x}", static_cast<unsigned>(code));
  }
}

bool xml_allowed(char32_t code) {
  return code == '\t' || code == '\n' || code == '\r' || (code >= 0x20 && code <= 0xD7FF) || (code >= 0xE000 && code <= 0xFFFD) ||
         code >= 0x10000;
}

// Markdown with the characters in `special` backslash-escaped ("" in a code span, where escapes do not work),
// control characters shown (their escapes, e.g. \n, render as themselves: n and x are no punctuation).
std::string markdown(std::string_view text, std::string_view special) {
  std::string out;
  for_each_char(text, [&](const Char& c) {
    if (!c.valid) {
      out += kReplacement;
    } else if (acted_on(c.code)) {
      out += shown(c.code);
    } else {
      if (c.code < 0x80 && special.find(static_cast<char>(c.code)) != std::string_view::npos) out += '\\';
      out += c.bytes;
    }
  });
  return out;
}

std::string terminal(std::string_view text, bool keep_lines) {
  std::string out;
  for_each_char(text, [&](const Char& c) {
    if (!c.valid) {
      out += fmt::format("\\x{:02x}", static_cast<unsigned>(c.code));
    } else if (acted_on(c.code) && !(keep_lines && (c.code == '\n' || c.code == '\t'))) {
      out += shown(c.code);
    } else {
      out += c.bytes;
    }
  });
  return out;
}

// A decimal number as a spreadsheet reads one: [+-]digits[.digits][e[+-]digits].
bool is_number(std::string_view text) {
  size_t i = 0, digits = 0;
  const auto run_of_digits = [&] {
    size_t n = 0;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i, ++n;
    return n;
  };
  if (i < text.size() && (text[i] == '+' || text[i] == '-')) ++i;
  digits += run_of_digits();
  if (i < text.size() && text[i] == '.') ++i, digits += run_of_digits();
  if (digits == 0) return false;
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    if (i < text.size() && (text[i] == '+' || text[i] == '-')) ++i;
    if (run_of_digits() == 0) return false;
  }
  return i == text.size();
}

}  // namespace

std::string markdown_text(std::string_view text) { return markdown(text, "\\|<>[]`"); }

std::string markdown_code(std::string_view text) {
  const std::string body = markdown(text, "");
  size_t longest = 0, run = 0;
  for (const char c : body) {
    run = c == '`' ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  const std::string fence(longest + 1, '`');
  // A span strips one space from each end when both have one: pad when the text starts or ends with a
  // backtick (it would join the fence) or a space (it would be stripped).
  const bool pad = body.empty() || body.front() == '`' || body.back() == '`' || body.front() == ' ' || body.back() == ' ';
  return pad ? fence + " " + body + " " + fence : fence + body + fence;
}

std::string csv_field(std::string_view text) {
  std::string field(text);
  if (!field.empty() && std::string_view("=+-@\t\r").find(field.front()) != std::string_view::npos && field != "-" && !is_number(field)) {
    field.insert(0, "'");
  }
  if (field.find_first_of(",\"\n\r") == std::string::npos) return field;
  std::string quoted = "\"";
  for (const char c : field) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

std::string xml_escape(std::string_view text) {
  std::string out;
  for_each_char(text, [&](const Char& c) {
    if (!c.valid || !xml_allowed(c.code)) {
      out += kReplacement;
      return;
    }
    switch (c.code) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default: out += c.bytes;
    }
  });
  return out;
}

std::string terminal_line(std::string_view text) { return terminal(text, /*keep_lines=*/false); }

std::string terminal_text(std::string_view text) { return terminal(text, /*keep_lines=*/true); }

}  // namespace torchprobe
