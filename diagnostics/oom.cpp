#include "diagnostics/oom.h"

#include <fmt/format.h>

#include <cmath>
#include <regex>

#include "torchprobe/units.h"

namespace torchprobe::diagnostics {
namespace {

// Sizes as the allocators print them. MPS writes "GB"/"MB" for binary units (its format_size divides by
// 1024^3), and NumPy "926. GiB": both read as binary units here.
const char* const kSize = R"(([0-9]+(?:\.[0-9]*)?)\s*(bytes|B|KiB|MiB|GiB|TiB|KB|MB|GB|TB))";

std::optional<std::int64_t> size_in(const std::string& text) {
  std::smatch match;
  static const std::regex size(kSize);
  if (!std::regex_search(text, match, size)) return std::nullopt;
  std::string number = match[1].str(), unit = match[2].str();
  if (number.back() == '.') number.pop_back();
  if (unit.size() == 2 && unit != "KB" && unit != "MB" && unit != "GB" && unit != "TB") return units::parse_bytes(number + unit);
  if (unit.size() == 2) unit = unit.substr(0, 1) + "iB";
  return units::parse_bytes(number + " " + unit);
}

std::optional<std::int64_t> find_size(const std::string& message, const std::string& pattern) {
  std::smatch match;
  if (!std::regex_search(message, match, std::regex(pattern, std::regex::icase))) return std::nullopt;
  return size_in(match[1].str());
}

}  // namespace

OomFacts parse_oom(const std::string& message) {
  const std::string size = std::string("(") + kSize + ")";
  OomFacts facts;
  facts.requested = find_size(message, "tried to allocate " + size);
  if (!facts.requested) facts.requested = find_size(message, "Unable to allocate " + size + " for an array");  // NumPy
  if (!facts.requested) facts.requested = find_size(message, "Failed to CUDA calloc " + size);              // NCCL
  // LibTorch 2.x: "GPU 0 has a total capacity of 79.19 GiB of which 3.06 MiB is free. Including non-PyTorch
  // memory, this process has 79.18 GiB memory in use. Of the allocated memory 78.2 GiB is allocated by PyTorch,
  // and 403.83 MiB is reserved by PyTorch but unallocated."
  facts.total = find_size(message, "total capac(?:i)?ty of " + size);  // 2.1 printed "capacty"
  if (!facts.total) facts.total = find_size(message, "max allowed: " + size);  // MPS: the allocator's limit
  facts.free = find_size(message, "of which " + size + " is free");
  facts.process_in_use = find_size(message, "this process has " + size + " memory in use");
  facts.allocated = find_size(message, size + " is allocated by PyTorch");
  if (const auto unallocated = find_size(message, size + " is reserved by PyTorch but unallocated")) {
    if (facts.allocated) facts.reserved = *facts.allocated + *unallocated;
  }
  // LibTorch 1.13: "(GPU 0; 15.78 GiB total capacity; 12.35 GiB already allocated; 1.19 GiB free; 13.10 GiB
  // reserved in total by PyTorch)"
  if (!facts.total) facts.total = find_size(message, size + " total capac(?:i)?ty");
  if (!facts.allocated) facts.allocated = find_size(message, size + " already allocated");
  if (!facts.free) facts.free = find_size(message, size + " free");
  if (!facts.reserved) facts.reserved = find_size(message, size + " reserved in total by PyTorch");
  return facts;
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
