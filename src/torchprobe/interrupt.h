#pragma once
// SIGINT and SIGTERM, handled the one way every torchprobe program does: nothing left behind.
//
// A program calls install() once, at the top of main. The handler only records the signal and wakes a
// watcher thread, which does the rest outside signal context:
//   kGraceful   (torchprobe-bench): the first signal asks the run to stop; long loops call check()
//               between samples, the current benchmark is dropped, finished results are written and the
//               program exits 128 + the signal (130 for SIGINT, 143 for SIGTERM). A second signal
//               stops at once, as kImmediate does.
//   kImmediate  (the torchprobe program): run the cleanups (temporary directories and files, child
//               processes), then exit 128 + the signal.
// Cleanups are registered by what creates the thing to clean (TempDir, io::write_text_file, Subprocess).
#include <functional>
#include <stdexcept>
#include <string>

namespace torchprobe::interrupt {

enum class Mode { kGraceful, kImmediate };

/// Installs the SIGINT/SIGTERM handlers and the watcher thread. Idempotent (the first mode stays).
void install(Mode mode);

/// True once a stop was asked for, by a signal or by request_stop().
bool requested();
/// The signal that asked for the stop (SIGINT, SIGTERM), or 0.
int signal_number();
/// Why the run stops: "SIGINT", "SIGTERM", or the reason given to request_stop(); empty if it does not.
std::string reason();
/// 128 + the signal after a signal; otherwise 0.
int exit_code();
/// Asks the run to stop as a signal would (e.g. the results can no longer be written). The first
/// request wins; later ones are ignored.
void request_stop(const std::string& why);

/// Thrown by check() once a stop was requested; its message says why ("interrupted by SIGINT").
class Interrupted : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
/// Throws Interrupted if a stop was requested: for long loops, between units of work.
void check();

/// Registers `cleanup` to run if the process is stopped at once; returns a handle for remove_cleanup.
/// Cleanups run on the watcher thread, newest first, and must not throw.
int add_cleanup(std::function<void()> cleanup);
void remove_cleanup(int handle);

/// "SIGINT", "SIGSEGV", ...: a signal's name, for messages.
std::string signal_name(int sig);

/// For tests: forgets a requested stop (not the handlers).
void reset_for_testing();

}  // namespace torchprobe::interrupt
