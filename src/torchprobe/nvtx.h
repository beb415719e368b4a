#pragma once
// NVTX ranges in the "torchprobe" domain, for Nsight Systems timelines. Names are registered
// with NVTX once (make a Name at start-up or keep it static) and pushed by reference, so a range
// costs no string formatting. Without NVTX (TORCHPROBE_HAS_NVTX unset) everything is a no-op.
// NVTX calls are cheap no-ops until a tool (nsys) attaches.
#include <cstdint>
#include <memory>
#include <string>

namespace torchprobe::nvtx {

/// Colours (ARGB) shared by every range of the same kind, so timelines read at a glance.
namespace colors {
constexpr std::uint32_t kBenchmark = 0xFF4E79A7;  // blue
constexpr std::uint32_t kH2D = 0xFFF28E2B;        // orange
constexpr std::uint32_t kForward = 0xFF59A14F;    // green
constexpr std::uint32_t kLoss = 0xFFEDC948;       // yellow
constexpr std::uint32_t kBackward = 0xFFE15759;   // red
constexpr std::uint32_t kOptimizer = 0xFFB07AA1;  // purple
constexpr std::uint32_t kOther = 0xFF9C755F;      // brown
}  // namespace colors

/// A range name registered once in the torchprobe domain, with its colour.
class Name {
 public:
  Name(const std::string& text, std::uint32_t argb);
  ~Name();
  Name(const Name&) = delete;
  Name& operator=(const Name&) = delete;
  const std::string& text() const { return text_; }

 private:
  friend class Range;
  std::string text_;
  struct Attributes;
  std::unique_ptr<Attributes> attributes_;  // nvtxEventAttributes_t, kept out of this header
};

/// Pushes `name` on construction and pops it on destruction, also while an exception unwinds. While
/// record_function_ranges is on, it also opens a LibTorch record_function range of the same name (with or
/// without NVTX), so LibTorch's profiler shows the phases (trace::record).
class Range {
 public:
  explicit Range(const Name& name) noexcept;
  ~Range();
  Range(const Range&) = delete;
  Range& operator=(const Range&) = delete;

 private:
  bool recorded_ = false;
};

/// True when this build emits NVTX ranges.
bool enabled();

/// Turns the record_function twin of every Range on or off (process-wide; trace::record holds it on).
void record_function_ranges(bool on);

}  // namespace torchprobe::nvtx
