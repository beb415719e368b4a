#include "progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <regex>

namespace torchprobe::bench {

Progress& Progress::instance() {
  static Progress progress;
  return progress;
}

Progress::Progress() : tty_(isatty(STDERR_FILENO) != 0), begin_(std::chrono::steady_clock::now()) {}

void Progress::set_total(const std::vector<std::string>& names, const std::string& filter) {
  total_ = filter_names(names, filter).size();
}

void Progress::start(const std::string& name) {
  if (silent_ || !started_.insert(name).second) return;
  const auto seconds = static_cast<long>(
      std::chrono::duration<double>(std::chrono::steady_clock::now() - begin_).count());
  const size_t index = started_.size();
  std::string text = total_ > 0 ? fmt::format("[{}/{}] {} ({} left, {}:{:02})", index, total_, name,
                                              total_ > index ? total_ - index : 0, seconds / 60, seconds % 60)
                                : fmt::format("[{}] {}", index, name);
  if (tty_) {
    std::fprintf(stderr, "\r\033[Ktorchprobe-bench: %s", text.c_str());
    line_shown_ = true;
  } else {
    std::fprintf(stderr, "torchprobe-bench: %s\n", text.c_str());
  }
  std::fflush(stderr);
}

void Progress::clear_line() {
  if (!line_shown_) return;
  std::fprintf(stderr, "\r\033[K");
  std::fflush(stderr);
  line_shown_ = false;
}

std::vector<std::string> filter_names(const std::vector<std::string>& names, const std::string& filter) {
  if (filter.empty() || filter == "all" || filter == ".") return names;
  const bool negate = filter.front() == '-';
  std::vector<std::string> kept;
  try {
    const std::regex pattern(negate ? filter.substr(1) : filter, std::regex::extended);
    for (const auto& n : names) {
      if (std::regex_search(n, pattern) != negate) kept.push_back(n);
    }
  } catch (const std::regex_error&) {
    return names;  // Google Benchmark reports a bad filter itself
  }
  return kept;
}

}  // namespace torchprobe::bench
