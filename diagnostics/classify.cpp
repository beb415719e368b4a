#include "diagnostics/classify.h"

#include <fmt/format.h>
#include <re2/re2.h>
#include <re2/set.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <istream>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <unordered_set>
#include <utility>

#include "torchprobe/error.h"
#include "torchprobe/escape.h"

namespace torchprobe::diagnostics {
namespace {

using re2::StringPiece;

// ---- Patterns ---------------------------------------------------------------------------------------------
// RE2 matches in time linear in the text and never recurses, so a 1 MB line or a 50 MB log cannot overflow the
// stack (std::regex did, per character). Text is read as Latin-1: every byte sequence, invalid UTF-8 and NULs
// included, is valid input; the patterns are ASCII, and UTF-8 literals match as their byte sequences.

RE2::Options pattern_options() {
  RE2::Options options(RE2::Latin1);
  options.set_log_errors(false);
  // Room for the rule set's DFA: when RE2 runs out, a set match fails instead of matching slowly.
  options.set_max_mem(int64_t{64} << 20);
  return options;
}

// Every pattern compiled here, owned for the program's life, so that invalid_patterns() can check each.
struct Registry {
  std::mutex mutex;
  std::deque<RE2> patterns;
};
Registry& registry() {
  static Registry r;
  return r;
}
const RE2& compile(const std::string& pattern) {
  Registry& r = registry();
  const std::lock_guard<std::mutex> lock(r.mutex);
  return r.patterns.emplace_back(pattern, pattern_options());
}

// Takes the place of a pattern RE2 rejected in a set, so that the set's indices stay the table's (the tests check
// that none is rejected).
constexpr const char* kMatchesNothing = R"([^\x00-\xff])";

bool contains(const std::string& text, const char* what) { return text.find(what) != std::string::npos; }

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// ---- The rules --------------------------------------------------------------------------------------------

struct Rule {
  ErrorKind kind;
  const RE2* pattern;
  const char* confidence = "";  ///< out-of-memory rules: "certain" or "likely"
  const char* allocator = "";   ///< out-of-memory rules: what failed to allocate
  const RE2* unless = nullptr;  ///< the rule does not apply to a text with this anywhere
  /// The pattern's two groups are what was expected and what was found: the rule holds only when they name
  /// different devices ("expected device cuda:0 and dtype Float but got device cuda:0 and dtype Long" is a dtype error).
  bool two_sides = false;
  /// A further test of the matched text, for what one pattern cannot say.
  bool (*holds)(const std::string& text) = nullptr;
};

bool keys_differ_by_module_prefix(const std::string& text);

struct RuleTable {
  RuleTable();
  std::vector<Rule> rules;
  RE2::Set set{pattern_options(), RE2::UNANCHORED};  ///< all patterns at once: one pass over each entry
};

// Checked in order: memory first (OOM texts name GPUs), messages that say memory ran out before status codes that
// only usually mean it; then Python objects that are not tensors, checkpoint keys, missing CUDA, bad ordinals, meta,
// mismatches. Each wording is one PyTorch version's (0.3 to 2.x) or one library's; none is one user's.
RuleTable::RuleTable() {
  const auto add = [this](ErrorKind k, const std::string& p, const char* confidence = "", const char* allocator = "",
                          const char* unless = nullptr) -> Rule& {
    // Status codes and allocator words are matched in any case: people retype and lower-case them.
    const std::string pattern = confidence[0] ? "(?i)" + p : p;
    rules.push_back(Rule{k, &compile(pattern), confidence, allocator, unless ? &compile(std::string("(?i)") + unless) : nullptr});
    if (set.Add(pattern, nullptr) < 0) set.Add(kMatchesNothing, nullptr);
    return rules.back();
  };
  const auto gpu = ErrorKind::kOutOfMemoryGpu;
  const auto cpu = ErrorKind::kOutOfMemoryCpu;
  const auto mismatch = ErrorKind::kDeviceMismatch;
  add(gpu, R"(MPS backend out of memory)", "certain", "MPS allocator");
  add(gpu, R"(XPU out of memory)", "certain", "XPU allocator");
  add(gpu, R"(HIP out of memory|hipErrorOutOfMemory)", "certain", "LibTorch HIP caching allocator");
  add(gpu, R"(CUDA out of (the )?memory|(cuda|torch)\.OutOfMemoryError|OutOfMemoryError: CUDA)", "certain",
      "LibTorch CUDA caching allocator");
  // The 1.x numbers pasted without the first words; not XPU's 4 GB block limit, which prints the same tail.
  add(gpu, R"(Tried to allocate [0-9.]+ ?[KMGT]i?B \(GPU \d+;)", "certain", "LibTorch CUDA caching allocator",
      R"(can NOT allocate memory block with size larger than)");
  add(gpu, R"(CUBLAS_STATUS_ALLOC_FAILED)", "certain", "cuBLAS (handle or workspace)");
  add(gpu, R"(CUDNN_STATUS_ALLOC_FAILED)", "certain", "cuDNN (handle or workspace)");
  add(gpu, R"(Cuda failure( \d+)? '?out of memory|NCCL.*out of memory)", "certain", "NCCL (its CUDA buffers)");
  add(gpu, R"(CUDA error: ?out of memory|cuda runtime error \(2\) ?: ?out of memory|error=2 : out of memory|CUDA_ERROR_OUT_OF_MEMORY|cudaErrorMemoryAllocation)",
      "certain", "CUDA runtime (context or driver allocation)");
  add(cpu, R"(DefaultCPUAllocator: (can't allocate memory|not enough memory))", "certain", "LibTorch CPU allocator");
  add(cpu, R"(OpenBLAS: malloc failed in)", "certain", "OpenBLAS (its work buffers)");
  add(cpu, R"(MemoryError|Unable to allocate [0-9.]+ [KMGTP]?i?B for an array)", "certain", "Python / NumPy");
  add(cpu, R"(Cannot allocate memory)", "certain", "the operating system (ENOMEM)");
  add(gpu, R"(CUBLAS_STATUS_NOT_INITIALIZED)", "likely", "cuBLAS (handle creation)");
  add(gpu, R"(CUDNN_STATUS_(NOT_INITIALIZED|INTERNAL_ERROR|MAPPING_ERROR|EXECUTION_FAILED)|Unable to find a valid cuDNN algorithm)",
      "likely", "cuDNN (handle or workspace)");
  add(gpu, R"(No executable batch size found)", "likely", "the GPU (every batch size tried ran out of memory)");
  add(cpu, R"(posix_memalign\(.*12 vs 0)", "likely", "LibTorch CPU allocator");
  add(cpu, R"(std::bad_alloc)", "likely", "C++ operator new");
  // Python: a device method called on something that is not a tensor (the batch a DataLoader returned is a list).
  add(ErrorKind::kNotATensor, R"('[\w.]+' object has no attribute '(?:cuda|cpu|to)')");
  // load_state_dict's report (0.4 to 2.x), or 0.3's KeyError: only when the keys differ by "module.".
  add(ErrorKind::kStateDictPrefix, R"((?i)(?:missing|unexpected) key(?:\(s\)|s)? in state_dict|unexpected key "[^"]*" in state_dict)")
      .holds = keys_differ_by_module_prefix;
  add(ErrorKind::kCudaUnavailable,
      R"(Torch not compiled with CUDA enabled|not linked with support for cuda devices|(?i:cannot initialize CUDA without ATen_cuda library)|)"
      R"(DeviceGuardImpl for cuda is not available|Found no NVIDIA driver|No CUDA GPUs are available|no CUDA-capable device is detected|)"
      R"(CUDA driver version is insufficient|torch\.cuda\.is_available\(\) is False|deserialize object on a CUDA device|)"
      R"(device_count\(\) is 0\b|with arguments from the 'CUDA' backend|CUDA is not available|torch\.cuda\.\w*Tensor is not enabled|)"
      R"(CUDA-capable device\(s\) is/are busy or unavailable|CUDA unknown error - this may be due to an incorrectly set up)");
  add(ErrorKind::kInvalidDevice,
      R"(invalid device ordinal|Invalid device string|device type at start of device string|torch\.cuda\.device_count\(\) is \d+|)"
      R"(Device index must not be negative|Invalid device id|Invalid device, must be|Expected a cuda device, but got|)"
      R"(device >= 0 && device < num_gpus|CUDA device ordinal)");
  add(ErrorKind::kMetaTensor,
      R"(meta tensor|with Meta tensors|from the 'Meta' backend|on device meta|\bmeta\b and|and meta\b|device='meta'|on meta\b)");
  // One-sided wordings: any of them is a mismatch (names from ATen's checks, THC's, cuDNN's, the RNNs', MPS's, DDP's).
  add(mismatch,
      R"(Expected all tensors to be on the same (?:common )?device|must be on the current device|but expected (it )?to be on|)"
      R"(should be either on cpu or on the same device|Expected a '\w+' device type for generator|are on different devices|)"
      R"(different from other tensors on|must be on the same device|to be on (?:the )?same device|to have the same device|)"
      R"(should have (?:the )?same device|not at the same device|on (?:a )?different devices?\b|located on different GPUs|)"
      R"(\(checkGPU\)|module must have its parameters and buffers on device|Placeholder storage has not been allocated on MPS|)"
      R"(DistributedDataParallel device_ids and output_device arguments only work with|device type tensor to numpy|)"
      R"(convert CUDA tensor to numpy|legacy constructor expects device type|is not on the expected device|)"
      R"(Tensors must be CUDA and dense|No backend type associated with device type)");
  // Two-sided wordings: a mismatch only when the sides name different devices (else it is the dtype that differs).
  for (const char* p : {R"(Expected object of ((?:backend|device type) \w+) but got ((?:backend|device type) \w+))",
                        R"(Expected object of type (\S+) but found type (\S+))",
                        R"((?i:expected) ((?:device|backend) \S+?)(?: and dtype \w+)? but got ((?:device|backend) \S+))",
                        R"(Input type (\(.*?\)) and weight type (\(.*?\)) should be the same)",
                        R"(invalid gradient at index \d+ - expected (?:type|device) (.+?) but got (.+))",
                        R"(Expected tensor to have (\w+ (?:Backend|DeviceType)), but got tensor with (\w+ (?:Backend|DeviceType)))",
                        R"('lengths' argument should be a (1D CPU int64 tensor), but got (\d+D \S+ \w+ tensor))"}) {
    add(mismatch, p).two_sides = true;
  }
  set.Compile();
}

const RuleTable& rule_table() {
  static const RuleTable table;
  return table;
}

// Found anywhere in the text, these change what the rules may say (see Scanner::note_context).
struct ContextPatterns {
  ContextPatterns() {
    // A status code that usually means memory ran out says so only when nothing else in the text names another
    // cause: a failed device-side assertion or a bad memory access poisons every later CUDA call, and cuDNN reports
    // version and layout problems with the same codes.
    add(R"(device-side assert|Assertion `.*` failed|illegal memory access|unspecified launch failure|misaligned address|)"
        R"(cuDNN version|non-contiguous input|CUBLAS_STATUS_EXECUTION_FAILED|CUDA driver version is insufficient)");
    // A line that reports an error: an exception's type, LibTorch's what(), a library's failure report, a log level.
    add(R"(error|Error|ERROR|exception|Exception|FAIL|fail|what\(\)|terminate called|WARN)");
    const auto& rules = rule_table().rules;
    for (std::size_t i = 0; i < rules.size(); ++i) {
      if (!rules[i].unless) continue;
      unless_rule.push_back(i);
      add(rules[i].unless->pattern());
    }
    set.Compile();
  }
  void add(const std::string& pattern) {
    each.push_back(&compile(pattern));
    if (set.Add(pattern, nullptr) < 0) set.Add(kMatchesNothing, nullptr);
  }
  static constexpr int kAnotherCause = 0, kErrorWord = 1, kFirstUnless = 2;
  RE2::Set set{pattern_options(), RE2::UNANCHORED};
  std::vector<const RE2*> each;
  std::vector<std::size_t> unless_rule;  ///< set index kFirstUnless + i is the `unless` of rules[unless_rule[i]]
};

const ContextPatterns& context_patterns() {
  static const ContextPatterns patterns;
  return patterns;
}

// RE2::Set::Match, or each pattern alone should the set's DFA run out of memory (never silently nothing).
std::vector<int> set_matches(const RE2::Set& set, const std::vector<const RE2*>& each, const StringPiece& text) {
  std::vector<int> hits;
  RE2::Set::ErrorInfo error;
  if (!set.Match(text, &hits, &error) && error.kind != RE2::Set::kNoError) {
    hits.clear();
    for (std::size_t i = 0; i < each.size(); ++i) {
      if (RE2::PartialMatch(text, *each[i])) hits.push_back(static_cast<int>(i));
    }
  }
  std::sort(hits.begin(), hits.end());
  return hits;
}

std::vector<std::string> devices_in(const std::string& message, bool only_asked_for = false);

bool sides_differ(const Rule& rule, const std::string& text) {
  std::string expected, found;
  if (!RE2::PartialMatch(text, *rule.pattern, &expected, &found)) return false;
  const auto a = devices_in(expected), b = devices_in(found);
  return !a.empty() && !b.empty() && a != b;
}

// The rules whose pattern matches `text` and whose side conditions hold there, in table order.
std::vector<std::size_t> matching_rules(const std::string& text) {
  const RuleTable& table = rule_table();
  static const std::vector<const RE2*> each = [&table] {
    std::vector<const RE2*> v;
    for (const auto& r : table.rules) v.push_back(r.pattern);
    return v;
  }();
  std::vector<std::size_t> out;
  for (const int i : set_matches(table.set, each, text)) {
    const Rule& rule = table.rules[static_cast<std::size_t>(i)];
    if (rule.two_sides && !sides_differ(rule, text)) continue;
    if (rule.holds && !rule.holds(text)) continue;
    out.push_back(static_cast<std::size_t>(i));
  }
  return out;
}

// ---- Reading the text: lines, prefixes, tracebacks, wrapped lines ---------------------------------------------

enum Tier { kException = 0, kErrorLine = 1, kOther = 2 };

/// One report in the text: a line, and the lines a terminal or logger wrapped it onto.
struct Entry {
  std::size_t line = 0;  ///< its first line, from 1
  Tier tier = kOther;    ///< kException: `XxxError: ...` or what(); kErrorLine: a line that mentions an error
  std::string text;      ///< without log and exception prefixes, wrapped lines joined with a space
  int lines = 0;
  bool open_end = false;       ///< its last line ended in blanks: a terminal's or a logger's wrap, so more follows
  std::size_t last_width = 0;  ///< the length of its last line as read
  bool ends_sentence = false;  ///< its last line ended a sentence ("cuda:1 and cpu!"): a log's next line is news
  /// The text names a state_dict (a key report's paragraphs follow, blank lines between): kept as lines are added,
  /// so that each line read does not search the whole entry again.
  bool has_state_dict = false;
};

struct LinePatterns {
  // What a log puts before each of its records: timestamps, logging's and glog's headers, NCCL's "host:pid:tid [dev] ",
  // vLLM's, ComfyUI's.
  const RE2& log_header = compile(
      R"(^(?:\[?\d{4}-\d\d-\d\d[T ][\d:.,]+(?:Z|[+-]\d\d:?\d\d)?\]? ?(?:- )?|)"
      R"((?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL) \d\d-\d\d [\d:.]+ [\w.-]+:\d+\] ?|)"
      R"([IWEF]\d{4} [\d:.]+\s+\d+ [\w./-]+:\d+\] ?|(?:DEBUG|INFO|WARNING|ERROR|CRITICAL):[\w.]+:|)"
      R"([\d:.-]+\s+(?:DEBUG|INFO|WARNING|ERROR|CRITICAL)\s+|[\w.-]+:\d+:\d+ \[\d+\] |!!! Exception during processing ?!!! ?))");
  // What is put before every line, wrapped ones too: a Markdown quote, torchrun's "[rank5]: ".
  const RE2& quote = compile(R"(^(?:\s*>+ ?|\[rank\d+\]: ?))");
  // A Python frame: the line after it is source code, never the error.
  const RE2& frame = compile(R"(^\s*(?:File "[^"]*", line \d+|Cell In\[\d+\], line \d+))");
  // Lines that are not the error itself: traceback headers, C++ frames, carets, `raise` statements, rich's boxes,
  // IPython's numbered source lines.
  const RE2& noise = compile(
      R"(^(?:\s*(?:Traceback \(|Traceback of |frame #\d+|Exception raised from |\[Previous line repeated|)"
      R"(During handling of the above exception|The above exception was the direct cause|[\^~]+(?:\s*<-+ HERE)?\s*$|)"
      R"(raise\s|<ipython-input-|│|╭|╰|┃|❱)|(?:\s*-+>|\s{2,})\s*\d+(?:\s|$)))");
  // An exception's line: its type (any module path, any case, a full-width colon), LibTorch's what(), terminate.
  const RE2& exception = compile(
      R"(^\s*(?:terminate called after throwing an instance of '[^']*'\s*|what\(\):\s*|)"
      R"((?:[A-Za-z_]\w*\.)*\w*(?i:error|exception)(?:\[[^\]]*\])?\s*(?::|：|$)\s*))");
  // The same after a source line on one line: "x.cuda(i) RuntimeError: CUDA error (10): ...".
  const RE2& exception_inside = compile(R"(\s((?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception)(?:\[[^\]]*\])?(?::|：)\s))");
  const RE2& warning = compile(R"(^\s*(?:[A-Za-z_]\w*\.)*\w*Warning\s*(?::|：)\s*)");
  // load_state_dict lists missing and unexpected keys on lines of their own.
  const RE2& key_report = compile(R"(^\s*(?:(?:Missing|Unexpected) key\(s\) in state_dict|size mismatch for ))");
  // "wandb: ...", "INFO: ...": a logger's next record, not a wrapped line.
  const RE2& next_record = compile(R"(^\s*[A-Za-z_][\w.]*: )");
};

const LinePatterns& line_patterns() {
  static const LinePatterns patterns;
  return patterns;
}

bool blank(const StringPiece& s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c == ' ' || c == '\t' || c == '\f' || c == '\v'; });
}

StringPiece trimmed(StringPiece s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s[0]))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s[s.size() - 1]))) s.remove_suffix(1);
  return s;
}

