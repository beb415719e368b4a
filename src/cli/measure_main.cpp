// torchprobe-measure: the subcommands of torchprobe that need LibTorch (measuring.h). Users run them as
// `torchprobe devices|diagnose|dist ...`; `torchprobe` replaces itself with this program.
#include <string>
#include <vector>

#include "commands.h"
#include "measuring.h"
#include "torchprobe/config.h"
#include "torchprobe/interrupt.h"

int main(int argc, char** argv) {
  namespace cli = torchprobe::cli;
  torchprobe::interrupt::install(torchprobe::interrupt::Mode::kImmediate);
  CLI::App app{"torchprobe: LibTorch benchmarks and diagnostics for the CPU and every GPU (its measuring subcommands)"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("torchprobe ") + TORCHPROBE_VERSION);
  std::vector<cli::Command> commands;
  for (auto add : {cli::add_devices_command, cli::add_diagnose_command, cli::add_dist_command}) {
    for (auto& c : add(app)) commands.push_back(std::move(c));
  }
  return cli::run_commands(app, commands, argc, argv);
}
