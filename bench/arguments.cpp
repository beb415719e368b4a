#include "arguments.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "torchprobe/cli_support.h"
#include "torchprobe/flags.h"

namespace torchprobe::bench {
namespace {

bool starts_with(const char* arg, const char* prefix) { return std::strncmp(arg, prefix, std::strlen(prefix)) == 0; }

/// Google Benchmark's numeric flags, checked as ours are: its own parsing takes NaN for --benchmark_min_time
/// (the run never ends) and a negative repetition count (std::vector::reserve fails).
std::string check_benchmark_flag(const char* arg) {
  struct Bound {
    const char* flag;
    double min, max;
    bool whole;
  };
  static const Bound kBounds[] = {{"--benchmark_min_time=", 0.0, 86400.0, false},
                                  {"--benchmark_min_warmup_time=", 0.0, 86400.0, false},
                                  {"--benchmark_repetitions=", 1, 100000, true}};
  for (const auto& b : kBounds) {
    if (!starts_with(arg, b.flag)) continue;
    std::string value(arg + std::strlen(b.flag));
    const std::string error =
        b.whole ? in_range<std::int64_t>(static_cast<std::int64_t>(b.min), static_cast<std::int64_t>(b.max))(value)
                : in_range(b.min, b.max)(value);
    if (!error.empty()) return std::string(b.flag, std::strlen(b.flag) - 1) + ": " + error;
  }
  return "";
}

}  // namespace

Arguments take_arguments(int& argc, char** argv) {
  Arguments a;
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    const char* arg = argv[i];
    const auto value = [&](const char* flag) { return std::string(arg + std::strlen(flag)); };
    if (starts_with(arg, "--benchmark_out_format=")) {
      a.out_format = value("--benchmark_out_format=");
      continue;
    }
    if (starts_with(arg, "--benchmark_out=")) {
      a.out = value("--benchmark_out=");
      continue;
    }
    if (a.invalid.empty()) a.invalid = check_benchmark_flag(arg);
    if (starts_with(arg, "--benchmark_display_aggregates_only")) {
      const std::string value = std::strchr(arg, '=') ? std::strchr(arg, '=') + 1 : "true";
      a.display_aggregates_only = value == "true" || value == "1" || value == "yes";
      a.for_children.emplace_back(arg);
      continue;
    }
    if (starts_with(arg, "--benchmark_format=")) a.format = value("--benchmark_format=");
    if (starts_with(arg, "--benchmark_min_time=")) {  // ours (see kOneIterationPerRepetition), not Google Benchmark's
      a.min_time = value("--benchmark_min_time=");
      a.for_children.emplace_back(arg);
      continue;
    }
    if (starts_with(arg, "--benchmark_repetitions=") && a.invalid.empty()) {
      a.repetitions = std::atoi(value("--benchmark_repetitions=").c_str());
    }
    if (starts_with(arg, "--benchmark_filter=")) a.filter = value("--benchmark_filter=");
    if (!starts_with(arg, "--benchmark_format=") && !starts_with(arg, "--benchmark_filter=") &&
        std::strcmp(arg, "--isolate") != 0 && std::strcmp(arg, "--isolate=true") != 0) {
      a.for_children.emplace_back(arg);
    }
    argv[kept++] = argv[i];
  }
  argc = kept;
  argv[argc] = nullptr;
  return a;
}

}  // namespace torchprobe::bench