/// Turns lines into entries: drops traceback and backtrace lines, strips log and exception prefixes, joins
/// wrapped lines. Fed one line at a time, it keeps only the entry being read: memory stays bounded by a line.
class Scanner {
 public:
  using Sink = std::function<void(const Entry&, const Scanner&)>;
  explicit Scanner(Sink sink) : sink_(std::move(sink)), unless_seen_(rule_table().rules.size(), false) {}

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
  static constexpr std::size_t kWrapWidth = 60;
  static constexpr std::size_t kKeptBytes = std::size_t{1} << 20, kKeptLineBytes = 4096;

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

// Records what the whole text says (another cause, `unless` words); returns whether the line mentions an error.
bool Scanner::note_context(const StringPiece& raw) {
  const ContextPatterns& c = context_patterns();
  const std::vector<int> hits = set_matches(c.set, c.each, raw);
  bool error_word = false;
  for (const int i : hits) {
    if (i == ContextPatterns::kAnotherCause) another_cause_ = true;
    else if (i == ContextPatterns::kErrorWord) error_word = true;
    else unless_seen_[c.unless_rule[static_cast<std::size_t>(i - ContextPatterns::kFirstUnless)]] = true;
  }
  return error_word;
}

bool Scanner::continues(const StringPiece& line) const {
  const LinePatterns& p = line_patterns();
  if (RE2::PartialMatch(line, p.key_report)) return entry_.has_state_dict && entry_.lines < kMaxKeyReportLines;
  if (entry_.lines >= kMaxWrappedLines || RE2::PartialMatch(line, p.next_record)) return false;
  const StringPiece start = trimmed(line);
  const bool lower_start = !start.empty() && (std::islower(static_cast<unsigned char>(start[0])) || start[0] == '(');
  return entry_.text.empty() || entry_.open_end ||
         (lower_start && entry_.last_width >= kWrapWidth && !entry_.ends_sentence);
}

void Scanner::keep(const StringPiece& line) {
  if (kept_.size() >= kKeptBytes) return;
  kept_.append(line.data(), std::min({line.size(), kKeptLineBytes, kKeptBytes - kept_.size()}));
  kept_ += '\n';
}

void Scanner::feed(StringPiece raw) {
  ++line_;
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
  if (after_frame_ || RE2::PartialMatch(line, p.noise)) {
    close();
    return;
  }
  StringPiece message = line;
  Tier tier = RE2::Consume(&message, p.exception) ? kException : error_word ? kErrorLine : kOther;
  if (tier != kException && after_frame) {  // the source line a frame shows: `return F.linear(input, ...)`
    close();
    return;
  }
  if (tier != kException) {
    StringPiece type;
    if (RE2::PartialMatch(line, p.exception_inside, &type)) {
      message = StringPiece(type.data(), static_cast<std::size_t>(line.end() - type.data()));
      RE2::Consume(&message, p.exception);
      tier = kException;
    } else if (RE2::Consume(&message, p.warning)) {
      tier = kErrorLine;
    }
  }
  message = trimmed(message);
  keep(message);
  const bool open_end = raw.size() > 0 && (raw[raw.size() - 1] == ' ' || raw[raw.size() - 1] == '\t');
  const bool ends_sentence = !message.empty() && std::strchr(".!?)]", message[message.size() - 1]) != nullptr;
  if (open_ && tier != kException && !new_record && continues(line)) {
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
  entry_ = Entry{line_, tier, std::string(message.data(), message.size()), 1, open_end, raw.size(), ends_sentence,
                 message.find("state_dict") != StringPiece::npos};
}

void Scanner::close() {
  if (open_ && !entry_.text.empty()) sink_(entry_, *this);
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

// ---- What the message names: devices, argument, op --------------------------------------------------------------

using Groups = std::vector<std::string>;

std::string device_word(const std::string& word) { return word == "GPU" ? "cuda" : lower(word); }

/// A way a message writes a device. Tried at each position in table order; the leftmost match wins.
struct DeviceForm {
  const char* pattern;
  /// The devices a match names, from the pattern's groups: none for text that only looks like a device.
  Groups (*read)(const Groups& g);
  /// An ordinal or a device string the program asked for: what invalid_device reports.
  bool asked_for = false;
};

const std::vector<DeviceForm>& device_forms() {
  static const std::vector<DeviceForm> forms = {
      // Paths and URLs (aten/src/ATen/native/cuda/...), Python attributes (torch.cuda.is_available, x.cpu()), the
      // CUDA runtime's name and attribute names ("'list' object has no attribute 'cuda'") are not devices.
      {R"((?:[A-Za-z]:)?[\w.~-]*[/\\][\w.~/\\-]+)", [](const Groups&) { return Groups{}; }},
      {R"(device string:? '?([^'\s]*[^'\s.,;!]))", [](const Groups& g) { return Groups{g[0]}; }, true},
      {R"('(\w+)' backend)", [](const Groups& g) { return Groups{lower(g[0])}; }},
      {R"(\bbackend (CUDA|CPU|MPS|XPU|HIP|Meta)\b)", [](const Groups& g) { return Groups{lower(g[0])}; }},
      // Tensor types of 0.3 to 1.x: torch.FloatTensor is a CPU tensor, torch.cuda.FloatTensor a CUDA one.
      {R"(\btorch\.(cuda\.)?[A-Z]\w*Tensor\b)", [](const Groups& g) { return Groups{g[0].empty() ? "cpu" : "cuda"}; }},
      {R"(\b(CUDA|CPU)\w*(?:Tensor|Type)\b)", [](const Groups& g) { return Groups{lower(g[0])}; }},
      {R"(\bcuda runtime\b|\battribute '\w+'|\.\w+)", [](const Groups&) { return Groups{}; }},
      {R"(\b(?:(?:on|to|at) (?:a |the )?)?(?:CUDA device|cuda device|GPU) (\d+)\b)",
       [](const Groups& g) { return Groups{"cuda:" + g[0]}; }, true},
      // cuDNN's checkSameGPU: "but device 1 does not equal 0".
      {R"(\bdevice (\d+) does not equal (\d+)\b)", [](const Groups& g) { return Groups{"cuda:" + g[0], "cuda:" + g[1]}; }},
      // DDP prints torch.device reprs: "{device(type='cuda', index=0)}".
      {R"(\bdevice\(type='(\w+)'(?:, index=(\d+))?\))",
       [](const Groups& g) { return Groups{g[1].empty() ? g[0] : g[0] + ":" + g[1]}; }},
      // Words for a place: "is on CPU, but expected it to be on GPU", "on different GPUs", "the MPS device".
      // Elsewhere ("a CPU library", "an NVIDIA GPU", "CUDA modules") they name no device a tensor is on.
      {R"(\b(?:on|to|at) (?:the |a |an |different )?(CPU|GPU|MPS|CUDA|XPU)s?\b)", [](const Groups& g) { return Groups{device_word(g[0])}; }},
      {R"(\b(CPU|GPU|MPS|CUDA|XPU) device\b)", [](const Groups& g) { return Groups{device_word(g[0])}; }},
      {R"(\b(Meta|CUDA|CPU|MPS)(?: \w+)? tensors?\b)", [](const Groups& g) { return Groups{lower(g[0])}; }},  // "CPU int64 tensor"
      {R"(\b(CUDA|CPU|MPS|XPU|HIP|Meta) (?:Backend|DeviceType)\b)", [](const Groups& g) { return Groups{lower(g[0])}; }},
      {R"(Expected a cuda device, but got: ([\w:]+))", [](const Groups& g) { return Groups{g[0]}; }, true},
      {R"(\b(cuda|cpu|mps|xpu|npu|hpu|meta|xla|ipu|mtia|hip)(?::(\d+))?\b)",
       [](const Groups& g) { return Groups{g[1].empty() ? g[0] : g[0] + ":" + g[1]}; }},
  };
  return forms;
}

// All forms as one pattern, "(form0)|(form1)|...", with where each form's own groups start.
struct DeviceScanner {
  DeviceScanner() {
    std::string all;
    int group = 1;
    for (const auto& form : device_forms()) {
      all += (all.empty() ? "(" : "|(") + std::string(form.pattern) + ")";
      first_group.push_back(group);
      group += 1 + compile(form.pattern).NumberOfCapturingGroups();
    }
    pattern = &compile(all);
    groups = group;
  }
  const RE2* pattern;
  std::vector<int> first_group;  ///< the group around form i; its own groups follow it
  int groups;
};

const DeviceScanner& device_scanner() {
  static const DeviceScanner scanner;
  return scanner;
}

/// The devices `message` names, in the order it names them, each once ("cuda:0", "cpu", "mps:0", "cuda").
/// only_asked_for: just the ordinals and device strings the program asked for (invalid_device).
std::vector<std::string> devices_in(const std::string& message, bool only_asked_for) {
  constexpr std::size_t kMaxDevices = 16;
  // Each search may read to the end of the text (a path form stays open through ".a.a.a..."), so the work is
  // bounded: the devices are those named in the first kScannedBytes, cut at a blank so no name is cut in two,
  // found in at most kMaxMatches matches. Real messages name their devices in their first few hundred bytes.
  constexpr std::size_t kScannedBytes = 4096, kMaxMatches = 256;
  std::size_t end = message.size();
  if (end > kScannedBytes) {
    const auto cut = message.find_last_of(" \t\n", kScannedBytes);
    end = cut == std::string::npos || cut == 0 ? kScannedBytes : cut;
  }
  const DeviceScanner& scanner = device_scanner();
  const auto& forms = device_forms();
  std::vector<StringPiece> match(static_cast<std::size_t>(scanner.groups));
  std::vector<std::string> devices;
  std::size_t at = 0;
  for (std::size_t matches = 0;
       at < end && devices.size() < kMaxDevices && matches < kMaxMatches &&
       scanner.pattern->Match(message, at, end, RE2::UNANCHORED, match.data(), scanner.groups);
       ++matches) {
    at = std::max(at + 1, static_cast<std::size_t>(match[0].end() - message.data()));
    for (std::size_t f = 0; f < forms.size(); ++f) {
      const int outer = scanner.first_group[f];
      if (match[static_cast<std::size_t>(outer)].data() == nullptr) continue;
      if (only_asked_for && !forms[f].asked_for) break;
      const int inner = (f + 1 < forms.size() ? scanner.first_group[f + 1] : scanner.groups) - outer - 1;
      Groups groups;
      for (int i = 1; i <= inner; ++i) groups.push_back(match[static_cast<std::size_t>(outer + i)].as_string());
      for (const auto& d : forms[f].read(groups)) {
        if (std::find(devices.begin(), devices.end(), d) == devices.end()) devices.push_back(d);
      }
      break;
    }
  }
  // "cuda" next to "cuda:0" says nothing more.
  if (std::any_of(devices.begin(), devices.end(), [](const std::string& d) { return d.rfind("cuda:", 0) == 0; })) {
    devices.erase(std::remove(devices.begin(), devices.end(), "cuda"), devices.end());
  }
  return devices;
}

/// The argument the message names, in any version's form: "argument #2 'mat2'", "for argument mat1 in method",
/// "but got weight is on", "for argument 'index'", "position #1 'tensors'".
std::optional<std::string> argument_in(const std::string& message) {
  static const RE2& pattern =
      compile(R"(#\d+ '(\w+)'|for argument (\w+) in method|for argument '(\w+)'|but got (\w+) is on|Tensor for '(\w+)')");
  StringPiece g[5];
  if (!RE2::PartialMatch(message, pattern, &g[0], &g[1], &g[2], &g[3], &g[4])) return std::nullopt;
  for (const auto& name : g) {
    if (!name.empty()) return name.as_string();
  }
  return std::nullopt;
}

std::string op_in(const std::string& message) {
  static const RE2& pattern = compile(R"(in method (?:wrapper_)?(?:[A-Z][A-Za-z]*_)?_*(\w+?)(?:_out)?\)|in call to (\w+)|)"
                                      R"(while checking arguments for (\w+))");
  StringPiece g[3];
  if (!RE2::PartialMatch(message, pattern, &g[0], &g[1], &g[2])) return "";
  for (const auto& name : g) {
    if (!name.empty()) return name.as_string();
  }
  return "";
}

// ---- Checkpoint keys -----------------------------------------------------------------------------------------------

bool has_module_component(const std::string& key) { return key.rfind("module.", 0) == 0 || contains(key, ".module."); }

std::string without_module_component(std::string key) {
  if (key.rfind("module.", 0) == 0) return key.substr(7);
  const auto at = key.find(".module.");
  return at == std::string::npos ? key : key.erase(at + 1, 7);
}

// The quoted keys in `section`: "conv1.weight", 'fc.bias' (0.3 printed a set).
std::unordered_set<std::string> keys_in(StringPiece section) {
  constexpr std::size_t kMaxKeys = 100000;
  static const RE2& key = compile(R"(["']([\w.-]+)["'])");
  std::unordered_set<std::string> keys;
  std::string k;
  while (keys.size() < kMaxKeys && RE2::FindAndConsume(&section, key, &k)) keys.insert(k);
  return keys;
}

// The checkpoint's keys and the model's differ by DataParallel's "module." (DDP's too): a missing key is an unexpected
// one with the prefix added or removed, or one list alone carries it. Two lists that both carry it (or neither) are
// another architecture, not this.
bool keys_differ_by_module_prefix(const std::string& text) {
  static const RE2& missing_marker = compile(R"((?i)missing key(?:\(s\)|s)? in state_dict)");
  static const RE2& unexpected_marker = compile(R"((?i)unexpected key(?:\(s\)|s)? in state_dict)");
  static const RE2& unexpected_0_3 = compile(R"((?i)unexpected key ("[^"]*") in state_dict)");
  const auto find = [&text](const RE2& re) -> std::optional<std::pair<std::size_t, std::size_t>> {
    StringPiece m;
    if (!re.Match(text, 0, text.size(), RE2::UNANCHORED, &m, 1)) return std::nullopt;
    const auto start = static_cast<std::size_t>(m.data() - text.data());
    return std::make_pair(start, start + m.size());
  };
  const auto missing_at = find(missing_marker), unexpected_at = find(unexpected_marker);
  const auto section = [&text](const std::optional<std::pair<std::size_t, std::size_t>>& at,
                               const std::optional<std::pair<std::size_t, std::size_t>>& other) {
    if (!at) return std::unordered_set<std::string>{};
    const std::size_t end = other && other->first > at->second ? other->first : text.size();
    return keys_in(StringPiece(text.data() + at->second, end - at->second));
  };
  auto missing = section(missing_at, unexpected_at);
  auto unexpected = section(unexpected_at, missing_at);
  std::string old_key;
  if (RE2::PartialMatch(text, unexpected_0_3, &old_key)) unexpected.merge(keys_in(old_key));
  const auto all_have = [](const std::unordered_set<std::string>& keys) {
    return !keys.empty() && std::all_of(keys.begin(), keys.end(), has_module_component);
  };
  const auto none_has = [](const std::unordered_set<std::string>& keys) {
    return std::none_of(keys.begin(), keys.end(), has_module_component);
  };
  if (missing.empty() || unexpected.empty()) return all_have(missing.empty() ? unexpected : missing);
  for (const auto& key : unexpected) {
    if (missing.count(without_module_component(key))) return true;
  }
  for (const auto& key : missing) {
    if (unexpected.count(without_module_component(key))) return true;
  }
  return (all_have(unexpected) && none_has(missing)) || (all_have(missing) && none_has(unexpected));
}

// ---- Explanations -----------------------------------------------------------------------------------------------

std::string join(const std::vector<std::string>& items, const std::string& last_sep) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) out += (i == 0 ? "" : i + 1 == items.size() ? last_sep : ", ") + items[i];
  return out;
}

