// Memory diagnostics: the largest-batch search, the memory fit, the CPU allocation counter, the real CPU OOM in a
// child process, and the leak detector. The OOM messages' numbers are read in explain_oom_test (layer 0).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <new>
#include <random>
#include <stdexcept>

#include "diagnostics/classify.h"
#include "diagnostics/exception_message.h"
#include "diagnostics/leak.h"
#include "diagnostics/memory_probe.h"
#include "diagnostics/memory_search.h"
#include "diagnostics/oom.h"
#include "diagnostics/memory_child.h"
#include "test_util.h"
#include "torchprobe/backend.h"
#include "torchprobe/io.h"

#include <sys/stat.h>

namespace dx = torchprobe::diagnostics;
namespace backend = torchprobe::backend;

namespace {

// A fake device on which every batch up to `boundary` fits.
std::function<dx::Trial(std::int64_t)> oracle(std::int64_t boundary, int* calls = nullptr) {
  return [boundary, calls](std::int64_t batch) {
    if (calls) ++*calls;
    dx::Trial t;
    t.fits = batch <= boundary;
    t.peak_bytes = t.fits ? 1000 + 10 * batch : 0;
    t.error = t.fits ? "" : "CUDA out of memory. Tried to allocate 2.00 MiB";
    return t;
  };
}

int floor_log2(std::int64_t v) {
  int k = 0;
  while (v >= 2) v /= 2, ++k;
  return k;
}

}  // namespace

