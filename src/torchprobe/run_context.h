#pragma once
// What every results file records about where and how it was measured, whichever program writes it:
// torchprobe-bench (through Google Benchmark's context) or the dist commands (their own files, in the
// same schema), so `torchprobe report` and `compare` read them alike.
#include <string>
#include <utility>
#include <vector>

#include "torchprobe/blas.h"
#include "torchprobe/report/results_writer.h"  // ContextEntries, results_document
#include "torchprobe/trust.h"

namespace torchprobe {

/// torchprobe's own context keys: torchprobe_schema (report/schema.h), torchprobe_version, libtorch_version,
/// torch_threads, interop_threads, blas, blas_threading, host_allocator (when set), inventory (one-line JSON),
/// trust_warnings (JSON array).
ContextEntries torchprobe_context(const ThreadSetup& threads, const std::string& allocator,
                                  const std::vector<trust::Warning>& warnings);

/// The keys Google Benchmark writes itself (date, host_name, executable, num_cpus, library_build_type),
/// for files torchprobe writes without it.
ContextEntries standard_context();

}  // namespace torchprobe
