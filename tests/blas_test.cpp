#include "torchprobe/blas.h"

#include <dirent.h>
#include <dlfcn.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

#include "torchprobe/models/registry.h"
#include "torchprobe/train/train_step.h"
#include "torchprobe/trust.h"

using namespace torchprobe;

namespace {

// CPU ticks (utime + stime) of every thread of this process, from /proc/self/task/<tid>/stat.
std::map<int, long long> thread_ticks() {
  std::map<int, long long> out;
  DIR* dir = opendir("/proc/self/task");
  if (dir == nullptr) return out;
  while (const dirent* entry = readdir(dir)) {
    const int tid = std::atoi(entry->d_name);
    if (tid <= 0) continue;
    std::ifstream in(std::string("/proc/self/task/") + entry->d_name + "/stat");
    std::string text;
    std::getline(in, text);
    const auto close = text.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(text.substr(close + 2));
    std::vector<std::string> fields;
    for (std::string f; rest >> f && fields.size() < 13;) fields.push_back(f);
    if (fields.size() == 13) out[tid] = std::stoll(fields[11]) + std::stoll(fields[12]);
  }
  closedir(dir);
  return out;
}

// Runs GEMM-heavy work for `seconds` (large GEMMs from this thread, outside any parallel region, where a
// BLAS with its own pool uses it, and training steps whose convolutions use LibTorch's OpenMP pool) and
// returns how many threads of the process were busy: each used at least 10% of the window's wall time.
int busy_threads_during_gemm_work(double seconds) {
  torch::manual_seed(0);
  const auto a = torch::randn({384, 384}), b = torch::randn({384, 384});
  auto c = torch::empty({384, 384});
  train::TrainStep step(models::make_model("net"), torch::Device(torch::kCPU));
  data::HostBatch batch{torch::randn({64, 3, 32, 32}), torch::randint(10, {64}, torch::kLong), nullptr};
  for (int i = 0; i < 3; ++i) step.run(batch);  // warm-up: every pool exists before the window

  const auto before = thread_ticks();
  const auto start = std::chrono::steady_clock::now();
  while (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < seconds) {
    for (int i = 0; i < 10; ++i) torch::mm_out(c, a, b);
    step.run(batch);
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const auto after = thread_ticks();
  const double ticks_per_s = static_cast<double>(sysconf(_SC_CLK_TCK));
  int busy = 0;
  for (const auto& [tid, ticks] : after) {
    const auto it = before.find(tid);
    const double used_s = static_cast<double>(ticks - (it == before.end() ? 0 : it->second)) / ticks_per_s;
    if (used_s >= 0.10 * wall) ++busy;
  }
  return busy;
}

}  // namespace

TEST(Blas, DetectionFindsTheLibraryServingSgemm) {
  const BlasInfo blas = detect_blas();
  // Debian's libtorch links the system libblas.so.3; the pip wheel carries MKL inside.
  if (blas.library_path.empty() || blas.library_path.find("libtorch") != std::string::npos) {
    EXPECT_NE(blas.vendor.find("linked into LibTorch"), std::string::npos) << blas.vendor;
  } else {
    EXPECT_NE(blas.library_path.find('/'), std::string::npos);
  }
  EXPECT_EQ(blas_warning(blas).empty(), !blas.is_reference);
  if (blas.vendor == "OpenBLAS") {
    EXPECT_EQ(blas.detail.rfind("OpenBLAS ", 0), 0u) << "OpenBLAS's own config string";
    // OpenBLAS >= 0.2.x says how it was built to run in parallel.
    EXPECT_NE(blas.threading, BlasThreading::kUnknown);
    EXPECT_GT(blas.threads, 0);
  }
}

TEST(Blas, ReferenceBlasWarningSaysHowToFixIt) {
  BlasInfo reference;
  reference.vendor = "reference BLAS (netlib)";
  reference.library_path = "/usr/lib/x86_64-linux-gnu/blas/libblas.so.3";
  reference.is_reference = true;
  const std::string warning = blas_warning(reference);
  EXPECT_NE(warning.find("reference BLAS"), std::string::npos);
  EXPECT_NE(warning.find("apt-get install libopenblas0-openmp"), std::string::npos);
}

TEST(Threads, ConfigureSetsLibTorchThreadsAndLeavesNoSecondPool) {
  const ThreadSetup setup = configure_threads(2);
  EXPECT_EQ(setup.intra_op, 2);
  EXPECT_GE(setup.cores, 1);
  // CTest forces a particular build in through LD_LIBRARY_PATH and says which one it must be.
  if (const char* expected = std::getenv("TORCHPROBE_EXPECT_BLAS_THREADING")) {
    EXPECT_EQ(blas_threading_name(setup.blas.threading), expected) << setup.blas.library_path;
  }
  // A BLAS with a pool of its own beside LibTorch's is pinned to one thread; one in the OpenMP pool
  // follows LibTorch's count.
  if (setup.blas.threading == BlasThreading::kPthreads) {
    EXPECT_EQ(setup.blas.threads, 1);
    EXPECT_TRUE(setup.blas_pinned);
  }
  if (setup.blas.threading == BlasThreading::kOpenMP) {
    EXPECT_EQ(setup.blas.threads, 2);
  }
}

// The behaviour that matters: with 2 configured threads, no more than 2 threads of the process do
// compute work, whatever BLAS build serves the GEMMs (CTest also runs this with OpenBLAS's pthreads
// build forced in through LD_LIBRARY_PATH, where its own pool would otherwise add a third busy thread).
TEST(Threads, BusyComputeThreadsEqualTheConfiguredCount) {
  const ThreadSetup setup = configure_threads(2);
  if (setup.cores < 2) GTEST_SKIP() << "needs 2 cores to see a second busy thread; this process may use " << setup.cores;
  const int busy = busy_threads_during_gemm_work(/*seconds=*/1.5);
  RecordProperty("busy_threads", busy);
  EXPECT_LE(busy, 2) << "more busy threads than LibTorch's 2: a second pool (" << setup.blas.library_path << ", "
                     << blas_threading_name(setup.blas.threading) << ") competes with LibTorch's";
  EXPECT_GE(busy, 1);
}

TEST(Threads, WarningsNameTheCollisionAndTheFix) {
  ThreadSetup setup;
  setup.intra_op = 4;
  setup.cores = 2;
  setup.blas.vendor = "OpenBLAS";
  setup.blas.library_path = "/usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3";
  setup.blas.threading = BlasThreading::kPthreads;
  setup.blas.threads = 2;
  const auto warnings = trust::threading_warnings(setup);
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_EQ(warnings[0].code, "threads_exceed_cores");
  EXPECT_NE(warnings[0].message.find("4 LibTorch threads on 2 cores"), std::string::npos) << warnings[0].message;
  EXPECT_NE(warnings[0].message.find("--threads 2"), std::string::npos);
  EXPECT_EQ(warnings[1].code, "blas_pool");
  EXPECT_NE(warnings[1].message.find("spin on the same 2 cores"), std::string::npos) << warnings[1].message;
  setup.blas.threads = 1;
  setup.blas_pinned = true;
  setup.intra_op = 2;
  const auto pinned = trust::threading_warnings(setup);
  ASSERT_EQ(pinned.size(), 1u);
  EXPECT_NE(pinned[0].message.find("pinned to 1 thread"), std::string::npos);
  EXPECT_NE(pinned[0].message.find("libopenblas0-openmp"), std::string::npos);
  setup.blas.threading = BlasThreading::kOpenMP;
  setup.blas.threads = 2;
  setup.blas_pinned = false;
  EXPECT_TRUE(trust::threading_warnings(setup).empty());
}
