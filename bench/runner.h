#pragma once
// torchprobe-bench's run: the checks that need the parsed flags, the plan registered with Google Benchmark, the
// host's context and warnings, then the benchmarks (in this process or each in its own) with the results file
// written after every one.
#include <CLI/CLI.hpp>

#include "arguments.h"
#include "options.h"
#include "suite.h"

namespace torchprobe::bench {

/// Parses `app`'s flags from what Google Benchmark left of argv, then runs; the exit code (run_cli's: 2 for bad
/// input, 1 for a failed or empty run, 130/143 when a signal stopped it).
int run_suites(int argc, char** argv, CLI::App& app, const Arguments& args, SuiteOptions& options,
               const ProgramFlags& flags);

}  // namespace torchprobe::bench