namespace {

size_t count_of(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

}  // namespace

TEST(MaxBatchSearch, ExactWithZeroToleranceInTheDocumentedTrials) {
  dx::SearchOptions options;
  options.tolerance = 0;
  std::vector<std::int64_t> boundaries;
  for (std::int64_t b = 1; b <= 1100; ++b) boundaries.push_back(b);
  for (std::int64_t b : {4095, 4096, 4097, 65537, 999999}) boundaries.push_back(b);
  for (const std::int64_t boundary : boundaries) {
    int calls = 0;
    const auto result = dx::find_max_batch(oracle(boundary, &calls), options);
    const int k = floor_log2(boundary);
    ASSERT_EQ(result.largest, boundary);
    ASSERT_EQ(result.smallest_failing, boundary + 1);
    ASSERT_EQ(result.doubling_trials, k + 2) << boundary;
    ASSERT_EQ(result.bisection_trials, k) << boundary;
    ASSERT_EQ(static_cast<int>(result.trials.size()), calls);
  }
}

TEST(MaxBatchSearch, WithinTheToleranceInAtMostTheDocumentedTrials) {
  dx::SearchOptions options;  // 2 %
  for (std::int64_t boundary = 1; boundary <= 20000; boundary += 37) {
    const auto result = dx::find_max_batch(oracle(boundary), options);
    const int k = floor_log2(boundary);
    ASSERT_LE(result.largest, boundary);
    ASSERT_GT(result.smallest_failing, boundary);
    ASSERT_LE(static_cast<double>(boundary - result.largest), 0.02 * static_cast<double>(result.largest)) << boundary;
    ASSERT_LE(result.bisection_trials, k) << boundary;
  }
}

TEST(MaxBatchSearch, AGoodPredictionEndsInTwoTrialsAndABadOneCostsAtMostTwoMore) {
  for (std::int64_t boundary : {150, 777, 3000, 12345}) {
    const int k = floor_log2(boundary);
    for (const double error : {0.0, 0.005, -0.005, 0.3, -0.3}) {
      dx::SearchOptions options;
      options.predict = [&](const std::vector<dx::Trial>&) {
        return static_cast<std::int64_t>(std::llround(static_cast<double>(boundary) * (1.0 + error)));
      };
      const auto result = dx::find_max_batch(oracle(boundary), options);
      ASSERT_LE(result.largest, boundary);
      ASSERT_LE(static_cast<double>(boundary - result.largest), 0.02 * static_cast<double>(result.largest));
      if (std::fabs(error) < 0.01 && boundary >= 500) {  // the 2 % window spans >= 10 batch sizes
        EXPECT_LE(result.bisection_trials, 2) << boundary << " " << error;
      }
      EXPECT_LE(result.bisection_trials, k + 2) << boundary << " " << error;
    }
  }
}

// "Stop when (failing - fitting) <= tolerance * fitting": from start 8 with the boundary at 9, the bracket narrows
// 8..16, 8..12, 8..10; at 8..10 the gap is 2 = 0.25 * 8 exactly, so tolerance 0.25 stops there (largest 8) and a
// tolerance one step smaller bisects once more (largest 9).
TEST(MaxBatchSearch, StopsWhenTheGapIsExactlyTheTolerance) {
  const auto search = [](double tolerance) {
    dx::SearchOptions options;
    options.start = 8;
    options.tolerance = tolerance;
    return dx::find_max_batch(oracle(9), options);
  };
  for (const double tolerance : {0.25, std::nextafter(0.25, 1.0)}) {
    const auto at = search(tolerance);
    EXPECT_EQ(at.largest, 8) << tolerance;
    EXPECT_EQ(at.smallest_failing, 10) << tolerance;
    EXPECT_EQ(at.doubling_trials, 2) << tolerance;
    EXPECT_EQ(at.bisection_trials, 2) << tolerance;
  }
  const auto tighter = search(std::nextafter(0.25, 0.0));
  EXPECT_EQ(tighter.largest, 9);
  EXPECT_EQ(tighter.smallest_failing, 10);
  EXPECT_EQ(tighter.bisection_trials, 3);
}

TEST(MaxBatchSearch, NothingFitsOrEverythingFits) {
  const auto none = dx::find_max_batch(oracle(0));
  EXPECT_EQ(none.largest, 0);
  EXPECT_EQ(none.smallest_failing, 1);
  EXPECT_EQ(none.trials.size(), 1u);
  dx::SearchOptions options;
  options.max_batch = 100;
  const auto all = dx::find_max_batch(oracle(1000), options);
  EXPECT_EQ(all.largest, 100);
  EXPECT_EQ(all.smallest_failing, 0);
  EXPECT_EQ(all.trials.back().batch, 100);
  EXPECT_THROW(dx::find_max_batch(oracle(5), dx::SearchOptions{0, 10, 0.02, {}}), std::invalid_argument);
}

TEST(MemoryFit, RecoversAPlantedLinearModel) {
  std::mt19937 rng(7);
  std::normal_distribution<double> noise(0, 2000);  // allocator rounding, small workspaces
  const double intercept = 150e6, slope = 4.75e6;
  std::vector<double> x, y;
  for (double b : {8, 16, 32, 64, 128, 192, 199}) x.push_back(b), y.push_back(intercept + slope * b + noise(rng));
  const auto fit = dx::fit_linear(x, y);
  EXPECT_NEAR(fit.slope, slope, slope * 1e-3);
  EXPECT_NEAR(fit.intercept, intercept, intercept * 1e-3);
  EXPECT_GT(fit.r2, 0.9999);
  EXPECT_EQ(fit.points, 7);
  dx::MemoryBreakdown breakdown;
  breakdown.parameters = breakdown.gradients = breakdown.optimizer_state = 40'000'000;
  breakdown.fit = fit;
  EXPECT_NEAR(breakdown.fixed_other(), 30e6, 0.5e6);
  EXPECT_EQ(breakdown.batch_for(intercept + slope * 300.5), 300);
  EXPECT_THROW(dx::fit_linear({4, 4}, {1, 2}), std::invalid_argument);
}

TEST(CpuAllocationCounter, CountsTensorBytesExactlyAndNests) {
  torch::Tensor survivor;
  {
    const backend::CpuAllocationCounter counter;
    const auto before = backend::allocator_stats(torch::kCPU);
    ASSERT_TRUE(before.available);
    backend::reset_allocator_peaks(torch::kCPU);
    {
      const torch::Tensor t = torch::empty({1024 * 1024}, torch::kFloat32);  // 4 MiB
      const auto during = backend::allocator_stats(torch::kCPU);
      EXPECT_EQ(during.allocated.current - before.allocated.current, 4 * 1024 * 1024);
      EXPECT_EQ(during.live_allocations - before.live_allocations, 1);
      const backend::CpuAllocationCounter nested;  // nests: still counting, no second install
      const torch::Tensor u = torch::empty({256}, torch::kFloat32);
      EXPECT_EQ(backend::allocator_stats(torch::kCPU).allocated.current - during.allocated.current, 1024);
    }
    const auto after = backend::allocator_stats(torch::kCPU);
    EXPECT_EQ(after.allocated.current, before.allocated.current);
    EXPECT_EQ(after.allocated.peak - before.allocated.current, 4 * 1024 * 1024 + 1024);
    survivor = torch::ones({1000});  // allocated while counting, freed after the counter is gone
  }
  EXPECT_FALSE(backend::allocator_stats(torch::kCPU).available);
  EXPECT_FLOAT_EQ(survivor.sum().item<float>(), 1000.0f);
  survivor = torch::Tensor();  // its deleter still works after uninstall
  const torch::Tensor plain = torch::ones({10});
  EXPECT_FLOAT_EQ(plain.sum().item<float>(), 10.0f);
}

// What the largest-batch search reads as "does not fit": the typed errors, and whatever explain calls an out-of-memory
// for certain, named by its rule; a status code that only often means one is another fault.
TEST(MemoryProbe, AnOutOfMemoryIsWhatExplainCallsOneForCertain) {
  EXPECT_EQ(dx::oom_allocator(std::bad_alloc()), "C++ operator new");
  EXPECT_EQ(dx::oom_allocator(
                std::runtime_error("CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`")),
            "cuBLAS (handle or workspace)");
  EXPECT_EQ(dx::oom_allocator(std::runtime_error("cuDNN error: CUDNN_STATUS_ALLOC_FAILED")),
            "cuDNN (handle or workspace)");
  EXPECT_EQ(
      dx::oom_allocator(std::runtime_error("CUDA error: out of memory\nCUDA kernel errors might be asynchronously "
                                           "reported at some other API call")),
      "CUDA runtime (context or driver allocation)");
  EXPECT_EQ(
      dx::oom_allocator(std::runtime_error("[enforce fail at alloc_cpu.cpp:83] err == 0. DefaultCPUAllocator: can't "
                                           "allocate memory: you tried to allocate 1073741824 bytes.")),
      "LibTorch CPU allocator");
  EXPECT_FALSE(dx::is_out_of_memory(std::runtime_error("cuDNN error: CUDNN_STATUS_NOT_INITIALIZED"))) << "only likely";
  EXPECT_FALSE(dx::is_out_of_memory(std::runtime_error("CUDA error: an illegal memory access was encountered")));
  EXPECT_FALSE(dx::is_out_of_memory(std::runtime_error("to avoid out of memory errors, lower the batch size")));
}

TEST(CpuAllocationCounter, TheRealAllocatorErrorIsAnOutOfMemory) {
  try {
    const torch::Tensor huge = torch::empty({std::int64_t{1} << 50}, torch::kFloat32);  // 4 PiB
    FAIL() << "allocating 4 PiB succeeded";
  } catch (const c10::Error& e) {
    EXPECT_TRUE(dx::is_out_of_memory(e)) << e.what_without_backtrace();
    EXPECT_EQ(dx::explain_error(dx::raw_message(e)).kind, dx::ErrorKind::kOutOfMemoryCpu);
  }
  EXPECT_FALSE(dx::is_out_of_memory(std::runtime_error("nope")));
}

// The real CPU OOM, in a child process under an address-space limit: the parent survives.
TEST(MemoryProbe, RealCpuOutOfMemoryInAChildAndTheParentSurvives) {
  const dx::ProbeReport report = dx::run_probe_in_child(
      TORCHPROBE_CLI_PATH, {"diagnose", "memory", "--child", "--models", "net", "--cpu-limit", "128MiB", "--threads", "1"});
  EXPECT_TRUE(report.oom_reproduced);
  EXPECT_NE(report.oom_message.find("can't allocate memory"), std::string::npos) << report.oom_message;
  EXPECT_EQ(report.oom.kind, dx::ErrorKind::kOutOfMemoryCpu);
  EXPECT_EQ(report.capacity_bytes, 128 * 1024 * 1024);
  // The largest batch: it ran, and a batch within 2 % above it failed.
  ASSERT_GT(report.search.largest, 0);
  ASSERT_GT(report.search.smallest_failing, report.search.largest);
  EXPECT_LE(static_cast<double>(report.search.smallest_failing - report.search.largest),
            0.02 * static_cast<double>(report.search.largest) + 1);
  bool largest_ran = false;
  for (const auto& t : report.search.trials) largest_ran |= t.batch == report.search.largest && t.fits;
  EXPECT_TRUE(largest_ran);
  // The breakdown: exact model parts (net: 62 006 float parameters), a per-sample slope that fits.
  EXPECT_EQ(report.breakdown.parameters, 62006 * 4);
  EXPECT_EQ(report.breakdown.optimizer_state, 62006 * 4);
  EXPECT_GT(report.breakdown.per_sample(), 3 * 32 * 32 * 4);  // at least the input image
  EXPECT_GT(report.breakdown.fit.r2, 0.99);
  // Recovery in the child, after the error; and this process goes on.
  EXPECT_TRUE(report.recovered()) << report.recovery_error;
  EXPECT_TRUE(report.ok());
  EXPECT_FLOAT_EQ(torch::ones({4}).sum().item<float>(), 4.0f);
  const std::string text = dx::probe_text(report);
  EXPECT_NE(text.find("reproduced: a training step at batch"), std::string::npos) << text;
  EXPECT_NE(text.find("nothing lost, no restart"), std::string::npos) << text;
}

TEST(MemoryProbe, AChildThatFailsIsReportedNotFatal) {
  EXPECT_THROW(
      {
        try {
          dx::run_probe_in_child("/bin/false", {});
        } catch (const std::runtime_error& e) {
          EXPECT_NE(std::string(e.what()).find("exited with status 1"), std::string::npos) << e.what();
          throw;
        }
      },
      std::runtime_error);
}

namespace {

// A stand-in for `torchprobe diagnose memory --child`: a shell script that prints the child's events.
// Run plainly, it runs batches 1 and 2, starts batch 4 and dies the way OpenBLAS does when its
// work-buffer malloc fails; resumed, it checks that batch 4 was handed back as an OpenBLAS OOM and
// prints `report`.
std::string fake_child(const TempDir& dir, const std::string& report_json, const std::string& death) {
  const std::string script = dir.file("fake-child.sh");
  torchprobe::io::write_text_file(script, R"SH(#!/bin/sh
for a in "$@"; do last="$a"; done
case "$*" in
  *--child-resume*)
    grep -q '"allocator":"OpenBLAS (gemm_driver)"' "$last" || { echo "no OpenBLAS trial in $last" >&2; exit 3; }
    grep -q '"batch":4' "$last" || { echo "batch 4 not handed back" >&2; exit 3; }
    echo '{"event":"report","report":)SH" + report_json + R"SH(}'
    exit 0;;
esac
echo '{"event":"trial_start","batch":1}'
echo '{"event":"trial","trial":{"batch":1,"fits":true,"peak_bytes":1000,"seconds":0.1,"error":"","allocator":""}}'
echo 'trial batch 1: ran' >&2
echo '{"event":"trial_start","batch":2}'
echo '{"event":"trial","trial":{"batch":2,"fits":true,"peak_bytes":2000,"seconds":0.1,"error":"","allocator":""}}'
echo '{"event":"trial_start","batch":4}'
)SH" + death + "\n");
  chmod(script.c_str(), 0755);
  return script;
}

}  // namespace

