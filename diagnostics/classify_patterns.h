#pragma once
// How the classifier compiles its patterns, and what every part of it (the rules, the reading of the text, the facts,
// the explanations) shares: private to torchprobe::explain.
#include <re2/re2.h>

#include <deque>
#include <mutex>
#include <string>

namespace torchprobe::diagnostics::detail {

using re2::StringPiece;

// Every pattern compiled here, owned for the program's life, so that invalid_patterns() can check each.
struct Registry {
  std::mutex mutex;
  std::deque<RE2> patterns;
};
Registry& registry();
/// `pattern` compiled with pattern_options() and kept in the registry: compile each once, into a static.
const RE2& compile(const std::string& pattern);

/// `what` appears in `text`.
bool contains(const std::string& text, const char* what);

}  // namespace torchprobe::diagnostics::detail
