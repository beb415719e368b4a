#pragma once
// Internal to the diagnostics library: the JSON form of one trial, shared by the probe's report and
// the child's event stream.
#include <nlohmann/json.hpp>

#include "diagnostics/memory_search.h"

namespace torchprobe::diagnostics {

nlohmann::json trial_to_json(const Trial& t);
Trial trial_from_json(const nlohmann::json& j);

}  // namespace torchprobe::diagnostics
