#include "torchprobe/interrupt.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>

namespace torchprobe::interrupt {
namespace {

std::atomic<int> g_signal{0};         // the first signal, for exit codes
std::atomic<bool> g_requested{false};
std::atomic<int> g_signals_seen{0};   // counted by the watcher
int g_pipe[2] = {-1, -1};             // handler -> watcher
Mode g_mode = Mode::kImmediate;

const char* sigabbrev(int sig) { return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "the signal"; }

struct Registry {
  std::mutex mutex;
  std::string reason;
  std::map<int, std::function<void()>> cleanups;
  int next = 0;
};
Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: the watcher may use it while the process exits
  return *r;
}

void handler(int sig) {
  const int saved = errno;
  int expected = 0;
  g_signal.compare_exchange_strong(expected, sig);
  const auto byte = static_cast<unsigned char>(sig);
  if (g_pipe[1] >= 0) (void)!write(g_pipe[1], &byte, 1);
  errno = saved;
}

void run_cleanups() {
  std::map<int, std::function<void()>> cleanups;
  {
    std::lock_guard<std::mutex> lock(registry().mutex);
    cleanups.swap(registry().cleanups);
  }
  for (auto it = cleanups.rbegin(); it != cleanups.rend(); ++it) it->second();
}

void set_reason(const std::string& why) {
  std::lock_guard<std::mutex> lock(registry().mutex);
  if (registry().reason.empty()) registry().reason = why;
}

[[noreturn]] void stop_now(int sig) {
  run_cleanups();
  std::fflush(stdout);
  std::fflush(stderr);
  _exit(128 + sig);
}

void watch() {
  for (;;) {
    unsigned char byte = 0;
    const ssize_t n = read(g_pipe[0], &byte, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    const int sig = byte;
    const int seen = ++g_signals_seen;
    set_reason(sigabbrev(sig));
    g_requested = true;
    if (g_mode == Mode::kImmediate || seen > 1) {
      if (g_mode == Mode::kGraceful) std::fprintf(stderr, "\ntorchprobe: %s again: stopping now\n", sigabbrev(sig));
      stop_now(sig);
    }
    std::fprintf(stderr, "\ntorchprobe: %s: stopping after the current sample; finished results are kept (%s again "
                 "stops at once)\n", sigabbrev(sig), sig == SIGINT ? "Ctrl-C" : "the signal");
    std::fflush(stderr);
  }
}

}  // namespace

void install(Mode mode) {
  static std::once_flag once;
  std::call_once(once, [mode] {
    g_mode = mode;
    if (pipe2(g_pipe, O_CLOEXEC) != 0) {
      std::fprintf(stderr, "torchprobe: warning: cannot watch for signals: pipe: %s\n", std::strerror(errno));
      return;
    }
    std::thread(watch).detach();
    struct sigaction action {};
    action.sa_handler = handler;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    sigaction(SIGINT, &action, nullptr);
    sigaction(SIGTERM, &action, nullptr);
  });
}

bool requested() { return g_requested.load(); }
int signal_number() { return g_signal.load(); }

std::string reason() {
  std::lock_guard<std::mutex> lock(registry().mutex);
  return registry().reason;
}

int exit_code() {
  const int sig = g_signal.load();
  return sig > 0 ? 128 + sig : 0;
}

void request_stop(const std::string& why) {
  set_reason(why);
  g_requested = true;
}

void check() {
  if (!requested()) return;
  const int sig = signal_number();
  throw Interrupted(sig > 0 ? "interrupted by " + signal_name(sig) : "stopped: " + reason());
}

int add_cleanup(std::function<void()> cleanup) {
  std::lock_guard<std::mutex> lock(registry().mutex);
  const int handle = registry().next++;
  registry().cleanups.emplace(handle, std::move(cleanup));
  return handle;
}

void remove_cleanup(int handle) {
  std::lock_guard<std::mutex> lock(registry().mutex);
  registry().cleanups.erase(handle);
}

void reset_for_testing() {
  std::lock_guard<std::mutex> lock(registry().mutex);
  registry().reason.clear();
  g_requested = false;
  g_signal = 0;
  g_signals_seen = 0;
}

std::string signal_name(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev != nullptr ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

}  // namespace torchprobe::interrupt
