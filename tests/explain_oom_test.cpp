// The OOM-message parser behind explain: the allocator's numbers of LibTorch 1.13 and 2.x and the CPU's, the
// fragmentation and host verdicts (layer 0, run by every build).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "diagnostics/classify.h"
#include "diagnostics/explanations.h"
#include "diagnostics/oom.h"
#include "test_util.h"

using namespace torchprobe;
using namespace torchprobe::diagnostics;
namespace dx = torchprobe::diagnostics;

// LibTorch 2.x's out-of-memory message as a real run printed it.
const char* const kOomOfLibTorch2 =
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 79.19 GiB "
    "of "
    "which 3.06 MiB is free. Including non-PyTorch memory, this process has 79.18 GiB memory in use. Of the allocated "
    "memory 76.50 GiB is allocated by PyTorch, and 2.10 GiB is reserved by PyTorch but unallocated. If reserved but "
    "unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.";

TEST(OomMessages, NumbersOfLibTorch2AndOneThirteenAndTheCpu) {
  const auto v2 = dx::parse_oom(kOomOfLibTorch2);
  const std::int64_t mib = 1024 * 1024, gib = 1024 * mib;
  EXPECT_EQ(*v2.requested, 20 * mib);
  EXPECT_EQ(*v2.total, std::llround(79.19 * static_cast<double>(gib)));
  EXPECT_EQ(*v2.free, std::llround(3.06 * static_cast<double>(mib)));
  EXPECT_EQ(*v2.allocated, std::llround(76.5 * static_cast<double>(gib)));
  EXPECT_EQ(*v2.reserved, std::llround(76.5 * static_cast<double>(gib)) + std::llround(2.1 * static_cast<double>(gib)));
  EXPECT_TRUE(dx::looks_fragmented(v2));  // 2.1 GiB cached-but-unused >= 20 MiB asked

  const auto v1 = dx::parse_oom(
      "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 15.78 GiB total capacity; 12.35 GiB "
      "already "
      "allocated; 1.19 GiB free; 13.10 GiB reserved in total by PyTorch) If reserved memory is >> allocated memory try "
      "setting max_split_size_mb to avoid fragmentation.");
  EXPECT_EQ(*v1.requested, 2 * gib);
  EXPECT_EQ(*v1.free, std::llround(1.19 * static_cast<double>(gib)));
  EXPECT_EQ(*v1.reserved, std::llround(13.10 * static_cast<double>(gib)));
  EXPECT_FALSE(dx::looks_fragmented(v1));  // 0.75 GiB cached < 2 GiB asked: really too big

  const auto cpu =
      dx::parse_oom("DefaultCPUAllocator: can't allocate memory: you tried to allocate 1099511627776 bytes.");
  EXPECT_EQ(*cpu.requested, 1099511627776LL);
  EXPECT_FALSE(cpu.total.has_value());
}

// Found by fuzz.oom in CI: two sizes whose sum is past 2^63 - 1 bytes overflowed (undefined behaviour) when the
// reserved figure was added up; the parser keeps each size and gives no reserved figure.
// LibTorch 1.13's wording ("already allocated", "reserved in total") gives the fragmentation verdict as 2.x's does;
// the verdict's rule is "cached but unused >= the request", equality included.
TEST(OomMessages, FragmentationInEitherWordingAndAtItsEdge) {
  const std::int64_t mib = 1024 * 1024, gib = 1024 * mib;
  const auto v1 = dx::explain_error(
      "RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 15.78 GiB total capacity; 12.00 GiB "
      "already allocated; 10.00 MiB free; 13.00 GiB reserved in total by PyTorch)");
  ASSERT_TRUE(v1.memory.allocated.has_value());
  EXPECT_EQ(*v1.memory.allocated, 12 * gib);
  EXPECT_EQ(*v1.memory.reserved, 13 * gib);
  EXPECT_NE(v1.explanation.find("Verdict: fragmentation"), std::string::npos) << v1.explanation;
  const auto at_edge = dx::parse_oom(
      "CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.19 GiB of which 1.00 GiB is "
      "free. Of the allocated memory 70.00 GiB is allocated by PyTorch, and 2.00 GiB is reserved by PyTorch but "
      "unallocated.");
  EXPECT_TRUE(dx::looks_fragmented(at_edge));
  const auto below = dx::parse_oom(
      "CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.19 GiB of which 1.00 GiB is "
      "free. Of the allocated memory 70.00 GiB is allocated by PyTorch, and 1.99 GiB is reserved by PyTorch but "
      "unallocated.");
  EXPECT_FALSE(dx::looks_fragmented(below));
}

