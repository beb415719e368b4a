#include "torchprobe/ops/peaks.h"

#include <fmt/format.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>

#include "torchprobe/blas.h"
#include "torchprobe/device_spec.h"
#include "torchprobe/elapsed.h"
#include "torchprobe/interrupt.h"
#include "torchprobe/io.h"
#include "torchprobe/measure.h"
#include "torchprobe/ops/counts.h"
#include "torchprobe/units.h"

namespace torchprobe::ops {
namespace {

constexpr int kPeakSamples = 5;
constexpr double kPeakSeconds = 1.0;  // a roof is a best case: sample long enough to catch the host's quiet moments
using units::kMiB;
constexpr std::int64_t kPanelRows = 256;
constexpr double kMaxPlausibleMhz = 6500.0;

/// The fastest of the samples of `call` over at least kPeakSeconds, as work units per second; `seconds` gets
/// the wall time the measurement took, warm-up included.
double best_rate(const torch::Device& device, const std::function<void()>& call, double work, double& seconds) {
  const auto start = std::chrono::steady_clock::now();
  measure::Sampler sampler(measure::default_policy(device), measure::device_clock(device), call);
  const auto ms = sampler.run(kPeakSamples, kPeakSeconds);
  seconds = seconds_since(start);
  return fastest_rate(work, ms);
}

}  // namespace

double fastest_rate(double work, const std::vector<double>& sample_ms) {
  if (sample_ms.empty()) return 0.0;
  return work / (*std::min_element(sample_ms.begin(), sample_ms.end()) / 1e3);
}

double measure_cpu_clock_mhz() {
#if defined(__x86_64__)
  // A chain of dependent 64-bit imuls: 3 cycles each on every x86-64 core since Nehalem and Zen 1 (Intel's
  // optimization reference manual, appendix D; AMD's Software Optimization Guides for family 17h/19h/1Ah;
  // uops.info). Not adds: Golden Cove and later fold immediate adds at rename and run several a cycle, so
  // an add chain read 22 000 MHz on a Sapphire Rapids core.
  constexpr long kIterations = 1'500'000;  // x 16 imuls x 3 cycles: 72 M cycles, ~20 ms
  constexpr double kCyclesPerImul = 3.0;
  double best = 0.0;
  for (int attempt = 0; attempt < 5; ++attempt) {
    long x = 3;
    const auto start = std::chrono::steady_clock::now();
    for (long i = 0; i < kIterations; ++i) {
      asm volatile(
          "imul %0, %0\n\timul %0, %0\n\timul %0, %0\n\timul %0, %0\n\t"
          "imul %0, %0\n\timul %0, %0\n\timul %0, %0\n\timul %0, %0\n\t"
          "imul %0, %0\n\timul %0, %0\n\timul %0, %0\n\timul %0, %0\n\t"
          "imul %0, %0\n\timul %0, %0\n\timul %0, %0\n\timul %0, %0"
          : "+r"(x));
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    best = std::max(best, static_cast<double>(kIterations) * 16.0 * kCyclesPerImul / seconds / 1e6);
  }
  // No x86 core runs above ~6.2 GHz: a higher reading means the chain was folded or the timer lies.
  return best <= kMaxPlausibleMhz ? best : 0.0;
#else
  return 0.0;
#endif
}

TheoreticalPeak theoretical_cpu_peak(const CpuInfo& cpu, int threads, double measured_clock_mhz,
                                     const std::string& dtype) {
  TheoreticalPeak peak;
  const CoreFlops flops = core_flops(cpu);
  double per_cycle = flops.per_cycle(dtype);
  std::string unit = flops.unit(dtype);
  if (per_cycle == 0.0 && dtype != "fp32" && flops.fp32 > 0.0) {  // no native unit: computed through fp32
    per_cycle = flops.fp32;
    unit = "no native " + dtype + " unit, computed in fp32 on " + flops.fp32_unit;
  }
  // SMT threads of one core share its FMA units: physical cores count, where sysfs tells them.
  const int cores = std::min(std::max(threads, 1), std::max(cpu.physical_cores > 0 ? cpu.physical_cores : cpu.logical_cores, 1));
  const bool measured = measured_clock_mhz > cpu.max_clock_mhz;
  const double mhz = measured ? measured_clock_mhz : cpu.max_clock_mhz;
  if (per_cycle == 0.0 || mhz <= 0.0) return peak;
  peak.gflop_per_s = cores * mhz * 1e-3 * per_cycle;
  peak.cores = cores;
  peak.clock_mhz = mhz;
  peak.clock_source = measured ? "measured, imul chain" : cpu.clock_source;
  peak.flop_per_cycle = per_cycle;
  const std::string clock = measured ? fmt::format("{:.0f} MHz measured ({} lists {:.0f})", mhz, cpu.clock_source.empty() ? "nothing" : cpu.clock_source, cpu.max_clock_mhz)
                                     : fmt::format("{:.0f} MHz ({})", mhz, cpu.clock_source);
  const std::string core = flops.core.empty() ? "" : flops.core + ": ";
  peak.basis = fmt::format("{} core{} x {} x {:g} {} FLOP/cycle ({}{})", cores, cores == 1 ? "" : "s", clock, per_cycle,
                           dtype, core, unit);
  return peak;
}

void apply_compute_roof(Peak& peak) {
  const double measured = std::max(peak.gemm_gflop_per_s, peak.conv_gflop_per_s);
  peak.theoretical_suspect = measured > 0.0 && peak.theoretical_gflop_per_s > kSuspectRatio * measured;
  const double theory = peak.theoretical_suspect ? 0.0 : peak.theoretical_gflop_per_s;
  peak.gflop_per_s = std::max(measured, theory);
  peak.compute_source = peak.gflop_per_s == theory && theory > 0.0          ? "theoretical"
                        : peak.gflop_per_s == peak.conv_gflop_per_s ? "conv"
                                                                    : "gemm";
}

std::vector<std::pair<std::string, double>> roof_counters(const Peak& peak) {
  std::vector<std::pair<std::string, double>> out = {{"roof_gemm_gflop_per_s", peak.gemm_gflop_per_s},
                                                     {"roof_conv_gflop_per_s", peak.conv_gflop_per_s}};
  if (peak.theoretical_gflop_per_s > 0) {
    out.emplace_back("roof_theoretical_gflop_per_s", peak.theoretical_gflop_per_s);
    out.emplace_back("roof_theoretical_cores", peak.theoretical_cores);
    out.emplace_back("roof_theoretical_clock_mhz", peak.theoretical_clock_mhz);
    out.emplace_back("roof_theoretical_flop_per_cycle", peak.theoretical_flop_per_cycle);
  }
  if (peak.theoretical_suspect) out.emplace_back("roof_theoretical_suspect", 1.0);
  return out;
}

namespace {
std::string g_peak_store;
std::function<void(const std::string&)> g_peak_log;

nlohmann::json read_store() {
  if (g_peak_store.empty()) return nlohmann::json::object();
  std::ifstream in(g_peak_store);
  if (!in) return nlohmann::json::object();
  try {
    nlohmann::json doc = nlohmann::json::parse(in);
    return doc.is_object() ? doc : nlohmann::json::object();
  } catch (const nlohmann::json::exception&) {
    return nlohmann::json::object();  // a store cut short: measure again
  }
}

Peak peak_from_json(const nlohmann::json& j) {
  Peak p;
  p.gflop_per_s = j.at("gflop_per_s").get<double>();
  p.gemm_gflop_per_s = j.at("gemm_gflop_per_s").get<double>();
  p.conv_gflop_per_s = j.at("conv_gflop_per_s").get<double>();
  p.theoretical_gflop_per_s = j.at("theoretical_gflop_per_s").get<double>();
  p.compute_source = j.at("compute_source").get<std::string>();
  p.theoretical_basis = j.at("theoretical_basis").get<std::string>();
  p.gb_per_s = j.at("gb_per_s").get<double>();
  p.theoretical_suspect = j.value("theoretical_suspect", false);
  p.theoretical_cores = j.value("theoretical_cores", 0);
  p.theoretical_clock_mhz = j.value("theoretical_clock_mhz", 0.0);
  p.theoretical_flop_per_cycle = j.value("theoretical_flop_per_cycle", 0.0);
  return p;
}

nlohmann::json peak_to_json(const Peak& p) {
  return {{"gflop_per_s", p.gflop_per_s},           {"gemm_gflop_per_s", p.gemm_gflop_per_s},
          {"conv_gflop_per_s", p.conv_gflop_per_s}, {"theoretical_gflop_per_s", p.theoretical_gflop_per_s},
          {"compute_source", p.compute_source},     {"theoretical_basis", p.theoretical_basis},
          {"gb_per_s", p.gb_per_s},                 {"theoretical_suspect", p.theoretical_suspect},
          {"theoretical_cores", p.theoretical_cores}, {"theoretical_clock_mhz", p.theoretical_clock_mhz},
          {"theoretical_flop_per_cycle", p.theoretical_flop_per_cycle}};
}

Peak measure_peak(const torch::Device& device, DType dtype);
}  // namespace

void set_peak_store(const std::string& path) { g_peak_store = path; }
void set_peak_log(std::function<void(const std::string&)> log) { g_peak_log = std::move(log); }

Peak measured_peak(const torch::Device& device, DType dtype) {
  static std::mutex mutex;
  static std::map<std::string, Peak> cache;
  const std::string key = device_string(device) + "/" + dtype_name(dtype);
  std::lock_guard<std::mutex> lock(mutex);
  if (const auto it = cache.find(key); it != cache.end()) return it->second;
  nlohmann::json store = read_store();
  if (store.contains(key)) {
    try {
      return cache[key] = peak_from_json(store[key]);
    } catch (const nlohmann::json::exception&) {
      // not a peak: measure it
    }
  }
  if (g_peak_log) {  // seconds of silence otherwise (tens where a first cuDNN convolution loads its kernels)
    g_peak_log(
        fmt::format("measuring the roofs of {} {}: a large GEMM, a convolution and a STREAM triad, >= {:g} s each",
                    device_string(device), dtype_name(dtype), kPeakSeconds));
  }
  const Peak peak = measure_peak(device, dtype);
  cache[key] = peak;
  if (g_peak_log) {
    g_peak_log(
        fmt::format("roofs of {} {}: GEMM {:.0f} GFLOP/s in {:.1f} s, convolution {:.0f} GFLOP/s in {:.1f} s, "
                    "STREAM triad {:.0f} GB/s {}",
                    device_string(device), dtype_name(dtype), peak.gemm_gflop_per_s, peak.gemm_seconds,
                    peak.conv_gflop_per_s, peak.conv_seconds, peak.gb_per_s,
                    peak.triad_seconds > 0.0 ? fmt::format("in {:.1f} s", peak.triad_seconds)
                                             : std::string("(measured once per device, with its first roofs)")));
  }
  if (!g_peak_store.empty()) {
    store[key] = peak_to_json(peak);
    io::write_text_file(g_peak_store, store.dump());
  }
  return peak;
}

namespace {
Peak measure_peak(const torch::Device& device, DType dtype) {
  torch::NoGradGuard no_grad;
  MathModeGuard math(dtype);
  Peak peak;
  const auto o = torch::TensorOptions().device(device).dtype(storage_type(dtype));
  // On the CPU, a precision without a native unit (bf16 before AVX512_BF16/AMX/Arm BF16) runs LibTorch's
  // generic kernels, tens of times slower: a 1024 GEMM there, so the roof costs seconds, not minutes.
  const CpuInfo cpu = device.is_cpu() ? read_cpu_info() : CpuInfo{};
  // Not known to be native (an unknown core included): sized as if emulated, so the roof never costs minutes.
  const bool slow_cpu_dtype = device.is_cpu() && dtype != DType::kFp32 && !core_flops(cpu).native(dtype_name(dtype));
  {  // a large GEMM: the BLAS (fp32) or oneDNN (bf16) on the CPU, cuBLAS on a GPU
    const std::int64_t n = device.is_cuda() ? 8192 : slow_cpu_dtype ? 1024 : 2048;
    const auto a = torch::randn({n, n}, o), b = torch::randn({n, n}, o);
    auto c = torch::empty({n, n}, o);
    // On the CPU one call is n/kPanelRows row panels, each still a large GEMM, with a stop check between
    // them: a whole 2048 GEMM takes up to a second on one slow core, and a Ctrl-C is answered well within it.
    const std::int64_t panel = device.is_cuda() ? n : kPanelRows;
    const auto gemm = [&] {
      for (std::int64_t row = 0; row < n; row += panel) {
        auto rows = c.narrow(0, row, panel);
        torch::mm_out(rows, a.narrow(0, row, panel), b);
        if (!device.is_cuda()) interrupt::check();
      }
    };
    peak.gemm_gflop_per_s = best_rate(device, gemm, matmul_flops(n, n, n), peak.gemm_seconds) / 1e9;
  }
  {  // a large convolution: oneDNN on the CPU, cuDNN on a GPU (resnet18's most frequent layer)
    ConvShape s{device.is_cuda() ? 256 : 64, 64, 32, 32, 64, 3, 1, 1};
    auto x = torch::randn({s.batch, s.in_channels, s.height, s.width}, o);
    auto w = torch::randn({s.out_channels, s.in_channels, s.kernel, s.kernel}, o) * 0.1;
    if (device.is_cpu() && dtype != DType::kFp32) {  // as the bf16 variants run: oneDNN's bf16 kernels are NHWC
      x = x.contiguous(torch::MemoryFormat::ChannelsLast);
      w = w.contiguous(torch::MemoryFormat::ChannelsLast);
    }
    peak.conv_gflop_per_s =
        best_rate(
            device, [&] { torch::conv2d(x, w, /*bias=*/{}, /*stride=*/s.stride, /*padding=*/s.padding); },
            conv2d_flops(s, /*backward=*/false), peak.conv_seconds) /
        1e9;
  }
  if (device.is_cpu()) {
    static const double clock_mhz = measure_cpu_clock_mhz();  // once per process: every dtype's roof at one clock
    const TheoreticalPeak theory = theoretical_cpu_peak(cpu, current_threads().intra_op, clock_mhz, dtype_name(dtype));
    peak.theoretical_gflop_per_s = theory.gflop_per_s;
    peak.theoretical_basis = theory.basis;
    peak.theoretical_cores = theory.cores;
    peak.theoretical_clock_mhz = theory.clock_mhz;
    peak.theoretical_flop_per_cycle = theory.flop_per_cycle;
  }
  apply_compute_roof(peak);
  // STREAM triad a = b + s*c over arrays of at least 4x the last-level cache, every thread. Its arrays are fp32
  // whatever the dtype, so it is measured once per device (process) and every dtype's roof shares it; the arrays
  // are filled, not drawn at random (the values do not matter to a copy, and 2 GiB of random numbers took ~3 s).
  static std::map<std::string, double> triad_gb_per_s;  // measured_peak's lock guards it
  const auto known = triad_gb_per_s.find(device_string(device));
  if (known != triad_gb_per_s.end()) {
    peak.gb_per_s = known->second;
    return peak;
  }
  const std::int64_t floor_bytes = (device.is_cuda() ? 1024 : 256) * kMiB;
  const std::int64_t array_bytes = std::max(floor_bytes, 4 * measure::cache_bytes(device));
  const auto fp32 = torch::TensorOptions().device(device).dtype(torch::kFloat32);
  const auto b = torch::full({array_bytes / 4}, 1.0, fp32), c = torch::full({array_bytes / 4}, 2.0, fp32);
  auto a = torch::empty_like(b);
  peak.gb_per_s = best_rate(
                      device, [&] { torch::add_out(a, b, c, /*alpha=*/3.0); }, 3.0 * static_cast<double>(array_bytes),
                      peak.triad_seconds) /
                  1e9;
  triad_gb_per_s[device_string(device)] = peak.gb_per_s;
  return peak;
}
}  // namespace

}  // namespace torchprobe::ops