void explain_gpu_memory(Diagnosis& d) {
  const std::string& a = d.allocator;
  std::string what;
  if (contains(a, "caching allocator")) {
    what = "The GPU's caching allocator could not find the bytes requested. The batch (activations grow with it), the "
           "model with its gradients and optimizer state, and cached-but-free blocks all count. Activations grow "
           "linearly with the batch: torchprobe-bench's peak_mem_mib at two batch sizes gives the slope.";
  } else if (contains(a, "cuBLAS")) {
    what = "cuBLAS could not allocate its handle or workspace: it asks the GPU for memory outside LibTorch's allocator "
           "(at the first matmul on each thread and device), and the GPU was full, typically because LibTorch's cache "
           "or another process already held it.";
  } else if (contains(a, "cuDNN")) {
    what = "cuDNN could not get memory for its handle or a convolution's workspace, outside LibTorch's allocator; the "
           "GPU was full, typically because LibTorch's cache or another process already held it.";
  } else if (contains(a, "NCCL")) {
    what = "NCCL could not allocate its communication buffers on the GPU (a CUDA call inside NCCL ran out of memory): "
           "the model, activations and LibTorch's cache left too little for them.";
  } else if (contains(a, "CUDA runtime")) {
    what = "A CUDA call outside LibTorch's caching allocator ran out of device memory: often the CUDA context itself "
           "cannot be created because another process already holds the GPU's memory, or a library allocated past "
           "what was free.";
  } else if (contains(a, "every batch size")) {
    what = "The automatic batch-size finder (Accelerate's find_executable_batch_size) halved the batch after each "
           "out-of-memory error until nothing was left: even small batches did not fit, so something else holds the "
           "memory (another process, a leak, a model too large for this GPU).";
  } else {
    what = "The accelerator's allocator (" + a + ") could not find the bytes requested.";
  }
  if (d.confidence == "likely") {
    d.explanation = "Likely out of memory: this status code says a library failed to initialise or run, and when it "
                    "appears at a growing batch or on a busy GPU the cause is almost always exhausted memory. " + what +
                    " To confirm: watch `nvidia-smi` while it runs, retry with half the batch, and run with "
                    "CUDA_LAUNCH_BLOCKING=1 to see the call that really failed. Other causes: a CUDA/cuDNN install that does "
                    "not match the driver, or an earlier asynchronous error.";
  } else {
    d.explanation = what;
  }
  d.fix_cpp =
      "// smaller batch; hand cached blocks back before the library needs memory of its own:\n"
      "c10::cuda::CUDACachingAllocator::emptyCache();\n"
      "// fragmentation: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True; another process: CUDA_VISIBLE_DEVICES";
  d.fix_python =
      "batch_size //= 2\n"
      "torch.cuda.empty_cache()\n"
      "# fragmentation: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True; another process: nvidia-smi, CUDA_VISIBLE_DEVICES";
  if (contains(a, "cuDNN")) {
    d.fix_cpp += "\nat::globalContext().setBenchmarkCuDNN(false);   // autotuning tries workspace-hungry algorithms";
    d.fix_python += "\ntorch.backends.cudnn.benchmark = False  # autotuning tries workspace-hungry algorithms";
  }
  if (contains(a, "NCCL")) {
    d.fix_cpp += "\n// NCCL_BUFFSIZE=1048576 shrinks NCCL's buffers";
    d.fix_python += "\n# NCCL_BUFFSIZE=1048576 shrinks NCCL's buffers";
  }
}

