#include "diagnostics/classify.h"

#include <fmt/format.h>
#include <re2/re2.h>

#include <algorithm>
#include <cstdint>
#include <istream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <nlohmann/json.hpp>
#include <utility>

#include "diagnostics/classify_facts.h"
#include "diagnostics/classify_patterns.h"
#include "diagnostics/classify_rules.h"
#include "diagnostics/classify_text.h"
#include "diagnostics/explanations.h"
#include "torchprobe/escape.h"

// The classifier's parts, each in its own file: the patterns (classify_patterns), the rules (classify_rules), reading
// the text (classify_text), what a message names (classify_facts), the explanations (explanations). Here: from the
// entries read to a diagnosis, and the public functions.
namespace torchprobe::diagnostics {
using namespace detail;
namespace {

// ---- From entries to a diagnosis -----------------------------------------------------------------------------------

// Dispatcher errors append every backend the op has; the first sentence says it all.
std::string trim_dispatcher_tail(const std::string& message) {
  const auto tail = message.find(". This could be because the operator doesn't exist");
  return tail == std::string::npos ? message : message.substr(0, tail + 1);
}

// A message to show: long ones (a 1 MB args=(...) dump after the error) cut, not inside a UTF-8 character.
std::string shortened(std::string message) {
  constexpr std::size_t kMaxMessageBytes = 2000;
  if (message.size() <= kMaxMessageBytes) return message;
  std::size_t cut = kMaxMessageBytes;
  while (cut > 0 && (static_cast<unsigned char>(message[cut]) & 0xC0) == 0x80) --cut;
  const std::size_t dropped = message.size() - cut;
  message.resize(cut);
  return message + fmt::format(" [... {} more bytes]", dropped);
}

/// A mismatch that names no device often lists them on the lines after it ("should be on the same device\n
/// query.device: cuda:7\n  attn_bias   : cuda:0", a list of (size, device(type='cpu')) pairs): the devices those
/// few lines name, in order; none where the message is not found in the kept text.
std::vector<std::string> devices_listed_after(const std::string& message, const std::string& kept) {
  constexpr std::size_t kKey = 40, kLines = 6, kBytes = 2048;
  const auto at = kept.find(message.substr(0, std::min(message.size(), kKey)));
  if (at == std::string::npos) return {};
  std::size_t start = kept.find('\n', at);
  if (start == std::string::npos) return {};
  std::size_t end = ++start;
  for (std::size_t line = 0; line < kLines && end < kept.size() && end - start < kBytes; ++line) {
    const auto next = kept.find('\n', end);
    end = next == std::string::npos ? kept.size() : next + 1;
  }
  return devices_in(kept.substr(start, std::min(end - start, kBytes)));
}

/// The diagnosis of one entry's text under `rule` (none: unknown). `kept`: the whole text, for OOM numbers
/// printed on other lines than the error's.
Diagnosis diagnose(const std::string& text, const Rule* rule, const std::string* kept) {
  Diagnosis d;
  if (rule) {
    d.kind = rule->kind;
    // A rule names its own doubt ("likely": a status code that usually means it, words no check prints); every other
    // rule matches what a library's check says.
    d.confidence = rule->confidence[0] ? rule->confidence : "certain";
    d.allocator = rule->allocator;
  }
  d.message = trim_dispatcher_tail(text);
  // "'list' object has no attribute 'cuda'" names a method, and checkpoint keys no device.
  if (d.kind != ErrorKind::kNotATensor && d.kind != ErrorKind::kStateDictPrefix) {
    d.devices = devices_in(d.message, /*only_asked_for=*/d.kind == ErrorKind::kInvalidDevice);
  }
  // Sides named in capitals alone ("expected CPU (got CUDA)"): the rule's own reading of them.
  if (d.kind == ErrorKind::kDeviceMismatch && d.devices.empty() && rule) d.devices = devices_on_two_sides(*rule, text);
  if (d.kind == ErrorKind::kDeviceMismatch && d.devices.empty() && kept) d.devices = devices_listed_after(text, *kept);
  if (d.kind == ErrorKind::kDeviceMismatch && std::find(d.devices.begin(), d.devices.end(), "meta") != d.devices.end()) {
    d.kind = ErrorKind::kMetaTensor;
  }
  d.argument = argument_in(d.message);
  d.op = op_in(d.message);
  explain(d);
  if (d.kind == ErrorKind::kOutOfMemoryGpu || d.kind == ErrorKind::kOutOfMemoryCpu) {
    // The numbers may be on lines after the error's (NCCL's "Failed to CUDA calloc N bytes").
    d.memory = parse_oom(d.message);
    if (!d.memory.any() && kept) d.memory = parse_oom(*kept);
    const std::string numbers = explain_oom_facts(d.memory, d.kind == ErrorKind::kOutOfMemoryGpu);
    if (!numbers.empty()) d.explanation += " " + numbers;
  }
  d.message = shortened(std::move(d.message));
  return d;
}

// A rule that may speak, given what the whole text said: no "likely" verdict (nor loose words) next to another cause.
bool may_apply(std::size_t rule, const Scanner& scanner) {
  const Rule& r = rule_table().rules[rule];
  if (r.yields_to_another_cause && scanner.another_cause_seen()) return false;
  return !(r.unless && scanner.unless_seen(rule));
}

/// Picks the entry that is the error: for each rule, the last exception line it matches (Python prints the exception
/// that ended the program last), else the first line that mentions an error it matches. Lines that mention no error
/// count only when no rule matches an error line: advice printed nearby ("If you encounter CUDA out of memory, try
/// ...") must not win over the error. A notice that the program goes on on the CPU ("CUDA is not detected, running on
/// CPU") counts only where no exception says in words of its own what ended it ("AttributeError: 'generator' object
/// has no attribute 'next'"): the program went on past the notice. Rules keep their order: the first with a match wins.
class Selector {
 public:
  explicit Selector(std::size_t rules) : error_(rules), other_(rules), other_not_fallback_(rules) {}

