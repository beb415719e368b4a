#pragma once
// Child processes that cannot outlive their parent: the one way torchprobe runs its children (the CPU
// memory probe, isolated benchmarks).
#include <functional>
#include <string>
#include <vector>

namespace torchprobe::subprocess {

struct Options {
  /// Called with each line the child writes to stdout (without the newline); null: the child's stdout
  /// is the parent's.
  std::function<void(const std::string&)> on_stdout_line;
  /// The same for stderr.
  std::function<void(const std::string&)> on_stderr_line;
};

/// Runs argv[0] (a path) with `argv` and waits for it; returns the wait status (see describe_status).
/// The child runs in its own process group and dies with the parent, whatever ends the parent
/// (PR_SET_PDEATHSIG, and a cleanup that kills it when the parent is stopped at once). When the parent
/// is asked to stop gracefully (interrupt::requested), the child gets that signal once, so it can stop
/// gracefully too. Throws std::runtime_error when the child cannot be started.
int run(const std::vector<std::string>& argv, const Options& options = {});

/// "exited with status 3", "was killed by SIGSEGV (Segmentation fault)".
std::string describe_status(int status);

/// Joins the last `n` non-empty lines of `text` with " | " (for one-line error messages).
std::string last_lines(const std::string& text, int n);

}  // namespace torchprobe::subprocess