void explain_cpu_memory(Diagnosis& d) {
  const std::string& a = d.allocator;
  if (contains(a, "OpenBLAS")) {
    d.explanation = "OpenBLAS could not allocate its work buffers for a matrix multiply and ended the process (it does "
                    "not raise an error LibTorch could catch): the host or the process's memory limit had no room left.";
  } else if (contains(a, "Python")) {
    d.explanation = "Python (NumPy) could not allocate an array: the host or the process's memory limit had no room "
                    "for it. Arrays built from a whole dataset are the usual cause.";
  } else if (contains(a, "operator new")) {
    d.explanation = "A C++ allocation failed (std::bad_alloc): likely out of host memory, or a size so large it cannot be "
                    "allocated (a corrupt length read from a file, a negative size cast to unsigned).";
  } else {
    d.explanation = "The host could not allocate the memory asked for (the process hit RAM, swap or an address-space "
                    "limit). Batch size and any tensor built from the whole dataset are the usual causes.";
  }
  if (d.confidence == "likely") d.explanation = "Likely out of memory. " + d.explanation;
  d.fix_cpp = "// smaller batch; stream the data in batches instead of one giant tensor; check ulimit -v";
  d.fix_python = "batch_size //= 2  # and load data lazily (a Dataset + DataLoader) instead of all at once";
}

