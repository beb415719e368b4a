#include "diagnostics/classify_facts.h"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <iterator>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "diagnostics/classify_patterns.h"
#include "torchprobe/strings.h"

namespace torchprobe::diagnostics::detail {

// ---- What the message names: devices, argument, op --------------------------------------------------------------

namespace {

using Groups = std::vector<std::string>;

std::string device_word(const std::string& word) { return word == "GPU" ? "cuda" : to_lower(word); }

/// A way a message writes a device. Tried at each position in table order; the leftmost match wins.
struct DeviceForm {
  const char* pattern;
  /// The devices a match names, from the pattern's groups: none for text that only looks like a device.
  Groups (*read)(const Groups& g);
  /// An ordinal or a device string the program asked for: what invalid_device reports.
  bool asked_for = false;
};

const std::vector<DeviceForm>& device_forms() {
  static const std::vector<DeviceForm> forms = {
      // Paths and URLs (aten/src/ATen/native/cuda/...), Python attributes (torch.cuda.is_available, x.cpu()), the
      // CUDA runtime's name and attribute names ("'list' object has no attribute 'cuda'") are not devices.
      {R"((?:[A-Za-z]:)?[\w.~-]*[/\\][\w.~/\\-]+)", [](const Groups&) { return Groups{}; }},
      {R"(device string:? '?([^'\s]*[^'\s.,;!]))", [](const Groups& g) { return Groups{g[0]}; }, true},
      {R"('(\w+)' backend)", [](const Groups& g) { return Groups{to_lower(g[0])}; }},
      {R"(\bbackend (CUDA|CPU|MPS|XPU|HIP|Meta)\b)", [](const Groups& g) { return Groups{to_lower(g[0])}; }},
      // Tensor types of 0.3 to 1.x: torch.FloatTensor is a CPU tensor, torch.cuda.FloatTensor a CUDA one.
      {R"(\btorch\.(cuda\.)?[A-Z]\w*Tensor\b)", [](const Groups& g) { return Groups{g[0].empty() ? "cpu" : "cuda"}; }},
      {R"(\b(CUDA|CPU|MPS|XPU|HIP|XLA)\w*(?:Tensor|Type)\b)", [](const Groups& g) { return Groups{to_lower(g[0])}; }},
      {R"(\bcuda runtime\b|\battribute '\w+'|\.\w+)", [](const Groups&) { return Groups{}; }},
      // "to be on the same GPU", "found some tensors to not be on a GPU": no one device named.
      {R"(\b(?:on|to) (?:a|the same|any) GPU\b)", [](const Groups&) { return Groups{}; }},
      {R"(\b(?:(?:on|to|at) (?:a |the )?)?(?:CUDA device|cuda device|GPU) (\d+)\b)",
       [](const Groups& g) { return Groups{"cuda:" + g[0]}; }, true},
      // cuDNN's checkSameGPU: "but device 1 does not equal 0".
      {R"(\bdevice (\d+) does not equal (\d+)\b)",
       [](const Groups& g) {
         return Groups{"cuda:" + g[0], "cuda:" + g[1]};
       }},
      // DDP prints torch.device reprs: "{device(type='cuda', index=0)}".
      {R"(\bdevice\(type='(\w+)'(?:, index=(\d+))?\))",
       [](const Groups& g) { return Groups{g[1].empty() ? g[0] : g[0] + ":" + g[1]}; }},
      // Words for a place: "is on CPU, but expected it to be on GPU", "on different GPUs", "the MPS device".
      // Elsewhere ("a CPU library", "an NVIDIA GPU", "CUDA modules") they name no device a tensor is on.
      // JAX: "device ids [0] on platform GPU".
      {R"(\bplatform (CPU|GPU|TPU)\b)", [](const Groups& g) { return Groups{device_word(g[0])}; }},
      // A back-end's name in quotes ("expected a 'CUDA' device type for generator but found 'CPU'"); DeviceType::X.
      {R"('(CUDA|CPU|MPS|XPU|HIP|Meta)'|\bDeviceType::(\w+))",
       [](const Groups& g) { return Groups{to_lower(g[0].empty() ? g[1] : g[0])}; }},
      {R"(\b(?:on|to|at) (?:the |a |an |different )?(CPU|GPU|MPS|CUDA|XPU)s?\b)",
       [](const Groups& g) { return Groups{device_word(g[0])}; }},
      // A pair whose second is a back-end's word: "x and y are on cuda:0 and CPU respectively" (torch.where), "found at
      // least two devices, cuda:0 and CPU" (or "cuda:0, CPU").
      {R"(\b(cuda|cpu|mps|xpu|npu|hip)(?::(\d+))?(?:,? and|,) (CPU|GPU|MPS|CUDA|XPU)\b)",
       [](const Groups& g) {
         return Groups{g[1].empty() ? g[0] : g[0] + ":" + g[1], device_word(g[2])};
       }},
      // FSDP: "with parameter CPU offloading enabled has parameters on cuda:0": the CPU is where they belong.
      {R"(\bparameter (CPU) offloading\b)", [](const Groups& g) { return Groups{device_word(g[0])}; }},
      {R"(\b(CPU|GPU|MPS|CUDA|XPU) device\b)", [](const Groups& g) { return Groups{device_word(g[0])}; }},
      {R"(\bon device (CPU|GPU|MPS|CUDA|XPU|HIP)\b)", [](const Groups& g) { return Groups{device_word(g[0])}; }},
      {R"(\b(Meta|CUDA|CPU|MPS|XLA|XPU)(?: \w+)? tensors?\b)",
       [](const Groups& g) { return Groups{to_lower(g[0])}; }},  // "CPU int64 tensor"
      {R"(\b(CUDA|CPU|MPS|XPU|HIP|Meta) (?:Backend|DeviceType)\b)",
       [](const Groups& g) { return Groups{to_lower(g[0])}; }},
      {R"(Expected a cuda device, but got: ([\w:]+))", [](const Groups& g) { return Groups{g[0]}; }, true},
      {R"(\b(cuda|cpu|mps|xpu|npu|hpu|meta|xla|ipu|mtia|hip)(?::(\d+))?\b)",
       [](const Groups& g) { return Groups{g[1].empty() ? g[0] : g[0] + ":" + g[1]}; }},
      // Out-of-tree back-ends, named with an ordinal only (their names are words too): "neuron:0", "musa:1".
      {R"(\b(neuron|musa|mlu|gcu|maia|sdaa|dml|privateuseone|tpu):(\d+)\b)",
       [](const Groups& g) { return Groups{g[0] + ":" + g[1]}; }},
  };
  return forms;
}

}  // namespace

// All forms as one pattern, "(form0)|(form1)|...", with where each form's own groups start.
struct DeviceScanner {
  DeviceScanner() {
    std::string all;
    int group = 1;
    for (const auto& form : device_forms()) {
      all += (all.empty() ? "(" : "|(") + std::string(form.pattern) + ")";
      first_group.push_back(group);
      group += 1 + compile(form.pattern).NumberOfCapturingGroups();
    }
    pattern = &compile(all);
    groups = group;
  }
  const RE2* pattern;
  std::vector<int> first_group;  ///< the group around form i; its own groups follow it
  int groups;
};

const DeviceScanner& device_scanner() {
  static const DeviceScanner scanner;
  return scanner;
}

/// The devices `message` names, in the order it names them, each once ("cuda:0", "cpu", "mps:0", "cuda").
/// only_asked_for: just the ordinals and device strings the program asked for (invalid_device).
std::vector<std::string> devices_in(const std::string& message, bool only_asked_for) {
  constexpr std::size_t kMaxDevices = 16;
  // Each search may read to the end of the text (a path form stays open through ".a.a.a..."), so the work is
  // bounded: the devices are those named in the first kScannedBytes, cut at a blank so no name is cut in two,
  // found in at most kMaxMatches matches. Real messages name their devices in their first few hundred bytes.
  constexpr std::size_t kScannedBytes = 4096, kMaxMatches = 256;
  std::size_t end = message.size();
  if (end > kScannedBytes) {
    const auto cut = message.find_last_of(" \t\n", kScannedBytes);
    end = cut == std::string::npos || cut == 0 ? kScannedBytes : cut;
  }
  const DeviceScanner& scanner = device_scanner();
  const auto& forms = device_forms();
  std::vector<StringPiece> match(static_cast<std::size_t>(scanner.groups));
  std::vector<std::string> devices;
  std::size_t at = 0;
  for (std::size_t matches = 0; at < end && devices.size() < kMaxDevices && matches < kMaxMatches &&
                                scanner.pattern->Match(message, at, end, RE2::UNANCHORED, match.data(), scanner.groups);
       ++matches) {
    at = std::max(at + 1, static_cast<std::size_t>(match[0].end() - message.data()));
    for (std::size_t f = 0; f < forms.size(); ++f) {
      const int outer = scanner.first_group[f];
      if (match[static_cast<std::size_t>(outer)].data() == nullptr) continue;
      if (only_asked_for && !forms[f].asked_for) break;
      const int inner = (f + 1 < forms.size() ? scanner.first_group[f + 1] : scanner.groups) - outer - 1;
      Groups groups;
      for (int i = 1; i <= inner; ++i) groups.push_back(match[static_cast<std::size_t>(outer + i)].as_string());
      for (const auto& d : forms[f].read(groups)) {
        if (std::find(devices.begin(), devices.end(), d) == devices.end()) devices.push_back(d);
      }
      break;
    }
  }
  // "cuda" next to "cuda:0" says nothing more.
  if (std::any_of(devices.begin(), devices.end(), [](const std::string& d) { return d.rfind("cuda:", 0) == 0; })) {
    devices.erase(std::remove(devices.begin(), devices.end(), "cuda"), devices.end());
  }
  return devices;
}

// A sentence that names two different devices, a tensor-like thing and a contrast between them ("x is on cuda:0 while
// the mask is on cpu", "the model is on CPU but the input on GPU", "got input on cuda:1, weights on cuda:0"): a
// mismatch in words no library's check uses.
bool names_two_devices(const std::string& text) {
  static const RE2& thing = compile(
      R"((?i)\b(?:tensors?|inputs?|weights?|param(?:eter)?s?|model|module|argument|buffers?|ind(?:ex|ices)|storage|)"
      R"(masks?|outputs?|targets?|labels?|embeddings?|states?|logits|batch|latents?|hidden|kv|cache|generator|)"
      R"(features?|graphs?|nodes?|edges?|arrays?|variables?|vectors?|images?|data)\b)");
  static const RE2& contrast =
      compile(R"((?i)\b(?:but|while|whereas|however|expected|expects?|must|should|instead|different|mismatch\w*|same|)"
              R"(both|vs\.?|versus|not|cannot|can't|unable)\b)");
  constexpr std::size_t kMaxSentences = 64;
  std::size_t start = 0;
  for (std::size_t n = 0; n < kMaxSentences && start < text.size(); ++n) {
    // A sentence ends at ". ", a new line or the text's end ("torch.cuda" does not end one); find's npos is the
    // largest size_t, so the nearest of the three wins.
    const std::size_t end = std::min({text.find(". ", start), text.find('\n', start), text.size()});
    const std::string sentence = text.substr(start, end - start);
    start = end + 1;
    auto devices = devices_in(sentence);
    devices.erase(std::remove(devices.begin(), devices.end(), "meta"), devices.end());
    if (devices.size() >= 2 && RE2::PartialMatch(sentence, thing) && RE2::PartialMatch(sentence, contrast)) return true;
  }
  return false;
}

/// The argument the message names, in any version's form: "argument #2 'mat2'", "for argument mat1 in method",
/// "but got weight is on", "for argument 'index'", "position #1 'tensors'".
std::optional<std::string> argument_in(const std::string& message) {
  // In order: a numbered argument names it best ("Tensor for 'out' is on CPU, Tensor for argument #1 'self' is on
  // CPU"); then the other ways ATen, Python checks and libraries name the one on the wrong device.
  static const std::vector<const RE2*> forms = {
      &compile(R"(#\d+ '(\w+)')"),
      &compile(R"(for argument '(\w+)')"),
      &compile(R"(for argument (\w+) (?:in method|is on))"),
      &compile(R"(but got (\w+) is on)"),
      &compile(R"(Tensor for '(\w+)')"),
      &compile(R"(`(\w+)` (?:is|being) on)"),
      &compile(R"((?i)\bexpected (\w+) to be on (?:cuda|cpu|gpu|mps|xpu|npu)\b)"),
  };
  std::string name;
  for (const RE2* form : forms) {
    if (RE2::PartialMatch(message, *form, &name)) return name;
  }
  return std::nullopt;
}

std::string op_in(const std::string& message) {
  static const RE2& pattern =
      compile(R"(in method (?:wrapper_)?(?:[A-Z][A-Za-z]*_)?_*(\w+?)(?:_out)?\)|in call to (\w+)|)"
              R"(while checking arguments for (\w+))");
  StringPiece g[3];
  if (!RE2::PartialMatch(message, pattern, &g[0], &g[1], &g[2])) return "";
  for (const auto& name : g) {
    if (!name.empty()) return name.as_string();
  }
  return "";
}

// ---- Checkpoint keys -----------------------------------------------------------------------------------------------

namespace {

// The component a wrapper puts before every parameter name: DataParallel's and DDP's "module.", torch.compile's
// "_orig_mod." (its OptimizedModule holds the model under that name).
constexpr const char* kWrapperComponents[] = {"module.", "_orig_mod."};

bool has_module_component(const std::string& key) {
  return std::any_of(std::begin(kWrapperComponents), std::end(kWrapperComponents), [&key](const char* c) {
    return key.rfind(c, 0) == 0 || key.find(std::string(".") + c) != std::string::npos;
  });
}

std::string without_module_component(std::string key) {
  for (const char* c : kWrapperComponents) {
    const std::size_t length = std::strlen(c);
    if (key.rfind(c, 0) == 0) return key.substr(length);
    const auto at = key.find(std::string(".") + c);
    if (at != std::string::npos) return key.erase(at + 1, length);
  }
  return key;
}

// The quoted keys in `section`: "conv1.weight", 'fc.bias' (0.3 printed a set).
std::unordered_set<std::string> keys_in(StringPiece section) {
  constexpr std::size_t kMaxKeys = 100000;
  static const RE2& key = compile(R"(["']([\w.-]+)["'])");
  std::unordered_set<std::string> keys;
  std::string k;
  while (keys.size() < kMaxKeys && RE2::FindAndConsume(&section, key, &k)) keys.insert(k);
  return keys;
}

}  // namespace

