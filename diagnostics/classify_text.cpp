#include "diagnostics/classify_text.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <string_view>
#include <utility>

#include "diagnostics/classify_rules.h"
#include "torchprobe/strings.h"

namespace torchprobe::diagnostics::detail {

// ---- Reading the text: lines, prefixes, tracebacks, wrapped lines ---------------------------------------------

struct LinePatterns {
  // What a log puts before each of its records: timestamps, logging's and glog's headers, NCCL's "host:pid:tid [dev] ",
  // vLLM's, ComfyUI's.
  const RE2& log_header = compile(
      R"(^(?:\[?\d{4}-\d\d-\d\d[T ][\d:.,]+(?:Z|[+-]\d\d:?\d\d)?\]? ?(?:- )?|)"
      R"((?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL) \d\d-\d\d [\d:.]+ [\w.-]+:\d+\] ?|)"
      R"([IWEF]\d{4} [\d:.]+\s+\d+ [\w./-]+:\d+\] ?|(?:DEBUG|INFO|WARNING|ERROR|CRITICAL):[\w.]+:|)"
      R"([\d:.-]+\s+(?:DEBUG|INFO|WARNING|ERROR|CRITICAL)\s+|[\w.-]+:\d+:\d+ \[\d+\] |!!! Exception during processing ?!!! ?|)"
      // A level after the time: logging's "%(name)s - %(levelname)s - " ("root - ERROR - "), loguru's "| ERROR    |
      // __main__:run:12 - ", "[ERROR] ". Never "ERROR: ", which reads as the exception's own type.
      R"((?:[\w.<>-]+ - )?(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL|TRACE) - |)"
      R"(\| ?(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL|TRACE|SUCCESS) *\| ?(?:[\w.<>-]+:[\w.<>-]+:\d+ - )?|)"
      R"(\[(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL|TRACE)\] ?))");
  // What is put before every line, wrapped ones too: a Markdown quote, torchrun's "[rank5]: ", Ray's "(RayWorker
  // pid=3478, ip=10.0.0.2) ", docker compose's "trainer-1  | ", a Kubernetes container log's "stderr F " (after its
  // time).
  const RE2& quote = compile(
      R"(^(?:\s*>+ ?|\[rank\d+\]: ?|\((?:[\w.:-]+ )?pid=\d+(?:, ip=[\d.]+)?\) |[\w.-]+ *\| |(?:stdout|stderr) [FP] ))");
  // A Python frame: the line after it is source code, never the error.
  const RE2& frame = compile(R"(^\s*(?:File "[^"]*", line \d+|Cell In\[\d+\], line \d+))");
  // Lines that are not the error itself: traceback headers, C++ frames, carets, `raise` statements, rich's boxes,
  // IPython's numbered source lines.
  const RE2& noise = compile(
      R"(^(?:\s*(?:Traceback \(|Traceback of |frame #\d+|Exception raised from |\[Previous line repeated|)"
      R"(During handling of the above exception|The above exception was the direct cause|[\^~]+(?:\s*<-+ HERE)?\s*$|)"
      R"(<ipython-input-|│|╭|╰|┃|❱)|(?:\s*-+>|\s{2,})\s*\d+(?:\s|$)))");
  // A `raise` or `assert` statement: source, but it says what went wrong (`raise AssertionError("Torch not compiled
  // with CUDA enabled")` where a paste stops before the exception's line, `assert torch.cuda.is_available(), "CPU
  // training is not allowed."`), so it counts, as any line that names no error, only where no other line says one.
  const RE2& raise = compile(R"(^\s*(?:raise|assert)\s)");
  // An exception's line: its type (any module path, any case, a full-width colon), LibTorch's what(), terminate.
  const RE2& exception = compile(R"(^\s*(?:terminate called after throwing an instance of '[^']*'\s*|what\(\):\s*|)"
                                 R"((?:[A-Za-z_]\w*\.)*\w*(?i:error|exception)(?:\[[^\]]*\])?\s*(?::|：|$)\s*))");
  // The same after a source line on one line: "x.cuda(i) RuntimeError: CUDA error (10): ...", also glued to the call
  // that raised it ("(value + 1).lgamma()RuntimeError: CUDA out of memory."), or quoted in a sentence ("an error
  // `RuntimeError: module must have its parameters ... on device: cpu` appears").
  const RE2& exception_inside =
      compile(R"((?:\s|[)\]}`'"])((?:[A-Za-z_]\w*\.)*(?:[A-Z]\w*)?(?:Error|Exception)(?:\[[^\]]*\])?(?::|：)\s))");
  const RE2& warning = compile(R"(^\s*(?:[A-Za-z_]\w*\.)*\w*Warning\s*(?::|：)\s*)");
  // load_state_dict lists missing and unexpected keys on lines of their own.
  // A key list's own lines ("module.fc.bias",) continue it too, and so does the rest of a key a line broke
  // ('2.bias", "module.fc.weight"').
  const RE2& key_report =
      compile(R"(^\s*(?:(?:Missing|Unexpected) key(?:\(s\)|s)? in state_dict|size mismatch for |["'][\w.-]+["'],?\s*$|)"
              R"([\w.-]*["'],\s*["'][\w.-]))");
  // A line that is a list of keys: a paste that starts inside load_state_dict's report ('"module.fc.weight",
  // "module.fc.bias". Unexpected key(s) in state_dict: ...').
  const RE2& key_list = compile(R"(^\s*["'][\w.-]+["'],\s*["'][\w.-])");
  // "wandb: ...", "INFO: ...": a logger's next record, not a wrapped line.
  const RE2& next_record = compile(R"(^\s*[A-Za-z_][\w.]*: )");
};

