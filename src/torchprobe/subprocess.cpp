#include "torchprobe/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "torchprobe/interrupt.h"

namespace torchprobe::subprocess {
namespace {

/// Reads what is there from `fd` into `pending` and calls `line` for each complete line; at end of file
/// also for an unterminated last one. Returns false at end of file or on an error.
bool drain(int fd, std::string& pending, const std::function<void(const std::string&)>& line) {
  char buffer[65536];
  const ssize_t n = read(fd, buffer, sizeof buffer);
  if (n < 0) return errno == EINTR || errno == EAGAIN;
  if (n == 0) {
    if (!pending.empty()) line(pending);
    pending.clear();
    return false;
  }
  pending.append(buffer, static_cast<size_t>(n));
  size_t start = 0;
  for (size_t nl; (nl = pending.find('\n', start)) != std::string::npos; start = nl + 1) line(pending.substr(start, nl - start));
  pending.erase(0, start);
  return true;
}

void close_pair(int fds[2]) {
  for (int i = 0; i < 2; ++i) {
    if (fds[i] >= 0) close(fds[i]);
    fds[i] = -1;
  }
}

}  // namespace

int run(const std::vector<std::string>& args, const Options& options) {
  if (args.empty()) throw std::invalid_argument("subprocess::run: no program");
  int out[2] = {-1, -1}, err[2] = {-1, -1}, exec_status[2] = {-1, -1};
  const auto fail = [&](const char* what) {
    const int saved = errno;
    close_pair(out);
    close_pair(err);
    close_pair(exec_status);
    throw std::runtime_error(fmt::format("cannot run {}: {}: {}", args[0], what, std::strerror(saved)));
  };
  if ((options.on_stdout_line && pipe2(out, O_CLOEXEC) != 0) || (options.on_stderr_line && pipe2(err, O_CLOEXEC) != 0) ||
      pipe2(exec_status, O_CLOEXEC) != 0) {
    fail("pipe");
  }
  std::vector<std::string> strings = args;
  std::vector<char*> argv;
  for (auto& s : strings) argv.push_back(s.data());
  argv.push_back(nullptr);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) fail("fork");
  if (pid == 0) {
    // Only async-signal-safe calls from here to exec.
    prctl(PR_SET_PDEATHSIG, SIGKILL);  // dies with its parent, whatever ends the parent
    if (getppid() != parent) _exit(127);
    setpgid(0, 0);  // a terminal's Ctrl-C reaches the parent only; the parent forwards it once
    if (out[1] >= 0) dup2(out[1], STDOUT_FILENO);
    if (err[1] >= 0) dup2(err[1], STDERR_FILENO);
    execv(argv[0], argv.data());
    const int e = errno;
    (void)!write(exec_status[1], &e, sizeof e);
    _exit(127);
  }
  const int cleanup = interrupt::add_cleanup([pid] { kill(pid, SIGKILL); });
  for (int* fds : {out, err, exec_status}) {
    if (fds[1] >= 0) close(fds[1]);
    fds[1] = -1;
  }
  int exec_errno = 0;
  while (read(exec_status[0], &exec_errno, sizeof exec_errno) < 0 && errno == EINTR) {
  }
  close_pair(exec_status);

  std::string out_pending, err_pending;
  bool forwarded = false;
  pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
  while (fds[0].fd >= 0 || fds[1].fd >= 0) {
    if (!forwarded && interrupt::requested()) {
      kill(pid, interrupt::signal_number() > 0 ? interrupt::signal_number() : SIGTERM);
      forwarded = true;
    }
    if (poll(fds, 2, 200) < 0 && errno != EINTR) break;
    if (fds[0].fd >= 0 && (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) &&
        !drain(fds[0].fd, out_pending, options.on_stdout_line)) {
      fds[0].fd = -1;
    }
    if (fds[1].fd >= 0 && (fds[1].revents & (POLLIN | POLLHUP | POLLERR)) &&
        !drain(fds[1].fd, err_pending, options.on_stderr_line)) {
      fds[1].fd = -1;
    }
  }
  close_pair(out);
  close_pair(err);
  int status = 0;
  for (;;) {
    const pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid || (done < 0 && errno != EINTR)) break;
    if (!forwarded && interrupt::requested()) {
      kill(pid, interrupt::signal_number() > 0 ? interrupt::signal_number() : SIGTERM);
      forwarded = true;
    }
    usleep(20000);
  }
  interrupt::remove_cleanup(cleanup);
  if (exec_errno != 0) {
    throw std::runtime_error(fmt::format("cannot run {}: {}", args[0], std::strerror(exec_errno)));
  }
  return status;
}

std::string describe_status(int status) {
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    return fmt::format("was killed by {} ({})", interrupt::signal_name(sig), strsignal(sig));
  }
  if (WIFEXITED(status)) return fmt::format("exited with status {}", WEXITSTATUS(status));
  return fmt::format("ended with wait status {}", status);
}

std::string last_lines(const std::string& text, int n) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    const size_t end = std::min(text.find('\n', start), text.size());
    if (end > start) lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  std::string out;
  for (size_t i = lines.size() > static_cast<size_t>(n) ? lines.size() - static_cast<size_t>(n) : 0; i < lines.size(); ++i) {
    out += (out.empty() ? "" : " | ") + lines[i];
  }
  return out;
}

}  // namespace torchprobe::subprocess
