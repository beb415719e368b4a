#pragma once
// What every torchprobe executable does at its top level: one clear error line and the exit code.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>
#include <string>

#include "torchprobe/error.h"
#include "torchprobe/escape.h"
#include "torchprobe/io.h"

namespace torchprobe {

/// Runs `body` and maps failures to exit codes: 2 for bad input (flags, devices, data
/// files) and for a file that cannot be written, 1 for a failed run. Prints "torchprobe: error: ..."
/// on one line: a message quoting a file or an argument shows its control characters as escapes.
template <typename Body>
int run_cli(CLI::App& app, int argc, char** argv, Body&& body) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
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
    std::fprintf(stderr, "torchprobe: error: %s\n", terminal_line(short_message(e)).c_str());
    return 1;
  }
}

}  // namespace torchprobe
