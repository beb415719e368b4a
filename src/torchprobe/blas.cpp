#include "torchprobe/blas.h"

#include <dlfcn.h>
#include <sched.h>

#include <ATen/Parallel.h>
#include <ATen/Version.h>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <climits>
#include <cstdlib>
#include <thread>
#include <vector>

#include "torchprobe/strings.h"

namespace torchprobe {
namespace {

std::string show_config_setting(const std::string& key) {  // "BLAS_INFO=mkl, ..."
  const std::string config = at::show_config();
  const auto pos = config.find(key + "=");
  if (pos == std::string::npos) return "";
  const auto start = pos + key.size() + 1;
  return config.substr(start, config.find_first_of(",\n", start) - start);
}

/// OpenBLAS's own entry points, looked up in the library that serves sgemm_ only: a global look-up
/// could find the OpenBLAS behind liblapack.so.3 while libblas.so.3 is the reference implementation.
struct OpenBlasApi {
  char* (*get_config)() = nullptr;
  char* (*get_corename)() = nullptr;
  int (*get_parallel)() = nullptr;  // 0 sequential, 1 pthreads, 2 OpenMP
  int (*get_num_threads)() = nullptr;
  void (*set_num_threads)(int) = nullptr;
  explicit operator bool() const { return get_config != nullptr; }
};

template <typename Fn>
void resolve(void* handle, const char* name, Fn& fn) {
  fn = reinterpret_cast<Fn>(dlsym(handle, name));
}

OpenBlasApi openblas_api(const std::string& library_path) {
  OpenBlasApi api;
  if (library_path.empty()) return api;
  // RTLD_NOLOAD: only a library this process has loaded already; the handle keeps it referenced
  // (it stays loaded for the process's lifetime anyway, as LibTorch links it).
  void* handle = dlopen(library_path.c_str(), RTLD_LAZY | RTLD_NOLOAD);
  if (handle == nullptr) return api;
  resolve(handle, "openblas_get_config", api.get_config);
  resolve(handle, "openblas_get_corename", api.get_corename);
  resolve(handle, "openblas_get_parallel", api.get_parallel);
  resolve(handle, "openblas_get_num_threads", api.get_num_threads);
  resolve(handle, "openblas_set_num_threads", api.set_num_threads);
  return api;
}

std::string sgemm_library() {
  // The library that really serves sgemm_ in this process (Debian's libtorch calls the
  // system libblas.so.3, whatever the alternatives system points it to).
  void* sym = dlsym(RTLD_DEFAULT, "sgemm_");
  if (sym == nullptr) return "";
  Dl_info where{};
  if (dladdr(sym, &where) == 0 || where.dli_fname == nullptr) return "";
  char resolved[PATH_MAX];
  return realpath(where.dli_fname, resolved) ? resolved : where.dli_fname;
}

// Set by configure_threads(): the pin of a pthreads OpenBLAS did not hold (kept for current_threads()).
bool g_pin_failed = false;

bool aten_uses_openmp() { return at::get_parallel_info().find("parallel backend: OpenMP") != std::string::npos; }

}  // namespace

std::string blas_threading_name(BlasThreading threading) {
  switch (threading) {
    case BlasThreading::kSequential: return "sequential";
    case BlasThreading::kOpenMP: return "openmp";
    case BlasThreading::kPthreads: return "pthreads";
    case BlasThreading::kUnknown: break;
  }
  return "unknown";
}

BlasInfo detect_blas() {
  BlasInfo info;
  info.library_path = sgemm_library();
  if (const OpenBlasApi api = openblas_api(info.library_path)) {
    info.vendor = "OpenBLAS";
    info.detail = api.get_config();
    if (api.get_corename != nullptr) info.kernel = api.get_corename();
    Dl_info where{};
    if (dladdr(reinterpret_cast<void*>(api.get_config), &where) != 0 && where.dli_fname != nullptr) {
      char resolved[PATH_MAX];
      info.core_path = realpath(where.dli_fname, resolved) ? resolved : where.dli_fname;
    }
    const int parallel = api.get_parallel ? api.get_parallel() : -1;
    info.threading = parallel == 0   ? BlasThreading::kSequential
                     : parallel == 1 ? BlasThreading::kPthreads
                     : parallel == 2 ? BlasThreading::kOpenMP
                                     : BlasThreading::kUnknown;
    // The OpenMP build sizes each call by OpenMP's current thread count (LibTorch's pool).
    if (info.threading == BlasThreading::kOpenMP) info.threads = at::get_num_threads();
    else if (info.threading == BlasThreading::kSequential) info.threads = 1;
    else if (api.get_num_threads) info.threads = api.get_num_threads();
    return info;
  }
  const std::string path = to_lower(info.library_path);
  const std::string file = path.substr(path.find_last_of('/') + 1);
  if (path.empty() || file.rfind("libtorch", 0) == 0) {
    // No separate BLAS: pip and archive LibTorch carry MKL statically inside libtorch_cpu, threaded
    // by the OpenMP runtime LibTorch uses.
    const std::string built_in = show_config_setting("BLAS_INFO");
    info.vendor = built_in.empty() ? "unknown (no sgemm_ found)" : built_in + " (linked into LibTorch)";
    if (to_lower(built_in).find("mkl") != std::string::npos && aten_uses_openmp()) {
      info.threading = BlasThreading::kOpenMP;
      info.threads = at::get_num_threads();
    }
  } else if (path.find("openblas") != std::string::npos) {
    info.vendor = "OpenBLAS";
  } else if (path.find("mkl") != std::string::npos) {
    info.vendor = "MKL";
  } else if (path.find("blis") != std::string::npos) {
    info.vendor = "BLIS";
  } else if (path.find("atlas") != std::string::npos) {
    info.vendor = "ATLAS";
  } else if (file.rfind("libblas.so", 0) == 0) {
    // Debian's netlib reference implementation lives in .../blas/libblas.so.3.
    info.vendor = "reference BLAS (netlib)";
    info.is_reference = true;
    info.threading = BlasThreading::kSequential;
    info.threads = 1;
  } else {
    info.vendor = "unknown";
  }
  return info;
}

std::string blas_warning(const BlasInfo& blas) {
  if (!blas.is_reference) return "";
  return fmt::format(
      "LibTorch is using the unoptimised reference BLAS ({}); CPU matmul and training figures "
      "will be ~30x too slow and would mislead a hardware comparison. Install OpenBLAS's OpenMP build: "
      "apt-get install libopenblas0-openmp (or select it with update-alternatives --config "
      "libblas.so.3-x86_64-linux-gnu)",
      blas.library_path);
}

int available_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

ThreadSetup current_threads() {
  ThreadSetup setup;
  setup.intra_op = at::get_num_threads();
  setup.inter_op = at::get_num_interop_threads();
  setup.cores = available_cores();
  setup.blas = detect_blas();
  setup.blas_pin_failed = g_pin_failed;
  setup.blas_pinned = setup.blas.threading == BlasThreading::kPthreads && setup.blas.threads == 1 && !g_pin_failed;
  return setup;
}

ThreadSetup configure_threads(int intra_op) {
  if (intra_op > 0) at::set_num_threads(intra_op);
  const BlasInfo blas = detect_blas();
  bool pin_failed = false;
  if (blas.threading == BlasThreading::kPthreads && blas.threads != 1) {
    // Its workers would spin beside LibTorch's OpenMP threads (and with one LibTorch thread they
    // would still add threads to the configured count): one thread, called from LibTorch's own.
    const OpenBlasApi api = openblas_api(blas.library_path);
    if (api.set_num_threads && api.get_num_threads) {
      api.set_num_threads(1);
      // Does it hold? A GEMM large enough to be split over threads, through the sgemm_ LibTorch calls.
      using Sgemm = void (*)(const char*, const char*, const int*, const int*, const int*, const float*, const float*,
                             const int*, const float*, const int*, const float*, float*, const int*);
      if (auto sgemm = reinterpret_cast<Sgemm>(dlsym(RTLD_DEFAULT, "sgemm_"))) {
        constexpr int n = 256;
        std::vector<float> a(n * n, 1.0f), b(n * n, 1.0f), c(n * n, 0.0f);
        const float one = 1.0f, zero = 0.0f;
        sgemm("N", "N", &n, &n, &n, &one, a.data(), &n, b.data(), &n, &zero, c.data(), &n);
        pin_failed = api.get_num_threads() != 1;
      }
    }
  }
  g_pin_failed = pin_failed;
  return current_threads();
}

}  // namespace torchprobe
