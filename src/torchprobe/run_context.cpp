#include "torchprobe/run_context.h"

#include <unistd.h>

#include <fmt/format.h>

#include <chrono>
#include <climits>
#include <ctime>

#include "torchprobe/inventory.h"
#include "torchprobe/report/schema.h"

namespace torchprobe {

ContextEntries torchprobe_context(const ThreadSetup& threads, const std::string& allocator,
                                  const std::vector<trust::Warning>& warnings) {
  const Inventory inventory = collect_inventory();
  ContextEntries out = {
      {std::string(report::schema::kVersionKey), std::to_string(report::schema::kVersion)},
      {"torchprobe_version", inventory.torchprobe_version},
      {"libtorch_version", inventory.libtorch_version},
      {"torch_threads", std::to_string(threads.intra_op)},
      {"interop_threads", std::to_string(threads.inter_op)},
      {"blas", threads.blas.kernel.empty() ? threads.blas.vendor
                                           : threads.blas.vendor + " (" + threads.blas.kernel + " kernels)"},
      {"blas_threading", fmt::format("{}, {} thread(s){}", blas_threading_name(threads.blas.threading),
                                     threads.blas.threads, threads.blas_pinned ? ", pinned" : "")},
  };
  if (!allocator.empty()) out.emplace_back("host_allocator", allocator);
  out.emplace_back(report::schema::kInventoryKey, inventory_json(inventory, /*indent=*/-1));
  out.emplace_back("trust_warnings", trust::warnings_json(warnings));
  return out;
}

ContextEntries standard_context() {
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  char exe[PATH_MAX] = {0};
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char date[64];
  std::strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%S%z", &local);  // +0000: gbench writes +00:00
  std::string iso = date;
  if (iso.size() >= 5) iso.insert(iso.size() - 2, ":");
#ifdef NDEBUG
  const char* build = "release";
#else
  const char* build = "debug";
#endif
  return {{"date", iso},
          {"host_name", host},
          {"executable", n > 0 ? std::string(exe, static_cast<size_t>(n)) : ""},
          {"num_cpus", std::to_string(available_cores())},
          {"library_build_type", build}};
}

}  // namespace torchprobe
