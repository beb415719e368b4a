#pragma once
// The rules that say which kind of error a text is, and the patterns whose presence anywhere in the text changes what
// they may say (private to torchprobe::explain).
#include <re2/re2.h>
#include <re2/set.h>

#include <cstddef>
#include <string>
#include <vector>

#include "diagnostics/classify.h"
#include "diagnostics/classify_patterns.h"
#include "diagnostics/re2_options.h"

namespace torchprobe::diagnostics::detail {

struct Rule {
  ErrorKind kind;
  const RE2* pattern;
  const char* confidence = "";  ///< out-of-memory rules: "certain" or "likely"
  const char* allocator = "";   ///< out-of-memory rules: what failed to allocate
  const RE2* unless = nullptr;  ///< the rule does not apply to a text with this anywhere
  /// The pattern's two groups are what was expected and what was found: the rule holds only when they name
  /// different devices ("expected device cuda:0 and dtype Float but got device cuda:0 and dtype Long" is a dtype
  /// error).
  bool two_sides = false;
  /// A further test of the matched text, for what one pattern cannot say.
  bool (*holds)(const std::string& text) = nullptr;
  /// The rule stays quiet where the text names another cause: every "likely" rule (set by the table), and loose
  /// words (an illegal memory access after a framework's "Recovering from OOM error").
  bool yields_to_another_cause = false;
};

struct RuleTable {
  RuleTable();
  std::vector<Rule> rules;
  RE2::Set set{pattern_options(), RE2::UNANCHORED};  ///< all patterns at once: one pass over each entry
};

/// The rules in the order they are tried, built on first use.
const RuleTable& rule_table();

// Found anywhere in the text, these change what the rules may say (see Scanner::note_context).
struct ContextPatterns {
  ContextPatterns();
  void add(const std::string& pattern);
  static constexpr int kAnotherCause = 0, kErrorWord = 1, kFirstUnless = 2;
  RE2::Set set{pattern_options(), RE2::UNANCHORED};
  std::vector<const RE2*> each;
  std::vector<std::size_t> unless_rule;  ///< set index kFirstUnless + i is the `unless` of rules[unless_rule[i]]
};

const ContextPatterns& context_patterns();

/// The indices of the patterns in `set` (`each`: the same patterns, one by one) that match `text`, in order.
std::vector<int> set_matches(const RE2::Set& set, const std::vector<const RE2*>& each, const StringPiece& text);

/// The indices of the rules that hold for `text`, in table order.
std::vector<std::size_t> matching_rules(const std::string& text);
/// A two-sided rule's devices in `text`: the expected side's, then the found side's; empty unless both sides name
/// devices and they differ.
std::vector<std::string> devices_on_two_sides(const Rule& rule, const std::string& text);

}  // namespace torchprobe::diagnostics::detail
