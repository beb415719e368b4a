// torchprobe: the command-line front end, LibTorch-free (layer 0). It reads, compares, stores and explains
// results itself (one file per subcommand, commands.h) and hands the measuring subcommands (measuring.h) to
// torchprobe-measure, so `torchprobe explain|compare|report|history` start in milliseconds.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "commands.h"
#include "measuring.h"
#include "torchprobe/config.h"
#include "torchprobe/escape.h"
#include "torchprobe/interrupt.h"

namespace {

namespace cli = torchprobe::cli;

/// torchprobe-measure beside this executable (the build tree and `cmake --install` both put it there).
std::filesystem::path measure_program() {
  std::error_code error;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
  return (error ? std::filesystem::path(".") : self.parent_path()) / std::string(cli::kMeasureProgram);
}

/// Replaces this process with torchprobe-measure, the same arguments (argv[0] too, so its help and errors
/// name `torchprobe`). Returns only on failure: exit 2 where it is absent (a LibTorch-free build).
int hand_over(char** argv) {
  const std::filesystem::path program = measure_program();
  ::execv(program.c_str(), argv);
  const int error = errno;
  if (error == ENOENT) {
    std::fprintf(stderr,
                 "torchprobe: error: '%s' needs LibTorch, and this torchprobe was built without it "
                 "(-DTORCHPROBE_WITH_LIBTORCH=OFF): no %s beside it (%s)\n",
                 argv[1], std::string(cli::kMeasureProgram).c_str(),
                 torchprobe::terminal_line(program.string()).c_str());
    return 2;
  }
  std::fprintf(stderr, "torchprobe: error: cannot run %s: %s\n", torchprobe::terminal_line(program.string()).c_str(),
               std::strerror(error));
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1) {
    for (const auto& c : cli::kMeasuringCommands) {
      if (c.name == argv[1]) return hand_over(argv);
    }
  }
  // SIGINT/SIGTERM: temporary files and directories removed, child processes stopped, exit 130/143.
  torchprobe::interrupt::install(torchprobe::interrupt::Mode::kImmediate);
  CLI::App app{"torchprobe: LibTorch benchmarks and diagnostics for the CPU and every GPU"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("torchprobe ") + TORCHPROBE_VERSION);
  // The subcommands in the order the help lists them. The measuring ones are listed only: argv[1] naming
  // one was handed over above.
  std::vector<cli::Command> commands;
  const auto add = [&](std::vector<cli::Command> (*add_command)(CLI::App&)) {
    for (auto& c : add_command(app)) commands.push_back(std::move(c));
  };
  const auto list_measuring = [&](std::string_view name) {
    app.add_subcommand(std::string(name), std::string(cli::measuring_description(name)))->allow_extras();
  };
  list_measuring("devices");
  add(cli::add_report_command);
  add(cli::add_compare_command);
  list_measuring("diagnose");
  add(cli::add_explain_command);
  list_measuring("dist");
  add(cli::add_history_command);
  return cli::run_commands(app, commands, argc, argv);
}
