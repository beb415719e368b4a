#pragma once
// Why a run's figures might not be trusted, found on the host before it starts (as Google Benchmark
// and nvbench warn about CPU scaling and debug builds): each warning says what to do about it.
#include <string>
#include <vector>

#include "torchprobe/blas.h"

namespace torchprobe::trust {

struct Warning {
  std::string code;     ///< "busy_processes", "cpu_governor", "threads_exceed_cores", "blas_pool", "reference_blas", "debug_build"
  std::string message;  ///< the finding and what to do, one line
};

/// What can make CPU figures wrong in this thread setup, each with what to do: more LibTorch threads
/// than cores, a BLAS pool beside LibTorch's (pinned or not), the reference BLAS.
std::vector<Warning> threading_warnings(const ThreadSetup& setup);

/// A process other than this one that used CPU time during the sampling window.
struct BusyProcess {
  int pid = 0;
  std::string command;
  double cpu_pct = 0.0;  ///< % of one core over the window
};
/// Every process but this one (and its threads) that used at least `min_cpu_pct` of one core over
/// `window_s` seconds, busiest first (from /proc/<pid>/stat).
std::vector<BusyProcess> busy_processes(double window_s, double min_cpu_pct);

/// A process counts as busy from this share of one core over the sampling window (%).
constexpr double kBusyProcessPct = 10.0;
/// The busy processes together, from this share of one core on, make the busy_processes warning (%).
constexpr double kBusyTotalPct = 25.0;
/// The busy_processes warning for what busy_processes() found on a host of `cores` cores: the processes at or above
/// kBusyProcessPct, when together they reach kBusyTotalPct; "" (an empty code) otherwise.
Warning busy_warning(const std::vector<BusyProcess>& busy, int cores);

/// The checks of the host at the start of a run: other busy processes (sampled for `window_s`),
/// the CPU frequency governor where sysfs shows it, more threads than cores, a BLAS thread pool
/// beside LibTorch's, the reference BLAS, and a torchprobe built without NDEBUG.
std::vector<Warning> host_warnings(const ThreadSetup& threads, double window_s = 0.25);

/// [{"code": ..., "message": ...}, ...] on one line, as kept in a results file's context.
std::string warnings_json(const std::vector<Warning>& warnings);

}  // namespace torchprobe::trust
