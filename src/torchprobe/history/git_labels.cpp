// A run's commit and branch from git, where `history add` is not given them (complete_labels, store.h).
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <string>
#include <vector>

#include "torchprobe/history/store.h"
#include "torchprobe/input_error.h"
#include "torchprobe/subprocess.h"

namespace torchprobe::history {
namespace {

// The first line a program wrote on stdout, or "" when it failed.
std::string first_line_of(const std::vector<std::string>& argv) {
  std::string line;
  subprocess::Options options;
  options.on_stdout_line = [&](const std::string& l) {
    if (line.empty()) line = l;
  };
  options.on_stderr_line = [](const std::string&) {};
  try {
    const int status = subprocess::run(argv, options);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? line : "";
  } catch (const std::exception&) {
    return "";
  }
}

std::string find_on_path(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::string dirs = path == nullptr ? "/usr/bin:/bin" : path;
  size_t start = 0;
  while (start <= dirs.size()) {
    const size_t colon = std::min(dirs.find(':', start), dirs.size());
    const std::string candidate = (std::filesystem::path(dirs.substr(start, colon - start)) / program).string();
    if (colon > start && access(candidate.c_str(), X_OK) == 0) return candidate;
    start = colon + 1;
  }
  return "";
}

}  // namespace

RunLabels complete_labels(RunLabels labels) {
  if (labels.commit.empty() || labels.branch.empty()) {
    const std::string git = find_on_path("git");
    if (!git.empty()) {
      if (labels.commit.empty()) labels.commit = first_line_of({git, "rev-parse", "HEAD"});
      if (labels.branch.empty()) {
        const std::string branch = first_line_of({git, "rev-parse", "--abbrev-ref", "HEAD"});
        if (branch != "HEAD") labels.branch = branch;  // a detached HEAD (a CI checkout) has no branch
      }
    }
    if (labels.commit.empty()) {
      throw InputError(
          "no commit for the run: not inside a git repository (or git is not installed); pass --commit SHA");
    }
  }
  check_commit_id(labels.commit);
  return labels;
}

}  // namespace torchprobe::history
