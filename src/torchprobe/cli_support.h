#pragma once
// What every torchprobe executable does at its top level: one clear error line and the exit code.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <type_traits>

#include "torchprobe/input_error.h"
#include "torchprobe/escape.h"
#include "torchprobe/io.h"
#include "torchprobe/strings.h"

namespace torchprobe {

/// The most threads any --threads flag takes (torchprobe-bench, devices, diagnose memory, dist): one bound for
/// every program, far above any host's cores.
inline constexpr int kMaxThreads = 1024;
/// What "LibTorch's own" thread count is, said the same way in every --threads help: OMP_NUM_THREADS where set,
/// else what its OpenMP runtime picks, which can be fewer than the cores (Debian's LibTorch 1.13 picked 1 on a
/// 2-core VM with no OMP_NUM_THREADS, 2026-11-27; scripts/run.sh passes every core); the count used is printed
/// first and recorded in the results (torch_threads).
inline constexpr const char* kDefaultThreadsHelp =
    "default: LibTorch's own: OMP_NUM_THREADS where set, else its OpenMP runtime's choice, which can be fewer than "
    "the cores (1 on a 2-core VM); the count used is printed first and recorded in the results";

/// The range check of every numeric flag. Unlike CLI::Range it refuses NaN and +-Inf (which compare
/// false with both bounds), a negative number for a count (instead of wrapping it), and text after the
/// number, and its message states the real range: "--alpha: Value 0 not in range 1e-09 to 0.5".
template <typename T>
CLI::Validator in_range(T min, T max) {
  static_assert(std::is_arithmetic_v<T>, "in_range takes numbers");
  const std::string range = fmt::format("{} to {}", min, max);
  return CLI::Validator(
      [min, max, range](std::string& text) -> std::string {
        const char* begin = text.c_str();
        const char* end = begin + text.size();
        if constexpr (std::is_integral_v<T>) {
          long long value = 0;
          const auto [ptr, ec] = std::from_chars(begin + (text.size() > 1 && text[0] == '+' ? 1 : 0), end, value);
          if (text.empty() || ptr != end || (ec != std::errc() && ec != std::errc::result_out_of_range)) {
            return fmt::format("'{}' is not a whole number", text.substr(0, 40));
          }
          if (ec == std::errc::result_out_of_range || value < static_cast<long long>(min) ||
              value > static_cast<long long>(max)) {
            return fmt::format("Value {} not in range {}", text.substr(0, 40), range);
          }
          return "";
        } else {
        char* stop = nullptr;
        const double value = std::strtod(begin, &stop);
        if (text.empty() || stop != end) return fmt::format("'{}' is not a number", text.substr(0, 40));
        if (!std::isfinite(value)) return fmt::format("Value {} is not a finite number (range {})", text.substr(0, 40), range);
        if (value < static_cast<double>(min) || value > static_cast<double>(max)) {
          return fmt::format("Value {} not in range {}", text.substr(0, 40), range);
        }
        return "";
        }
      },
      "in " + range, "RANGE");
}

/// Runs `body` and maps failures to exit codes: 2 for bad input (flags, devices, data
/// files) and for a file that cannot be written, 1 for a failed run. Prints "torchprobe: error: ..."
/// on one line: a message quoting a file or an argument shows its control characters as escapes. No LibTorch
/// here (layer 0): a LibTorch error's first line is its message, before the C++ backtrace.
template <typename Body>
int run_cli(CLI::App& app, int argc, char** argv, Body&& body) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    if (argc == 1 && !app.get_subcommands([](CLI::App*) { return true; }).empty()) {  // nothing given: what there is to give
      std::fprintf(stderr, "%storchprobe: error: a subcommand is required (one of those above)\n", app.help().c_str());
      return 2;
    }
    std::fprintf(stderr, "torchprobe: error: %s\n", terminal_line(e.what()).c_str());
    return 2;
  }
  try {
    return body();
  } catch (const InputError& e) {
    std::fprintf(stderr, "torchprobe: error: %s\n", terminal_line(e.what()).c_str());
    return 2;
  } catch (const io::WriteError& e) {
    std::fprintf(stderr, "torchprobe: error: %s\n", terminal_line(e.what()).c_str());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "torchprobe: error: %s\n", terminal_line(first_line(e.what())).c_str());
    return 1;
  }
}

}  // namespace torchprobe