const LinePatterns& line_patterns() {
  static const LinePatterns patterns;
  return patterns;
}

namespace {

bool blank(const StringPiece& s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c == ' ' || c == '\t' || c == '\f' || c == '\v'; });
}

StringPiece trimmed(const StringPiece& s) {
  const std::string_view t = trim_view(std::string_view(s.data(), s.size()));
  return StringPiece(t.data(), t.size());
}

// "torch.OutOfMemoryError" from the prefix an exception line starts with ("torch.OutOfMemoryError: ", "what(): "):
// its last word ending in Error or Exception, with the module path; "" when it names no type (what(), terminate).
std::string exception_type(const StringPiece& prefix) {
  static const RE2& name = compile(R"(((?:[A-Za-z_]\w*\.)*\w*(?i:error|exception)))");
  StringPiece type;
  if (!RE2::PartialMatch(prefix, name, &type)) return "";
  return std::string(type.data(), type.size());
}

}  // namespace

Scanner::Scanner(Sink sink) : sink_(std::move(sink)), unless_seen_(rule_table().rules.size(), false) {}

// Records what the whole text says (another cause, `unless` words); returns whether the line mentions an error.
bool Scanner::note_context(const StringPiece& raw) {
  const ContextPatterns& c = context_patterns();
  const std::vector<int> hits = set_matches(c.set, c.each, raw);
  bool error_word = false;
  for (const int i : hits) {
    if (i == ContextPatterns::kAnotherCause)
      another_cause_ = true;
    else if (i == ContextPatterns::kErrorWord)
      error_word = true;
    else
      unless_seen_[c.unless_rule[static_cast<std::size_t>(i - ContextPatterns::kFirstUnless)]] = true;
  }
  return error_word;
}

bool Scanner::continues(const StringPiece& line) const {
  const LinePatterns& p = line_patterns();
  if (RE2::PartialMatch(line, p.key_report) || RE2::PartialMatch(line, p.key_list)) {
    return entry_.has_state_dict && entry_.lines < kMaxKeyReportLines;
  }
  if (entry_.lines >= kMaxWrappedLines || RE2::PartialMatch(line, p.next_record)) return false;
  const StringPiece start = trimmed(line);
  // What a sentence goes on with: a lower-case word, a bracket, a number, a quoted name ("#3 'index'").
  const bool lower_start = !start.empty() && (std::islower(static_cast<unsigned char>(start[0])) ||
                                              std::strchr("([#'\"", start[0]) != nullptr ||
                                              std::isdigit(static_cast<unsigned char>(start[0])));
  // A line cut at a terminal's or a mail's width (76 columns or more) mid-sentence goes on whatever its next word.
  return entry_.text.empty() || entry_.open_end ||
         ((lower_start || entry_.last_width >= kHardWrapWidth) && entry_.last_width >= kWrapWidth &&
          !entry_.ends_sentence);
}

void Scanner::keep(const StringPiece& line) {
  if (kept_.size() >= kKeptBytes) return;
  kept_.append(line.data(), std::min({line.size(), kKeptLineBytes, kKeptBytes - kept_.size()}));
  kept_ += '\n';
}