TEST(MemoryProbe, AChildEndedByOpenBlasIsAnOutOfMemoryAtThatBatchAndTheSearchGoesOn) {
  const TempDir dir;
  dx::ProbeReport finished;
  finished.model = "net";
  finished.device = "cpu";
  finished.device_name = "CPU";
  finished.oom_reproduced = true;
  finished.oom_batch = 4;
  finished.oom_message = "OpenBLAS: malloc failed in gemm_driver";
  finished.oom_allocator = "OpenBLAS (gemm_driver)";
  finished.search.largest = 3;
  finished.search.smallest_failing = 4;
  finished.search.trials = {{1, true, 1000, 0.1, "", ""}, {2, true, 2000, 0.1, "", ""},
                            {4, false, 0, 0.1, "OpenBLAS: malloc failed in gemm_driver", "OpenBLAS (gemm_driver)"},
                            {3, true, 3000, 0.1, "", ""}};
  finished.recovery_batch = 3;
  finished.recovery_losses = {2.3, 2.2};
  const std::string exe = fake_child(dir, dx::probe_to_json(finished), "echo 'OpenBLAS: malloc failed in gemm_driver' >&2; exit 1");
  const dx::ProbeReport report = dx::run_probe_in_child(exe, {"diagnose", "memory", "--child"});
  EXPECT_EQ(report.child_restarts, 1);
  EXPECT_EQ(report.oom_batch, 4);
  EXPECT_EQ(report.oom_allocator, "OpenBLAS (gemm_driver)");
  EXPECT_EQ(report.oom.kind, dx::ErrorKind::kOutOfMemoryCpu) << dx::kind_name(report.oom.kind);
  EXPECT_TRUE(report.ok());
  const std::string text = dx::probe_text(report);
  EXPECT_NE(text.find("allocator that failed: OpenBLAS (gemm_driver)"), std::string::npos) << text;
  EXPECT_NE(text.find("4(OOM in OpenBLAS (gemm_driver))"), std::string::npos) << text;
  EXPECT_NE(text.find("ended 1 time(s) by a library"), std::string::npos) << text;
}

