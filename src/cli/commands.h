#pragma once
// The torchprobe program's subcommands, one file each: every one registers its flags on the app and
// returns what runs it. They parse, call a library and print; the work is in the libraries.
#include <CLI/CLI.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace torchprobe::cli {

/// A subcommand and what runs it when it was chosen.
struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;
};

std::vector<Command> add_devices_command(CLI::App& app);
std::vector<Command> add_report_command(CLI::App& app);
std::vector<Command> add_compare_command(CLI::App& app);
std::vector<Command> add_diagnose_command(CLI::App& app);  ///< diagnose device, diagnose memory
std::vector<Command> add_explain_command(CLI::App& app);
std::vector<Command> add_dist_command(CLI::App& app);  ///< dist allreduce, train, dataparallel (where built)

/// The one way a size flag is read: "512MiB", "2GiB", "64KiB" or a byte count, above 0; InputError
/// naming the flag otherwise.
std::int64_t byte_size_flag(const std::string& flag, const std::string& text);
/// A comma-separated list flag: no empty items, no duplicates; InputError naming the flag otherwise.
std::vector<std::string> list_flag(const std::string& flag, const std::string& text);

}  // namespace torchprobe::cli
