#pragma once
// Private to compare.cpp and compare_printers.cpp: the one rule for what fails the gate, which the exit code
// and the JUnit and JSON printers all apply.
#include "torchprobe/report/compare.h"

namespace torchprobe::report::detail {

/// SLOWER and FAILED fail the gate; UNCONFIRMED too with fail_unconfirmed.
bool fails_gate(Verdict v, const CompareOptions& options);

}  // namespace torchprobe::report::detail
