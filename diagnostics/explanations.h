#pragma once
// The explanations: per kind of error, what it means (told with the facts the message gives) and the fix in C++ and
// in Python (private to torchprobe::explain).
#include <string>
#include <vector>

#include "diagnostics/classify.h"

namespace torchprobe::diagnostics::detail {

/// Fills in d.explanation, d.fix_cpp and d.fix_python for d.kind, from the facts already in `d`.
void explain(Diagnosis& d);

/// "a, b and c" (last_sep " and "); diagnosis_text lists devices with it too.
std::string join(const std::vector<std::string>& items, const std::string& last_sep);

// For invalid_patterns(): these compile their patterns on first use.
struct Situation;
const std::vector<Situation>& mismatch_situations();
void explain_mismatch(Diagnosis& d);
void explain_not_a_tensor(Diagnosis& d);
void explain_state_dict(Diagnosis& d);

}  // namespace torchprobe::diagnostics::detail