// The text says what the numbers are: a CPU's limit is its --cpu-limit budget, not "this device has"; a search that
// never ran out of memory has no error to recover from. The chart draws the same probe.
TEST(MemoryProbe, TheTextNamesACpuBudgetAndARecoveryWithoutAnError) {
  dx::ProbeReport r;
  r.model = "net";
  r.device = "cpu";
  r.device_name = "CPU";
  r.capacity_bytes = 512LL << 20;
  r.oom_reproduced = true;
  r.oom_batch = 4096;
  r.oom_message = "DefaultCPUAllocator: can't allocate memory";
  r.breakdown.fit = {1.0e6, 1.2e5, 1.0, 3};
  r.search.largest = 4000;
  r.search.smallest_failing = 4096;
  r.search.trials = {{1024, true, 130'000'000, 0.1, "", ""},
                     {2048, true, 250'000'000, 0.1, "", ""},
                     {4096, false, 0, 0.1, "DefaultCPUAllocator: can't allocate memory", "LibTorch's CPU allocator"},
                     {4000, true, 490'000'000, 0.1, "", ""}};
  r.recovery_batch = 4000;
  r.recovery_losses = {2.3, 2.2};
  std::string text = dx::probe_text(r);
  EXPECT_NE(text.find("; the address-space budget (--cpu-limit) is 512.0 MiB -> about"), std::string::npos) << text;
  EXPECT_EQ(text.find("this device has"), std::string::npos) << text;
  EXPECT_NE(text.find("at batch 4000 after the error"), std::string::npos) << text;
  const std::string svg = dx::probe_chart(r);
  EXPECT_EQ(count_of(svg, "<circle class=\"point\""), 3u) << svg;
  EXPECT_EQ(count_of(svg, "<path class=\"point\""), 1u);
  EXPECT_NE(svg.find("address-space budget (--cpu-limit): 512.0 MiB"), std::string::npos) << svg;
  r.oom_reproduced = false;
  r.search.smallest_failing = 0;
  r.search.trials.erase(r.search.trials.begin() + 2);
  text = dx::probe_text(r);
  EXPECT_NE(text.find("not reproduced"), std::string::npos) << text;
  EXPECT_NE(text.find("at batch 4000 (no error to recover from)"), std::string::npos) << text;
  EXPECT_EQ(text.find("after the error"), std::string::npos) << text;
}

