#pragma once
// torchprobe-bench's own flags: declared on its CLI11 app, then checked before any work (one line, exit 2).
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <string>

#include "suite.h"

namespace torchprobe::bench {

/// Flags of torchprobe-bench besides the suite options (SuiteOptions); filled in by CLI11 during run_cli's parse.
struct ProgramFlags {
  std::string devices = "all";
  std::string models = "net,resnet18", batch_sizes = "4,64,256",
              suites = fmt::format("{}", fmt::join(suite_names(), ",")), op_batch_sizes = "64,256";
  std::string data_dir;
  int threads = 0;
  bool aten_nvtx = false;
  std::string op_set = "core";
  std::string variants = "quick";
  bool isolate = false, isolated_child = false;
  std::string peak_store;
  double max_noise = -1.0, min_time = -1.0, timeout = -1.0;  ///< < 0: not given (the device's default)
  int min_samples = -1;
};

/// Declares every flag of torchprobe-bench on `app`: the suite options straight into `options`, the others into
/// `flags` (read_flags turns those into suite options once parsed).
void add_flags(CLI::App& app, ProgramFlags& flags, SuiteOptions& options);

/// Every flag checked before any work: one line and exit 2 for a bad value.
void read_flags(const ProgramFlags& flags, SuiteOptions& options);

}  // namespace torchprobe::bench