/// A device mismatch whose wording says where it comes from, with the fix for that case.
struct Situation {
  const RE2& pattern;
  const char* explanation;
  const char* fix_cpp;
  const char* fix_python;
};

const std::vector<Situation>& mismatch_situations() {
  static const std::vector<Situation> situations = {
      {compile(R"((?i)indices should be either on cpu or on the same device)"),
       "Here the tensor of indices (x[idx], index_select, gather) is on another device than the tensor it indexes: "
       "move the indices to the indexed tensor's device (the CPU also works, at the price of a copy).",
       "auto picked = x.index({idx.to(x.device())});           // the indices on the indexed tensor's device\n"
       "auto rows = torch::index_select(x, 0, idx.to(x.device()));",
       "picked = x[idx.to(x.device)]   # the indices on the indexed tensor's device\n"
       "rows = torch.index_select(x, 0, idx.to(x.device))"},
      {compile(R"(\bweight\b.*\b(?:nll_loss|cross_entropy))"),
       "Here the loss function was built with class weights that stayed on the CPU (CrossEntropyLoss(weight=w) and "
       "NLLLoss keep w as a buffer): the loss module must be moved to the device of the logits too.",
       "auto loss_fn = torch::nn::CrossEntropyLoss(\n"
       "    torch::nn::CrossEntropyLossOptions().weight(class_weights.to(device)));   // the weights on the device\n"
       "auto loss = loss_fn(model->forward(x.to(device)), y.to(device));",
       "loss_fn = nn.CrossEntropyLoss(weight=class_weights).to(device)   # moves the class weights\n"
       "loss = loss_fn(model(x.to(device)), y.to(device))"},
      {compile(R"(module must have its parameters and buffers on device)"),
       "Here nn.DataParallel found a parameter or buffer that is not on device_ids[0]: it replicates the model from "
       "that device to the others at every forward, so the model must be moved there before it is wrapped.",
       "model->to(torch::Device(torch::kCUDA, 0));               // devices[0], before replicating\n"
       "auto y = torch::nn::parallel::data_parallel(model, x.to(torch::Device(torch::kCUDA, 0)), devices);",
       "model = model.to('cuda:0')                                # device_ids[0], before wrapping\n"
       "model = torch.nn.DataParallel(model, device_ids=[0, 1])\n"
       "y = model(x.to('cuda:0'))"},
      {compile(R"(DistributedDataParallel device_ids and output_device arguments only work with)"),
       "Here DistributedDataParallel was given device_ids while the model's parameters were on the CPU or spread over "
       "several devices: with device_ids=[i] the whole model must be on cuda:i before it is wrapped (a CPU or "
       "multi-device model takes device_ids=None).",
       "torch::Device device(torch::kCUDA, local_rank);\n"
       "model->to(device);   // every parameter on this rank's GPU before the first collective\n"
       "// then all-reduce the gradients over c10d::ProcessGroupNCCL (LibTorch has no DDP wrapper)",
       "torch.cuda.set_device(local_rank)\n"
       "model = model.to(local_rank)                               # before wrapping\n"
       "model = DDP(model, device_ids=[local_rank], output_device=local_rank)"},
      {compile(R"(Input and hidden tensors are not at the same device)"),
       "Here the RNN's initial hidden state (h0, and c0 for an LSTM) is on another device than its input: it was "
       "created without a device, so on the CPU.",
       "auto h0 = torch::zeros({num_layers, batch, hidden_size}, x.options());   // the input's device\n"
       "auto [out, h] = gru->forward(x, h0);",
       "h0 = torch.zeros(num_layers, batch, hidden_size, device=x.device)   # the input's device\n"
       "out, h = rnn(x, h0)"},
      {compile(R"(tensor to numpy)"),
       "Here a GPU tensor was converted to NumPy: NumPy arrays live in host memory, so the tensor must be copied to "
       "the CPU first (and detached when it requires grad).",
       "auto host = t.detach().to(torch::kCPU);   // host.data_ptr<float>() now points to host memory",
       "array = t.detach().cpu().numpy()"},
      {compile(R"(device type for generator)"),
       "Here a torch.Generator made for one device was given to an op that runs on another (randperm, a sampler, "
       "dropout): a generator must be on the device of the tensor it fills.",
       "auto idx = torch::randperm(n, at::globalContext().defaultGenerator(device),\n"
       "                           torch::TensorOptions().dtype(torch::kLong).device(device));",
       "g = torch.Generator(device=device)\n"
       "idx = torch.randperm(n, generator=g, device=device)"},
      {compile(R"('lengths' argument should be a 1D CPU int64 tensor)"),
       "Here pack_padded_sequence got its lengths on the GPU: since PyTorch 1.7 the lengths must be a CPU int64 tensor "
       "(they decide the packing on the host), whatever the device of the sequences.",
       "auto packed = torch::nn::utils::rnn::pack_padded_sequence(x, lengths.to(torch::kCPU, torch::kLong),\n"
       "                                                          /*batch_first=*/true, /*enforce_sorted=*/false);",
       "packed = nn.utils.rnn.pack_padded_sequence(x, lengths.cpu(), batch_first=True, enforce_sorted=False)"},
      {compile(R"(Tensors must be CUDA and dense|No backend type associated with device type)"),
       "Here a collective (all_reduce, broadcast, send) got a tensor on a device its process group has no backend for: "
       "NCCL moves only CUDA tensors, so a CPU tensor (a metric computed on the CPU, torch.tensor(x) made without a "
       "device) must be moved to this rank's GPU first, or sent over a Gloo group.",
       "std::vector<torch::Tensor> tensors{metric.to(torch::Device(torch::kCUDA, local_rank))};   // CUDA tensors only\n"
       "process_group->allreduce(tensors)->wait();",
       "t = torch.tensor(metric, device=f'cuda:{local_rank}')   # NCCL moves CUDA tensors only\n"
       "dist.all_reduce(t)\n"
       "# CPU tensors: a Gloo group, cpu_group = dist.new_group(backend='gloo'); dist.all_reduce(cpu_t, group=cpu_group)"},
      {compile(R"(Placeholder storage has not been allocated on MPS)"),
       "Here, on Apple's MPS backend, an op got a tensor still on the CPU: the model or an input was not moved to 'mps'.",
       "torch::Device device(torch::kMPS);\nmodel->to(device);\nauto y = model->forward(x.to(device));",
       "device = torch.device('mps')\nmodel.to(device)\ny = model(x.to(device))"},
  };
  return situations;
}

