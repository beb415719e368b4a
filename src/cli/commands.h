#pragma once
// The torchprobe program's subcommands, one file each: every one registers its flags on the app and
// returns what runs it. They parse, call a library and print; the work is in the libraries.
#include <CLI/CLI.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "torchprobe/cli_support.h"
#include "torchprobe/flags.h"

namespace torchprobe::cli {

/// A subcommand and what runs it when it was chosen.
struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;
};

// Layer 0 (the `torchprobe` executable, no LibTorch): read, compare, store and explain.
std::vector<Command> add_report_command(CLI::App& app);
std::vector<Command> add_compare_command(CLI::App& app);
std::vector<Command> add_explain_command(CLI::App& app);
std::vector<Command> add_history_command(CLI::App& app);  ///< history add, show, check, html

// Layer 1 (the `torchprobe-measure` executable, LibTorch): the subcommands that measure or reproduce.
// `torchprobe NAME ...` hands these over to it (measuring.h), git-style.
std::vector<Command> add_devices_command(CLI::App& app);
std::vector<Command> add_diagnose_command(CLI::App& app);  ///< diagnose device, diagnose memory
std::vector<Command> add_dist_command(CLI::App& app);      ///< dist allreduce, train, dataparallel (where built)

/// Parses the command line and runs the chosen subcommand (run_cli: one error line, the exit code).
inline int run_commands(CLI::App& app, const std::vector<Command>& commands, int argc, char** argv) {
  return run_cli(app, argc, argv, [&] {
    for (const auto& c : commands) {
      if (c.app->parsed()) return c.run();
    }
    return 2;  // unreachable: CLI11 requires a subcommand
  });
}

}  // namespace torchprobe::cli
