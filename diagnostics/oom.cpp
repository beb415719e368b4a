#include "diagnostics/oom.h"

#include <fmt/format.h>

#include <re2/re2.h>

#include <cmath>
#include <initializer_list>
#include <limits>
#include <memory>
#include <vector>

#include "diagnostics/re2_options.h"
#include "torchprobe/units.h"

namespace torchprobe::diagnostics {
namespace {

// Sizes as the allocators print them. MPS writes "GB"/"MB" for binary units (its format_size divides by
// 1024^3), and NumPy "926. GiB": both read as binary units here.
constexpr const char* kSize = R"(([0-9]+(?:\.[0-9]*)?)\s*(bytes|B|KiB|MiB|GiB|TiB|KB|MB|GB|TB))";

/// The phrases around a number, "{}" where its size is: the first that matches gives it.
struct Phrases {
  explicit Phrases(std::initializer_list<std::string> phrases) {
    for (const auto& phrase : phrases) {
      const auto at = phrase.find("{}");
      const std::string pattern = phrase.substr(0, at) + "(" + kSize + ")" + phrase.substr(at + 2);
      alternatives.push_back(std::make_unique<RE2>(pattern, pattern_options(/*any_case=*/true)));
    }
  }
  std::vector<std::unique_ptr<RE2>> alternatives;
};

struct OomPatterns {
  RE2 size{kSize, pattern_options()};  // units as written: "MB" and "Mb" differ
  Phrases requested{"tried to allocate {}", "Unable to allocate {} for an array" /* NumPy */,
                    "Failed to CUDA calloc {}" /* NCCL */};
  // LibTorch 2.x: "GPU 0 has a total capacity of 79.19 GiB of which 3.06 MiB is free. Including non-PyTorch memory,
  // this process has 79.18 GiB memory in use. Of the allocated memory 78.2 GiB is allocated by PyTorch, and 403.83 MiB
  // is reserved by PyTorch but unallocated." LibTorch 1.13: "(GPU 0; 15.78 GiB total capacity; 12.35 GiB already
  // allocated; 1.19 GiB free; 13.10 GiB reserved in total by PyTorch)". 2.1 printed "capacty"; MPS gives its limit.
  Phrases total{"total capac(?:i)?ty of {}", "max allowed: {}", "{} total capac(?:i)?ty"};
  Phrases free{"of which {} is free", "{} free"};
  Phrases process_in_use{"this process has {} memory in use"};
  Phrases allocated{"{} is allocated by PyTorch", "{} already allocated"};
  Phrases unallocated{"{} is reserved by PyTorch but unallocated"};
  Phrases reserved{"{} reserved in total by PyTorch"};
  std::vector<const RE2*> all() const {
    std::vector<const RE2*> out{&size};
    for (const Phrases* p : {&requested, &total, &free, &process_in_use, &allocated, &unallocated, &reserved}) {
      for (const auto& re : p->alternatives) out.push_back(re.get());
    }
    return out;
  }
};

const OomPatterns& patterns() {
  static const OomPatterns compiled;
  return compiled;
}

std::optional<std::int64_t> size_in(const re2::StringPiece& text) {
  std::string number, unit;
  if (!RE2::PartialMatch(text, patterns().size, &number, &unit)) return std::nullopt;
  if (number.back() == '.') number.pop_back();
  if (unit.size() == 2 && unit != "KB" && unit != "MB" && unit != "GB" && unit != "TB") return units::parse_bytes(number + unit);
  if (unit.size() == 2) unit = unit.substr(0, 1) + "iB";
  return units::parse_bytes(number + " " + unit);
}

std::optional<std::int64_t> find_size(const std::string& message, const Phrases& phrases) {
  for (const auto& re : phrases.alternatives) {
    re2::StringPiece size;
    if (RE2::PartialMatch(message, *re, &size)) return size_in(size);
  }
  return std::nullopt;
}

}  // namespace

OomFacts parse_oom(const std::string& message) {
  const OomPatterns& p = patterns();
  OomFacts facts;
  facts.requested = find_size(message, p.requested);
  facts.total = find_size(message, p.total);
  facts.free = find_size(message, p.free);
  facts.process_in_use = find_size(message, p.process_in_use);
  facts.allocated = find_size(message, p.allocated);
  if (const auto unallocated = find_size(message, p.unallocated)) {
    // Reserved = allocated + cached-but-unused; two sizes near 2^63 bytes are no real device's, and their sum
    // would overflow: then the message gives no reserved figure.
    if (facts.allocated && *unallocated <= std::numeric_limits<std::int64_t>::max() - *facts.allocated) {
      facts.reserved = *facts.allocated + *unallocated;
    }
  }
  if (!facts.reserved) facts.reserved = find_size(message, p.reserved);
  return facts;
}

std::vector<std::string> oom_pattern_errors() {
  std::vector<std::string> errors;
  for (const RE2* re : patterns().all()) {
    if (!re->ok()) errors.push_back(re->pattern() + ": " + re->error());
  }
  return errors;
}

bool looks_fragmented(const OomFacts& facts) {
  if (!facts.requested || !facts.reserved || !facts.allocated) return false;
  return *facts.reserved - *facts.allocated >= *facts.requested;
}

std::string explain_oom_facts(const OomFacts& facts, bool gpu) {
  std::string out;
  const auto b = [](std::int64_t bytes) { return units::format_bytes(static_cast<double>(bytes)); };
  if (facts.requested) out += fmt::format("It asked for {}", b(*facts.requested));
  if (facts.free && facts.total) {
    out += fmt::format("{}{} of the device's {} were free", out.empty() ? "" : "; ", b(*facts.free), b(*facts.total));
  } else if (facts.total) {
    out += fmt::format("{}the device has {}", out.empty() ? "" : "; ", b(*facts.total));
  }
  if (facts.allocated && facts.reserved) {
    out += fmt::format("; live tensors held {} and the caching allocator {} ({} cached but unused)", b(*facts.allocated),
                       b(*facts.reserved), b(*facts.reserved - *facts.allocated));
  } else if (facts.allocated) {
    out += fmt::format("; live tensors held {}", b(*facts.allocated));
  }
  if (facts.process_in_use && facts.reserved && *facts.process_in_use > *facts.reserved) {
    out += fmt::format("; {} of this process's memory is outside PyTorch's allocator (CUDA context, cuBLAS/cuDNN "
                       "workspaces, other libraries)",
                       b(*facts.process_in_use - *facts.reserved));
  }
  if (!out.empty()) out += ". ";
  if (looks_fragmented(facts)) {
    out += "Verdict: fragmentation. The allocator holds enough cached-but-unused memory for the request, but not in "
           "one block. Set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (LibTorch 2.x) or max_split_size_mb:128 "
           "(1.13), or call emptyCache() between phases of different shapes.";
  } else if (gpu && facts.requested) {
    out += "Verdict: the working set is larger than the device (not fragmentation: the cached-but-unused memory would "
           "not have covered the request). Lower the batch (torchprobe diagnose memory finds the largest that fits), "
           "or cut activation memory (bf16 autocast, activation checkpointing).";
  } else if (facts.requested) {
    out += "Verdict: the host (or the process's memory limit) could not supply the bytes. Lower the batch, or raise "
           "the limit (ulimit -v, the container's memory limit).";
  }
  return out;
}

}  // namespace torchprobe::diagnostics
