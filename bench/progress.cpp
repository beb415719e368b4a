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
  const std::string text = progress_text(
      started_.size(), total_, name, std::chrono::duration<double>(std::chrono::steady_clock::now() - begin_).count());
  if (tty_) {
    std::fprintf(stderr, "\r\033[Ktorchprobe-bench: %s", text.c_str());
    line_shown_ = true;
  } else {
    std::fprintf(stderr, "torchprobe-bench: %s\n", text.c_str());
  }
  std::fflush(stderr);
}

std::string progress_text(size_t index, size_t total, const std::string& name, double elapsed_s) {
  if (total == 0) return fmt::format("[{}] {}", index, name);
  const auto clock = [](double seconds) {
    const auto s = static_cast<long>(seconds + 0.5);
    return fmt::format("{}:{:02}", s / 60, s % 60);
  };
  const size_t left = total > index ? total - index : 0;
  std::string text = fmt::format("[{}/{}] {} ({} left, {} so far", index, total, name, left, clock(elapsed_s));
  const size_t finished = index > 0 ? index - 1 : 0;
  if (finished > 0)
    text +=
        fmt::format(", ~{} to go", clock(elapsed_s / static_cast<double>(finished) * static_cast<double>(left + 1)));
  return text + ")";
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
