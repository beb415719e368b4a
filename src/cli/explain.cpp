// torchprobe explain [TEXT | -] [--json] | --log FILE|- [--json]
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "commands.h"
#include "diagnostics/classify.h"
#include "torchprobe/input_error.h"

namespace torchprobe::cli {
namespace {

// Byte for byte: a message may hold NULs, which printf("%s") would stop at.
void print(const std::string& text) { std::fwrite(text.data(), 1, text.size(), stdout); }

diagnostics::LogScan scan_log_file(const std::string& path) {
  if (path == "-") return diagnostics::scan_log(std::cin);
  if (std::filesystem::is_directory(path)) throw InputError("explain --log " + path + ": is a directory, not a log file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError("explain --log " + path + ": cannot open the file: " + std::strerror(errno));
  auto scan = diagnostics::scan_log(in);
  if (in.bad()) throw InputError("explain --log " + path + ": cannot read the file: " + std::strerror(errno));
  return scan;
}

}  // namespace

std::vector<Command> add_explain_command(CLI::App& app) {
  struct Flags {
    std::string text;
    std::string log;
    bool json = false;
  };
  auto flags = std::make_shared<Flags>();
  auto* cmd = app.add_subcommand("explain", "Classify a PyTorch/LibTorch device or memory error message and explain it");
  auto* text = cmd->add_option("text", flags->text, "The message (or - or nothing: read it from stdin)");
  cmd->add_option("--log", flags->log, "Scan a whole log (- for stdin) and list every distinct error in it")
      ->type_name("FILE")
      ->excludes(text);
  cmd->add_flag("--json", flags->json, "Print kind, devices, argument, explanation and fix as JSON (with --log: the counts and a list)");
  return {{cmd, [flags] {
             if (!flags->log.empty()) {
               const auto scan = scan_log_file(flags->log);
               print(flags->json ? diagnostics::log_scan_json(scan) + "\n" : diagnostics::log_scan_text(scan));
               return 0;
             }
             std::string text = flags->text;
             if (text.empty() || text == "-") {  // the message on stdin, e.g. a pasted traceback
               std::ostringstream in;
               in << std::cin.rdbuf();
               text = in.str();
             }
             if (text.find_first_not_of(" \t\r\n") == std::string::npos) {
               throw InputError("explain: no error message given (pass it as an argument, or on stdin with -)");
             }
             const auto diagnosis = diagnostics::explain_error(text);
             print(flags->json ? diagnostics::diagnosis_json(diagnosis) + "\n" : diagnostics::diagnosis_text(diagnosis));
             return 0;
           }}};
}

}  // namespace torchprobe::cli