  void take(const Entry& e) {
    static const RE2& fallback_notice = compile(
        R"((?i)\b(?:running|runs|run|falling back|falls back|fall back|fallback|using|use|switching|defaulting|)"
        R"(continuing)\b[^.\n]{0,20}?\b(?:on |to |with )?(?:the )?CPU\b)");
    std::optional<bool> fallback;  // read only for a line that mentions no error and that a rule matches
    const auto is_fallback = [&] {
      return fallback ? *fallback : *(fallback = RE2::PartialMatch(e.text, fallback_notice));
    };
    std::shared_ptr<const std::string> text;
    const auto shared = [&] { return text ? text : text = std::make_shared<const std::string>(e.text); };
    for (const std::size_t r : matching_rules(e.subject())) {
      if (e.tier == kException) {
        error_[r] = shared();
      } else if (e.tier == kErrorLine) {
        if (!error_[r]) error_[r] = shared();
      } else {
        if (!other_[r]) other_[r] = shared();
        if (!other_not_fallback_[r] && !is_fallback()) other_not_fallback_[r] = shared();
      }
    }
    if (e.tier == kException) last_exception_ = shared();
    if (e.tier == kException && e.text != e.type) exception_in_words_ = true;
    if (e.tier == kErrorLine && !first_error_) first_error_ = shared();
    if (!first_) first_ = shared();
  }

  Diagnosis diagnosis(const Scanner& scanner) const {
    const auto& rules = rule_table().rules;
    for (const auto* pass : {&error_, exception_in_words_ ? &other_not_fallback_ : &other_}) {
      for (std::size_t r = 0; r < rules.size(); ++r) {
        if ((*pass)[r] && may_apply(r, scanner)) return diagnose(*(*pass)[r], &rules[r], &scanner.kept());
      }
    }
    const auto& message = last_exception_ ? last_exception_ : first_error_ ? first_error_ : first_;
    return diagnose(message ? *message : std::string(), nullptr, nullptr);
  }