// The host's memory gets the host's verdict, never the device's; a "likely" kind says so where it is printed.
TEST(OomMessages, TheHostsVerdictAndTheLikelyOnesSaySo) {
  const auto cpu = dx::explain_error(
      "RuntimeError: DefaultCPUAllocator: can't allocate memory: you tried to allocate 1099511627776 bytes.");
  EXPECT_EQ(cpu.kind, dx::ErrorKind::kOutOfMemoryCpu);
  EXPECT_NE(cpu.explanation.find("Verdict: the host (or the process's memory limit) could not supply the bytes"),
            std::string::npos)
      << cpu.explanation;
  EXPECT_EQ(cpu.explanation.find("larger than the device"), std::string::npos) << cpu.explanation;
  EXPECT_EQ(dx::diagnosis_text(cpu).rfind("kind:        out_of_memory_cpu\n", 0), 0u) << dx::diagnosis_text(cpu);

  const auto cublas =
      dx::explain_error("RuntimeError: CUDA error: CUBLAS_STATUS_NOT_INITIALIZED when calling `cublasCreate(handle)`");
  EXPECT_EQ(cublas.confidence, "likely");
  EXPECT_EQ(dx::diagnosis_text(cublas).rfind("kind:        out_of_memory_gpu (likely)\n", 0), 0u)
      << dx::diagnosis_text(cublas);
  EXPECT_EQ(cublas.explanation.rfind("Likely out of memory", 0), 0u) << cublas.explanation;
  const auto certain =
      dx::explain_error("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB");
  EXPECT_EQ(certain.confidence, "certain");
  EXPECT_EQ(dx::diagnosis_text(certain).rfind("kind:        out_of_memory_gpu\n", 0), 0u)
      << dx::diagnosis_text(certain);
  EXPECT_EQ(certain.explanation.find("Likely"), std::string::npos) << certain.explanation;
}

TEST(OomMessages, SizesNearTwoToTheSixtyThreeDoNotOverflow) {
  const auto facts = dx::parse_oom(
      "Of the allocated memory 4611686018427387904 B is allocated by PyTorch, and "
      "4611686018427387904 B is reserved by PyTorch but unallocated.");
  EXPECT_EQ(*facts.allocated, std::int64_t{1} << 62);
  EXPECT_FALSE(facts.reserved.has_value());
  const auto fits = dx::parse_oom(
      "Of the allocated memory 4611686018427387904 B is allocated by PyTorch, and "
      "4611686018427387903 B is reserved by PyTorch but unallocated.");
  EXPECT_EQ(*fits.reserved, std::numeric_limits<std::int64_t>::max());
  EXPECT_FALSE(dx::explain_oom_facts(facts, /*gpu=*/true).empty());
}

TEST(OomMessages, ExplainGivesTheNumbersAndTheVerdict) {
  const auto fragmented = dx::explain_error(
      "CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 79.19 GiB of which 3.06 MiB is "
      "free. "
      "Of the allocated memory 76.50 GiB is allocated by PyTorch, and 2.10 GiB is reserved by PyTorch but "
      "unallocated.");
  EXPECT_EQ(fragmented.kind, dx::ErrorKind::kOutOfMemoryGpu);
  EXPECT_NE(fragmented.explanation.find("It asked for 20.0 MiB"), std::string::npos) << fragmented.explanation;
  EXPECT_NE(fragmented.explanation.find("2.10 GiB cached but unused"), std::string::npos) << fragmented.explanation;
  EXPECT_NE(fragmented.explanation.find("Verdict: fragmentation"), std::string::npos);
  EXPECT_NE(fragmented.explanation.find("expandable_segments:True"), std::string::npos);
  const std::string json = dx::diagnosis_json(fragmented);
  EXPECT_NE(json.find("\"requested_bytes\": 20971520"), std::string::npos) << json;
  EXPECT_NE(json.find("\"fragmentation\": true"), std::string::npos);

  const auto too_big = dx::explain_error(
      "CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 15.78 GiB total capacity; 12.35 GiB already allocated; "
      "1.19 "
      "GiB free; 13.10 GiB reserved in total by PyTorch)");
  EXPECT_NE(too_big.explanation.find("Verdict: the working set is larger than the device"), std::string::npos)
      << too_big.explanation;
}

// "Outside PyTorch's allocator" is what the process has in use less what the caching allocator reserved (not less
// what live tensors hold): 79.18 GiB in use, 78.60 GiB reserved (76.50 allocated + 2.10 unallocated) leaves 593.9 MiB.
// Only strictly more in use than reserved is said: equal, nothing; one byte more, one byte.
TEST(OomMessages, MemoryOutsideTheAllocatorIsInUseLessReserved) {
  const auto full = dx::explain_error(kOomOfLibTorch2);
  EXPECT_NE(full.explanation.find("; 593.9 MiB of this process's memory is outside PyTorch's allocator"),
            std::string::npos)
      << full.explanation;
  const auto in_use = [](int bytes) {
    return dx::explain_oom_facts(
        dx::parse_oom(fmt::format("CUDA out of memory. Tried to allocate 4096 B. Including non-PyTorch memory, this "
                                  "process has {} B memory in use. Of the allocated memory 1024 B is allocated by "
                                  "PyTorch, and 2048 B is reserved by PyTorch but unallocated.",
                                  bytes)),
        /*gpu=*/true);
  };
  EXPECT_EQ(in_use(3072).find("outside PyTorch's allocator"), std::string::npos) << in_use(3072);
  EXPECT_EQ(in_use(3071).find("outside PyTorch's allocator"), std::string::npos) << in_use(3071);
  EXPECT_NE(in_use(3073).find("; 1 B of this process's memory is outside PyTorch's allocator"), std::string::npos)
      << in_use(3073);
}