// The checkpoint's keys and the model's differ by a wrapper's prefix (DataParallel's and DDP's "module.",
// torch.compile's
// "_orig_mod."): a missing key is an unexpected one with the prefix added or removed, or one list alone carries it. Two
// lists that both carry it (or neither) are another architecture, not this.
bool keys_differ_by_module_prefix(const std::string& text) {
  static const RE2& missing_marker = compile(R"((?i)missing key(?:\(s\)|s)?(?: in state_dict|:\s))");
  static const RE2& unexpected_marker = compile(R"((?i)unexpected key(?:\(s\)|s)?(?: in state_dict|:\s))");
  static const RE2& unexpected_0_3 = compile(R"((?i)unexpected key ("[^"]*") in state_dict)");
  const auto find = [&text](const RE2& re) -> std::optional<std::pair<std::size_t, std::size_t>> {
    StringPiece m;
    if (!re.Match(text, 0, text.size(), RE2::UNANCHORED, &m, 1)) return std::nullopt;
    const auto start = static_cast<std::size_t>(m.data() - text.data());
    return std::make_pair(start, start + m.size());
  };
  const auto missing_at = find(missing_marker), unexpected_at = find(unexpected_marker);
  const auto section = [&text](const std::optional<std::pair<std::size_t, std::size_t>>& at,
                               const std::optional<std::pair<std::size_t, std::size_t>>& other) {
    if (!at) return std::unordered_set<std::string>{};
    const std::size_t end = other && other->first > at->second ? other->first : text.size();
    return keys_in(StringPiece(text.data() + at->second, end - at->second));
  };
  auto missing = section(missing_at, unexpected_at);
  auto unexpected = section(unexpected_at, missing_at);
  // load_state_dict lists the missing keys before the unexpected ones: a paste that starts inside that list has the
  // missing keys before "Unexpected key(s)" and no header of its own.
  static const RE2& starts_with_keys = compile(R"(^\s*["'][\w.-]+["'],)");
  if (!missing_at && unexpected_at && RE2::PartialMatch(text, starts_with_keys)) {
    missing = keys_in(StringPiece(text.data(), unexpected_at->first));
  }
  std::string old_key;
  if (RE2::PartialMatch(text, unexpected_0_3, &old_key)) unexpected.merge(keys_in(old_key));
  // Only BatchNorm's step counters missing (checkpoints from before 0.4.1 lack them): the keys' versions differ, not
  // their prefix, even where every one of them has "module.".
  const auto counters_only = [](const std::unordered_set<std::string>& keys) {
    constexpr std::string_view kCounter = "num_batches_tracked";
    return !keys.empty() && std::all_of(keys.begin(), keys.end(), [&](const std::string& k) {
      return k.size() >= kCounter.size() && k.compare(k.size() - kCounter.size(), kCounter.size(), kCounter) == 0;
    });
  };
  if (unexpected.empty() && counters_only(missing)) return false;
  const auto all_have = [](const std::unordered_set<std::string>& keys) {
    return !keys.empty() && std::all_of(keys.begin(), keys.end(), has_module_component);
  };
  const auto none_has = [](const std::unordered_set<std::string>& keys) {
    return std::none_of(keys.begin(), keys.end(), has_module_component);
  };
  // A report into a wrapped model (its own keys carry "module.") with one list only: extra keys alone (nothing the
  // model has is missing), or a whole list of missing keys ending the message (a checkpoint without the prefix would
  // have left its own keys unexpected). Keys the two do not share, not a prefix; a list the paste cut off may be.
  static const RE2& into_wrapper = compile(R"(state_dict for (?:DataParallel|DistributedDataParallel)\b)");
  static const RE2& list_ends_message = compile(R"(["']\.[\s"'})\]]*$)");  // what a log's quoting closes after it
  if (RE2::PartialMatch(text, into_wrapper) && (missing_at.has_value() != unexpected_at.has_value())) {
    if (unexpected_at && missing.empty()) return false;
    if (missing_at && RE2::PartialMatch(text, list_ends_message)) return false;
  }
  // Keys missing from a compiled model (an OptimizedModule holds every parameter under "_orig_mod."): a plain
  // checkpoint, whether or not the report got as far as listing them.
  static const RE2& into_compiled = compile(R"(state_dict for OptimizedModule\b)");
  if (missing_at && unexpected.empty() && (missing.empty() || all_have(missing)) &&
      RE2::PartialMatch(text, into_compiled)) {
    return true;
  }
  if (missing.empty() || unexpected.empty()) return all_have(missing.empty() ? unexpected : missing);
  // Keys that pair up once the prefix is dropped: a prefix mismatch where they are at least half of the shorter list
  // (a list the paste cut holds few); fewer, and the layers differ too ("attention_net.module.3.*" unexpected beside
  // "attention_net.2.*" missing: another architecture whose one part was once wrapped).
  const auto pairs = [](const std::unordered_set<std::string>& from, const std::unordered_set<std::string>& to) {
    return static_cast<std::size_t>(std::count_if(from.begin(), from.end(), [&to](const std::string& key) {
      return to.count(without_module_component(key)) > 0;
    }));
  };
  const std::size_t paired = std::max(pairs(unexpected, missing), pairs(missing, unexpected));
  if (paired > 0) return 2 * paired >= std::min(missing.size(), unexpected.size());
  // Both lists whole (each after its header, the second ending the message) and not one key pairs: two architectures,
  // whatever prefix one list has. Only a paste cut inside a list leaves the prefix as the likely story.
  if (missing_at && unexpected_at && !missing.empty() && !unexpected.empty() &&
      RE2::PartialMatch(text, list_ends_message)) {
    return false;
  }
  // No key matches across the lists. Parameter names have dots; a list of top-level names only ("state_dict",
  // "optimizer", "epoch") is a whole checkpoint dict given where its weights belong, whatever prefix the other has.
  const auto top_level_only = [](const std::unordered_set<std::string>& keys) {
    return std::none_of(keys.begin(), keys.end(),
                        [](const std::string& k) { return k.find('.') != std::string::npos; });
  };
  if (top_level_only(unexpected) || top_level_only(missing)) return false;
  return (all_have(unexpected) && none_has(missing)) || (all_have(missing) && none_has(unexpected));
}

}  // namespace torchprobe::diagnostics::detail