TEST(MemoryProbe, AChildEndedByANonMemoryLibraryErrorFailsWithWhatItSaid) {
  const TempDir dir;
  // OpenBLAS's "too many memory regions" is its thread limit, not memory: no retry, the reason is shown.
  const std::string exe = fake_child(
      dir, "{}", "echo 'OpenBLAS : Program is Terminated. Because you tried to allocate too many memory regions.'; exit 1");
  try {
    dx::run_probe_in_child(exe, {});
    ADD_FAILURE() << "expected the child's failure";
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("exited with status 1"), std::string::npos) << what;
    EXPECT_NE(what.find("too many memory regions"), std::string::npos) << what;
  }
  EXPECT_FALSE(dx::find_library_oom("OpenBLAS : Program is Terminated. Because you tried to allocate too many memory regions.").has_value());
  const auto found = dx::find_library_oom("noise\nOpenBLAS: malloc failed in dsyrk_thread_UT\nmore\n");
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->allocator, "OpenBLAS (dsyrk_thread_UT)");
  EXPECT_EQ(found->message, "OpenBLAS: malloc failed in dsyrk_thread_UT");
}

// The real child, resumed after a library OOM at batch 16: it replays that trial (not run again),
// bisects below it, and the report names the library that failed there.
TEST(MemoryProbe, ARealChildResumesTheSearchFromKnownTrials) {
  const TempDir dir;
  const std::string resume = dir.file("resume.json");
  torchprobe::io::write_text_file(resume, R"JSON({"trials": [{"batch": 16, "fits": false, "peak_bytes": 0, "seconds": 1.0,
      "error": "OpenBLAS: malloc failed in gemm_driver", "allocator": "OpenBLAS (gemm_driver)"}], "recovery_failures": []})JSON");
  const dx::ProbeReport report = dx::run_probe_in_child(
      TORCHPROBE_CLI_PATH, {"diagnose", "memory", "--child", "--models", "net", "--cpu-limit", "256MiB", "--threads", "1",
                            "--child-resume", resume});
  EXPECT_EQ(report.oom_batch, 16);
  EXPECT_EQ(report.oom_allocator, "OpenBLAS (gemm_driver)");
  EXPECT_EQ(report.search.smallest_failing, 16);
  EXPECT_GE(report.search.largest, 8);
  EXPECT_LT(report.search.largest, 16);
  int runs_of_16 = 0;
  for (const auto& t : report.search.trials) runs_of_16 += t.batch == 16;
  EXPECT_EQ(runs_of_16, 1) << "the known trial is replayed once, not run again";
  EXPECT_TRUE(report.recovered());
}

