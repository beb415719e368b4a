// torchprobe: the command-line front end. Each subcommand lives in its own file (commands.h).
#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "commands.h"
#include "torchprobe/cli_support.h"
#include "torchprobe/config.h"
#include "torchprobe/interrupt.h"

int main(int argc, char** argv) {
  namespace cli = torchprobe::cli;
  // SIGINT/SIGTERM: temporary files and directories removed, child processes stopped, exit 130/143.
  torchprobe::interrupt::install(torchprobe::interrupt::Mode::kImmediate);
  CLI::App app{"torchprobe: LibTorch benchmarks and diagnostics for the CPU and every GPU"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("torchprobe ") + TORCHPROBE_VERSION);
  std::vector<cli::Command> commands;
  for (auto add : {cli::add_devices_command, cli::add_report_command, cli::add_compare_command, cli::add_diagnose_command,
                   cli::add_explain_command, cli::add_dist_command, cli::add_history_command}) {
    for (auto& c : add(app)) commands.push_back(std::move(c));
  }
  return torchprobe::run_cli(app, argc, argv, [&] {
    for (const auto& c : commands) {
      if (c.app->parsed()) return c.run();
    }
    return 2;  // unreachable: CLI11 requires a subcommand
  });
}
