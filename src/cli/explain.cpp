// torchprobe explain [TEXT | -] [--json]
#include <cstdio>
#include <iostream>
#include <memory>
#include <sstream>

#include "commands.h"
#include "diagnostics/classify.h"
#include "torchprobe/input_error.h"

namespace torchprobe::cli {

std::vector<Command> add_explain_command(CLI::App& app) {
  struct Flags {
    std::string text;
    bool json = false;
  };
  auto flags = std::make_shared<Flags>();
  auto* cmd = app.add_subcommand("explain", "Classify a PyTorch/LibTorch device or memory error message and explain it");
  cmd->add_option("text", flags->text, "The message (or - or nothing: read it from stdin)");
  cmd->add_flag("--json", flags->json, "Print kind, devices, argument, explanation and fix as JSON");
  return {{cmd, [flags] {
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
             std::printf("%s", flags->json ? (diagnostics::diagnosis_json(diagnosis) + "\n").c_str()
                                           : diagnostics::diagnosis_text(diagnosis).c_str());
             return 0;
           }}};
}

}  // namespace torchprobe::cli
