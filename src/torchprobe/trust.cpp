#include "torchprobe/trust.h"

#include <dirent.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "torchprobe/cpu.h"

namespace torchprobe::trust {
namespace {

struct ProcessTime {
  std::string command;
  long long ticks = 0;  // utime + stime, in clock ticks
};

// utime + stime of every process, from /proc/<pid>/stat ("pid (comm) state ... utime stime ...").
std::map<int, ProcessTime> process_times() {
  std::map<int, ProcessTime> out;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return out;
  while (const dirent* entry = readdir(proc)) {
    const int pid = std::atoi(entry->d_name);
    if (pid <= 0) continue;
    std::ifstream in(std::string("/proc/") + entry->d_name + "/stat");
    std::string text;
    if (!std::getline(in, text)) continue;
    const auto open = text.find('('), close = text.rfind(')');
    if (open == std::string::npos || close == std::string::npos || close < open) continue;
    std::istringstream rest(text.substr(close + 2));
    std::string field;
    std::vector<std::string> fields;
    while (rest >> field && fields.size() < 13) fields.push_back(field);
    if (fields.size() < 13) continue;  // fields[11], fields[12]: utime, stime (the stat file's 14th and 15th)
    try {
      out[pid] = {text.substr(open + 1, close - open - 1), std::stoll(fields[11]) + std::stoll(fields[12])};
    } catch (const std::exception&) {
    }
  }
  closedir(proc);
  return out;
}

std::string read_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

}  // namespace

std::vector<Warning> threading_warnings(const ThreadSetup& setup) {
  std::vector<Warning> out;
  if (setup.intra_op > setup.cores) {
    out.push_back({"threads_exceed_cores", fmt::format("{} LibTorch threads on {} core{}: threads time-slice and CPU figures drop and scatter; "
                              "use --threads {} or fewer",
                              setup.intra_op, setup.cores, setup.cores == 1 ? "" : "s", setup.cores)});
  }
  const BlasInfo& blas = setup.blas;
  if (blas.threading == BlasThreading::kPthreads) {
    if (setup.blas_pin_failed) {
      out.push_back({"blas_pool", fmt::format(
          "mixed OpenBLAS install: LibTorch calls {} (an interface that spreads every call over OpenMP's {} threads) "
          "but the work runs in {}, OpenBLAS's pthreads build with its own pool, so the two pools spin on the same {} "
          "cores and no pin holds; CPU figures are distorted. Select the matching builds: for a in libblas.so.3 "
          "liblapack.so.3 libopenblas.so.0; do update-alternatives --set $a-x86_64-linux-gnu "
          "/usr/lib/x86_64-linux-gnu/openblas-openmp/$a; done",
          blas.library_path, setup.intra_op, blas.core_path, setup.cores)});
    } else if (blas.threads == 1) {
      out.push_back({"blas_pool", fmt::format(
          "{} is OpenBLAS's pthreads build, which keeps its own worker pool beside LibTorch's OpenMP threads; it is "
          "pinned to 1 thread so the two pools cannot spin on the same cores, so GEMMs outside LibTorch's parallel "
          "regions run on one thread. For full-speed GEMMs install the OpenMP build, which shares LibTorch's pool: "
          "apt-get install libopenblas0-openmp && update-alternatives --set libblas.so.3-x86_64-linux-gnu "
          "/usr/lib/x86_64-linux-gnu/openblas-openmp/libblas.so.3",
          blas.library_path)});
    } else {
      out.push_back({"blas_pool", fmt::format(
          "{} is OpenBLAS's pthreads build with {} threads of its own beside LibTorch's {} OpenMP threads: the pools "
          "spin on the same {} cores and CPU figures are distorted. Call torchprobe::configure_threads() first, set "
          "OPENBLAS_NUM_THREADS=1, or install the OpenMP build (apt-get install libopenblas0-openmp)",
          blas.library_path, blas.threads, setup.intra_op, setup.cores)});
    }
  }
  const std::string reference = blas_warning(blas);
  if (!reference.empty()) out.push_back({"reference_blas", reference});
  const CpuInfo cpu = read_proc_cpuinfo();
  if (const std::string coretype = openblas_coretype_advice(cpu, blas.kernel); !coretype.empty()) {
    out.push_back({"blas_kernels", fmt::format(
        "OpenBLAS runs its {} kernels (SSE, no AVX) on this {} CPU: this OpenBLAS does not know the model and fell "
        "back, so its GEMMs run several times slower than they can (a 2048 SGEMM on an Emerald Rapids VM: 64 against "
        "307 GFLOP/s on 2 threads); export OPENBLAS_CORETYPE={} before running (scripts/run.sh does)",
        blas.kernel, cpu_isa(cpu), coretype)});
  }
  return out;
}

std::vector<BusyProcess> busy_processes(double window_s, double min_cpu_pct) {
  const auto before = process_times();
  const auto start = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(window_s));
  const auto after = process_times();
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double ticks_per_s = static_cast<double>(sysconf(_SC_CLK_TCK));
  const int self = getpid();
  std::vector<BusyProcess> busy;
  for (const auto& [pid, now] : after) {
    if (pid == self) continue;
    const auto it = before.find(pid);
    const long long ticks = now.ticks - (it == before.end() ? 0 : it->second.ticks);
    const double pct = 100.0 * static_cast<double>(ticks) / ticks_per_s / elapsed;
    if (pct >= min_cpu_pct) busy.push_back({pid, now.command, pct});
  }
  std::sort(busy.begin(), busy.end(), [](const BusyProcess& a, const BusyProcess& b) { return a.cpu_pct > b.cpu_pct; });
  return busy;
}

