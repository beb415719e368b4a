#pragma once
// Profiler traces without Nsight: LibTorch's own (legacy autograd) profiler around a few steps, written as
// Chrome trace JSON that Perfetto (ui.perfetto.dev) and chrome://tracing open. The same API in LibTorch 1.13
// and 2.x: torch::autograd::profiler::enableProfilerLegacy / disableProfilerLegacy with input shapes.
#include <functional>
#include <string>
#include <vector>

namespace torchprobe::trace {

/// Runs `body` under LibTorch's profiler and returns a Chrome trace document:
/// {"traceEvents": [{"name", "cat", "ph": "X", "ts", "dur", "pid", "tid", "args": {"shapes"[, "cuda_us"]}}, ...],
///  "displayTimeUnit": "ms"}. Every ATen op is an event with its input shapes; every nvtx::Range opened in
/// `body` (the training step's h2d, forward, loss, backward and optimizer phases) is one too, with cat
/// "torchprobe", so ops nest inside the phases by time. `cuda`: record each op's CUDA time as well (a GPU run).
/// Throws (c10::Error, std::runtime_error) when the profiler cannot run, e.g. while another profiler is active.
std::string record(const std::function<void()>& body, bool cuda);


}  // namespace torchprobe::trace