TEST(MemoryProbe, JsonRoundTrip) {
  dx::ProbeReport r;
  r.model = "net";
  r.device = "cpu";
  r.device_name = "CPU";
  r.oom_reproduced = true;
  r.oom_batch = 64;
  r.oom_message = "DefaultCPUAllocator: can't allocate memory: you tried to allocate 1024 bytes.";
  r.search.largest = 50;
  r.search.trials = {{32, true, 1000, 0.1, "", ""}, {64, false, 900, 0.1, r.oom_message, "LibTorch CPU allocator"}};
  r.recovery_batch = 50;
  r.recovery_losses = {2.3, 2.2};
  const dx::ProbeReport back = dx::probe_from_json(dx::probe_to_json(r));
  EXPECT_EQ(back.oom_batch, 64);
  EXPECT_EQ(back.oom.kind, dx::ErrorKind::kOutOfMemoryCpu);
  EXPECT_EQ(back.search.trials.size(), 2u);
  EXPECT_EQ(back.search.trials[1].error, r.oom_message);
  EXPECT_TRUE(back.ok());
}

TEST(LeakDetector, FlagsKeptLossesAndStaysQuietOnACorrectLoop) {
  dx::LeakOptions options;
  options.steps = 15;
  const auto leak = dx::run_leak_scenario(dx::LeakLoop::kKeptLosses, "net", torch::kCPU, options);
  EXPECT_TRUE(leak.leak) << leak.verdict;
  EXPECT_NEAR(leak.live_tensors_per_step, 1.0, 1e-9);  // one kept loss per step
  EXPECT_GT(leak.heap_bytes_per_step, 4096);          // and its autograd graph
  EXPECT_NE(leak.verdict.find("loss.item<float>()"), std::string::npos);
  const auto correct = dx::run_leak_scenario(dx::LeakLoop::kCorrect, "net", torch::kCPU, options);
  EXPECT_FALSE(correct.leak) << correct.verdict;
  EXPECT_EQ(correct.tensor_bytes_per_step, 0);
}

TEST(LeakDetector, AGrowingListOfTensorsIsALeakEvenWithoutGraphs) {
  std::vector<torch::Tensor> kept;
  const auto report = dx::detect_leak([&] { kept.push_back(torch::zeros({256})); }, torch::kCPU);
  EXPECT_TRUE(report.leak);
  EXPECT_NEAR(report.tensor_bytes_per_step, 1024, 1e-9);
}
