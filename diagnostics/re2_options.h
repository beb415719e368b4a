#pragma once
// The one way the classifier and the OOM parser compile their patterns (private to torchprobe::explain).
// RE2 matches in time linear in the text and never recurses, so a 1 MB line or a 50 MB log cannot overflow the
// stack (std::regex did, per character). Text is read as Latin-1: every byte sequence, invalid UTF-8 and NULs
// included, is valid input; the patterns are ASCII, and UTF-8 literals match as their byte sequences.
#include <re2/re2.h>

#include <cstdint>

namespace torchprobe::diagnostics {

/// Latin-1, no logging of pattern errors (the tests check that none is rejected); `any_case` for words people
/// retype in any case; room for a rule set's DFA (when RE2 runs out, a set match fails instead of matching slowly).
inline RE2::Options pattern_options(bool any_case = false) {
  RE2::Options options(RE2::Latin1);
  options.set_case_sensitive(!any_case);
  options.set_log_errors(false);
  options.set_max_mem(std::int64_t{64} << 20);
  return options;
}

}  // namespace torchprobe::diagnostics