void explain_mismatch(Diagnosis& d) {
  const std::string devices = d.devices.empty() ? "more than one device" : join(d.devices, " and ");
  const std::string op = d.op.empty() ? "An op" : "The op `" + d.op + "`";
  d.explanation = fmt::format(
      "{} received tensors on different devices ({}). PyTorch never moves data between devices on its own: every "
      "tensor one op uses (the inputs, the targets, the module's parameters and buffers, a loss's class weights, any "
      "tensor created inside forward()) must be on the same device.",
      op, devices);
  if (d.argument) {
    static const RE2& placed = compile(R"(but got (\w+) is on (\S+?), different from other tensors on (\S+?)[ .!(])");
    std::string name, on, others;
    if (RE2::PartialMatch(d.message, placed, &name, &on, &others)) {
      d.explanation += fmt::format(" `{}` is on {} while the other tensors are on {}.", name, on, others);
    } else {
      d.explanation += fmt::format(" The check failed on the argument `{}`.", *d.argument);
    }
  }
  for (const auto& s : mismatch_situations()) {
    if (RE2::PartialMatch(d.message, s.pattern)) {
      d.explanation += std::string(" ") + s.explanation;
      d.fix_cpp = s.fix_cpp;
      d.fix_python = s.fix_python;
      return;
    }
  }
  d.fix_cpp =
      "torch::Device device(torch::cuda::is_available() ? torch::kCUDA : torch::kCPU);\n"
      "model->to(device);                                          // parameters and buffers\n"
      "for (auto& batch : *loader) {\n"
      "  auto x = batch.data.to(device, /*non_blocking=*/true);    // the inputs\n"
      "  auto y = batch.target.to(device, /*non_blocking=*/true);  // and the targets\n"
      "  auto mask = torch::ones({x.size(0)}, x.options());        // new tensors: on the input's device\n"
      "  auto loss = torch::nll_loss(model->forward(x), y);\n"
      "}\n"
      "// in a module: register_buffer(\"name\", t) so that module->to(device) moves it;\n"
      "// torchprobe::diagnostics::audit_devices(*model, {x}, device) names any tensor left behind";
  d.fix_python =
      "device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"
      "model.to(device)                      # parameters and buffers\n"
      "loss_fn.to(device)                    # a loss built with class weights holds a tensor too\n"
      "for x, y in loader:\n"
      "    x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)   # inputs and targets\n"
      "    mask = torch.ones(x.size(0), device=x.device)   # new tensors: on the input's device\n"
      "    loss = loss_fn(model(x), y)\n"
      "# in a module: self.register_buffer('name', t) so that model.to(device) moves it";
}

