// torchprobe explain [TEXT | -] [--json] | --log FILE|- [--json]
#include <sys/stat.h>
#include <unistd.h>

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
#include "torchprobe/io.h"

namespace torchprobe::cli {
namespace {

// Byte for byte: a message may hold NULs, which printf("%s") would stop at.
void print(const std::string& text) { std::fwrite(text.data(), 1, text.size(), stdout); }

/// Refuses what a log file cannot be: a directory, a device (/dev/zero never ends), a socket. Files and
/// pipes are scanned as a stream, line by line (stdin, `-`, may be anything but a directory: a stream).
/// Returns whether it is a regular file.
bool check_log_file(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return false;  // the open below says why
  if (!S_ISREG(st.st_mode) && !S_ISFIFO(st.st_mode)) {
    throw InputError("explain --log " + path + (S_ISDIR(st.st_mode) ? ": is a directory, not a log file"
                                                                     : ": is a device or a socket, not a log file or a pipe"));
  }
  return S_ISREG(st.st_mode);
}

diagnostics::LogScan scan_log_file(const std::string& path) {
  if (path == "-") {
    struct stat st {};
    if (fstat(STDIN_FILENO, &st) == 0 && S_ISDIR(st.st_mode)) throw InputError("explain --log -: stdin is a directory");
    return diagnostics::scan_log(std::cin);
  }
  const bool regular = check_log_file(path);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError("explain --log " + path + ": cannot open the file: " + std::strerror(errno));
  char mark[2] = {0, 0};
  if (regular && in.read(mark, 2) && ((mark[0] == '\xFF' && mark[1] == '\xFE') || (mark[0] == '\xFE' && mark[1] == '\xFF'))) {
    std::istringstream utf8(io::read_text_file(path));  // UTF-16 (PowerShell's default), read whole as UTF-8
    return diagnostics::scan_log(utf8);
  }
  if (regular) {
    in.clear();
    in.seekg(0);
  }
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
               text = io::read_stream(STDIN_FILENO, "explain: stdin");
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