namespace {

// `line` with every match of `re` rewritten, in `out`; false, and `out` untouched, when nothing matched.
bool rewritten(StringPiece line, const RE2& re, const char* rewrite, std::string& out) {
  std::string copy(line.data(), line.size());
  if (RE2::GlobalReplace(&copy, re, rewrite) == 0) return false;
  out = std::move(copy);
  return true;
}

// A terminal's colours ("\x1b[31m"), and what is left of them where a copy dropped the escape ("[31m", "[0m").
bool without_colours(StringPiece line, std::string& out) {
  // Colours only (SGR): other escapes (a title, a cleared screen) stay, for the printers to show inert.
  static const RE2& colour = compile(R"(\x1b\[[0-9;]*m|\[\d{1,3}(?:;\d{1,3})*m)");
  if (line.find('\x1b') == StringPiece::npos && line.find('[') == StringPiece::npos) return false;
  return rewritten(line, colour, "", out);
}

// A log that stored a message with its newlines escaped (JSON, a Python repr: "RuntimeError('CUDA error: out of
// memory\nCUDA kernel errors ...')"): its lines, unescaped. Only where some "\n" could not be in a Windows path
// ("C:\nvidia\new" stays one line): it ends the line, or is followed by anything but a lower-case letter, or
// follows what no path name has (")", a blank, a quote). Each line goes to `line_read` as it is made (a line of a
// million "\n" costs one line's memory); false, having called nothing, when the line is not escaped.
template <typename LineRead>
bool read_escaped_lines(StringPiece line, LineRead&& line_read) {
  const auto in_a_name = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-' || c == ':' || c == '\\';
  };
  bool escaped = false;
  for (std::size_t at = line.find("\\n"); at != StringPiece::npos && !escaped; at = line.find("\\n", at + 2)) {
    escaped = at + 2 == line.size() || !std::islower(static_cast<unsigned char>(line[at + 2])) ||
              (at > 0 && !in_a_name(line[at - 1]));
  }
  if (!escaped) return false;
  std::string current;
  for (std::size_t i = 0; i < line.size(); ++i) {
    if (line[i] != '\\' || i + 1 == line.size()) {
      current += line[i];
      continue;
    }
    switch (line[++i]) {
      case 'n':
        line_read(StringPiece(current));
        current.clear();
        break;
      case 'r':
        break;
      case 't':
        current += '\t';
        break;
      case '"':
      case '\'':
      case '\\':
        current += line[i];
        break;
      default:
        current += '\\';
        current += line[i];
    }
  }
  line_read(StringPiece(current));
  return true;
}

// Markdown's bold around words ("expected device cuda:0 **but** got device cpu"), as its words: a paste into an issue
// often keeps it. False, and `out` untouched, when the line has none.
bool without_bold(StringPiece line, std::string& out) {
  static const RE2& bold = compile(R"((^|\s)\*\*([^*\s](?:[^*\n]*[^*\s])?)\*\*)");
  if (line.find("**") == StringPiece::npos) return false;
  return rewritten(line, bold, "\\1\\2", out);
}

// The full-width forms of ASCII (U+FF01..U+FF5E: "（", "）", "：", "，", as CJK input methods type them) and the
// ideographic space, as their ASCII characters: "torch.cuda.device_count（）" reads as "device_count()". False, and
// `out` untouched, when the line has none.
bool ascii_from_full_width(StringPiece line, std::string& out) {
  if (line.find("\xef\xbc") == StringPiece::npos && line.find("\xef\xbd") == StringPiece::npos &&
      line.find("\xe3\x80\x80") == StringPiece::npos) {
    return false;
  }
  out.clear();
  for (std::size_t i = 0; i < line.size(); ++i) {
    const auto byte = [&line](std::size_t k) { return static_cast<unsigned char>(line[k]); };
    if (i + 2 < line.size() && byte(i) == 0xef && (byte(i + 1) == 0xbc || byte(i + 1) == 0xbd) &&
        (byte(i + 2) & 0xc0u) == 0x80u) {
      const unsigned code = 0xf000u | ((byte(i + 1) & 0x3fu) << 6) | (byte(i + 2) & 0x3fu);  // U+FF00..U+FF7F
      if (code >= 0xff01 && code <= 0xff5e) {
        out += static_cast<char>(code - 0xfee0);
        i += 2;
        continue;
      }
    }
    if (i + 2 < line.size() && byte(i) == 0xe3 && byte(i + 1) == 0x80 && byte(i + 2) == 0x80) {
      out += ' ';
      i += 2;
      continue;
    }
    out += line[i];
  }
  return true;
}

}  // namespace

void Scanner::feed(StringPiece raw) {
  ++line_;
  std::string plain, ascii, unbold;
  if (without_colours(raw, plain)) raw = plain;
  if (without_bold(raw, unbold)) raw = unbold;
  if (ascii_from_full_width(raw, ascii)) raw = ascii;
  if (!read_escaped_lines(raw, [this](StringPiece line) { read(line); })) read(raw);
}