 private:
  /// Per rule: its best entry (other_not_fallback_: the first other line that is no notice of going on on the CPU).
  std::vector<std::shared_ptr<const std::string>> error_, other_, other_not_fallback_;
  bool exception_in_words_ = false;  ///< an exception line with a message of its own, not its type alone
  std::shared_ptr<const std::string> last_exception_, first_error_, first_;
};

nlohmann::json to_json(const Diagnosis& d) {
  nlohmann::json j = {{"kind", kind_name(d.kind)},
                      {"message", d.message},
                      {"devices", d.devices},
                      {"argument", d.argument ? nlohmann::json(*d.argument) : nlohmann::json(nullptr)},
                      {"op", d.op},
                      {"explanation", d.explanation},
                      {"fix", d.fix_cpp},
                      {"fix_python", d.fix_python}};
  if (d.kind != ErrorKind::kUnknown) j["confidence"] = d.confidence;
  if (d.kind == ErrorKind::kOutOfMemoryGpu || d.kind == ErrorKind::kOutOfMemoryCpu) j["allocator"] = d.allocator;
  if (d.memory.any()) {
    auto& m = j["memory"];
    const auto put = [&m](const char* key, const std::optional<std::int64_t>& v) {
      m[key] = v ? nlohmann::json(*v) : nlohmann::json(nullptr);
    };
    put("requested_bytes", d.memory.requested);
    put("total_bytes", d.memory.total);
    put("free_bytes", d.memory.free);
    put("allocated_bytes", d.memory.allocated);
    put("reserved_bytes", d.memory.reserved);
    put("process_in_use_bytes", d.memory.process_in_use);
    m["fragmentation"] = looks_fragmented(d.memory);
  }
  return j;
}

// `text` with `prefix` before each of its lines.
std::string indented(const std::string& text, const std::string& prefix) {
  std::string out;
  for (std::size_t start = 0; start < text.size();) {
    const auto end = text.find('\n', start);
    const auto stop = end == std::string::npos ? text.size() : end + 1;
    out += prefix;
    out.append(text, start, stop - start);
    start = stop;
  }
  return out;
}

// Messages are user text: bytes that are not UTF-8 become U+FFFD instead of making the dump throw.
std::string dump(const nlohmann::json& j, int indent) {
  return j.dump(indent, ' ', /*ensure_ascii=*/false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

std::string kind_name(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kDeviceMismatch: return "device_mismatch";
    case ErrorKind::kCudaUnavailable: return "cuda_unavailable";
    case ErrorKind::kInvalidDevice: return "invalid_device";
    case ErrorKind::kMetaTensor: return "meta_tensor";
    case ErrorKind::kOutOfMemoryGpu: return "out_of_memory_gpu";
    case ErrorKind::kOutOfMemoryCpu: return "out_of_memory_cpu";
    case ErrorKind::kNotATensor: return "not_a_tensor";
    case ErrorKind::kStateDictPrefix: return "state_dict_prefix";
    case ErrorKind::kUnknown: return "unknown";
  }
  return "unknown";
}

Diagnosis explain_error(const std::string& text) {
  Selector selector(rule_table().rules.size());
  Scanner scanner([&selector](const Entry& e, const Scanner&) { selector.take(e); });
  scan_text(text, scanner);
  return selector.diagnosis(scanner);
}

namespace {
/// std::getline with a bound: a line longer than kMaxLogLine keeps its first kMaxLogLine bytes and the
/// rest is skipped, so a stream without newlines (stdin from /dev/zero) needs no more memory than that.
bool read_bounded_line(std::istream& in, std::string& line) {
  constexpr std::size_t kMaxLogLine = std::size_t{1} << 20;
  line.clear();
  std::streambuf* buffer = in.rdbuf();
  bool any = false;
  for (int c = buffer->sbumpc(); c != std::char_traits<char>::eof(); c = buffer->sbumpc()) {
    any = true;
    if (c == '\n') return true;
    if (line.size() < kMaxLogLine) line += static_cast<char>(c);
  }
  in.setstate(std::ios::eofbit);
  return any;
}
}  // namespace

LogScan scan_log(std::istream& in, std::size_t max_findings) {
  LogScan scan;
  std::map<std::pair<ErrorKind, std::string>, std::size_t> seen;  // (kind, message) -> index in scan.findings
  Scanner scanner([&](const Entry& e, const Scanner& s) {
    for (const std::size_t r : matching_rules(e.subject())) {
      if (!may_apply(r, s)) continue;
      const Rule& rule = rule_table().rules[r];
      ++scan.error_lines;
      const std::string message = shortened(trim_dispatcher_tail(e.text));
      const auto found = seen.find({rule.kind, message});
      if (found != seen.end()) {
        ++scan.findings[found->second].count;
      } else if (scan.findings.size() < max_findings) {
        seen.emplace(std::make_pair(rule.kind, message), scan.findings.size());
        scan.findings.push_back(LogFinding{diagnose(e.text, &rule, nullptr), e.line, 1});
      } else {
        // Remembering every further message would make memory grow with the log.
        scan.listing_stopped = true;
        ++scan.unlisted_error_lines;
      }
      return;
    }
  });
  for (std::string line; read_bounded_line(in, line);) scanner.feed(line);
  scanner.finish();
  scan.lines = scanner.lines();
  return scan;
}

std::string log_scan_text(const LogScan& scan) {
  const char* lines_word = scan.lines == 1 ? "line" : "lines";
  if (scan.findings.empty()) {
    return fmt::format("no device or memory error torchprobe recognises in {} {}\n", scan.lines, lines_word);
  }
  std::string out =
      scan.listing_stopped
          ? fmt::format("stopped listing at {} distinct errors: {} error lines in {} lines, {} of them not listed:\n",
                        scan.findings.size(), scan.error_lines, scan.lines, scan.unlisted_error_lines)
          : fmt::format("{} distinct error{} in {} {}:\n", scan.findings.size(), scan.findings.size() == 1 ? "" : "s",
                        scan.lines, lines_word);
  for (const auto& f : scan.findings) {
    out += fmt::format("\nline {}, {} time{}:\n", f.line, f.count, f.count == 1 ? "" : "s");
    out += indented(diagnosis_text(f.diagnosis), "  ");
  }
  if (scan.listing_stopped) {
    out += fmt::format("\nstopped listing at {} distinct errors; {} later error lines with other messages are not listed\n",
                       scan.findings.size(), scan.unlisted_error_lines);
  }
  return out;
}

std::string log_scan_json(const LogScan& scan, int indent) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& f : scan.findings) {
    nlohmann::json j = to_json(f.diagnosis);
    j["line"] = f.line;
    j["count"] = f.count;
    list.push_back(std::move(j));
  }
  nlohmann::json out = {{"lines", scan.lines},
                        {"error_lines", scan.error_lines},
                        {"distinct_errors", scan.findings.size()},
                        {"listing_stopped_at", nullptr},
                        {"unlisted_error_lines", scan.unlisted_error_lines},
                        {"errors", std::move(list)}};
  if (scan.listing_stopped) out["listing_stopped_at"] = scan.findings.size();
  return dump(out, indent);
}

std::string without_backend_list(const std::string& first_line) {
  const std::string trimmed = trim_dispatcher_tail(first_line);
  return trimmed.size() < first_line.size() ? trimmed + " [the list of backends that have the op omitted]" : first_line;
}

std::string diagnosis_text(const Diagnosis& d) {
  std::string out = fmt::format("kind:        {}{}\n", kind_name(d.kind), d.confidence == "likely" ? " (likely)" : "");
  if (!d.allocator.empty()) out += fmt::format("allocator:   {}\n", terminal_line(d.allocator));
  if (!d.message.empty()) out += fmt::format("message:     {}\n", terminal_line(d.message));
  if (!d.devices.empty()) out += fmt::format("devices:     {}\n", terminal_line(join(d.devices, ", ")));
  if (d.argument) out += fmt::format("argument:    {}\n", terminal_line(*d.argument));
  if (!d.op.empty()) out += fmt::format("op:          {}\n", terminal_line(d.op));
  out += fmt::format("explanation: {}\n", terminal_text(d.explanation));
  if (!d.fix_cpp.empty()) out += "fix (C++):\n" + indented(terminal_text(d.fix_cpp), "    ") + "\n";
  if (!d.fix_python.empty()) out += "fix (Python):\n" + indented(terminal_text(d.fix_python), "    ") + "\n";
  return out;
}

std::string diagnosis_json(const Diagnosis& d, int indent) { return dump(to_json(d), indent); }

std::vector<std::string> invalid_patterns() {
  // Every table compiles its patterns on first use: use each once.
  (void)context_patterns();
  (void)line_patterns();
  (void)device_scanner();
  (void)mismatch_situations();
  (void)argument_in("");
  (void)op_in("");
  (void)keys_differ_by_module_prefix("");
  (void)names_two_devices("");
  Diagnosis d;
  explain_not_a_tensor(d);
  explain_state_dict(d);
  explain_mismatch(d);
  std::vector<std::string> errors = oom_pattern_errors();
  Registry& r = registry();
  const std::lock_guard<std::mutex> lock(r.mutex);
  for (const RE2& re : r.patterns) {
    if (!re.ok()) errors.push_back(re.pattern() + ": " + re.error());
  }
  return errors;
}

}  // namespace torchprobe::diagnostics
