#pragma once
// What a message names: its devices, the argument and the op it reports, and whether checkpoint keys differ by
// a wrapper's prefix, DataParallel's "module." or torch.compile's "_orig_mod." (private to torchprobe::explain).
#include <optional>
#include <string>
#include <vector>

namespace torchprobe::diagnostics::detail {

/// The devices `message` names, in order, each once; only_asked_for: the ordinals and device strings asked for.
std::vector<std::string> devices_in(const std::string& message, bool only_asked_for = false);
/// The argument the message names (mat1, weight, ...).
std::optional<std::string> argument_in(const std::string& message);
/// The op the message names (addmm, nll_loss_forward), or "".
std::string op_in(const std::string& message);

/// A sentence naming two different devices, a tensor-like thing and a contrast: a mismatch in free words (a rule's
/// further test).
bool names_two_devices(const std::string& text);
/// A load_state_dict report whose keys differ only by a wrapper's prefix, "module." or "_orig_mod." (a rule's further
/// test).
bool keys_differ_by_module_prefix(const std::string& text);

// All device forms as one pattern, compiled on first use: for invalid_patterns().
struct DeviceScanner;
const DeviceScanner& device_scanner();

}  // namespace torchprobe::diagnostics::detail