void explain_not_a_tensor(Diagnosis& d) {
  static const RE2& object = compile(R"('([\w.]+)' object has no attribute '(\w+)')");
  std::string type, method;
  RE2::PartialMatch(d.message, object, &type, &method);
  std::string what;
  if (type == "collections.OrderedDict") {
    what = "an OrderedDict: almost always a state_dict, i.e. torch.load returned a checkpoint's weights, not a model. "
           "Build the model, load_state_dict the weights into it, then move the model.";
  } else if (type == "dict") {
    what = "a dict: a dict batch (a tokenizer's or a collate function's output) whose values must each be moved, or a "
           "checkpoint (a state_dict is a dict of tensors, not a model) to load into a model with load_state_dict.";
  } else if (type == "numpy.ndarray") {
    what = "a NumPy array: arrays live in host memory and have no device; make a tensor of it first "
           "(torch.from_numpy), then move that.";
  } else if (type == "NoneType") {
    what = "None: the value was never set (a function or a Dataset's __getitem__ returned nothing, an optional input "
           "was left out). Find where the tensor should have been made.";
  } else if (type == "str") {
    what = "a string (a path or a name where a tensor was expected).";
  } else {
    what = "a " + (type.empty() ? std::string("container") : "`" + type + "`") +
           ": typically the batch a DataLoader returned ([images, labels]) or a list of tensors. A container has no "
           "device: move each tensor in it, or stack them into one tensor first, as the classic training loop does.";
  }
  d.explanation = fmt::format("`.{}()` was called on a Python object that is not a tensor; only tensors and modules have a "
                              "device. Here it is {}",
                              method.empty() ? "cuda" : method, what);
  d.fix_cpp =
      "for (auto& batch : *loader) {                        // a torch::data::Example: move its tensors\n"
      "  auto images = batch.data.to(device), labels = batch.target.to(device);\n"
      "}\n"
      "auto x = torch::stack(tensors).to(device);           // a std::vector<torch::Tensor>: stack it first,\n"
      "for (auto& t : tensors) t = t.to(device);            // or move each";
  d.fix_python =
      "for images, labels in loader:                        # the classic loop: unpack the batch, move each tensor\n"
      "    images, labels = images.to(device), labels.to(device)\n"
      "x = torch.stack(tensors).to(device)                  # a list of same-shaped tensors: stack it first\n"
      "batch = {k: v.to(device) for k, v in batch.items()}  # a dict batch: each value\n"
      "x = torch.from_numpy(array).to(device)               # a NumPy array: a tensor first\n"
      "model = Net(); model.load_state_dict(torch.load('model.pt', map_location=device)); model.to(device)  # a state_dict";
}