void Scanner::read(StringPiece raw) {
  if (!raw.empty() && raw[raw.size() - 1] == '\r') raw.remove_suffix(1);
  const bool error_word = note_context(raw);
  const LinePatterns& p = line_patterns();
  StringPiece line = raw;
  bool new_record = false;  // a log header starts a record of its own: never a wrapped line
  for (int i = 0; i < 4; ++i) {
    if (RE2::Consume(&line, p.log_header)) {
      new_record = true;
    } else if (!RE2::Consume(&line, p.quote)) {
      break;
    }
  }
  if (blank(line)) {
    // A state_dict report lists its missing and unexpected keys in paragraphs.
    if (!(open_ && entry_.has_state_dict)) close();
    return;
  }
  const bool after_frame = after_frame_;
  after_frame_ = RE2::PartialMatch(line, p.frame);
  const bool raise = RE2::PartialMatch(line, p.raise);
  StringPiece message = line;
  StringPiece type;  // the exception's type, where the line starts with one
  Tier tier = RE2::Consume(&message, p.exception) ? kException : error_word ? kErrorLine : kOther;
  if (tier == kException) type = StringPiece(line.data(), static_cast<std::size_t>(message.data() - line.data()));
  // An exception after other text on one line: "x.cuda(i) RuntimeError: CUDA error (10): ...", and a traceback pasted
  // as one line ('File "f.py", line 9, in g     return torch.embedding(...) RuntimeError: Expected all ...'): the
  // frame and its source line before it are not the error, the exception is.
  StringPiece inside;
  const bool exception_inside = tier != kException && RE2::PartialMatch(line, p.exception_inside, &inside);
  if (exception_inside) after_frame_ = false;
  if (!exception_inside &&
      (after_frame_ || RE2::PartialMatch(line, p.noise) ||
       (tier != kException && after_frame && !raise))) {  // after a frame: its source, `return F.linear(input, ...)`
    close();
    return;
  }
  if (tier != kException) {
    if (exception_inside) {
      message = StringPiece(inside.data(), static_cast<std::size_t>(line.end() - inside.data()));
      RE2::Consume(&message, p.exception);
      tier = kException;
      type = StringPiece(inside.data(), static_cast<std::size_t>(message.data() - inside.data()));
      // Quoted as Markdown code in a sentence: the message ends where the code does (no backtick inside it). Not at a
      // quote mark: messages hold apostrophes ("can't") and quoted keys.
      if (inside.data() > line.data() && inside.data()[-1] == '`') {
        const auto close = message.find('`');
        if (close != StringPiece::npos && close > 0) message = StringPiece(message.data(), close);
      }
    } else if (RE2::Consume(&message, p.warning)) {
      tier = kErrorLine;
    } else if (raise) {
      tier = kOther;
    }
  }
  message = trimmed(message);
  keep(message);
  const bool open_end = raw.size() > 0 && (raw[raw.size() - 1] == ' ' || raw[raw.size() - 1] == '\t');
  const bool ends_sentence = !message.empty() && std::strchr(".!?)]", message[message.size() - 1]) != nullptr;
  // A log header starts a record of its own, unless the logger puts one on every line (a container's or a cluster's
  // log): then a key report's next list, or a line after one left open, still continues the record.
  const bool same_record = !new_record || (open_ && (entry_.open_end || RE2::PartialMatch(line, p.key_report)));
  if (open_ && tier != kException && same_record && !raise && continues(line)) {
    if (!entry_.text.empty()) entry_.text += ' ';
    entry_.text.append(message.data(), message.size());
    // The space put between lines cannot be part of "state_dict": searching the new line alone is enough.
    entry_.has_state_dict = entry_.has_state_dict || message.find("state_dict") != StringPiece::npos;
    ++entry_.lines;
    entry_.open_end = open_end;
    entry_.last_width = raw.size();
    entry_.ends_sentence = ends_sentence;
    return;
  }
  close();
  open_ = true;
  entry_ = Entry{line_,
                 tier,
                 std::string(message.data(), message.size()),
                 exception_type(type),
                 1,
                 open_end,
                 raw.size(),
                 ends_sentence,
                 message.find("state_dict") != StringPiece::npos || RE2::PartialMatch(message, p.key_list)};
}

void Scanner::close() {
  if (open_ && !(entry_.text.empty() && entry_.type.empty())) {
    if (entry_.text.empty()) entry_.text = entry_.type;  // "MemoryError" alone: the type is the message
    sink_(entry_, *this);
  }
  open_ = false;
}

// Splits `text` into lines for the scanner, without copying it.
void scan_text(const std::string& text, Scanner& scanner) {
  std::size_t start = 0;
  while (start < text.size()) {
    const auto end = text.find('\n', start);
    const auto stop = end == std::string::npos ? text.size() : end;
    scanner.feed(StringPiece(text.data() + start, stop - start));
    start = stop + 1;
  }
  scanner.finish();
}

}  // namespace torchprobe::diagnostics::detail