Warning busy_warning(const std::vector<BusyProcess>& busy, int cores) {
  double total = 0.0;
  std::string list;
  for (const auto& p : busy) {
    if (!(p.cpu_pct >= kBusyProcessPct)) continue;
    total += p.cpu_pct;
    if (list.size() < 200) list += fmt::format("{}{} (pid {}, {:.0f}%)", list.empty() ? "" : ", ", p.command, p.pid, p.cpu_pct);
  }
  if (!(total >= kBusyTotalPct)) return {};
  return {"busy_processes", fmt::format("other processes were busy when the run started ({:.0f}% of a core in total on "
                                        "{} core{}: {}; load average {}): they take cores from the benchmark, "
                                        "so figures are low and noisy; run on a quiet host",
                                        total, cores, cores == 1 ? "" : "s", list, read_line("/proc/loadavg").substr(0, 14))};
}

std::vector<Warning> host_warnings(const ThreadSetup& threads, double window_s) {
  std::vector<Warning> out;
  Warning busy = busy_warning(busy_processes(window_s, kBusyProcessPct), threads.cores);
  if (!busy.code.empty()) out.push_back(std::move(busy));
  std::set<std::string> governors;
  for (int cpu = 0; cpu < threads.cores; ++cpu) {
    const std::string g = read_line(fmt::format("/sys/devices/system/cpu/cpu{}/cpufreq/scaling_governor", cpu));
    if (!g.empty()) governors.insert(g);
  }
  governors.erase("performance");
  if (!governors.empty()) {
    out.push_back({"cpu_governor", fmt::format("CPU frequency scaling is on (governor {}): clocks change during the run and "
                                               "early samples run slower; set the performance governor "
                                               "(cpupower frequency-set --governor performance)",
                                               *governors.begin())});
  }
  for (auto& w : threading_warnings(threads)) out.push_back(std::move(w));
#ifndef NDEBUG
  out.push_back({"debug_build", "torchprobe was built without NDEBUG (a Debug build): its own code runs slower; rebuild "
                                "with -DCMAKE_BUILD_TYPE=Release"});
#endif
  return out;
}

std::string warnings_json(const std::vector<Warning>& warnings) {
  nlohmann::json array = nlohmann::json::array();
  for (const auto& w : warnings) array.push_back({{"code", w.code}, {"message", w.message}});
  return array.dump();
}

}  // namespace torchprobe::trust