void explain_state_dict(Diagnosis& d) {
  static const RE2& prefixed_checkpoint = compile(R"((?i)unexpected key(?:\(s\)|s)? in state_dict:? ["'][\w.]*module\.|unexpected key "[\w.]*module\.)");
  d.explanation =
      "The checkpoint's keys and the model's differ by the `module.` prefix that nn.DataParallel and "
      "DistributedDataParallel put before every parameter name: a checkpoint saved from a wrapped model "
      "(model.state_dict() instead of model.module.state_dict()) is loaded into a plain model, or a plain checkpoint "
      "into a wrapped one. The weights are all there; only their names differ.";
  d.explanation += RE2::PartialMatch(d.message, prefixed_checkpoint)
                       ? " Here the checkpoint has the prefix and the model does not: strip it when loading."
                       : " Here the model is wrapped and the checkpoint is not: load into model.module (or add the prefix).";
  d.fix_cpp =
      "// a Python state_dict read in C++ (torch::pickle_load): match its names without DataParallel's prefix\n"
      "std::ifstream file(\"model.pt\", std::ios::binary);\n"
      "std::vector<char> bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());\n"
      "auto weights = torch::pickle_load(bytes).toGenericDict();\n"
      "torch::NoGradGuard no_grad;\n"
      "auto params = model->named_parameters(), buffers = model->named_buffers();\n"
      "for (const auto& item : weights) {\n"
      "  std::string name = item.key().toStringRef();\n"
      "  if (name.rfind(\"module.\", 0) == 0) name = name.substr(7);   // strip the prefix (or add it: \"module.\" + name)\n"
      "  if (auto* p = params.find(name)) p->copy_(item.value().toTensor());\n"
      "  else if (auto* b = buffers.find(name)) b->copy_(item.value().toTensor());\n"
      "}";
  d.fix_python =
      "state = torch.load('model.pt', map_location='cpu')\n"
      "state = state.get('state_dict', state)          # some checkpoints wrap it\n"
      "# saved from DataParallel/DDP, loaded into a plain model: strip the prefix\n"
      "state = {(k[len('module.'):] if k.startswith('module.') else k): v for k, v in state.items()}\n"
      "model.load_state_dict(state)\n"
      "# a plain checkpoint into a wrapped model: model.module.load_state_dict(state)\n"
      "# and save without the prefix from now on: torch.save(model.module.state_dict(), 'model.pt')";
}

void explain_invalid_device(Diagnosis& d) {
  const std::string device = d.devices.empty() ? "" : "`" + d.devices.front() + "`";
  if (contains(d.message, "device string")) {
    d.explanation = fmt::format(
        "{} is not a device string PyTorch accepts: a device type (cpu, cuda, mps, ...) optionally followed by "
        "`:index`, such as `cuda:0`.",
        device.empty() ? "The string" : device);
    if (contains(d.message, "None")) {
      d.explanation += " Here the index was None: the variable it came from (a local rank, a GPU id) was never set.";
    }
  } else if (contains(d.message, "must be cuda device")) {
    d.explanation = "A CUDA-only call (torch.cuda.set_device, torch.cuda.device, .cuda(device)) was given a device that "
                    "is not a CUDA one, such as 'cpu' or 'mps'.";
  } else {
    d.explanation = fmt::format(
        "The device {} does not exist on this host. CUDA numbers the visible GPUs from 0 to the device count minus 1 "
        "(CUDA_VISIBLE_DEVICES renumbers them): use an index below the device count. `torchprobe devices` lists what "
        "this host has.",
        device.empty() ? "index" : device);
    if (contains(d.message, "deserialize")) {
      d.explanation += " Here a checkpoint saved on another host's GPU is loaded: map its tensors to a device this host has.";
    }
  }
  d.fix_cpp =
      "const int count = static_cast<int>(torch::cuda::device_count());\n"
      "const int index = wanted < count ? wanted : 0;              // an index below the device count\n"
      "torch::Device device = count > 0 ? torch::Device(torch::kCUDA, index) : torch::Device(torch::kCPU);\n"
      "torch::load(model, \"model.pt\", device);                    // a checkpoint from another GPU: onto this one";
  d.fix_python =
      "count = torch.cuda.device_count()\n"
      "index = wanted if wanted < count else 0                       # an index below the device count\n"
      "device = torch.device(f'cuda:{index}' if count else 'cpu')\n"
      "state = torch.load('model.pt', map_location=device)           # a checkpoint from another GPU: onto this one";
}

void explain_cuda_unavailable(Diagnosis& d) {
  d.explanation =
      "CUDA was asked for, but this process cannot use it: the PyTorch build has no CUDA (a CPU-only build such as "
      "Debian's libtorch or a +cpu wheel), no NVIDIA driver is loaded, or no GPU is visible (CUDA_VISIBLE_DEVICES). "
      "Run `torchprobe devices` to see which.";
  if (contains(d.message, "deserialize") || contains(d.message, "is_available() is False")) {
    d.explanation += " Here a checkpoint saved from GPU tensors is being loaded where there is no GPU: load it onto a "
                     "device you have.";
  }
  if (contains(d.message, "ATen_cuda") || contains(d.message, "DeviceGuardImpl for cuda") ||
      contains(d.message, "not linked with support for cuda")) {
    d.explanation += " Here a C++ program runs without LibTorch's CUDA library: the linker dropped libtorch_cuda.so "
                     "because no symbol of it is used directly. Link with -Wl,--no-as-needed, as Torch's CMake "
                     "package (${TORCH_LIBRARIES}) does.";
  }
  d.fix_cpp =
      "auto device = torch::cuda::is_available() ? torch::Device(torch::kCUDA) : torch::Device(torch::kCPU);\n"
      "torch::load(model, \"model.pt\", device);   // checkpoints: load onto a device this host has";
  d.fix_python =
      "device = 'cuda' if torch.cuda.is_available() else 'cpu'\n"
      "state = torch.load('model.pt', map_location=device)";
}

void explain_meta(Diagnosis& d) {
  d.explanation =
      "A tensor on the meta device took part in real compute or was read. Meta tensors have shapes and dtypes but no "
      "data (a model built on device 'meta', an init-empty-weights loader, an unfilled parameter): they must be "
      "materialised on a real device and given values before use. Note that ops on meta tensors alone do not fail; "
      "they return meta results silently.";
  d.fix_cpp =
      "// a meta parameter has no data to move: build the module on a real device, then load its weights\n"
      "Net model;\n"
      "model->to(device);\n"
      "torch::load(model, \"weights.pt\", device);";
  d.fix_python =
      "model = model.to_empty(device=device)   # real (uninitialised) storage on the device\n"
      "model.load_state_dict(torch.load('weights.pt', map_location=device))";
}

void explain(Diagnosis& d) {
  switch (d.kind) {
    case ErrorKind::kDeviceMismatch: explain_mismatch(d); break;
    case ErrorKind::kCudaUnavailable: explain_cuda_unavailable(d); break;
    case ErrorKind::kInvalidDevice: explain_invalid_device(d); break;
    case ErrorKind::kMetaTensor: explain_meta(d); break;
    case ErrorKind::kOutOfMemoryGpu: explain_gpu_memory(d); break;
    case ErrorKind::kOutOfMemoryCpu: explain_cpu_memory(d); break;
    case ErrorKind::kNotATensor: explain_not_a_tensor(d); break;
    case ErrorKind::kStateDictPrefix: explain_state_dict(d); break;
    case ErrorKind::kUnknown: d.explanation = "Not a device or memory error torchprobe recognises."; break;
  }
}

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

/// The diagnosis of one entry's text under `rule` (none: unknown). `kept`: the whole text, for OOM numbers
/// printed on other lines than the error's.
Diagnosis diagnose(const std::string& text, const Rule* rule, const std::string* kept) {
  Diagnosis d;
  if (rule) {
    d.kind = rule->kind;
    d.confidence = rule->confidence;
    d.allocator = rule->allocator;
  }
  d.message = trim_dispatcher_tail(text);
  // "'list' object has no attribute 'cuda'" names a method, and checkpoint keys no device.
  if (d.kind != ErrorKind::kNotATensor && d.kind != ErrorKind::kStateDictPrefix) {
    d.devices = devices_in(d.message, /*only_asked_for=*/d.kind == ErrorKind::kInvalidDevice);
  }
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

// A rule that may speak, given what the whole text said: no "likely" memory verdict next to another cause.
bool may_apply(std::size_t rule, const Scanner& scanner) {
  const Rule& r = rule_table().rules[rule];
  if (std::string(r.confidence) == "likely" && scanner.another_cause_seen()) return false;
  return !(r.unless && scanner.unless_seen(rule));
}

/// Picks the entry that is the error: for each rule, the last exception line it matches (Python prints the exception
/// that ended the program last), else the first line that mentions an error it matches. Lines that mention no error
/// count only when no rule matches an error line: advice printed nearby ("If you encounter CUDA out of memory, try
/// ...") must not win over the error. Rules keep their order: the first with a match wins.
class Selector {
 public:
  explicit Selector(std::size_t rules) : error_(rules), other_(rules) {}

  void take(const Entry& e) {
    std::shared_ptr<const std::string> text;
    const auto shared = [&] { return text ? text : text = std::make_shared<const std::string>(e.text); };
    for (const std::size_t r : matching_rules(e.text)) {
      if (e.tier == kException) {
        error_[r] = shared();
      } else if (e.tier == kErrorLine) {
        if (!error_[r]) error_[r] = shared();
      } else if (!other_[r]) {
        other_[r] = shared();
      }
    }
    if (e.tier == kException) last_exception_ = shared();
    if (e.tier == kErrorLine && !first_error_) first_error_ = shared();
    if (!first_) first_ = shared();
  }

  Diagnosis diagnosis(const Scanner& scanner) const {
    const auto& rules = rule_table().rules;
    for (const auto* pass : {&error_, &other_}) {
      for (std::size_t r = 0; r < rules.size(); ++r) {
        if ((*pass)[r] && may_apply(r, scanner)) return diagnose(*(*pass)[r], &rules[r], &scanner.kept());
      }
    }
    const auto& message = last_exception_ ? last_exception_ : first_error_ ? first_error_ : first_;
    return diagnose(message ? *message : std::string(), nullptr, nullptr);
  }

 private:
  std::vector<std::shared_ptr<const std::string>> error_, other_;  ///< per rule: its best entry
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
  if (d.kind == ErrorKind::kOutOfMemoryGpu || d.kind == ErrorKind::kOutOfMemoryCpu) {
    j["confidence"] = d.confidence;
    j["allocator"] = d.allocator;
  }
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
    for (const std::size_t r : matching_rules(e.text)) {
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
  if (scan.findings.empty()) {
    return fmt::format("no device or memory error torchprobe recognises in {} lines\n", scan.lines);
  }
  std::string out =
      scan.listing_stopped
          ? fmt::format("stopped listing at {} distinct errors: {} error lines in {} lines, {} of them not listed:\n",
                        scan.findings.size(), scan.error_lines, scan.lines, scan.unlisted_error_lines)
          : fmt::format("{} distinct error{} in {} lines:\n", scan.findings.size(), scan.findings.size() == 1 ? "" : "s",
                        scan.lines);
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

std::string raw_message(const std::exception& e) {
  const std::string first_line = short_message(e);
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
