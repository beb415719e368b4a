#pragma once
// Which BLAS really serves LibTorch's GEMMs in this process, how it runs its threads, and the one
// place that sets the CPU thread counts so that no second thread pool competes with LibTorch's.
#include <string>
#include <vector>

namespace torchprobe {

/// How a BLAS runs in parallel.
enum class BlasThreading {
  kUnknown,
  kSequential,  ///< single-threaded (OpenBLAS's serial build)
  kOpenMP,      ///< in the OpenMP pool LibTorch uses too (OpenBLAS's OpenMP build, MKL inside pip's LibTorch)
  kPthreads,    ///< its own pool of worker threads beside LibTorch's OpenMP pool (OpenBLAS's pthreads build)
};
/// "openmp", "pthreads", "sequential", "unknown".
std::string blas_threading_name(BlasThreading threading);

struct BlasInfo {
  std::string vendor;        ///< "OpenBLAS", "reference BLAS (netlib)", "MKL (linked into LibTorch)", ...
  std::string library_path;  ///< the shared object that provides sgemm_, if one does
  std::string core_path;     ///< OpenBLAS: the libopenblas that does the work (Debian's libblas.so.3 is an interface over it)
  std::string detail;        ///< e.g. OpenBLAS's own config string
  std::string kernel;        ///< OpenBLAS: the kernel set it chose for this CPU, e.g. "SkylakeX", "Prescott"
  bool is_reference = false;  ///< the unoptimised netlib BLAS: CPU figures would mislead
  BlasThreading threading = BlasThreading::kUnknown;
  int threads = 0;  ///< threads the BLAS itself would use for one call now (0: unknown)
};
BlasInfo detect_blas();
/// The warning to print when blas.is_reference, with the fix; empty otherwise.
std::string blas_warning(const BlasInfo& blas);

/// The CPU threads of this process after configure_threads().
struct ThreadSetup {
  int intra_op = 0;     ///< LibTorch's intra-op threads (its OpenMP pool)
  int inter_op = 0;     ///< LibTorch's inter-op threads
  int cores = 0;        ///< logical cores this process may run on (its affinity mask)
  BlasInfo blas;        ///< after any pinning
  bool blas_pinned = false;  ///< a BLAS with its own pool was limited to one thread
  /// The pin did not hold: a GEMM spread over more threads again. Debian's OpenMP interface
  /// (libblas.so.3) over the pthreads libopenblas.so.0 does that before every call.
  bool blas_pin_failed = false;
};

/// Sets LibTorch's intra-op thread count (`intra_op` > 0; 0 keeps LibTorch's own, which follows
/// OMP_NUM_THREADS) and, before any BLAS call of the caller, makes the number of busy compute threads
/// equal that count: a BLAS that runs its own worker pool beside LibTorch's OpenMP pool (OpenBLAS's
/// pthreads build) is pinned to one thread whenever LibTorch uses more than one, since both pools
/// would otherwise spin on the same cores. A BLAS in the OpenMP pool needs nothing. Every program
/// calls this once at start-up.
ThreadSetup configure_threads(int intra_op);
/// The current setup, without changing anything.
ThreadSetup current_threads();
/// Logical cores this process may run on (sched_getaffinity; hardware_concurrency as a fallback).
int available_cores();

}  // namespace torchprobe
